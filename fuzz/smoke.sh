#!/usr/bin/env bash
# CI's fuzz smoke run: builds every target, then fuzzes each for SECONDS (default 20), one at a
# time, from the committed corpus fuzz/corpus/<target>/ (read only; new inputs go to a scratch
# directory that is removed at the end). Exits non-zero on any crash, timeout, out-of-memory or
# hang; the input is then in fuzz/artifacts/<target>/ (see fuzz/README.md). Installs cargo-fuzz
# if it is missing; needs the nightly toolchain.
#
#   fuzz/smoke.sh [SECONDS_PER_TARGET]
#
# Bounded: each fuzzer stops by itself after SECONDS and is killed 5 s later if it has not, so
# ten targets at 20 s take 3.5 minutes and at most 4.5, plus the build.
set -euo pipefail
source "$(dirname "$0")/common.sh"

seconds="${1:-20}"
if ! [[ "$seconds" =~ ^[0-9]+$ ]] || [[ "$seconds" -lt 1 ]]; then
  echo "usage: fuzz/smoke.sh [SECONDS_PER_TARGET]" >&2
  exit 2
fi

fuzz_tools
fuzz_build

scratch="$(mktemp -d "${TMPDIR:-/tmp}/rmq-fuzz-smoke.XXXXXX")"
cleanup() { rm -rf "$scratch"; }
trap cleanup EXIT

echo "== fuzz smoke: ${#FUZZ_TARGETS[@]} targets, ${seconds}s each"
start=$SECONDS
failed=()
for target in "${FUZZ_TARGETS[@]}"; do
  if ! fuzz_run "$target" "$seconds" "$scratch/corpus/$target" "$scratch/logs/$target.log"; then
    failed+=("$target")
  fi
done
echo "== fuzz smoke: $((SECONDS - start)) s"
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "fuzz smoke FAILED: ${failed[*]} (inputs in fuzz/artifacts/; see fuzz/README.md)" >&2
  exit 1
fi
