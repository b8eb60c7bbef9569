# strata's image, for those who build with Docker (BuildKit):
#
#   docker build -t strata \
#     --build-arg VERSION=v$(cat VERSION)-dev --build-arg REVISION=$(git rev-parse HEAD) \
#     --build-arg CREATED=$(git log -1 --format=%cI HEAD) .
#
# `make image` builds the same image without a daemon (hack/image), for
# linux/amd64 and linux/arm64, reproducibly; docs/release.md. The build
# stage runs hack/image -rootfs, so both write the same files; the final
# stage sets what hack/image's config sets. TestDockerfile (hack/image)
# fails when the two part.

FROM --platform=$BUILDPLATFORM golang:1.26 AS build
ARG TARGETOS TARGETARCH
ARG VERSION=devel REVISION= CREATED=1970-01-01T00:00:00Z
WORKDIR /src
COPY go.mod go.sum ./
RUN go mod download
COPY . .
RUN go run ./hack/image -rootfs /rootfs -platforms "$TARGETOS/$TARGETARCH" \
      -version "$VERSION" -commit "$REVISION" -date "$CREATED"

FROM scratch
COPY --from=build /rootfs/ /
COPY --from=build --chown=65532:65532 /rootfs/home/nonroot/ /home/nonroot/
ARG VERSION=devel REVISION= CREATED=1970-01-01T00:00:00Z
LABEL org.opencontainers.image.source="https://github.com/strata-dev/strata" \
      org.opencontainers.image.revision="$REVISION" \
      org.opencontainers.image.version="$VERSION" \
      org.opencontainers.image.created="$CREATED" \
      org.opencontainers.image.title="strata"
ENV PATH=/usr/local/bin:/usr/bin:/bin
USER 65532:65532
ENTRYPOINT ["/usr/local/bin/strata"]
