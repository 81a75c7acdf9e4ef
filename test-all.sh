#!/usr/bin/env bash
# The whole test suite: unit and integration tests of every crate (real server over TCP on
# 127.0.0.1), then the interop suite against real RocketMQ peers (Java brokers, clients and admin
# from Maven Central, the Go client, the C++ client, the official Java NameServer), which
# installs them into interop/.cache/ on first use.
#
#   ./test-all.sh                  # the whole suite
#   ./test-all.sh --check-tools    # only check that the tools it needs are here (.ci/run does)
set -euo pipefail
cd "$(dirname "$0")"

# The tools the suite starts or calls, checked before anything is built: a missing one stops it
# here, in one line naming what to install, instead of half-way through. Building needs only the
# Rust toolchain and a C compiler (ring); the etcd client is generated without protoc.
check_tools() {
  local missing=() debian=() other=()
  # lack WHAT DEBIAN_PACKAGE [ELSEWHERE]: WHAT is not here; install the package, or from ELSEWHERE.
  lack() {
    missing+=("$1")
    if [ -n "${3:-}" ]; then other+=("$1: $3"); else debian+=("$2"); fi
  }
  command -v cargo >/dev/null 2>&1 || lack cargo "" "the Rust toolchain, https://rustup.rs"
  command -v cc >/dev/null 2>&1 || lack cc gcc
  # The Rust tests: etcd (tests/support/etcd.rs takes $ETCD_BIN), Chromium (tests/status_page.rs
  # takes $CHROMIUM).
  command -v "${ETCD_BIN:-etcd}" >/dev/null 2>&1 || lack etcd etcd-server
  [ -x "${CHROMIUM:-/usr/bin/chromium}" ] || lack chromium chromium
  # tests/address_dns.rs: a DNS server whose records change (tests/support/dnsmasq.rs).
  command -v "${DNSMASQ_BIN:-dnsmasq}" >/dev/null 2>&1 || [ -x /usr/sbin/dnsmasq ] \
    || lack dnsmasq dnsmasq-base
  # contrib/check.sh.
  command -v python3 >/dev/null 2>&1 || lack python3 python3
  command -v promtool >/dev/null 2>&1 || lack promtool prometheus
  # The interop suite: Java peers (JDK 17, Maven), the Go peer (Go 1.22+), the C++ peer's venv,
  # TLS certificates, the network-isolated scenarios.
  local javac_major=""
  if command -v javac >/dev/null 2>&1; then
    javac_major="$(javac -version 2>&1 | sed -nE 's/^javac ([0-9]+).*/\1/p')"
  fi
  if ! command -v java >/dev/null 2>&1 || [ "${javac_major:-0}" -lt 17 ]; then
    lack "JDK 17" openjdk-17-jdk-headless
  fi
  command -v mvn >/dev/null 2>&1 || lack mvn maven
  local go_minor=""
  if command -v go >/dev/null 2>&1; then
    go_minor="$(go env GOVERSION 2>/dev/null | sed -nE 's/^go1\.([0-9]+).*/\1/p')"
  fi
  [ "${go_minor:-0}" -ge 22 ] || lack "go >= 1.22" "" "https://go.dev/dl"
  if [ ! -x interop/.cache/cpp-venv/bin/python ] && command -v python3 >/dev/null 2>&1 \
     && ! python3 -c 'import ensurepip, venv' >/dev/null 2>&1; then
    lack "python3 venv" python3-venv
  fi
  command -v openssl >/dev/null 2>&1 || lack openssl openssl
  command -v unshare >/dev/null 2>&1 || lack unshare util-linux
  command -v setsid >/dev/null 2>&1 || lack setsid util-linux
  # bench/chaos/: a network namespace per node, links cut with iptables.
  command -v ip >/dev/null 2>&1 || lack ip iproute2
  command -v iptables >/dev/null 2>&1 || lack iptables iptables
  # deploy/: check.sh builds helm and k8scheck with Go (above), image.sh builds the image with
  # podman and smoke-tests it with curl.
  command -v podman >/dev/null 2>&1 || lack podman podman
  command -v curl >/dev/null 2>&1 || lack curl curl

  [ "${#missing[@]}" -eq 0 ] && return 0
  local line="test-all.sh: missing" sep=" " item
  for item in "${missing[@]}"; do line+="$sep$item"; sep=", "; done
  line+="; install:"
  sep=" "
  if [ "${#debian[@]}" -gt 0 ]; then
    line+=" apt-get install -y --no-install-recommends ${debian[*]}"
    sep="; "
  fi
  for item in "${other[@]}"; do line+="$sep$item"; sep="; "; done
  echo "$line" >&2
  return 1
}

check_tools || exit 1
if [ "${1:-}" = "--check-tools" ]; then
  echo "test-all.sh: every tool the suite needs is here"
  exit 0
fi

# The interop peers (Maven jars, the Go and C++ clients) are fetched while Rust builds: most of
# it is waiting on the network. Its output is shown when the suite needs the peers.
setup_log="$(mktemp "${TMPDIR:-/tmp}/rmq-interop-setup.XXXXXX")"
# In a process group of its own (setsid, util-linux), so that an early end stops its children too.
setsid interop/setup.sh >"$setup_log" 2>&1 &
setup_pid=$!
stop_setup() {
  if [ -n "${setup_pid:-}" ]; then kill -- "-$setup_pid" 2>/dev/null || true; fi
  rm -f "$setup_log"
}
trap stop_setup EXIT

echo "== cargo test (workspace)"
cargo test --workspace --locked
# Chaos and soak, short: faults injected, nothing may be lost (bench/SOAK.md). On the debug build
# cargo test just made, so no second optimized build is needed for it.
SOAK_PROFILE=dev bench/soak.sh 60s
# The scale bench's smoke run (bench/SCALE.md): `rmq-bench scale` at two tiny points against our
# debug server, through bench/scale.py, in about 15 s.
cargo build --locked -p rmq-bench -p rmq-namesrv
python3 bench/scale.py --smoke --servers ours --netns off --quiet \
  --binary target/debug/rmq-namesrv --bench-binary target/debug/rmq-bench

echo "== release build for the interop suite"
cargo build --release --locked

# contrib/: alert rules (promtool), dashboard queries against the exported metrics, systemd unit.
contrib/check.sh --binary target/release/rmq-namesrv

# deploy/: the Helm chart (lint, strict decoding into the Kubernetes types, ports, probes and
# drain timing against this binary's configuration), then the container image, built and run
# with its own config.toml and with the one the chart renders (check.sh writes it).
deploy/check.sh --binary target/release/rmq-namesrv
deploy/image.sh --binary target/release/rmq-namesrv --smoke --config deploy/.cache/chart-config.toml

echo "== interop peers (cached in interop/.cache/; fetched in the background since the start)"
setup_status=0
wait "$setup_pid" || setup_status=$?
setup_pid=""
cat "$setup_log"
if [ "$setup_status" -ne 0 ]; then
  echo "test-all.sh: interop/setup.sh failed (exit $setup_status)" >&2
  exit 1
fi

echo "== partitions, short (bench/chaos/README.md): 4 faults, nothing acknowledged lost to our server"
python3 bench/chaos/test_check.py
python3 bench/chaos/run.py --ci

echo "== interop suite"
python3 interop/run.py
