#!/usr/bin/env bash
# build.sh — build the test binaries (helm, etcd, kube-apiserver, argocd) and
# the benchmark peers (argocd-cmp-server, addon-operator) from the Go module proxy
# into a cache directory, and print their paths.
#
#   hack/testbin/build.sh [-f] [-p] NAME...
#
#   NAME  helm | etcd | kube-apiserver | argocd | argocd-cmp-server | addon-operator | all
#         (argocd is Argo CD's repo-server, application controller,
#         ApplicationSet controller and plugin sidecar in one multi-call
#         binary, which internal/argocd/clustertest and `make argocd-local` run;
#         argocd-cmp-server is Argo CD's plugin sidecar, the peer of
#         hack/cmpbench, whose smoke test runs it; addon-operator is flant's,
#         the peer of hack/opbench -cluster, which release/clustertest also runs)
#   -f    rebuild even when the cached binary exists
#   -p    print the path each NAME would have, build nothing
#
# Each NAME is a small Go module in hack/testbin/NAME whose go.mod pins the
# tool's version and whose go.sum is committed, so the build is reproducible
# and needs nothing but Go and the module proxy. The binary lands in
#
#   $STRATA_TESTBIN_DIR (default ${XDG_CACHE_HOME:-$HOME/.cache}/strata/testbin)
#
# as NAME-VERSION-HASH, where HASH covers the module's go.mod, go.sum and Go
# files, the build flags and the Go toolchain, so any change to the pin or the
# recipe yields a new file and an unchanged one is never rebuilt. Builds go to
# a temporary file renamed into place, under a per-NAME flock, so concurrent
# callers (parallel test packages, CI jobs) neither collide nor duplicate work.
#
# stdout carries one absolute path per NAME, in order; progress goes to stderr.
set -euo pipefail

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
names_all=(helm etcd kube-apiserver argocd argocd-cmp-server addon-operator)

usage() {
  echo "usage: $0 [-f] [-p] NAME...   (NAME: ${names_all[*]} | all)" >&2
  exit 2
}

force=0
print_only=0
while getopts "fph" opt; do
  case "$opt" in
    f) force=1 ;;
    p) print_only=1 ;;
    *) usage ;;
  esac
done
shift $((OPTIND - 1))
[ $# -gt 0 ] || usage

names=()
for n in "$@"; do
  case "$n" in
    all) names+=("${names_all[@]}") ;;
    helm | etcd | kube-apiserver | argocd | argocd-cmp-server | addon-operator) names+=("$n") ;;
    *) echo "build.sh: unknown test binary \"$n\"; known: ${names_all[*]}" >&2; exit 2 ;;
  esac
done

command -v go >/dev/null 2>&1 || { echo "build.sh: go is not on PATH; install Go (see go.mod for the version)" >&2; exit 1; }

cache="${STRATA_TESTBIN_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/strata/testbin}"
mkdir -p "$cache"
cache="$(cd "$cache" && pwd)"

# The modules are built on their own: no workspace, and go.mod/go.sum as
# committed (a missing go.sum line is an error, never a silent download).
export GOWORK=off
export GOFLAGS="-mod=readonly -buildvcs=false"
export CGO_ENABLED=0

hashcmd() {
  if command -v sha256sum >/dev/null 2>&1; then sha256sum; else shasum -a 256; fi
}

