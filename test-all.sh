#!/usr/bin/env bash
# The whole test suite: unit and integration tests of every crate (real server over TCP on
# 127.0.0.1), then the interop suite against real RocketMQ peers (Java brokers, clients and admin
# from Maven Central, the Go client, the C++ client, the official Java NameServer), which
# installs them into interop/.cache/ on first use.
set -euo pipefail
cd "$(dirname "$0")"

echo "== cargo test (workspace)"
cargo test --workspace --locked
# Chaos and soak, short: faults injected, nothing may be lost (bench/SOAK.md). On the debug build
# cargo test just made, so no second optimized build is needed for it.
SOAK_PROFILE=dev bench/soak.sh 60s

echo "== release build for the interop suite"
cargo build --release --locked

# contrib/: alert rules (promtool), dashboard queries against the exported metrics, systemd unit.
contrib/check.sh --binary target/release/rmq-namesrv

echo "== interop peers (cached in interop/.cache/)"
interop/setup.sh

echo "== interop suite"
python3 interop/run.py
