#!/usr/bin/env bash
# build-kube.sh OUTDIR — build kube-apiserver and kube-controller-manager v1.20.2 from Debian
# bookworm's `kubernetes` source package, with the three fixes documented in docs/kubernetes.md.
# Network use: apt only (packages and the source tarball); Go compiles from vendor/ with GOPROXY=off.
# Needs root (or passwordless sudo) for apt-get install, and ~2.5 GB under TMPDIR.
set -euo pipefail
# The body is one function so bash parses it whole: editing this file mid-run is harmless.
main() {
  DEB_VERSION=${DEB_VERSION:-1.20.5+really1.20.2-1.1+deb12u1}
  TARGETS=${TARGETS:-cmd/kube-apiserver cmd/kube-controller-manager}
  OUT=$(realpath -m "${1:?usage: build-kube.sh OUTDIR}")
  WORK=$(mktemp -d "${TMPDIR:-/tmp}/kube-build.XXXXXX")
  trap 'rm -rf "$WORK"' EXIT
  trap 'exit 130' INT TERM
  log() { echo "build-kube: $*" >&2; }

  as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi
  }

  # 1. toolchain, build tools and the two replacement Go libraries
  MISSING=()
  for p in golang-1.19-go make rsync ca-certificates golang-github-modern-go-reflect2-dev \
           golang-github-json-iterator-go-dev; do
    dpkg -s "$p" >/dev/null 2>&1 || MISSING+=("$p")
  done
  if [ ${#MISSING[@]} -gt 0 ]; then
    log "installing ${MISSING[*]}"
    as_root apt-get update -qq >&2
    DEBIAN_FRONTEND=noninteractive as_root apt-get install -y -qq --no-install-recommends "${MISSING[@]}" >&2
  fi

  # 2. the source package, through a private apt directory holding deb-src twins of the machine's
  #    own bookworm entries (the system apt configuration is never touched)
  mkdir -p "$WORK/apt/sources" "$WORK/apt/lists/partial" "$WORK/apt/cache/archives/partial"
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    # deb822 stanzas: keep enabled bookworm ones, turn them into deb-src
    awk 'BEGIN { RS = ""; ORS = "\n\n" }
         /(^|\n)Suites:[^\n]*bookworm/ && !/(^|\n)Enabled: *no/ {
           sub(/(^|\n)Types:[^\n]*/, "\nTypes: deb-src"); sub(/^\n/, ""); print }' "$f" \
      >> "$WORK/apt/sources/src.sources"
  done
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] || continue
    sed -n 's/^deb \(.* bookworm.*\)$/deb-src \1/p' "$f" >> "$WORK/apt/sources/src.list"
  done
  APT=(-o APT::Sandbox::User=root -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$WORK/apt/sources"
       -o Dir::State::Lists="$WORK/apt/lists" -o Dir::Cache="$WORK/apt/cache")
  log "fetching kubernetes=$DEB_VERSION sources"
  apt-get "${APT[@]}" -qq update >&2
  (cd "$WORK" && apt-get "${APT[@]}" -qq source --download-only "kubernetes=$DEB_VERSION" >&2)
  tar -C "$WORK" -xzf "$WORK"/kubernetes_*.orig.tar.gz
  cd "$WORK/kubernetes-1.20.2"

  # 3a. the vendored reflect2 1.0.1 crashes on Go >= 1.18 (SIGSEGV in mapiterinit on the first
  #     custom-resource create): use Debian's reflect2 1.0.2 and json-iterator 1.1.12 instead
  for lib in github.com/modern-go/reflect2 github.com/json-iterator/go; do
    rm -rf "vendor/$lib" && mkdir -p "vendor/$lib"
    rsync -a --exclude '*_test.go' --exclude '*_tests' --exclude extra \
      "/usr/share/gocode/src/$lib/" "vendor/$lib/"
  done
  # 3b. on Go >= 1.16 the vendored OpenAPI validator takes "" for null (kubernetes#99804)
  V=vendor/k8s.io/kube-openapi/pkg/validation/validate/type.go
  sed -i 's/if data == nil || reflect.DeepEqual(reflect.Zero(reflect.TypeOf(data)), reflect.ValueOf(data)) {/if data == nil {/' "$V"
  grep -q 'if data == nil {$' "$V"

  # 4. upstream's build (fix 1): runs the code generators, GOPATH mode, vendor/ only
  log "compiling $TARGETS (several minutes)"
  env -u GOPATH -u GOFLAGS PATH="/usr/lib/go-1.19/bin:$PATH" GOPROXY=off CGO_ENABLED=0 \
    make WHAT="$TARGETS" >&2
  mkdir -p "$OUT"
  for t in $TARGETS; do cp "_output/bin/${t#cmd/}" "$OUT/"; done
  "$OUT/kube-apiserver" --version >&2
}
main "$@"
exit
