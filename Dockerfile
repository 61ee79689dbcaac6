# The engine's image: one static binary on distroless, run as a non-root user.
#   docker build -t registry.example.com/metascript:dev .
# For your own builds: this repository's machines reach no image registry, so `make image`
# builds its image from scratch with podman instead (test/image/build.sh); manifests/README.md
# says how to point the manifests and the chart at yours.

# The Go of go.mod's go line: the toolchain the module is built and tested with.
FROM golang:1.26.8 AS build
WORKDIR /src
# Dependencies first, in their own layer: a source change does not download them again.
COPY go.mod go.sum ./
RUN go mod download
COPY . .
# What `metascript version` prints; the image has no .git, so no commit is recorded.
ARG VERSION=dev
# Static (no cgo, so no libc needed at run time), reproducible paths (-trimpath), no
# symbol tables (-s -w). GOTOOLCHAIN=local: build with exactly this image's Go.
RUN CGO_ENABLED=0 GOTOOLCHAIN=local GOFLAGS=-buildvcs=false \
    go build -trimpath -ldflags="-s -w -X main.version=${VERSION}" -o /out/metascript ./cmd/metascript

# distroless/static: CA certificates, /etc/passwd with nonroot (65532), tzdata; no shell,
# no package manager. The engine writes no files, so the root file system may be read-only.
FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/metascript /metascript
# The nonroot user of distroless, numeric so that runAsNonRoot can verify it without
# reading /etc/passwd; the manifests and the chart run the pod as the same user.
USER 65532:65532
# metrics (--metrics-addr) and health (--health-addr): the defaults of metascript run.
EXPOSE 9090 9091
ENTRYPOINT ["/metascript"]
CMD ["run"]
