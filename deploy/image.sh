#!/usr/bin/env bash
# Builds the container image of deploy/Containerfile offline (FROM scratch: nothing is pulled) and,
# with --smoke, runs it without a container runtime and checks it serves. Idempotent; its build
# context lives in deploy/.cache/image/ (git-ignored).
#
#   deploy/image.sh --binary target/release/rmq-namesrv [--tag TAG] [--smoke] [--keep]
#                   [--config FILE]      # smoke-test with FILE too (the chart's config.toml)
#   deploy/image.sh --binary PATH --context-only      # only assemble deploy/.cache/image/
#
# 1. The context: rootfs/ with the binary at /usr/local/bin/rmq-namesrv (debug info stripped when
#    `strip` is there, symbols kept), every shared library
#    `ldd` names at the same path (the ELF interpreter included), /etc/passwd and /etc/group
#    (user rmq, uid and gid 10001, home /var/lib/rmq-namesrv), /etc/nsswitch.conf (etcd and
#    address-server names resolve through files then DNS), /etc/rmq-namesrv/config.toml
#    (deploy/image/config.toml); data/, the data directory owned by the user.
# 2. `podman build` (default tag localhost/rmq-namesrv:<Cargo.toml version>).
# 3. --smoke: `podman run` is not allowed here, so the image is mounted (`podman image mount`) and
#    its entrypoint run, as its user and with its environment, under chroot in a loopback-only
#    network and mount namespace (`unshare -n -m`), with a tmpfs on the data volume (as a
#    read-only root file system with a volume in Kubernetes). Checked: the "listening" line,
#    /health, /ready and /metrics on the HTTP port, RocketMQ requests on the remoting port (the
#    host binary's admin CLI: clusterList, and a KV write, which must land in HOME on the volume),
#    the process's uid, and a graceful stop on SIGTERM (exit 0). With --config, a second round
#    with FILE mounted over the image's config.toml, as the chart's ConfigMap is (the drain
#    shortened to 2 s through NAMESRV__SERVER__SHUTDOWN_WAIT). Then the
#    server is stopped by its PID, the image unmounted and, unless --keep, removed.
# Needs: podman (Debian: apt-get install -y --no-install-recommends podman), ldd, and for
# --smoke unshare, chroot, ip, curl, run as root. Exit: 0 ok, 1 a check failed, 2 usage/tools.
set -euo pipefail
cd "$(dirname "$0")/.."

binary="" tag="" smoke=0 keep=0 context_only=0 chart_config=""
usage() { awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; }
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) [ $# -ge 2 ] || { usage >&2; exit 2; }; binary="$2"; shift 2 ;;
    --tag) [ $# -ge 2 ] || { usage >&2; exit 2; }; tag="$2"; shift 2 ;;
    --smoke) smoke=1; shift ;;
    --config) [ $# -ge 2 ] || { usage >&2; exit 2; }; chart_config="$2"; smoke=1; shift 2 ;;
    --keep) keep=1; shift ;;
    --context-only) context_only=1; shift ;;
    -h|--help) usage; exit 0 ;;
    *) echo "deploy/image.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done
