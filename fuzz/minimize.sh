#!/usr/bin/env bash
# Shrinks the committed corpora fuzz/corpus/<target>/ to the seeds plus a smallest set of inputs
# covering every edge they and the long runs' scratch corpora (fuzz/target/corpus-long/) reach.
# Run it after fuzzing and before committing a corpus (run-long.sh --merge does). Needs built
# targets (fuzz/smoke.sh or `cargo +nightly fuzz build`) and python3.
#
#   fuzz/minimize.sh [TARGET...]
set -euo pipefail
source "$(dirname "$0")/common.sh"

targets=("$@")
[[ ${#targets[@]} -gt 0 ]] || targets=("${FUZZ_TARGETS[@]}")
failed=0
for target in "${targets[@]}"; do
  if [[ " ${FUZZ_TARGETS[*]} " != *" $target "* ]]; then
    echo "unknown target '$target' (targets: ${FUZZ_TARGETS[*]})" >&2
    exit 2
  fi
  fuzz_minimize "$target" "$FUZZ_DIR/target/corpus-long/$target" || failed=1
done
echo "committed corpus: $(fuzz_corpus_bytes) bytes in all (keep it under 2 MB)"
exit "$failed"
