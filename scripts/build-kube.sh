#!/usr/bin/env bash
# Builds a real kube-apiserver + etcd + etcdctl from the Go module proxy, for the real-cluster
# tests (tests/cluster/, docs/real-cluster.md). Idempotent: binaries are cached OUTSIDE the repo,
# keyed by version, and only rebuilt when missing or when the committed scratch modules change.
#
#   scripts/build-kube.sh                   # build (or reuse) and print the bin dir on the last line
#   scripts/build-kube.sh --update-modules  # re-resolve the committed scratch modules, then build
#
# The scratch modules are committed (tests/cluster/go/{kube,etcd}/go.mod + go.sum + tools.go), so a
# normal build does not re-resolve versions: it builds with -mod=readonly and GOTOOLCHAIN=local.
# Why scratch modules: k8s.io/kubernetes requires its 29+ staging modules at v0.0.0 and replaces
# them with ./staging paths, and etcd's go.mod has replace directives too, so `go install pkg@v`
# is refused for both. The kube module replaces every k8s.io/* v0.0.0 requirement with v0.<minor>.<patch>.
# kube-apiserver and etcd live in separate modules so MVS does not mix their dependency versions.
#
# Environment:
#   APPWATCH_KUBE_BIN_DIR  where the binaries go (default ~/.cache/appwatch/kube/v<k8s>-etcd<etcd>)
#   K8S_VERSION / ETCD_VERSION  only with --update-modules (defaults below)
set -Eeuo pipefail

K8S_VERSION_DEFAULT=1.35.4   # the newest 1.35 patch the Go module proxy serves (2026-11)
ETCD_VERSION_DEFAULT=3.6.16  # the newest 3.6 patch served

ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
KUBE_MOD="$ROOT/tests/cluster/go/kube"
ETCD_MOD="$ROOT/tests/cluster/go/etcd"

die() { echo "build-kube: ERROR: $*" >&2; exit 1; }
log() { echo "build-kube: $*" >&2; }
now() { date +%s; }
on_err() { local c="${2%%$'\n'*}"; echo "build-kube: ERROR: command failed (line $1): ${c:0:160}" >&2; }
trap 'on_err $LINENO "$BASH_COMMAND"' ERR
SCRATCH=()
trap 'rm -rf "${SCRATCH[@]}"' EXIT

command -v go >/dev/null || { [ -x /usr/local/go/bin/go ] && export PATH="/usr/local/go/bin:$PATH"; } || true
command -v go >/dev/null || die "go not found (need Go >= 1.25 on PATH or at /usr/local/go/bin)"

export GOTOOLCHAIN=local   # fail fast instead of downloading another toolchain
export CGO_ENABLED=0       # static binaries, like upstream's release builds
export GOFLAGS="-buildvcs=false"

UPDATE=0
case "${1:-}" in
  --update-modules) UPDATE=1 ;;
  "") ;;
  -h|--help) sed -n '2,20p' "$0"; exit 0 ;;
  *) die "unknown argument '$1' (use --update-modules or nothing)" ;;
esac

