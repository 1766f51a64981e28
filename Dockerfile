# appwatch on Deno: the HTTP/WebSocket service (`appwatch serve`) by default.
#   docker build -t appwatch .
#   docker run -p 8080:8080 appwatch                           # in a pod: its service account; with no cluster config: demo apps
#   docker run -p 8080:8080 -v ~/.kube/config:/home/appwatch/.kube/config:ro appwatch   # a kubeconfig
#   docker run -p 8080:8080 appwatch serve --sandbox           # the service on the built-in sandbox's demo apps
#   docker run appwatch events --sandbox                       # print raw KService events (the sandbox's)
# Deployment manifests: deploy/ (kubectl apply -k deploy/); operations: docs/operations.md.

# ---- 1. runtime npm dependencies (hono, valibot, yaml, @bufbuild/protobuf, ...), no dev tools
FROM node:20-bookworm-slim AS deps
WORKDIR /app
COPY package.json package-lock.json ./
# --ignore-scripts: no lifecycle scripts run at build time (Deno and Bun are dev dependencies anyway).
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force

# ---- 2. Deno runs the TypeScript sources directly (same major as the repo's dev dependency)
FROM denoland/deno:2.9.6
WORKDIR /app
# DENO_DIR: Deno's cache must be writable; in Kubernetes /tmp is an emptyDir (the root filesystem is
# read-only). HOME: where `~/.kube/config` is looked for (mount a kubeconfig there to run outside a cluster).
ENV DENO_DIR=/tmp/deno \
    DENO_NO_UPDATE_CHECK=1 \
    HOME=/home/appwatch
COPY --from=deps /app/node_modules ./node_modules
COPY package.json deno.json mod.ts ./
COPY src ./src
# Files stay root-owned and read-only to the process.
USER 1000:1000
EXPOSE 8080
# Permissions (verified in docs/operations.md, "Security"):
#   --allow-net   the Kubernetes API server and the listening socket
#   --allow-env   KUBERNETES_SERVICE_HOST/PORT, KUBECONFIG, HOME, POD_NAMESPACE, ... (not a list: Deno throws on
#                 any read of an unlisted variable, and options are read from process.env as a whole)
#   --allow-read  only the service-account token/CA/namespace, the config dir and ~/.kube (kubectl's lookup order);
#                 modules and node_modules load without read permission.
# No --allow-write, --allow-run, --allow-sys, --allow-ffi.
ENTRYPOINT ["deno", "run", "--no-prompt", "--allow-net", "--allow-env", \
  "--allow-read=/var/run/secrets/kubernetes.io/serviceaccount,/etc/appwatch,/home/appwatch/.kube", \
  "src/main.ts"]
CMD ["serve", "--host", "0.0.0.0", "--port", "8080"]
# `deno eval` has every permission; there is no curl in the image. Kubernetes uses the probes in
# deploy/deployment.yaml instead.
HEALTHCHECK --interval=30s --timeout=5s --start-period=15s --retries=3 \
  CMD ["deno", "eval", "--no-config", "const r = await fetch('http://127.0.0.1:8080/healthz', { signal: AbortSignal.timeout(4000) }); await r.body?.cancel(); Deno.exit(r.ok ? 0 : 1)"]
