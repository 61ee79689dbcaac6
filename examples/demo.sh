#!/usr/bin/env bash
# demo.sh KUBECONFIG BIN — with a control plane up (make cluster-up), installs the CRDs,
# starts the engine BIN in the background, installs the website example's Starlark
# controller and its sample, waits for the sample to converge, and prints what to look at.
# `make demo` runs it after `make build cluster-up`; `make cluster-down` stops it all.
#
# Environment: METASCRIPT_DEMO_METRICS_PORT (default 9090), METASCRIPT_DEMO_HEALTH_PORT
# (default 9091).
set -euo pipefail
kubeconfig=${1:?usage: demo.sh KUBECONFIG BIN}
bin=${2:?usage: demo.sh KUBECONFIG BIN}
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
dir=$(dirname "$kubeconfig")
metrics_port=${METASCRIPT_DEMO_METRICS_PORT:-9090}
health_port=${METASCRIPT_DEMO_HEALTH_PORT:-9091}
example=examples/website

step() { echo "[demo] $*"; }
fail() { echo "[demo] $*" >&2; exit 1; }

[[ -f "$kubeconfig" ]] || fail "no $kubeconfig: start the control plane first (make cluster-up)"
[[ -x "$bin" ]] || fail "no $bin: build the engine first (make build)"

step "building the demo's client (examples/internal/democtl)"
go build -o "$dir/democtl" ./examples/internal/democtl
ctl=("$dir/democtl" -kubeconfig "$kubeconfig")

step "installing the CRDs: manifests/crds and $example/crd.yaml"
"${ctl[@]}" apply manifests/crds/metascript.dev_*.yaml "$example/crd.yaml"

if [[ -f "$dir/engine.pid" ]] && kill -0 "$(cat "$dir/engine.pid")" 2>/dev/null; then
  step "the engine is already running (pid $(cat "$dir/engine.pid"))"
else
  step "starting the engine: $bin run (log in $dir/engine.log)"
  nohup "$bin" run --kubeconfig "$kubeconfig" \
    --metrics-addr "127.0.0.1:$metrics_port" --health-addr "127.0.0.1:$health_port" \
    >"$dir/engine.log" 2>&1 &
  echo $! >"$dir/engine.pid"
fi
if ! "${ctl[@]}" -timeout 60s wait-http "http://127.0.0.1:$health_port/readyz"; then
  tail -n 20 "$dir/engine.log" >&2 || true
  fail "the engine did not become ready; see $dir/engine.log"
fi
kill -0 "$(cat "$dir/engine.pid")" 2>/dev/null || fail "the engine exited; see $dir/engine.log"

step "installing the website controller (Starlark)"
"${ctl[@]}" apply "$example/controller-starlark.yaml"
"${ctl[@]}" wait metascript.dev/v1alpha1 CompositeController "" website

step "creating the sample Website default/hello"
"${ctl[@]}" apply "$example/sample.yaml"
"${ctl[@]}" wait examples.metascript.dev/v1alpha1 Website default hello
step "converged"
echo
"${ctl[@]}" tree examples.metascript.dev/v1alpha1 Website default hello
echo

kubectl_note=""
if ! command -v kubectl >/dev/null 2>&1; then
  kubectl_note="  (kubectl is not installed here: the kubectl lines below need it; $dir/democtl offers apply, wait and tree)"
fi
cat <<EOF
What to look at
$kubectl_note
  export KUBECONFIG=$root/$kubeconfig

  kubectl get websites                                  # URL, pages, Ready, cluster IP
  kubectl get website hello -o yaml                     # the status the Starlark hook wrote
  kubectl get configmaps,services,secrets -l app.kubernetes.io/instance=hello
  kubectl get compositecontroller website -o yaml       # HooksCompiled, Ready, parents, children
  kubectl get events --field-selector involvedObject.name=hello

  curl -s http://127.0.0.1:$metrics_port/metrics | grep ^metascript_   # reconciles, hook latency, child writes
  tail -f $dir/engine.log                               # the engine's log

Try
  kubectl patch website hello --type=merge -p '{"spec":{"basicAuth":null}}'        # the Secret goes
  kubectl patch website hello --type=merge -p '{"spec":{"pages":{"new.html":"hi"}}}'  # pages follow
  kubectl replace -f $example/controller-javascript.yaml # same controller in JavaScript: nothing changes
  kubectl delete website hello                          # finalize: the Service first, then the rest

Stop everything (engine and control plane): make cluster-down
EOF