[ -n "$binary" ] || { echo "deploy/image.sh: --binary PATH (a release build of rmq-namesrv) is required" >&2; exit 2; }
[ -x "$binary" ] || { echo "deploy/image.sh: $binary is not an executable" >&2; exit 2; }
binary="$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")"
version="$(sed -nE '/^\[workspace.package\]/,/^\[/ s/^version = "([^"]+)"/\1/p' Cargo.toml)"
tag="${tag:-localhost/rmq-namesrv:$version}"
uid=10001
home=/var/lib/rmq-namesrv

ctx=deploy/.cache/image
log() { printf 'image: %s\n' "$*"; }

assemble() {
  rm -rf "$ctx"
  mkdir -p "$ctx/rootfs/usr/local/bin" "$ctx/rootfs/etc/rmq-namesrv" "$ctx/data" \
    "$ctx/rootfs/tmp" "$ctx/rootfs/proc" "$ctx/rootfs/sys" "$ctx/rootfs/dev"
  chmod 1777 "$ctx/rootfs/tmp"
  # The release profile keeps line tables for profiling (debug = 1): 100+ MiB the image does not
  # need. Symbols stay, so backtraces still name functions.
  if command -v strip >/dev/null 2>&1; then
    strip --strip-debug -o "$ctx/rootfs/usr/local/bin/rmq-namesrv" "$binary"
    chmod 0755 "$ctx/rootfs/usr/local/bin/rmq-namesrv"
  else
    install -m 0755 "$binary" "$ctx/rootfs/usr/local/bin/rmq-namesrv"
  fi
  local libs
  if ! libs="$(ldd "$binary" 2>&1)"; then
    if grep -q "not a dynamic executable" <<<"$libs"; then libs=""; else printf '%s\n' "$libs" >&2; return 1; fi
  fi
  if grep -q "not found" <<<"$libs"; then
    echo "deploy/image.sh: ldd cannot find a library of $binary:" >&2
    printf '%s\n' "$libs" >&2
    return 1
  fi
  local lib n=0
  # "libc.so.6 => /lib/x86_64-linux-gnu/libc.so.6 (0x...)" and "/lib64/ld-linux-x86-64.so.2 (0x...)"
  for lib in $(awk '{ for (i = 1; i <= NF; i++) if ($i ~ /^\//) { print $i; break } }' <<<"$libs"); do
    mkdir -p "$ctx/rootfs$(dirname "$lib")"
    cp -L "$lib" "$ctx/rootfs$lib"
    n=$((n + 1))
  done
  printf 'root:x:0:0:root:/root:/sbin/nologin\nrmq:x:%d:%d:rmq-namesrv:%s:/sbin/nologin\n' \
    "$uid" "$uid" "$home" > "$ctx/rootfs/etc/passwd"
  printf 'root:x:0:\nrmq:x:%d:\n' "$uid" > "$ctx/rootfs/etc/group"
  printf 'hosts: files dns\n' > "$ctx/rootfs/etc/nsswitch.conf"
  install -m 0644 deploy/image/config.toml "$ctx/rootfs/etc/rmq-namesrv/config.toml"
  cp deploy/Containerfile "$ctx/Containerfile"
  log "context $ctx: the binary, $n libraries from ldd, passwd/group (uid $uid), config.toml"
}

assemble
if [ "$context_only" -eq 1 ]; then exit 0; fi
command -v podman >/dev/null 2>&1 || {
  echo "deploy/image.sh: podman is not installed: apt-get install -y --no-install-recommends podman" >&2
  exit 2
}

t0=$SECONDS
timeout 300 podman build --pull=never --network=none -f "$ctx/Containerfile" -t "$tag" "$ctx" >/dev/null
size="$(podman image inspect --format '{{.Size}}' "$tag")"
log "built $tag ($((size / 1024 / 1024)) MiB) in $((SECONDS - t0)) s"
[ "$smoke" -eq 1 ] || exit 0

for tool in unshare chroot ip curl; do
  command -v "$tool" >/dev/null 2>&1 || { echo "deploy/image.sh: --smoke needs $tool" >&2; exit 2; }
done
mnt=""
cleanup() {
  if [ -n "$mnt" ]; then podman image unmount "$tag" >/dev/null 2>&1 || true; fi
  if [ "$keep" -eq 0 ]; then podman rmi "$tag" >/dev/null 2>&1 || true; fi
}
trap cleanup EXIT
mnt="$(podman image mount "$tag")"
# What a container runtime would take from the image.
entrypoint="$(podman image inspect --format '{{json .Config.Entrypoint}}' "$tag")"
user="$(podman image inspect --format '{{.Config.User}}' "$tag")"
image_home="$(podman image inspect --format '{{range .Config.Env}}{{println .}}{{end}}' "$tag" | sed -n 's/^HOME=//p')"
volume="$(podman image inspect --format '{{range $k, $v := .Config.Volumes}}{{$k}}{{end}}' "$tag")"
config_path="$(python3 -c 'import json, sys; a = json.loads(sys.argv[1]); print(a[a.index("--config") + 1])' "$entrypoint")"

# smoke_round LABEL [CONFIG]: runs the image's entrypoint (with CONFIG mounted over its --config
# file and the drain shortened to 2 s), checks it, stops it. Each round has a fresh data volume.
smoke_round() {
  local label="$1" config="${2:-}" source="deploy/image/config.toml" t0=$SECONDS status=0 work
  [ -n "$config" ] && source="$config"
  local http_port remoting_port
  http_port="$(sed -nE '/^\[http\]/,/^\[/ s/^listen = "[^"]*:([0-9]+)"/\1/p' "$source")"
  remoting_port="$(sed -nE '/^\[server\]/,/^\[/ s/^listen = "[^"]*:([0-9]+)"/\1/p' "$source")"
  remoting_port="${remoting_port:-9876}"
  [ -n "$http_port" ] || { echo "deploy/image.sh: $source has no [http] listen" >&2; return 1; }
  log "smoke ($label): entrypoint $entrypoint as $user, HOME=$image_home, volume $volume, ports $remoting_port/$http_port"
  work="$(mktemp -d)"
  MNT="$mnt" ENTRYPOINT="$entrypoint" RUN_AS="$user" IMAGE_HOME="$image_home" VOLUME="$volume" \
  CHROOT="$(command -v chroot)" HTTP_PORT="$http_port" REMOTING_PORT="$remoting_port" \
  HOST_BINARY="$binary" WORK="$work" CONFIG="$config" CONFIG_PATH="$config_path" \
    timeout 90 unshare -n -m bash -s <<'ROUND' || status=$?
set -euo pipefail
ip link set lo up
# The data volume: writable by the image's user, the rest of the image read-only as mounted.
mount -t tmpfs -o "mode=0750,uid=${RUN_AS%%:*},gid=${RUN_AS##*:}" tmpfs "$MNT$VOLUME"
extra=()
if [ -n "$CONFIG" ]; then
  # As the chart's ConfigMap replaces the image's file.
  mount --bind "$CONFIG" "$MNT$CONFIG_PATH"
  extra=(NAMESRV__SERVER__SHUTDOWN_WAIT=2s)
fi
mapfile -t argv < <(python3 -c 'import json, sys; print("\n".join(json.loads(sys.argv[1])))' "$ENTRYPOINT")
env -i HOME="$IMAGE_HOME" ${extra[@]+"${extra[@]}"} "$CHROOT" --userspec="$RUN_AS" "$MNT" "${argv[@]}" \
  > "$WORK/stdout" 2> "$WORK/stderr" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do
  grep -q "listening on" "$WORK/stdout" 2>/dev/null && break
  kill -0 "$pid" 2>/dev/null || { echo "the server exited at start:"; cat "$WORK/stderr"; exit 1; }
  sleep 0.1
done
grep -q "listening on" "$WORK/stdout" || { echo "no 'listening' line in 10 s"; cat "$WORK/stderr"; exit 1; }
base="http://127.0.0.1:$HTTP_PORT"
health="$(curl -fsS --max-time 3 "$base/health")"
ready="$(curl -fsS --max-time 3 "$base/ready")"
metrics="$(curl -fsS --max-time 3 "$base/metrics" | grep -c '^rmq_' || true)"
[ "$metrics" -gt 0 ] || { echo "/metrics has no rmq_ samples"; exit 1; }
"$HOST_BINARY" admin -n "127.0.0.1:$REMOTING_PORT" --timeout 3s clusterList > "$WORK/admin"
# A KV write is on disk before its answer: HOME (the volume) is where the image's user can write.
"$HOST_BINARY" admin -n "127.0.0.1:$REMOTING_PORT" --timeout 3s \
  updateKvConfig -s SMOKE -k image -v ok > "$WORK/admin"
[ -s "$MNT$VOLUME/namesrv/kvConfig.json" ] || { echo "no KV file in the volume"; exit 1; }
uid="$(awk '/^Uid:/ { print $2 }' "/proc/$pid/status")"
[ "$uid" = "${RUN_AS%%:*}" ] || { echo "the server runs as uid $uid, not ${RUN_AS%%:*}"; exit 1; }
echo "ok    /health: $health"
echo "ok    /ready: $ready"
echo "ok    /metrics: $metrics rmq_ samples"
echo "ok    remoting port $REMOTING_PORT answers RocketMQ requests (clusterList, updateKvConfig)"
echo "ok    runs as uid $uid; the KV store written to HOME on the volume ($VOLUME/namesrv/kvConfig.json)"
start=$(date +%s%N)
kill -TERM "$pid"
for _ in $(seq 150); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
if kill -0 "$pid" 2>/dev/null; then echo "still running 15 s after SIGTERM"; kill -KILL "$pid"; exit 1; fi
code=0; wait "$pid" || code=$?
[ "$code" -eq 0 ] || { echo "exit code $code after SIGTERM"; cat "$WORK/stderr"; exit 1; }
drained=""
if grep -q "draining" "$WORK/stderr"; then drained=", after a drain (shutdown_gracefully)"; fi
echo "ok    SIGTERM: stopped in $((($(date +%s%N) - start) / 1000000)) ms$drained, exit 0"
ROUND
  rm -rf "$work"
  if [ "$status" -ne 0 ]; then
    echo "deploy/image.sh: smoke test ($label) of $tag FAILED" >&2
    return 1
  fi
  log "smoke test ($label) of $tag passed in $((SECONDS - t0)) s"
}

smoke_round "the image's config.toml"
if [ -n "$chart_config" ]; then
  smoke_round "$chart_config" "$(cd "$(dirname "$chart_config")" && pwd)/$(basename "$chart_config")"
fi
