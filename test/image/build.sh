#!/usr/bin/env bash
# build.sh [TAG] — builds the engine's container image without a registry or a base image:
# the static binary, CA certificates and a non-root user (65532, as distroless has it) on
# scratch, with podman. Installs podman and runc from Debian's packages when they are missing.
# Prints the image's name on stdout as its last line. The Dockerfile at the repository's root
# is for users' own builds, which can pull a base image.
set -euo pipefail
tag=${1:-localhost/metascript:dev}
root=$(cd "$(dirname "$0")/../.." && pwd)
step() { printf '[image] %s\n' "$*" >&2; }

if ! command -v podman >/dev/null || [[ ! -x /usr/sbin/runc ]]; then
  step "installing podman and runc (Debian's packages)"
  command -v apt-get >/dev/null || { step "no apt-get: install podman and runc yourself"; exit 1; }
  export DEBIAN_FRONTEND=noninteractive
  apt-get install -y podman runc >&2 || { apt-get update >&2 && apt-get install -y podman runc >&2; }
fi

ctx=$(mktemp -d)
trap 'rm -rf "$ctx"' EXIT
version=$(git -C "$root" describe --tags --dirty 2>/dev/null || echo dev)
step "building the static binary ($version)"
(cd "$root" && CGO_ENABLED=0 go build -trimpath -ldflags="-s -w -X main.version=${version}" -o "$ctx/metascript" ./cmd/metascript)
mkdir -p "$ctx/etc/ssl/certs"
cp /etc/ssl/certs/ca-certificates.crt "$ctx/etc/ssl/certs/"
printf 'root:x:0:0:root:/root:/sbin/nologin\nnonroot:x:65532:65532:nonroot:/home/nonroot:/sbin/nologin\n' >"$ctx/etc/passwd"
printf 'root:x:0:\nnonroot:x:65532:\n' >"$ctx/etc/group"
cat >"$ctx/Containerfile" <<'CONTAINERFILE'
FROM scratch
COPY metascript /metascript
COPY etc/ /etc/
# Numeric, so that runAsNonRoot can verify it without reading /etc/passwd.
USER 65532:65532
EXPOSE 9090 9091
ENTRYPOINT ["/metascript"]
CMD ["run"]
CONTAINERFILE
step "podman build -t $tag"
podman build -q -t "$tag" "$ctx" >&2
echo "$tag"
