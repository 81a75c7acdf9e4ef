# Shared by fuzz/smoke.sh and fuzz/run-long.sh (sourced, not run). See fuzz/README.md.
#
# Every fuzzer runs with the limits that make slow or memory-hungry inputs findings:
#   -timeout         seconds one input may take (inputs are at most -max_len bytes and every
#                    decoder is linear, so anything near this is a super-linear path);
#   -rss_limit_mb    the process's resident memory, ASan's own included;
#   -malloc_limit_mb the largest single allocation (a frame's 16 MiB buffer is the largest legal);
#   -max_len         inputs up to 64 KiB (a PROXY v2 header is up to 65,551 bytes).
# Each run is also bounded from outside: killed FUZZ_GRACE seconds after its time is up.

FUZZ_DIR="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
FUZZ_TIMEOUT="${FUZZ_TIMEOUT:-10}"
FUZZ_GRACE="${FUZZ_GRACE:-5}"
FUZZ_RSS_LIMIT_MB="${FUZZ_RSS_LIMIT_MB:-2048}"
FUZZ_MALLOC_LIMIT_MB="${FUZZ_MALLOC_LIMIT_MB:-256}"
FUZZ_TRIPLE="$(rustc +nightly -vV 2>/dev/null | sed -n 's/^host: //p')"
FUZZ_TRIPLE="${FUZZ_TRIPLE:-x86_64-unknown-linux-gnu}"
FUZZ_BIN_DIR="$FUZZ_DIR/target/$FUZZ_TRIPLE/release"

# Every target, in the order they run.
FUZZ_TARGETS=(
  frame_stream
  json_header
  binary_header
  typed_headers
  register_body
  register_body_compressed
  json_bodies
  java_properties
  proxy_header
  acl_file
  controller_requests
  http_head
)

fuzz_max_len() {
  case "$1" in
    proxy_header) echo 65600 ;;
    *) echo 65536 ;;
  esac
}

# Seconds of a duration: 90, 90s, 20m, 1h, 1h30m.
fuzz_seconds() {
  local text="$1" total=0 number unit
  if [[ "$text" =~ ^[0-9]+$ ]]; then
    echo "$text"
    return
  fi
  [[ -n "$text" ]] || { echo "empty duration" >&2; return 1; }
  while [[ -n "$text" ]]; do
    if [[ "$text" =~ ^([0-9]+)([smh])(.*)$ ]]; then
      number="${BASH_REMATCH[1]}"
      unit="${BASH_REMATCH[2]}"
      text="${BASH_REMATCH[3]}"
      case "$unit" in
        s) total=$((total + number)) ;;
        m) total=$((total + number * 60)) ;;
        h) total=$((total + number * 3600)) ;;
      esac
    else
      echo "bad duration '$1' (examples: 90, 90s, 20m, 1h, 1h30m)" >&2
      return 1
    fi
  done
  echo "$total"
}

# Checks the nightly toolchain (never installed here: CI machines cannot download toolchains)
# and installs cargo-fuzz when it is missing.
fuzz_tools() {
  if ! rustc +nightly --version >/dev/null 2>&1; then
    echo "fuzz: the nightly toolchain is not installed (cargo-fuzz needs it)" >&2
    return 1
  fi
  if ! cargo +nightly fuzz --version >/dev/null 2>&1; then
    echo "== installing cargo-fuzz"
    cargo install cargo-fuzz --locked
  fi
}

# Builds every target: release, debug assertions and overflow checks on, AddressSanitizer.
fuzz_build() {
  echo "== cargo +nightly fuzz build"
  (cd "$FUZZ_DIR" && cargo +nightly fuzz build)
}

# The fuzzer running now, killed (it and only it) when the script is interrupted.
FUZZ_CHILD=""
fuzz_on_signal() {
  if [[ -n "$FUZZ_CHILD" ]]; then
    kill -TERM "$FUZZ_CHILD" 2>/dev/null || true
  fi
  exit 130
}
trap fuzz_on_signal INT TERM