# ------------------------------------------------------------------ module (re)resolution
update_kube_module() {
  local v="${K8S_VERSION:-$K8S_VERSION_DEFAULT}" minor_patch="${K8S_VERSION:-$K8S_VERSION_DEFAULT}"
  minor_patch="${minor_patch#1.}"
  local w; w="$(mktemp -d)"; SCRATCH+=("$w")
  log "resolving kube scratch module for k8s.io/kubernetes v$v in $w"
  (
    cd "$w"
    go mod init appwatch.local/kubebin >/dev/null 2>&1
    go mod edit -go=1.25.0   # k8s 1.35's own go directive; keeps upstream's GODEBUG defaults
    local gomod dl
    dl="$(go mod download -json "k8s.io/kubernetes@v$v" 2>&1)" \
      || die "could not download k8s.io/kubernetes@v$v: $(echo "$dl" | sed -n 's/^[[:space:]]*"Error": "\(.*\)",*$/\1/p' | head -1) (served 1.35 patches: $(go list -m -versions k8s.io/kubernetes | tr ' ' '\n' | grep '^v1\.35\.' | tr '\n' ' '))"
    gomod="$(echo "$dl" | sed -n 's/^[[:space:]]*"GoMod": "\(.*\)",*$/\1/p')"
    [ -f "$gomod" ] || die "go mod download k8s.io/kubernetes@v$v gave no go.mod path: $dl"
    local n=0
    for m in $(awk '$1 ~ /^k8s\.io\// && $2 == "v0.0.0" {print $1}' "$gomod"); do
      go mod edit -replace "${m}=${m}@v0.${minor_patch}"
      n=$((n + 1))
    done
    [ "$n" -gt 0 ] || die "found no k8s.io/* v0.0.0 requirements in $gomod"
    log "replaced $n staging modules with v0.$minor_patch"
    go mod edit -require "k8s.io/kubernetes@v$v"
    cat >tools.go <<'EOF'
//go:build tools

// Package tools pins the commands built by scripts/build-kube.sh; it is never compiled.
package tools

import (
	_ "k8s.io/kubernetes/cmd/kube-apiserver"
)
EOF
    go mod tidy
  )
  mkdir -p "$KUBE_MOD"
  cp "$w/go.mod" "$w/go.sum" "$w/tools.go" "$KUBE_MOD/"
  rm -rf "$w"
}

update_etcd_module() {
  local v="${ETCD_VERSION:-$ETCD_VERSION_DEFAULT}"
  local w; w="$(mktemp -d)"; SCRATCH+=("$w")
  log "resolving etcd scratch module for etcd v$v in $w"
  (
    cd "$w"
    go mod init appwatch.local/etcdbin >/dev/null 2>&1
    go mod edit -go=1.25.0
    go mod edit -require "go.etcd.io/etcd/server/v3@v$v" -require "go.etcd.io/etcd/etcdctl/v3@v$v"
    cat >tools.go <<'EOF'
//go:build tools

// Package tools pins the commands built by scripts/build-kube.sh; it is never compiled.
package tools

import (
	_ "go.etcd.io/etcd/etcdctl/v3"
	_ "go.etcd.io/etcd/server/v3"
)
EOF
    go mod tidy
  )
  mkdir -p "$ETCD_MOD"
  cp "$w/go.mod" "$w/go.sum" "$w/tools.go" "$ETCD_MOD/"
  rm -rf "$w"
}

T0=$(now)
if [ "$UPDATE" = 1 ]; then
  t=$(now); update_kube_module; log "kube module resolved in $(( $(now) - t ))s"
  t=$(now); update_etcd_module; log "etcd module resolved in $(( $(now) - t ))s"
fi

for f in go.mod go.sum tools.go; do
  [ -f "$KUBE_MOD/$f" ] || die "missing $KUBE_MOD/$f (run scripts/build-kube.sh --update-modules)"
  [ -f "$ETCD_MOD/$f" ] || die "missing $ETCD_MOD/$f (run scripts/build-kube.sh --update-modules)"
done

# Versions come from the committed modules, not from the defaults above.
modver() { (cd "$1" && go list -mod=readonly -m -f '{{.Version}}' "$2") || die "cannot read $2's version in $1"; }
K8S_V="$(modver "$KUBE_MOD" k8s.io/kubernetes)"; K8S_V="${K8S_V#v}"
ETCD_V="$(modver "$ETCD_MOD" go.etcd.io/etcd/server/v3)"; ETCD_V="${ETCD_V#v}"
K8S_MINOR="${K8S_V#1.}"; K8S_MINOR="${K8S_MINOR%%.*}"
OUT="${APPWATCH_KUBE_BIN_DIR:-$HOME/.cache/appwatch/kube/v${K8S_V}-etcd${ETCD_V}}"
mkdir -p "$OUT"
log "kube-apiserver v$K8S_V, etcd v$ETCD_V -> $OUT ($(go version))"

# A stamp per module: the hash of its committed files + the Go version. Rebuild when it changes.
stamp_of() { (cat "$1/go.mod" "$1/go.sum" "$1/tools.go"; go version; echo "$2") | sha256sum | cut -d' ' -f1; }

