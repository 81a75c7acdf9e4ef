#!/usr/bin/env bash
# Idempotent installer of the interop suite (the one entry point CI calls).
#
#   interop/setup.sh            # resolve pinned RocketMQ jars, compile the Java peers, then
#                               # build the Go peer and the C++ peer's venv (setup_go_cpp.sh)
#
# Needs: JDK 17 (java, javac), Maven 3.8+, network access to Maven Central through mvn;
# openssl for run.py's TLS scenarios (checked here, only a warning when missing);
# for setup_go_cpp.sh also Go >= 1.22 and python3 with venv (Linux x86_64), reaching the Go
# module proxy and PyPI.
# Everything downloaded or built goes under interop/.cache/ (git-ignored):
#   .cache/m2/                      Maven local repository (cache this folder in CI)
#   .cache/lib/<role>-<version>/    jars with all runtime dependencies (role: server|client|proxy|
#                                   grpc-client)
#   .cache/classes/client-<ver>/    our peers (java/client, plus java/admin for 5.x) compiled
#   .cache/classes/grpc-client-<ver>/  the gRPC SDK peer (java/grpc) compiled
#   .cache/go/{bin,mod,build}/      Go peer rmq-go-peer, Go module and build caches
#   .cache/cpp-venv/                venv with PyPI rocketmq==0.4.4 (rocketmq-client-cpp)
# A warm cache makes this a no-op apart from a few file checks (Maven runs offline then).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="$HERE/.cache"
M2="${INTEROP_M2:-$CACHE/m2}"
POM="$HERE/java/deps/pom.xml"
# shellcheck source=java/versions.env
. "$HERE/java/versions.env"

log() { printf 'setup: %s\n' "$*" >&2; }

for tool in java javac mvn; do
    command -v "$tool" >/dev/null || { log "missing $tool"; exit 1; }
done
# run.py's TLS scenarios make their CA, server and client certificates with openssl at run time
# (nothing to download here); without it they fail and the others still run.
command -v openssl >/dev/null ||
    log "WARNING: openssl not found; the TLS scenarios need it: apt-get install -y openssl"

# resolve ROLE VERSION: copy the jars of profile ROLE at VERSION (and all their runtime
# dependencies) into .cache/lib/ROLE-VERSION/, unless a previous run completed it.
resolve() {
    local role="$1" version="$2"
    local dest="$CACHE/lib/$role-$version"
    local stamp="$dest/.complete"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$role $version" ]; then
        log "lib/$role-$version: cached"
        return
    fi
    log "lib/$role-$version: resolving from Maven Central"
    rm -rf "$dest"
    mkdir -p "$dest"
    mvn -B -q -Dstyle.color=never -f "$POM" "-Dmaven.repo.local=$M2" "-Drmq.version=$version" -P "$role" \
        dependency:copy-dependencies "-DoutputDirectory=$dest" -DincludeScope=runtime \
        -Dmdep.overWriteReleases=true
    ls "$dest"/rocketmq-*.jar >/dev/null
    printf '%s %s' "$role" "$version" >"$stamp"
}

# compile ROLE VERSION SRC_DIRS...: javac our peers against lib/ROLE-VERSION into
# .cache/classes/ROLE-VERSION/, skipped when sources and version are unchanged.
compile() {
    local role="$1" version="$2"
    shift 2
    local dest="$CACHE/classes/$role-$version"
    local stamp="$dest/.complete"
    local digest
    digest="$(cd "$HERE" && find "$@" -name '*.java' -type f | LC_ALL=C sort | xargs cat | sha256sum | cut -d' ' -f1) $version"
    if [ -f "$stamp" ] && [ "$(cat "$stamp")" = "$digest" ]; then
        log "classes/$role-$version: up to date"
        return
    fi
    log "classes/$role-$version: compiling $*"
    rm -rf "$dest"
    mkdir -p "$dest"
    local srcs=()
    local dir
    for dir in "$@"; do
        while IFS= read -r f; do srcs+=("$f"); done < <(find "$HERE/$dir" -name '*.java' -type f | LC_ALL=C sort)
    done
    javac -nowarn -encoding UTF-8 --release 17 -d "$dest" -cp "$CACHE/lib/$role-$version/*" "${srcs[@]}"
    printf '%s' "$digest" >"$stamp"
}

mkdir -p "$CACHE"
resolve server "$RMQ5_SERVER"
resolve client "$RMQ5_CLIENT"
resolve server "$RMQ4_SERVER"
resolve client "$RMQ4_CLIENT"
# the RocketMQ Proxy (cluster mode) and the 5.x gRPC SDK that talks to it
resolve proxy "$RMQ_PROXY"
resolve grpc-client "$RMQ_GRPC_CLIENT"

# java/client: producer, consumer, route probe (same source for both client lines).
# java/admin: DefaultMQAdminExt front end (5.x tools only).
# java/grpc: the gRPC SDK peer (rocketmq-client-java only, no remoting client).
compile client "$RMQ5_CLIENT" java/client java/admin
compile client "$RMQ4_CLIENT" java/client
compile grpc-client "$RMQ_GRPC_CLIENT" java/grpc

# Go peer (go/) and C++ peer (cpp/peer.py); idempotent as well, under .cache/go and
# .cache/cpp-venv.
"$HERE/setup_go_cpp.sh"

log "done"
