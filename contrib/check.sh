#!/usr/bin/env bash
# Checks everything in contrib/ (contrib/README.md); a few seconds. Run by test-all.sh.
#   1. Prometheus: `promtool check rules` on the alert rules, `promtool test rules` on their unit
#      tests, `promtool check config` on the scrape example.
#   2. Queries: every metric name and label the Grafana dashboard and the alert rules use is one
#      the server exports (contrib/check_queries.py); the dashboard queries parse as PromQL.
#      The exported names come from docs/metrics.md, or from --metrics-file FILE (a saved
#      scrape or a list of names), or from a live server: --metrics-url http://HOST:PORT/metrics.
#   3. systemd: `systemd-analyze verify` on the unit when it is installed (any warning fails),
#      else a syntax check; the unit's required settings; its stop timeout covers the example
#      configuration's drain.
#   4. With --binary PATH (a built rmq-namesrv): the example configuration is accepted.
# Needs python3 and promtool (Debian/Ubuntu: apt-get install -y --no-install-recommends prometheus).
# Exit status: 0 all passed, 1 a check failed, 2 usage or a missing tool.
set -euo pipefail
cd "$(dirname "$0")/.."

usage() {
  sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'
  echo "usage: contrib/check.sh [--metrics-file FILE | --metrics-url URL] [--binary PATH]"
}

source_args=()
binary=""
while [ $# -gt 0 ]; do
  case "$1" in
    --metrics-file|--metrics-url)
      [ $# -ge 2 ] || { usage >&2; exit 2; }
      source_args=("$1" "$2"); shift 2 ;;
    --binary)
      [ $# -ge 2 ] || { usage >&2; exit 2; }
      binary="$2"; shift 2 ;;
    -h|--help) usage; exit 0 ;;
    *) echo "contrib/check.sh: unknown argument '$1'" >&2; usage >&2; exit 2 ;;
  esac
done

for tool in python3 promtool; do
  if ! command -v "$tool" >/dev/null 2>&1; then
    echo "contrib/check.sh: '$tool' is not installed." >&2
    [ "$tool" = promtool ] && echo "  promtool comes with the Prometheus server package: apt-get install -y --no-install-recommends prometheus" >&2
    exit 2
  fi
done

failed=()
# run NAME COMMAND...: runs a check (a command bounded by timeout, or a function of this
# script that bounds its own commands), prints its output on failure only.
run() {
  local name="$1" out
  shift
  local bound=(timeout 120)
  if declare -F "$1" >/dev/null; then bound=(); fi
  if out=$(${bound[@]+"${bound[@]}"} "$@" 2>&1); then
    echo "ok    $name"
  else
    echo "FAIL  $name" >&2
    printf '%s\n' "$out" | sed 's/^/      /' >&2
    failed+=("$name")
  fi
}

echo "== contrib/check.sh"
run "promtool check rules contrib/prometheus/alerts.yml" promtool check rules contrib/prometheus/alerts.yml
run "promtool test rules contrib/prometheus/alerts_test.yml" promtool test rules contrib/prometheus/alerts_test.yml
run "promtool check config contrib/prometheus/prometheus.yml" promtool check config contrib/prometheus/prometheus.yml

if out=$(timeout 60 python3 contrib/check_queries.py --promtool "$(command -v promtool)" ${source_args[@]+"${source_args[@]}"} 2>&1); then
  echo "ok    dashboard and alert queries use exported metrics"
  printf '%s\n' "$out" | sed 's/^/      /'
else
  echo "FAIL  dashboard and alert queries use exported metrics" >&2
  printf '%s\n' "$out" | sed 's/^/      /' >&2
  failed+=("queries")
fi

# The unit names /usr/local/bin/rmq-namesrv, which need not exist here: verify a copy whose
# ExecStart points at a stub of that name (systemd-analyze checks the command is executable).
verify_unit() {
  local tmp out status=0
  tmp=$(mktemp -d)
  printf '#!/bin/sh\nexit 0\n' > "$tmp/rmq-namesrv"
  chmod +x "$tmp/rmq-namesrv"
  sed "s#/usr/local/bin/rmq-namesrv#$tmp/rmq-namesrv#g" contrib/systemd/rmq-namesrv.service > "$tmp/rmq-namesrv.service"
  # It exits 0 on unknown keys and bad values and only prints them: any output is a failure.
  out=$(SYSTEMD_LOG_LEVEL=warning timeout 30 systemd-analyze verify "$tmp/rmq-namesrv.service" 2>&1) || status=$?
  if [ "$status" -ne 0 ] || [ -n "$out" ]; then
    printf '%s\n' "$out" | sed "s#$tmp/rmq-namesrv.service#contrib/systemd/rmq-namesrv.service#g"
  fi
  rm -rf "$tmp"
  [ "$status" -eq 0 ] && [ -z "$out" ]
}
if command -v systemd-analyze >/dev/null 2>&1; then
  run "systemd-analyze verify contrib/systemd/rmq-namesrv.service" verify_unit
else
  echo "skip  systemd-analyze verify (systemd-analyze not installed; syntax checked below)"
