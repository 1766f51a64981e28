# appwatch on Node 24: the HTTP/WebSocket service (`appwatch serve`) by default.
#   docker build -t appwatch .
#   docker run -p 8080:8080 appwatch                           # in a pod: its service account; with no cluster config: demo apps
#   docker run -p 8080:8080 -v ~/.kube/config:/home/appwatch/.kube/config:ro appwatch   # a kubeconfig
#   docker run -p 8080:8080 appwatch serve --sandbox           # the service on the built-in sandbox's demo apps
#   docker run appwatch events --sandbox                       # print raw KService events (the sandbox's)
# Deployment manifests: deploy/ (kubectl apply -k deploy/); operations: docs/operations.md.
#
# Why Node, though the service runs unchanged on Deno and Bun too (docs/operations.md, "Runtime limits
# and hardening"): Deno buffers an unfinished fragmented WebSocket message without limit, accepts
# unmasked client frames and has no request-header timeout, and no option of Deno's changes that.
# Node's `ws` and `http` enforce all three, and Node's permission model keeps the file-system sandbox
# the Deno image had. Bun enforces the first two as well but has no permission model.

# ---- 1. runtime npm dependencies (hono, valibot, yaml, @bufbuild/protobuf, ...), no dev tools
FROM node:24-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: no lifecycle scripts run at build time. tsx and esbuild are not needed (Node 24
# strips the TypeScript types itself), nor typescript (valibot's peer, for its types only).
# Measured: `npm ci --omit=dev` writes 49 MB of node_modules, 14 MB after this removal.
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force \
  && rm -rf node_modules/tsx node_modules/esbuild node_modules/@esbuild node_modules/typescript node_modules/.bin

# ---- 2. Node runs the TypeScript sources directly (erasable syntax only: Node's type stripping)
FROM node:24-bookworm-slim
WORKDIR /app
# HOME: where `~/.kube/config` is looked for (mount a kubeconfig there to run outside a cluster).
# APPWATCH_HOST: the CLI listens on 127.0.0.1 by default (safe on a laptop); in a container only
# every interface is reachable through a published port, so the image says 0.0.0.0 itself: it also
# holds for `docker run … appwatch serve --sandbox`, which replaces CMD. Without auth the service
# then logs a loud warning (turn auth on: --auth-tokens-file; docs/operations.md).
ENV HOME=/home/appwatch APPWATCH_HOST=0.0.0.0
COPY --from=deps /app/node_modules ./node_modules
COPY package.json ./
COPY src ./src
# Files stay root-owned and read-only to the process.
USER 1000:1000
EXPOSE 8080
# Permissions (docs/operations.md, "The image"): --permission denies writes, child processes, workers,
# native addons and WASI; reads only of the code, the service-account token/CA/namespace, the config
# dir and ~/.kube (kubectl's lookup order). The network and the environment stay open, as on Deno.
# `dir/*`, not `dir/`: Node grants a directory that does not exist (no kubeconfig, no service
# account outside a cluster) only in the wildcard form; without it even existsSync() throws.
ENTRYPOINT ["node", "--permission", \
  "--allow-fs-read=/app/*", \
  "--allow-fs-read=/var/run/secrets/kubernetes.io/serviceaccount/*", \
  "--allow-fs-read=/etc/appwatch/*", \
  "--allow-fs-read=/home/appwatch/.kube/*", \
  "src/main.ts"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8080"]
# A separate `node` without --permission; there is no curl in the image. Kubernetes uses the probes
# in deploy/deployment.yaml instead.
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
  CMD ["node", "-e", "fetch('http://127.0.0.1:8080/healthz', { signal: AbortSignal.timeout(4000) }).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"]