build_kube() {
  local stamp; stamp="$(stamp_of "$KUBE_MOD" "k8s-$K8S_V-v2")"
  if [ -x "$OUT/kube-apiserver" ] && [ "$(cat "$OUT/.kube.stamp" 2>/dev/null)" = "$stamp" ]; then
    log "kube-apiserver: cached"; return
  fi
  local t; t=$(now)
  log "downloading kube modules"
  (cd "$KUBE_MOD" && go mod download) || die "go mod download failed in $KUBE_MOD"
  log "kube modules downloaded in $(( $(now) - t ))s"
  t=$(now)
  local ldf="-s -w"
  local pkg
  for pkg in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
    ldf="$ldf -X $pkg.gitVersion=v$K8S_V -X $pkg.gitMajor=1 -X $pkg.gitMinor=$K8S_MINOR -X $pkg.gitTreeState=clean -X $pkg.buildDate=$(date -u +%Y-%m-%dT%H:%M:%SZ)"
  done
  log "building kube-apiserver (cold builds take a while)"
  (cd "$KUBE_MOD" && go build -mod=readonly -trimpath -ldflags "$ldf" -o "$OUT/kube-apiserver.tmp" k8s.io/kubernetes/cmd/kube-apiserver) \
    || die "go build k8s.io/kubernetes/cmd/kube-apiserver failed"
  mv "$OUT/kube-apiserver.tmp" "$OUT/kube-apiserver"
  # Capture, then match: `cmd | grep -q` under pipefail fails with SIGPIPE when grep exits first.
  local version
  version=$("$OUT/kube-apiserver" --version) || die "the built kube-apiserver does not run"
  echo "$version" >&2
  [[ "$version" == *"v$K8S_V"* ]] || die "kube-apiserver --version is not v$K8S_V: $version"
  echo "$stamp" >"$OUT/.kube.stamp"
  log "kube-apiserver built in $(( $(now) - t ))s"
}

build_etcd() {
  local stamp; stamp="$(stamp_of "$ETCD_MOD" "etcd-$ETCD_V-v2")"
  if [ -x "$OUT/etcd" ] && [ -x "$OUT/etcdctl" ] && [ "$(cat "$OUT/.etcd.stamp" 2>/dev/null)" = "$stamp" ]; then
    log "etcd, etcdctl: cached"; return
  fi
  local t; t=$(now)
  (cd "$ETCD_MOD" && go mod download) || die "go mod download failed in $ETCD_MOD"
  log "etcd modules downloaded in $(( $(now) - t ))s"
  t=$(now)
  local ldf="-s -w -X go.etcd.io/etcd/api/v3/version.GitSHA=v$ETCD_V"
  log "building etcd + etcdctl"
  (cd "$ETCD_MOD" && go build -mod=readonly -trimpath -ldflags "$ldf" -o "$OUT/etcd.tmp" go.etcd.io/etcd/server/v3) \
    || die "go build go.etcd.io/etcd/server/v3 failed"
  (cd "$ETCD_MOD" && go build -mod=readonly -trimpath -ldflags "$ldf" -o "$OUT/etcdctl.tmp" go.etcd.io/etcd/etcdctl/v3) \
    || die "go build go.etcd.io/etcd/etcdctl/v3 failed"
  mv "$OUT/etcd.tmp" "$OUT/etcd"; mv "$OUT/etcdctl.tmp" "$OUT/etcdctl"
  local version
  version=$("$OUT/etcd" --version) || die "the built etcd does not run"
  echo "$version" >&2
  [[ "$version" == *"etcd Version: $ETCD_V"* ]] || die "etcd --version is not $ETCD_V: $version"
  "$OUT/etcdctl" version >&2 || die "the built etcdctl does not run"
  echo "$stamp" >"$OUT/.etcd.stamp"
  log "etcd + etcdctl built in $(( $(now) - t ))s"
}

build_etcd
build_kube
log "done in $(( $(now) - T0 ))s"
echo "$OUT"
