# appwatch on Node. Build: docker build -t appwatch .
# Run against the cluster it is deployed in (in-cluster service account):
#   docker run appwatch            # or: docker run appwatch --sandbox
FROM node:20-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production
COPY package.json package-lock.json ./
# Runtime dependencies only (Deno and Bun are dev dependencies; --ignore-scripts keeps their installers out).
RUN npm ci --omit=dev --ignore-scripts --no-audit --no-fund && npm cache clean --force
COPY mod.ts ./
COPY src ./src
USER node
ENTRYPOINT ["node", "--import", "tsx", "src/main.ts"]
