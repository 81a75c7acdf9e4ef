#!/usr/bin/env bash
# Long fuzzing runs, one target at a time (see fuzz/README.md).
#
#   fuzz/run-long.sh [--per-target] [--merge] [--record] DURATION [TARGET...]
#
# DURATION (90, 90s, 20m, 1h, 1h30m) is the TOTAL time, split equally across the targets:
# `fuzz/run-long.sh 1h` ends after about an hour. With --per-target it is each target's time
# instead (`--per-target 1h` over nine targets takes nine hours). TARGETs default to all.
#
# New inputs accumulate in fuzz/target/corpus-long/<target>/ from one run to the next (the
# committed corpus fuzz/corpus/<target>/ is read, not written). --merge then rewrites the committed
# corpus as the seeds plus a smallest set of inputs covering every edge reached (fuzz/minimize.sh).
# Logs are in fuzz/target/logs-long/.
#
# At the end it prints what ran as rows of the run log of fuzz/RESULTS.md; --record appends them
# there. Exits non-zero if any target found a crash, timeout, out-of-memory or hang (inputs in
# fuzz/artifacts/<target>/). Run it niced on a shared machine: `nice -n 10 fuzz/run-long.sh 1h`.
set -euo pipefail
source "$(dirname "$0")/common.sh"

usage() {
  echo "usage: fuzz/run-long.sh [--per-target] [--merge] [--record] DURATION [TARGET...]" >&2
  exit 2
}

per_target=0
merge=0
record=0
while [[ $# -gt 0 ]]; do
  case "$1" in
    --per-target) per_target=1; shift ;;
    --merge) merge=1; shift ;;
    --record) record=1; shift ;;
    -h|--help) usage ;;
    -*) usage ;;
    *) break ;;
  esac
done
[[ $# -ge 1 ]] || usage
total="$(fuzz_seconds "$1")" || usage
shift
targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=("${FUZZ_TARGETS[@]}")
for target in "${targets[@]}"; do
  if [[ " ${FUZZ_TARGETS[*]} " != *" $target "* ]]; then
    echo "unknown target '$target' (targets: ${FUZZ_TARGETS[*]})" >&2
    exit 2
  fi
done
if [[ "$per_target" -eq 1 ]]; then
  each="$total"
else
  each=$((total / ${#targets[@]}))
fi
[[ "$each" -ge 1 ]] || { echo "DURATION is too short for ${#targets[@]} targets" >&2; exit 2; }

fuzz_tools
fuzz_build

# What the rows name: the day and the commit fuzzed (+ when the tree had changes). Read only:
# GIT_OPTIONAL_LOCKS=0 keeps `git status` from refreshing the index.
day="$(date -u +%Y-%m-%d)"
commit="$(git -C "$FUZZ_DIR" rev-parse --short HEAD 2>/dev/null || echo '?')"
if [[ -n "$(GIT_OPTIONAL_LOCKS=0 git -C "$FUZZ_DIR/.." status --porcelain --untracked-files=no 2>/dev/null)" ]]; then
  commit="$commit+"
fi

echo "== fuzzing ${#targets[@]} targets, ${each}s each"
summary=()
rows=()
failed=()
start=$SECONDS
for target in "${targets[@]}"; do
  if ! fuzz_run "$target" "$each" "$FUZZ_DIR/target/corpus-long/$target" \
    "$FUZZ_DIR/target/logs-long/$target.log"; then
    failed+=("$target")
  fi
  summary+=("$FUZZ_LINE")
  rows+=("| $day | $commit | $target | $each | $FUZZ_EXECS | $FUZZ_CORPUS | $FUZZ_VERDICT |")
done

if [[ "$merge" -eq 1 ]]; then
  echo "== minimizing the committed corpora with what the runs found"
  for target in "${targets[@]}"; do
    fuzz_minimize "$target" "$FUZZ_DIR/target/corpus-long/$target" || true
  done
  echo "committed corpus: $(fuzz_corpus_bytes) bytes in all (keep it under 2 MB)"
fi

echo
echo "== summary ($((SECONDS - start)) s)"
printf '%s\n' "${summary[@]}"
echo
echo "== rows for the run log of fuzz/RESULTS.md"
printf '%s\n' "${rows[@]}"
if [[ "$record" -eq 1 ]]; then
  printf '%s\n' "${rows[@]}" >>"$FUZZ_DIR/RESULTS.md"
  echo "(appended to fuzz/RESULTS.md; update its totals table)"
fi
if [[ ${#failed[@]} -gt 0 ]]; then
  echo "FINDINGS in: ${failed[*]} (inputs in fuzz/artifacts/; logs in fuzz/target/logs-long/)" >&2
  exit 1
fi
