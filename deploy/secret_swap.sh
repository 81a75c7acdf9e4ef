#!/usr/bin/env bash
# Checks that the server takes a renewed certificate the way the kubelet delivers it into a
# Secret volume (deploy/README.md): the files are symlinks through `..data`, which points at a
# timestamped directory; an update writes a new directory and renames a new `..data` symlink over
# the old one, then deletes the old directory. No file the configuration names is ever written.
#
#   deploy/secret_swap.sh --binary target/release/rmq-namesrv
#
# Runs the binary (tls.mode enforcing, cert_path/key_path in the Secret-like directory, as the
# chart configures them) in a loopback-only network namespace (`unshare -n`), swaps the
# certificate as the kubelet does, and checks that the certificate served to new connections
# changes within 5 s; then stops the server by its PID. About 2 s. Needs openssl, unshare, ip,
# root. Exit: 0 passed, 1 failed, 2 usage.
set -euo pipefail
cd "$(dirname "$0")/.."

binary=""
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) [ $# -ge 2 ] || { echo "usage: deploy/secret_swap.sh --binary PATH" >&2; exit 2; }
      binary="$2"; shift 2 ;;
    *) echo "usage: deploy/secret_swap.sh --binary PATH" >&2; exit 2 ;;
  esac
done
[ -x "$binary" ] || { echo "deploy/secret_swap.sh: --binary PATH (a built rmq-namesrv) is required" >&2; exit 2; }
binary="$(cd "$(dirname "$binary")" && pwd)/$(basename "$binary")"
for tool in openssl unshare ip; do
  command -v "$tool" >/dev/null 2>&1 || { echo "deploy/secret_swap.sh: '$tool' is not installed" >&2; exit 2; }
done

work="$(mktemp -d)"
trap 'rm -rf "$work"' EXIT
for name in first renewed; do
  openssl req -x509 -newkey rsa:2048 -nodes -days 2 -subj "/CN=$name" \
    -keyout "$work/$name.key" -out "$work/$name.pem" 2>/dev/null
done
# The kubelet's layout of a kubernetes.io/tls Secret volume.
secret="$work/secret"
mkdir -p "$secret/..2026_01_01_00_00_00.1"
cp "$work/first.pem" "$secret/..2026_01_01_00_00_00.1/tls.crt"
cp "$work/first.key" "$secret/..2026_01_01_00_00_00.1/tls.key"
ln -s ..2026_01_01_00_00_00.1 "$secret/..data"
ln -s ..data/tls.crt "$secret/tls.crt"
ln -s ..data/tls.key "$secret/tls.key"
printf '[tls]\nmode = "enforcing"\ncert_path = "%s/tls.crt"\nkey_path = "%s/tls.key"\n' \
  "$secret" "$secret" > "$work/config.toml"

echo "== deploy/secret_swap.sh"
status=0
BINARY="$binary" WORK="$work" SECRET="$secret" timeout 60 unshare -n bash -s <<'EOF' || status=$?
set -euo pipefail
ip link set lo up
HOME="$WORK" "$BINARY" --config "$WORK/config.toml" --listen 127.0.0.1:9876 > "$WORK/out" 2> "$WORK/err" &
pid=$!
trap 'kill "$pid" 2>/dev/null || true' EXIT
for _ in $(seq 100); do grep -q "listening on" "$WORK/out" && break; sleep 0.1; done
served() {
  openssl s_client -connect 127.0.0.1:9876 < /dev/null 2>/dev/null | openssl x509 -noout -subject 2>/dev/null
}
before="$(served)"
[[ "$before" == *"CN = first"* ]] || { echo "serves '$before', not the first certificate"; cat "$WORK/err"; exit 1; }
# The kubelet's update: a new directory, ..data renamed over, the old directory removed.
cd "$SECRET"
mkdir ..2026_01_02_00_00_00.2
cp "$WORK/renewed.pem" ..2026_01_02_00_00_00.2/tls.crt
cp "$WORK/renewed.key" ..2026_01_02_00_00_00.2/tls.key
ln -s ..2026_01_02_00_00_00.2 ..data_tmp
mv -T ..data_tmp ..data
rm -rf ..2026_01_01_00_00_00.1
start=$(date +%s%N)
after=""
for _ in $(seq 50); do
  after="$(served)"
  [[ "$after" == *"CN = renewed"* ]] && break
  sleep 0.1
done
[[ "$after" == *"CN = renewed"* ]] || { echo "still serves '$after' 5 s after the swap"; cat "$WORK/err"; exit 1; }
echo "ok    a certificate swapped through ..data is served $((($(date +%s%N) - start) / 1000000)) ms after the swap"
kill -TERM "$pid"
wait "$pid"
EOF
if [ "$status" -ne 0 ]; then
  echo "deploy/secret_swap.sh: FAILED" >&2
  exit 1
fi
