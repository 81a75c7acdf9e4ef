#!/usr/bin/env bash
# Checks the Helm chart without a cluster (deploy/README.md). Run by test-all.sh.
#
#   deploy/check.sh [--binary target/release/rmq-namesrv]
#
# 1. helm, pinned (helm.sh/helm/v4 v4.3.2, v4.3.1 if that cannot be built), built from the Go
#    module proxy into deploy/.cache/bin/ once; deploy/k8scheck built from its go.mod/go.sum.
# 2. For the default values and for each deploy/helm/rmq-namesrv/ci/*.yaml (every option on):
#    `helm lint --strict`, `helm template`, then deploy/k8scheck decodes every rendered object
#    strictly into the Kubernetes API types (k8s.io/api; an unknown or misspelt field fails,
#    named by its path) and checks names, labels, selectors and references; then
#    deploy/check_chart.py checks ports, probes, metrics, drain timing, paths and the security
#    context against the server (its --print-config with --binary, else config.toml).
# 3. That the checks bite: a misspelt field, a probe path the server does not serve and a grace
#    period shorter than the drain must each be refused.
# helm and k8scheck are kept in deploy/.cache/bin/ (git-ignored), Go's module and build caches
# where Go keeps them (DEPLOY_GO_CACHE=DIR: under DIR); warm, a run takes seconds. Needs
# go >= 1.22 and python3 >= 3.11. Exit: 0 passed, 1 a check failed, 2 usage or a missing tool.
set -euo pipefail
cd "$(dirname "$0")/.."

binary=""
while [ $# -gt 0 ]; do
  case "$1" in
    --binary) [ $# -ge 2 ] || { echo "usage: deploy/check.sh [--binary PATH]" >&2; exit 2; }
      binary="$2"; shift 2 ;;
    -h|--help) awk 'NR > 1 && /^#/ { sub(/^# ?/, ""); print; next } NR > 1 { exit }' "$0"; exit 0 ;;
    *) echo "deploy/check.sh: unknown argument '$1'" >&2; exit 2 ;;
  esac
done
for tool in go python3; do
  command -v "$tool" >/dev/null 2>&1 || { echo "deploy/check.sh: '$tool' is not installed" >&2; exit 2; }
done
python3 -c 'import tomllib' 2>/dev/null || { echo "deploy/check.sh: python3 >= 3.11 (tomllib) needed" >&2; exit 2; }

CHART=deploy/helm/rmq-namesrv
CACHE="$PWD/deploy/.cache"
HELM_MODULE=helm.sh/helm/v4
HELM_VERSIONS=(v4.3.2 v4.3.1)
# The binaries go to deploy/.cache/bin. Go's module and build caches (about 2 GB for helm) are
# Go's own, shared by every checkout on the machine, so a fresh clone (CI) links helm from them in
# seconds; DEPLOY_GO_CACHE=DIR keeps them under DIR instead.
if [ -n "${DEPLOY_GO_CACHE:-}" ]; then
  export GOMODCACHE="$DEPLOY_GO_CACHE/mod" GOCACHE="$DEPLOY_GO_CACHE/build"
fi
export GOBIN="$CACHE/bin" GOFLAGS="-modcacherw -buildvcs=false" GOTOOLCHAIN=local CGO_ENABLED=0
mkdir -p "$GOBIN"
HELM="$GOBIN/helm"
K8SCHECK="$GOBIN/k8scheck"

echo "== deploy/check.sh"
t0=$SECONDS
# helm: the pinned version, built once. The build info says which module version a cached binary
# is (`helm version` says only "v4.3" for a `go install` build).
helm_version() {
  [ -x "$HELM" ] && go version -m "$HELM" 2>/dev/null | awk -v m="$HELM_MODULE" '$1 == "mod" && $2 == m { print $3 }' || true
}
have="$(helm_version)"
if [[ " ${HELM_VERSIONS[*]} " != *" $have "* ]]; then
  for v in "${HELM_VERSIONS[@]}"; do
    echo "building helm $v from the Go module proxy (once; cached in deploy/.cache/bin)"
    if timeout 1800 go install "$HELM_MODULE/cmd/helm@$v"; then break; fi
    echo "deploy/check.sh: building helm $v failed; trying the next pinned version" >&2
  done
  have="$(helm_version)"
  [[ " ${HELM_VERSIONS[*]} " == *" $have "* ]] || { echo "deploy/check.sh: no pinned helm could be built" >&2; exit 1; }
