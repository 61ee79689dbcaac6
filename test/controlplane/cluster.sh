#!/usr/bin/env bash
# cluster.sh up|down DIR — starts a local control plane in the background (kubeconfig in
# DIR/kubeconfig, log in DIR/controlplane.log) or stops it, and the engine `make demo` started
# (DIR/engine.pid), and removes their data.
set -euo pipefail
cmd=${1:?up or down}; dir=${2:-.cluster}
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
# stop FILE TRIES: SIGTERM the process whose pid is in $dir/FILE, wait up to TRIES quarter
# seconds for it to exit, then SIGKILL it.
stop() {
  [[ -f "$dir/$1" ]] || return 0
  local pid; pid=$(cat "$dir/$1")
  kill "$pid" 2>/dev/null || return 0
  for _ in $(seq 1 "$2"); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.25; done
  kill -9 "$pid" 2>/dev/null || true
}
case "$cmd" in
up)
  if [[ -f "$dir/pid" ]] && kill -0 "$(cat "$dir/pid")" 2>/dev/null; then
    echo "[cluster] already running (pid $(cat "$dir/pid")); kubeconfig: $dir/kubeconfig"
    exit 0
  fi
  mkdir -p "$dir"; rm -f "$dir/kubeconfig"
  go build -o "$dir/controlplane" ./test/controlplane/up
  nohup "$dir/controlplane" -dir "$dir" >"$dir/controlplane.log" 2>&1 &
  echo $! >"$dir/pid"
  for _ in $(seq 1 120); do
    [[ -f "$dir/kubeconfig" ]] && { echo "[cluster] up; kubeconfig: $dir/kubeconfig"; exit 0; }
    kill -0 "$(cat "$dir/pid")" 2>/dev/null || { cat "$dir/controlplane.log"; echo "[cluster] failed to start" >&2; exit 1; }
    sleep 0.5
  done
  echo "[cluster] not ready after 60s; see $dir/controlplane.log" >&2; exit 1 ;;
down)
  # The engine `make demo` started goes first, so that it does not log a dying API server.
  stop engine.pid 120
  stop pid 40
  rm -rf "$dir"; echo "[cluster] down" ;;
*) echo "usage: cluster.sh up|down DIR" >&2; exit 2 ;;
esac
