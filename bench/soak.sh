#!/usr/bin/env bash
# Chaos and soak run (bench/SOAK.md): a pair of rmq-namesrv daemons built with debug assertions,
# the dev cluster's simulated brokers and client, and random faults for DURATION (default 10m):
# broker connections killed mid-frame, SIGKILL and restart of one NameServer of the pair, panics
# injected into the actors, KV writes under kill -9 (a third server, 100 rounds per 10 minutes).
# Prints what was injected and what was lost; exits 0 only when nothing was lost.
#
#   bench/soak.sh                 # 10 minutes
#   bench/soak.sh 60s             # the short run of test-all.sh
#   bench/soak.sh 2h --seed 42    # longer; options after the duration go to rmq-soak (--help)
#   SOAK_PROFILE=dev bench/soak.sh 60s   # with the debug build (what test-all.sh runs)
#
# Everything runs on 127.0.0.1 with ephemeral ports. The servers are killed on any exit; the
# working directory (KV files, server logs) is kept when the run fails.
set -euo pipefail
cd "$(dirname "$0")/.."

duration="${1:-10m}"
if [ "$#" -gt 0 ]; then
    shift
fi

# The cargo profile: `soak` (release code with debug assertions, the default) or `dev` (the
# debug build `cargo test` already made: the short run of test-all.sh, which then builds nothing
# optimized a second time). Both answer the FAULT_INJECTION code the run needs.
profile="${SOAK_PROFILE:-soak}"
case "$profile" in
    soak) bin="${CARGO_TARGET_DIR:-target}/soak" ;;
    dev) bin="${CARGO_TARGET_DIR:-target}/debug" ;;
    *) echo "soak: SOAK_PROFILE must be soak or dev, not $profile" >&2; exit 2 ;;
esac
work=""
build=""
driver=""

cleanup() {
    local status=$?
    trap - EXIT INT TERM
    if [ -n "$build" ] && kill -0 "$build" 2>/dev/null; then
        kill -TERM "$build" 2>/dev/null || true
    fi
    if [ -z "$work" ]; then
        exit "$status"
    fi
    if [ -n "$driver" ] && kill -0 "$driver" 2>/dev/null; then
        kill -TERM "$driver" 2>/dev/null || true
        for _ in $(seq 1 100); do
            kill -0 "$driver" 2>/dev/null || break
            sleep 0.1
        done
        kill -KILL "$driver" 2>/dev/null || true
    fi
    # Servers the driver started and could not reap (it was killed): by PID, and only while the
    # PID is still one of ours (its command line names this run's directory).
    if [ -f "$work/pids" ]; then
        while read -r pid; do
            if [ -r "/proc/$pid/cmdline" ] && tr '\0' ' ' <"/proc/$pid/cmdline" | grep -qF -- "$work/"; then
                kill -KILL "$pid" 2>/dev/null || true
            fi
        done <"$work/pids"
    fi
    if [ "$status" -eq 0 ]; then
        rm -rf "$work"
    else
        echo "soak: exit status $status; server logs and KV files kept in $work" >&2
    fi
    exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

echo "== soak $duration: build (cargo profile $profile, with debug assertions)"
cargo build --profile "$profile" --locked -p rmq-namesrv -p rmq-bench --bin rmq-namesrv --bin rmq-soak &
build=$!
wait "$build"
build=""

work="$(mktemp -d "${TMPDIR:-/tmp}/rmq-soak.XXXXXX")"
"$bin/rmq-soak" --server "$bin/rmq-namesrv" --dir "$work" --duration "$duration" "$@" &
driver=$!
wait "$driver"