fi

run "systemd unit settings and example configuration" python3 - <<'EOF'
import re, sys
unit_path = "contrib/systemd/rmq-namesrv.service"
config_path = "contrib/systemd/config.toml"
problems = []
sections, section = {}, None
for n, line in enumerate(open(unit_path, encoding="utf-8"), 1):
    line = line.rstrip("\n")
    if not line.strip() or line.lstrip().startswith(("#", ";")):
        continue
    m = re.fullmatch(r"\[(\w+)\]", line)
    if m:
        section = m.group(1)
        if section not in ("Unit", "Service", "Install"):
            problems.append(f"{unit_path}:{n}: unexpected section [{section}]")
        sections.setdefault(section, {})
        continue
    m = re.fullmatch(r"([A-Z][A-Za-z0-9]*)=(.*)", line)
    if not m or section is None:
        problems.append(f"{unit_path}:{n}: not 'Key=value' in a section: {line!r}")
        continue
    sections[section].setdefault(m.group(1), []).append(m.group(2))
service = sections.get("Service", {})
def last(key):
    return service.get(key, [None])[-1]
required = {
    "Type": "notify", "NotifyAccess": "main", "Restart": "on-failure", "KillSignal": "SIGTERM",
    "NoNewPrivileges": "yes", "ProtectSystem": "strict", "ProtectHome": "yes", "PrivateTmp": "yes",
    "PrivateDevices": "yes", "ProtectKernelTunables": "yes", "ProtectKernelModules": "yes",
    "ProtectKernelLogs": "yes", "ProtectControlGroups": "yes", "RestrictNamespaces": "yes",
    "RestrictRealtime": "yes", "LockPersonality": "yes", "MemoryDenyWriteExecute": "yes",
    "RestrictAddressFamilies": "AF_INET AF_INET6 AF_UNIX", "CapabilityBoundingSet": "",
    "StateDirectory": "rmq-namesrv",
}
for key, value in required.items():
    if last(key) != value:
        problems.append(f"{unit_path}: [Service] {key}={value} expected, found {last(key)!r}")
if "@system-service" not in (service.get("SystemCallFilter") or [""])[0]:
    problems.append(f"{unit_path}: SystemCallFilter=@system-service expected")
if last("DynamicUser") != "yes" and not last("User"):
    problems.append(f"{unit_path}: neither DynamicUser=yes nor User=")
exec_start = last("ExecStart") or ""
if not re.match(r"/\S+/rmq-namesrv --config /etc/rmq-namesrv/config\.toml$", exec_start):
    problems.append(f"{unit_path}: ExecStart should run rmq-namesrv --config /etc/rmq-namesrv/config.toml, is {exec_start!r}")
if int(last("LimitNOFILE") or 0) < 65536:
    problems.append(f"{unit_path}: LimitNOFILE below server.max_connections (65536)")
if "WantedBy" not in sections.get("Install", {}):
    problems.append(f"{unit_path}: no [Install] WantedBy=")

def seconds(text):
    m = re.fullmatch(r"(\d+)\s*(ms|s|min|m)?", text.strip())
    if not m:
        raise ValueError(text)
    return int(m.group(1)) * {"ms": 0.001, None: 1, "s": 1, "m": 60, "min": 60}[m.group(2)]
try:
    import tomllib
except ImportError:  # Python < 3.11: the timeout check is skipped, the rest stands
    tomllib = None
if tomllib is not None:
    with open(config_path, "rb") as f:
        config = tomllib.load(f)
    server = config.get("server", {})
    drain = seconds(server.get("shutdown_wait", "30s")) if server.get("shutdown_gracefully") else 0
    drain += seconds(server.get("shutdown_grace", "5s"))
    if seconds(last("TimeoutStopSec") or "90s") <= drain:
        problems.append(f"{unit_path}: TimeoutStopSec={last('TimeoutStopSec')} does not cover "
                        f"{config_path}'s shutdown_wait + shutdown_grace ({drain:g} s)")
    state = "/var/lib/rmq-namesrv/"
    for key in ("path", "config_store_path"):
        value = config.get("kv", {}).get(key, "")
        if not value.startswith(state):
            problems.append(f"{config_path}: kv.{key} = {value!r} is outside the unit's StateDirectory {state}")
for p in problems:
    print(p)
sys.exit(1 if problems else 0)
EOF

if [ -n "$binary" ]; then
  check_config() {
    local out
    out=$(timeout 30 "$binary" --config contrib/systemd/config.toml --print-config 2>&1) || { printf '%s\n' "$out"; return 1; }
    grep -q '/var/lib/rmq-namesrv/kvConfig.json' <<<"$out" || { echo "kv.path not taken:"; printf '%s\n' "$out"; return 1; }
  }
  run "$binary accepts contrib/systemd/config.toml" check_config
fi

if [ ${#failed[@]} -gt 0 ]; then
  echo "contrib/check.sh: ${#failed[@]} check(s) failed: ${failed[*]}" >&2
  exit 1
fi
echo "contrib/check.sh: all checks passed"
