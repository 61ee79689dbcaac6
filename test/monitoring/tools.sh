#!/usr/bin/env bash
# Fetches Debian's prometheus package (prometheus and promtool) and unpacks it under
# .cache/tools/prometheus/ (git-ignored) without installing it: no daemon starts and nothing
# outside the repository changes. A second run with the binaries present does nothing. Prints
# the folder holding the binaries on stdout as its last line.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
out="$root/.cache/tools/prometheus"
step() { printf '[monitoring] %s\n' "$*" >&2; }

if [[ -x "$out/prometheus" && -x "$out/promtool" ]]; then
  echo "$out"
  exit 0
fi
command -v apt-get >/dev/null || { echo "[monitoring] apt-get not found: Debian's prometheus package is fetched with it" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cd "$work"
step "fetching Debian's prometheus package (about 20 MB)"
if ! apt-get download prometheus >&2 2>"$work/apt.err"; then
  step "the package index does not have it: apt-get update"
  apt-get update >&2
  apt-get download prometheus >&2
fi
dpkg-deb -x prometheus_*.deb unpacked
mkdir -p "$out"
cp unpacked/usr/bin/prometheus unpacked/usr/bin/promtool "$out/"
step "$("$out/promtool" --version 2>&1 | head -1)"
echo "$out"
