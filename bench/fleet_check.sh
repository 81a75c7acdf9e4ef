#!/usr/bin/env bash
# The fleet check on a big fleet (README "Fleet check"): three rmq-namesrv servers (release
# build), each filled by a simulated broker that registers TOPICS topics (default 100,000; one
# broker group, `rmq-bench brokers`), then `rmq-namesrv admin fleetCheck` over the three, timed
# with its peak RSS (/usr/bin/time -v). RUNS runs (default 3); prints one line per run.
#
#   cargo build --release --bin rmq-namesrv --bin rmq-bench
#   bench/fleet_check.sh              # 100,000 topics, 3 runs
#   TOPICS=10000 RUNS=1 bench/fleet_check.sh
#
# Everything listens on 127.0.0.1 (ephemeral ports); the servers and brokers started here are
# stopped by PID on any exit, their working directory removed.
set -euo pipefail
cd "$(dirname "$0")/.."

topics="${TOPICS:-100000}"
runs="${RUNS:-3}"
bin_dir="${CARGO_TARGET_DIR:-target}/release"
namesrv="${NAMESRV_BIN:-$bin_dir/rmq-namesrv}"
bench="${BENCH_BIN:-$bin_dir/rmq-bench}"
for b in "$namesrv" "$bench"; do
    [ -x "$b" ] || { echo "fleet_check: $b missing: cargo build --release --bin rmq-namesrv --bin rmq-bench" >&2; exit 2; }
done
[ -x /usr/bin/time ] || { echo "fleet_check: needs /usr/bin/time (GNU time)" >&2; exit 2; }

work="$(mktemp -d -t rmq-fleet-bench.XXXXXX)"
pids=()
cleanup() {
    for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
    for pid in "${pids[@]}"; do wait "$pid" 2>/dev/null || true; done
    rm -rf "$work"
}
trap cleanup EXIT

# One broker group registering every topic: a body over the default 16 MiB frame limit.
cat >"$work/namesrv.toml" <<'TOML'
[server]
max_frame_bytes = 67108864
max_inflated_body_bytes = 67108864
max_decoding_bytes = 268435456
TOML

addrs=()
for i in 1 2 3; do
    dir="$work/ns$i"
    mkdir -p "$dir"
    "$namesrv" --config "$work/namesrv.toml" --listen 127.0.0.1:0 --kv-config-path "$dir/kvConfig.json" \
        --config-store-path "$dir/namesrv.properties" >"$dir/stdout" 2>"$dir/stderr" &
    pids+=("$!")
    for _ in $(seq 100); do
        grep -q "listening on" "$dir/stdout" 2>/dev/null && break
        sleep 0.1
    done
    addr="$(sed -n 's/^rmq-namesrv listening on \(127\.0\.0\.1:[0-9]*\).*/\1/p' "$dir/stdout")"
    [ -n "$addr" ] || { echo "fleet_check: server $i did not start" >&2; cat "$dir/stderr" >&2; exit 1; }
    addrs+=("$addr")
    "$bench" --addr "$addr" --timeout 60s brokers --brokers 1 --topics "$topics" --hold 1h \
        >"$dir/broker.out" 2>"$dir/broker.err" &
    pids+=("$!")
done
for i in 1 2 3; do
    for _ in $(seq 1200); do
        grep -q "^registered:" "$work/ns$i/broker.out" 2>/dev/null && break
        sleep 0.1
    done
    grep "^registered:" "$work/ns$i/broker.out" >&2 || { echo "fleet_check: broker $i did not register" >&2; cat "$work/ns$i/broker.err" >&2; exit 1; }
done

list="$(IFS=';'; echo "${addrs[*]}")"
for run in $(seq "$runs"); do
    set +e
    /usr/bin/time -v "$namesrv" admin -n "$list" --timeout 30s --json fleetCheck \
        >"$work/check.json" 2>"$work/time.txt"
    rc=$?
    set -e
    rss_kib="$(sed -n 's/.*Maximum resident set size (kbytes): //p' "$work/time.txt")"
    python3 - "$work/check.json" "$rc" "$rss_kib" "$run" <<'PY'
import json, sys
doc = json.load(open(sys.argv[1]))
rc, rss, run = int(sys.argv[2]), int(sys.argv[3]), sys.argv[4]
drift = {k: v for k, v in doc["counts"].items() if v}
print(f"run {run}: exit {rc}, {len(doc['servers'])} servers x {doc['topics']} topics compared in "
      f"{doc['elapsedMs'] / 1000:.2f} s, peak RSS {rss / 1024:.1f} MiB, drift {drift or 'none'}")
PY
done
