# syntax=docker/dockerfile:1
#
# The driftscan image: a static binary on distroless, running as non-root.
#
#   make image            # docker build with VERSION and COMMIT from git
#   docker build --build-arg VERSION=v0.1.0 --build-arg COMMIT=$(git rev-parse --short HEAD) .
#
# The charts/driftscan chart runs it as user 65532 with a read-only root
# filesystem; it writes only to /tmp and /var/cache/driftscan (volumes).

FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS
ARG TARGETARCH
ARG VERSION=dev
ARG COMMIT=none
WORKDIR /src
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download
COPY . .
# -buildvcs=false: VERSION and COMMIT say what was built, and a build context
# without a complete .git (a worktree, a shallow copy) must not fail the build.
RUN --mount=type=cache,target=/go/pkg/mod --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=${TARGETOS} GOARCH=${TARGETARCH} \
    go build -trimpath -buildvcs=false \
      -ldflags "-s -w -X main.version=${VERSION} -X main.commit=${COMMIT}" \
      -o /out/driftscan ./cmd/driftscan

FROM gcr.io/distroless/static:nonroot
COPY --from=build /out/driftscan /driftscan
USER 65532:65532
ENTRYPOINT ["/driftscan"]