fi
(cd deploy/k8scheck && timeout 900 go build -mod=readonly -o "$K8SCHECK" .)
echo "tools: helm $have, k8scheck ($((SECONDS - t0)) s)"

failed=()
out="$(mktemp -d)"
trap 'rm -rf "$out"' EXIT
# run NAME COMMAND...: a bounded check; its output is shown (indented) on failure only.
run() {
  local name="$1" log
  shift
  if log=$(timeout 120 "$@" 2>&1); then
    echo "ok    $name"
    grep '^note:' <<<"$log" | sed 's/^/      /' || true
  else
    echo "FAIL  $name" >&2
    printf '%s\n' "$log" | sed 's/^/      /' >&2
    failed+=("$name")
  fi
}
# refuse NAME PATTERN COMMAND...: the command must fail, saying PATTERN.
refuse() {
  local name="$1" pattern="$2" log
  shift 2
  if log=$(timeout 120 "$@" 2>&1); then
    echo "FAIL  $name: accepted" >&2; failed+=("$name")
  elif grep -q -- "$pattern" <<<"$log"; then
    echo "ok    $name"
  else
    echo "FAIL  $name: refused, but not for '$pattern':" >&2
    printf '%s\n' "$log" | sed 's/^/      /' >&2
    failed+=("$name")
  fi
}
check_args=()
[ -n "$binary" ] && check_args=(--binary "$binary")

render_and_check() {
  local label="$1"
  shift
  local rendered="$out/$label.yaml" write=()
  # The default rendering's config.toml, as accepted, for the image's smoke test (test-all.sh).
  [ "$label" = defaults ] && write=(--write-config "$CACHE/chart-config.toml")
  run "helm lint --strict ($label)" "$HELM" lint --strict "$CHART" "$@"
  if ! timeout 60 "$HELM" template rmq-namesrv "$CHART" --namespace rocketmq "$@" > "$rendered" 2> "$out/err"; then
    echo "FAIL  helm template ($label)" >&2; sed 's/^/      /' "$out/err" >&2; failed+=("helm template ($label)")
    return
  fi
  echo "ok    helm template ($label): $(grep -c '^kind:' "$rendered") objects"
  run "k8scheck: strict decoding into k8s.io/api, references ($label)" \
    "$K8SCHECK" -facts "$out/$label.json" "$rendered"
  [ -s "$out/$label.json" ] || return 0
  run "check_chart.py: ports, probes, drain, paths, security ($label)" \
    python3 deploy/check_chart.py --facts "$out/$label.json" ${check_args[@]+"${check_args[@]}"} "${write[@]}"
}

render_and_check defaults
for values in "$CHART"/ci/*.yaml; do
  render_and_check "$(basename "$values" .yaml)" -f "$values"
done

# The oldest Kubernetes the chart declares (kubeVersion; the preStop sleep action needs 1.30).
run "helm template --kube-version 1.30.0 (the chart's minimum)" \
  "$HELM" template rmq-namesrv "$CHART" --kube-version 1.30.0 -f "$CHART/ci/all-on-values.yaml"
refuse "helm template refuses Kubernetes 1.29" "is incompatible with Kubernetes" \
  "$HELM" template rmq-namesrv "$CHART" --kube-version 1.29.9

# The checks bite.
sed 's/httpGet:/httpGett:/' "$out/defaults.yaml" > "$out/misspelt.yaml"
refuse "k8scheck refuses a misspelt field" 'unknown field "spec.template.spec.containers\[0\].livenessProbe.httpGett"' \
  "$K8SCHECK" "$out/misspelt.yaml"
sed 's#path: /ready#path: /readyz#' "$out/defaults.yaml" > "$out/readyz.yaml"
if "$K8SCHECK" -facts "$out/readyz.json" "$out/readyz.yaml" >/dev/null 2>&1; then
  refuse "check_chart.py refuses a probe path the server does not serve" "readinessProbe path '/readyz'" \
    python3 deploy/check_chart.py --facts "$out/readyz.json"
else
  echo "FAIL  k8scheck refused the manifest with a changed probe path" >&2; failed+=("readyz")
fi
refuse "helm template refuses a grace period shorter than the drain" "terminationGracePeriodSeconds (30) must exceed" \
  "$HELM" template rmq-namesrv "$CHART" --set terminationGracePeriodSeconds=30

echo "deploy/check.sh: $((SECONDS - t0)) s"
if [ ${#failed[@]} -gt 0 ]; then
  echo "deploy/check.sh: ${#failed[@]} check(s) failed: ${failed[*]}" >&2
  exit 1
fi
echo "deploy/check.sh: all checks passed"
