#!/usr/bin/env bash
# Builds the buf CLI from the Go module proxy for tests/grpc-reflection.test.ts, which drives
# `buf curl` against appwatch's gRPC server reflection (--grpc-port). Idempotent: the binary is
# cached OUTSIDE the repo, keyed by version; a cold build takes ~5 min on 2 cores.
#
#   scripts/build-buf.sh        # build (or reuse) and print the binary's path on the last line
#
# Environment:
#   APPWATCH_BUF   where the binary goes (default ~/.cache/appwatch/buf/v<version>/buf); the test
#                  reads the same variable
set -Eeuo pipefail

BUF_VERSION=v1.75.0   # the newest buf the Go module proxy served (2026-12)
OUT="${APPWATCH_BUF:-$HOME/.cache/appwatch/buf/$BUF_VERSION/buf}"

die() { echo "build-buf: ERROR: $*" >&2; exit 1; }
log() { echo "build-buf: $*" >&2; }

if [ -x "$OUT" ]; then
  log "buf $BUF_VERSION: cached at $OUT"
  echo "$OUT"
  exit 0
fi

command -v go >/dev/null || { [ -x /usr/local/go/bin/go ] && export PATH="/usr/local/go/bin:$PATH"; } || true
command -v go >/dev/null || die "go not found (need Go on PATH or at /usr/local/go/bin)"
export GOTOOLCHAIN=local GOFLAGS="-buildvcs=false" CGO_ENABLED=0

start=$(date +%s)
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
log "building github.com/bufbuild/buf/cmd/buf@$BUF_VERSION (go $(go env GOVERSION))"
# go install pkg@version ignores any go.mod around it; GOBIN is a scratch dir, then one rename.
(cd "$tmp" && GOBIN="$tmp/bin" go install -trimpath -ldflags "-s -w" "github.com/bufbuild/buf/cmd/buf@$BUF_VERSION") \
  || die "go install github.com/bufbuild/buf/cmd/buf@$BUF_VERSION failed"
mkdir -p "$(dirname "$OUT")"
mv "$tmp/bin/buf" "$OUT"
"$OUT" --version >/dev/null || die "the built buf does not run"
log "buf $BUF_VERSION built in $(( $(date +%s) - start )) s: $OUT"
echo "$OUT"