# recipe NAME sets: mod (the pinned module), pkg (the main package to build)
# and ldflags (version stamps, as the tool's own release build sets them).
recipe() {
  local dir="$here/$1"
  case "$1" in
    helm)
      mod=helm.sh/helm/v4
      pkg=helm.sh/helm/v4/cmd/helm
      ;;
    etcd)
      mod=go.etcd.io/etcd/server/v3
      pkg=.
      ;;
    kube-apiserver)
      mod=k8s.io/kubernetes
      pkg=.
      ;;
    argocd-cmp-server)
      mod=github.com/argoproj/argo-cd/v2
      pkg=.
      ;;
    argocd)
      mod=github.com/argoproj/argo-cd/v3
      pkg=.
      ;;
    addon-operator)
      mod=github.com/flant/addon-operator
      pkg=github.com/flant/addon-operator/cmd/addon-operator
      ;;
  esac
  version="$(cd "$dir" && go list -m -f '{{.Version}}' "$mod")"
  case "$1" in
    helm)
      ldflags="-s -w -X helm.sh/helm/v4/internal/version.version=$version -X helm.sh/helm/v4/internal/version.gitTreeState=clean"
      ;;
    etcd)
      ldflags="-s -w"
      ;;
    argocd-cmp-server)
      # As Argo CD's Makefile stamps its release build.
      ldflags="-s -w -X github.com/argoproj/argo-cd/v2/common.version=${version#v} -X github.com/argoproj/argo-cd/v2/common.gitTag=$version -X github.com/argoproj/argo-cd/v2/common.gitTreeState=clean"
      ;;
    argocd)
      ldflags="-s -w -X github.com/argoproj/argo-cd/v3/common.version=${version#v} -X github.com/argoproj/argo-cd/v3/common.gitTag=$version -X github.com/argoproj/argo-cd/v3/common.gitTreeState=clean"
      ;;
    addon-operator)
      # As flant's Dockerfile stamps its release build (shell-operator's
      # version too, which the operator logs at start).
      local shver
      shver="$(cd "$dir" && go list -m -f '{{.Version}}' github.com/flant/shell-operator)"
      ldflags="-s -w -X github.com/flant/addon-operator/pkg/app.Version=$version -X github.com/flant/shell-operator/pkg/app.Version=$shver"
      ;;
    kube-apiserver)
      local v="${version#v}" major minor
      major="${v%%.*}"
      minor="${v#*.}"
      minor="${minor%%.*}"
      ldflags="-s -w"
      for p in k8s.io/component-base/version k8s.io/client-go/pkg/version; do
        ldflags+=" -X $p.gitVersion=$version -X $p.gitMajor=$major -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
      done
      ;;
  esac
  hash="$(
    {
      cat "$dir/go.mod" "$dir/go.sum" "$dir"/*.go
      go env GOVERSION GOOS GOARCH
      echo "$CGO_ENABLED $GOFLAGS $pkg $ldflags"
    } | hashcmd | cut -c1-8
  )"
  out="$cache/$1-$version-$hash"
}

for name in "${names[@]}"; do
  recipe "$name"
  if [ "$print_only" = 1 ]; then
    echo "$out"
    continue
  fi
  if [ "$force" = 0 ] && [ -x "$out" ]; then
    echo "$out"
    continue
  fi

  # One builder per NAME at a time; whoever waited finds the binary built.
  exec {lockfd}>"$cache/.$name.lock"
  if command -v flock >/dev/null 2>&1; then
    if ! flock -n "$lockfd"; then
      echo "build.sh: waiting for another build of $name to finish (lock $cache/.$name.lock)" >&2
      flock "$lockfd"
    fi
  fi
  # Holding the lock, no other build of NAME runs: temporary files left
  # here were abandoned by a killed build.
  find "$cache" -maxdepth 1 -type f -name ".$name.??????" ! -name ".$name.lock" -delete
  if [ "$force" = 1 ] || [ ! -x "$out" ]; then
    case "$name" in
      kube-apiserver) took="several minutes (about 6 on 2 cores) the first time" ;;
      argocd-cmp-server) took="several minutes the first time (it compiles much of Argo CD and client-go)" ;;
      argocd) took="many minutes the first time (about 15 on 2 cores: it compiles Argo CD, its SCM clients and client-go)" ;;
      addon-operator) took="a few minutes the first time: it compiles nelm, Helm 3 and client-go" ;;
      helm) took="a few minutes the first time" ;;
      *) took="under a minute" ;;
    esac
    echo "build.sh: building $name $version from the Go module proxy into $out ($took)" >&2
    start=$SECONDS
    tmp="$(mktemp "$cache/.$name.XXXXXX")"
    if ! (cd "$here/$name" && go build -trimpath -ldflags "$ldflags" -o "$tmp" "$pkg"); then
      rm -f "$tmp"
      echo "build.sh: building $name failed (module hack/testbin/$name)" >&2
      exit 1
    fi
    chmod 0755 "$tmp"
    mv -f "$tmp" "$out"
    echo "build.sh: built $name in $((SECONDS - start))s" >&2
  fi
  exec {lockfd}>&-
  echo "$out"
done
