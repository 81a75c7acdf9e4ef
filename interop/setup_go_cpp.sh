#!/usr/bin/env bash
# Installs/builds the Go-client and C++-client interop peers into interop/.cache/.
# Idempotent: re-running checks what is there and only redoes what is missing.
#
#   Go peer : interop/go (module pinned in go.mod/go.sum)
#             -> interop/.cache/go/bin/rmq-go-peer
#             module and build caches in interop/.cache/go/{mod,build}
#   C++ peer: PyPI rocketmq==0.4.4 (wheel bundling librocketmq.so of
#             rocketmq-client-cpp), hash-pinned in interop/cpp/requirements.txt
#             -> venv interop/.cache/cpp-venv, run interop/cpp/peer.py with it
#
# Needs: go >= 1.22 on PATH (GOTOOLCHAIN=local: no toolchain download),
#        python3 >= 3.7 with venv, Linux x86_64; reaches the Go module proxy
#        and PyPI through their ordinary clients.
# Usage: interop/setup_go_cpp.sh [--go-only|--cpp-only]
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
CACHE="$HERE/.cache"
GO_SRC="$HERE/go"
GO_BIN="$CACHE/go/bin/rmq-go-peer"
VENV="$CACHE/cpp-venv"
CPP_REQ="$HERE/cpp/requirements.txt"
ROCKETMQ_PY_VERSION="0.4.4"
GO_CLIENT_MODULE="github.com/apache/rocketmq-client-go/v2"

do_go=1
do_cpp=1
case "${1:-}" in
  --go-only) do_cpp=0 ;;
  --cpp-only) do_go=0 ;;
  "") ;;
  *) echo "usage: $0 [--go-only|--cpp-only]" >&2; exit 2 ;;
esac

log() { printf '[setup_go_cpp] %s\n' "$*"; }
mkdir -p "$CACHE"

setup_go() {
  if ! command -v go >/dev/null 2>&1; then
    log "ERROR: 'go' not found on PATH (need Go >= 1.22)"; return 1
  fi
  local gov
  gov="$(go env GOVERSION 2>/dev/null || go version | awk '{print $3}')"
  local minor
  minor="$(printf '%s' "$gov" | sed -E 's/^go1\.([0-9]+).*/\1/')"
  if ! [[ "$minor" =~ ^[0-9]+$ ]] || (( minor < 22 )); then
    log "ERROR: Go $gov is too old (need >= 1.22)"; return 1
  fi
  export GOMODCACHE="$CACHE/go/mod"
  export GOCACHE="$CACHE/go/build"
  export GOFLAGS="-modcacherw -buildvcs=false"
  export GOTOOLCHAIN=local
  mkdir -p "$GOMODCACHE" "$GOCACHE" "$(dirname "$GO_BIN")"
  local pinned
  pinned="$(awk -v m="$GO_CLIENT_MODULE" '$1==m {print $2} $1=="require" && $2==m {print $3}' "$GO_SRC/go.mod" | head -n1)"
  log "Go: $gov; client module $GO_CLIENT_MODULE@$pinned (go.mod/go.sum, -mod=readonly)"
  local t0=$SECONDS
  (cd "$GO_SRC" && go mod download && go mod verify >/dev/null)
  log "Go: modules downloaded and verified against go.sum (cache: interop/.cache/go/mod)"
  (cd "$GO_SRC" && go build -mod=readonly -trimpath -o "$GO_BIN" .)
  log "Go: built interop/.cache/go/bin/rmq-go-peer in $((SECONDS - t0))s"
  "$GO_BIN" help >/dev/null
}

setup_cpp() {
  if [[ "$(uname -s)/$(uname -m)" != "Linux/x86_64" ]]; then
    log "ERROR: the rocketmq $ROCKETMQ_PY_VERSION wheel bundles librocketmq.so for Linux x86_64 only"; return 1
  fi
  local py="${PYTHON:-python3}"
  if [[ -x "$VENV/bin/python" ]] && "$VENV/bin/python" -c 'import sys' 2>/dev/null; then
    log "C++: venv interop/.cache/cpp-venv exists ($("$VENV/bin/python" --version 2>&1))"
  else
    rm -rf "$VENV"
    if ! "$py" -m venv "$VENV" 2>/dev/null; then
      if command -v apt-get >/dev/null 2>&1 && [[ "$(id -u)" == 0 ]]; then
        log "C++: '$py -m venv' failed; installing Debian's python3-venv"
        apt-get install -y python3-venv >/dev/null
        rm -rf "$VENV"; "$py" -m venv "$VENV"
      else
        log "ERROR: '$py -m venv' failed"; return 1
      fi
    fi
    log "C++: created venv interop/.cache/cpp-venv ($("$VENV/bin/python" --version 2>&1))"
  fi
  local have
  have="$("$VENV/bin/python" -c 'import importlib.metadata as m; print(m.version("rocketmq"))' 2>/dev/null || true)"
  if [[ "$have" == "$ROCKETMQ_PY_VERSION" ]]; then
    log "C++: rocketmq $have already installed"
  else
    log "C++: installing rocketmq==$ROCKETMQ_PY_VERSION (hash-pinned wheel) from PyPI"
    "$VENV/bin/python" -m pip install --disable-pip-version-check -q \
      --only-binary=:all: --require-hashes -r "$CPP_REQ"
  fi
  # The wheel is a ctypes binding: check that the bundled library loads here.
  INTEROP_DIR="$HERE" "$VENV/bin/python" - <<'PY'
import os, rocketmq.ffi as f
lib = f._DYLIB_PATH
print("[setup_go_cpp] C++: librocketmq loads: interop/%s (%d bytes, bundled in the wheel)" % (
    os.path.relpath(lib, os.environ["INTEROP_DIR"]), os.path.getsize(lib)))
PY
}

rc=0
if (( do_go )); then setup_go || rc=1; fi
if (( do_cpp )); then setup_cpp || rc=1; fi

if (( rc == 0 )); then
  log "done. Peers (each prints one JSON result line; exit 0 = success):"
  (( do_go )) && log "  interop/.cache/go/bin/rmq-go-peer produce|consume|route --namesrv 'a;b' --topic T ..."
  (( do_cpp )) && log "  interop/.cache/cpp-venv/bin/python interop/cpp/peer.py produce|consume|route --namesrv 'a;b' --topic T ..."
else
  log "FAILED (see messages above)"
fi
exit $rc
