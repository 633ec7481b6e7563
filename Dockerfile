# Multi-stage: the build stage installs every dependency and compiles the TypeScript into dist/
# (npm ci runs the prepare script, scripts/build.js), then drops the dev dependencies; the runtime
# image holds only production dependencies and the built JavaScript, and runs as the unprivileged
# `node` user. Nothing is transpiled when a container starts.
FROM node:24-bookworm-slim AS build
WORKDIR /app
COPY package.json package-lock.json tsconfig.json ./
COPY scripts ./scripts
COPY src ./src
COPY connectors ./connectors
COPY plugins ./plugins
RUN npm ci --no-audit --no-fund && npm prune --omit=dev --no-audit --no-fund

FROM node:24-bookworm-slim
WORKDIR /app
ENV NODE_ENV=production HOST=0.0.0.0 PORT=3000 DATA_DIR=/data
# The engine's column arrays are large and written once: glibc's malloc backs them with
# transparent huge pages (where the host allows THP in madvise mode), which cut page faults
# about eightfold and a 1M x 1M reconciliation's time by a quarter (bench/README.md).
ENV GLIBC_TUNABLES=glibc.malloc.hugetlb=1
COPY --from=build /app/node_modules ./node_modules
COPY --from=build /app/dist ./dist
COPY package.json ./
COPY bin ./bin
COPY openapi ./openapi
RUN mkdir -p /data && chown node:node /data
USER node
VOLUME ["/data"]
EXPOSE 3000
HEALTHCHECK --interval=30s --timeout=3s CMD node -e "fetch('http://127.0.0.1:'+process.env.PORT+'/ready').then(r=>process.exit(r.ok?0:1),()=>process.exit(1))"
CMD ["node", "bin/concord.js", "serve"]