# fuzz_run TARGET SECONDS WORK_CORPUS LOG: fuzzes TARGET for SECONDS from the committed corpus
# fuzz/corpus/TARGET (read, never written) and WORK_CORPUS (where new inputs go). Bounded: killed
# FUZZ_GRACE seconds after its time. Prints one summary line; leaves it in FUZZ_LINE and the
# figures in FUZZ_EXECS, FUZZ_CORPUS and FUZZ_VERDICT. Returns non-zero on any finding, the input
# then in fuzz/artifacts/TARGET/.
fuzz_run() {
  local target="$1" seconds="$2" work="$3" log="$4"
  local bin="$FUZZ_BIN_DIR/$target" dict="$FUZZ_DIR/dict/$target.dict"
  local corpus="$FUZZ_DIR/corpus/$target" artifacts="$FUZZ_DIR/artifacts/$target"
  mkdir -p "$work" "$artifacts" "$corpus" "$(dirname "$log")"
  local args=(
    "-max_total_time=$seconds"
    "-timeout=$FUZZ_TIMEOUT"
    "-rss_limit_mb=$FUZZ_RSS_LIMIT_MB"
    "-malloc_limit_mb=$FUZZ_MALLOC_LIMIT_MB"
    "-max_len=$(fuzz_max_len "$target")"
    "-artifact_prefix=$artifacts/"
    "-print_final_stats=1"
  )
  if [[ -f "$dict" ]]; then
    args+=("-dict=$dict")
  fi
  # http_head runs a whole server on threads of its own, whose allocations outlive each input
  # and the fuzzer: neither libFuzzer's per-input leak check nor LeakSanitizer's at exit apply.
  local asan="${ASAN_OPTIONS:-}"
  if [[ "$target" == http_head ]]; then
    args+=("-detect_leaks=0")
    asan="${asan:+$asan:}detect_leaks=0"
  fi
  local rc=0
  ASAN_OPTIONS="$asan" timeout --kill-after=2 $((seconds + FUZZ_GRACE)) "$bin" "${args[@]}" "$work" "$corpus" >"$log" 2>&1 &
  FUZZ_CHILD=$!
  wait "$FUZZ_CHILD" || rc=$?
  FUZZ_CHILD=""
  FUZZ_EXECS="$(sed -n 's/^stat::number_of_executed_units: *//p' "$log" | tail -n 1)"
  FUZZ_EXECS="${FUZZ_EXECS:-?}"
  # The last status line: "#N ... corp: FILES/SIZE ...".
  FUZZ_CORPUS="$(grep -o 'corp: [0-9]*/[0-9A-Za-z]*' "$log" | tail -n 1 | cut -d' ' -f2)"
  FUZZ_CORPUS="${FUZZ_CORPUS:-?}"
  FUZZ_VERDICT="ok"
  if [[ "$rc" -ne 0 ]]; then
    if grep -q 'ERROR: libFuzzer: timeout' "$log"; then
      FUZZ_VERDICT="TIMEOUT"
    elif grep -q -e 'out-of-memory' -e 'malloc(.*) exceeds limit' "$log"; then
      FUZZ_VERDICT="OUT OF MEMORY"
    elif [[ "$rc" -eq 124 || "$rc" -eq 137 ]]; then
      FUZZ_VERDICT="HUNG (killed ${FUZZ_GRACE}s after its time)"
    else
      FUZZ_VERDICT="CRASH (exit $rc)"
    fi
  fi
  FUZZ_LINE="$(printf '%-26s %6ss  execs %12s  corpus %-14s %s' "$target" "$seconds" "$FUZZ_EXECS" "$FUZZ_CORPUS" "$FUZZ_VERDICT")"
  echo "$FUZZ_LINE"
  if [[ "$rc" -ne 0 ]]; then
    echo "---- $target: last lines of $log" >&2
    tail -n 40 "$log" >&2
    local artifact
    artifact="$(sed -n 's/.*Test unit written to \(.*\)$/\1/p' "$log" | tail -n 1)"
    if [[ -n "$artifact" && -f "$artifact" ]]; then
      echo "---- input: $artifact ($(wc -c <"$artifact") bytes); reproduce: (cd fuzz && cargo +nightly fuzz run $target ${artifact#"$FUZZ_DIR"/})" >&2
    fi
    return 1
  fi
}

# fuzz_minimize TARGET [MORE_DIRS...]: rewrites the committed corpus fuzz/corpus/TARGET as the
# seeds of make_seeds.py (all kept) plus a smallest set of the inputs of the committed corpus and
# MORE_DIRS that covers every edge they reach beyond the seeds (libFuzzer -set_cover_merge, edges
# only: -use_counters=0). Keeps the committed corpus small; scratch corpora keep everything.
fuzz_minimize() {
  local target="$1"
  shift
  local corpus="$FUZZ_DIR/corpus/$target" tmp rc=0
  tmp="$(mktemp -d "${TMPDIR:-/tmp}/rmq-fuzz-min.XXXXXX")"
  mkdir -p "$tmp/out" "$corpus"
  python3 "$FUZZ_DIR/make_seeds.py" --out "$tmp/seeds" >/dev/null
  if [[ -d "$tmp/seeds/$target" ]]; then
    cp -R "$tmp/seeds/$target/." "$tmp/out/"
  fi
  local dirs=("$corpus")
  local dir
  for dir in "$@"; do
    if [[ -d "$dir" ]]; then
      dirs+=("$dir")
    fi
  done
  "$FUZZ_BIN_DIR/$target" -set_cover_merge=1 -use_counters=0 \
    "-max_len=$(fuzz_max_len "$target")" "-timeout=$FUZZ_TIMEOUT" \
    "-rss_limit_mb=$FUZZ_RSS_LIMIT_MB" "-malloc_limit_mb=$FUZZ_MALLOC_LIMIT_MB" \
    "$tmp/out" "${dirs[@]}" >"$tmp/merge.log" 2>&1 || rc=$?
  if [[ "$rc" -eq 0 ]]; then
    find "$corpus" -maxdepth 1 -type f -delete
    cp -R "$tmp/out/." "$corpus/"
    printf '%-26s %5s files %8s bytes\n' "$target" "$(find "$corpus" -type f | wc -l)" \
      "$(cat "$corpus"/* | wc -c)"
  else
    echo "minimizing $target failed (exit $rc), its corpus is unchanged:" >&2
    tail -n 20 "$tmp/merge.log" >&2
  fi
  rm -rf "$tmp"
  return "$rc"
}

# Bytes in all committed corpora (what git stores, not disk blocks).
fuzz_corpus_bytes() {
  find "$FUZZ_DIR/corpus" -type f -exec cat {} + | wc -c
}
