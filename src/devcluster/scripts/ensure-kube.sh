#!/usr/bin/env bash
# ensure-kube.sh — print the directory holding kube-apiserver and kube-controller-manager v1.20.2,
# building them on first use (about 4 minutes), and make sure etcd, openssl and curl are installed.
# Build output goes to stderr; stdout carries only the path.
#   CS_KUBE_BIN_DIR  use binaries provided some other way (nothing is built or installed)
#   CS_KUBE_CACHE    cache root (default ${XDG_CACHE_HOME:-$HOME/.cache}/context-service/kube-1.20.2)
set -euo pipefail
# The body is one function so bash parses it whole: editing this file mid-run is harmless.
main() {
  if [ -n "${CS_KUBE_BIN_DIR:-}" ]; then
    [ -x "$CS_KUBE_BIN_DIR/kube-apiserver" ] || { echo "no kube-apiserver in $CS_KUBE_BIN_DIR" >&2; exit 1; }
    echo "$CS_KUBE_BIN_DIR"
    exit 0
  fi
  KEY=deb12u1-recipe1            # bump "recipe" whenever build-kube.sh changes, and the Debian revision with DEB_VERSION
  CACHE=${CS_KUBE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/context-service/kube-1.20.2}
  DEST="$CACHE/$KEY"
  HERE=$(cd "$(dirname "$0")" && pwd)

  as_root() {
    if [ "$(id -u)" = 0 ]; then "$@"; else sudo -n "$@"; fi
  }

  # runtime packages: etcd for storage, openssl for the service-account key, curl for kube-up.sh
  missing() {
    MISSING=()
    command -v etcd >/dev/null || MISSING+=(etcd-server)
    command -v openssl >/dev/null || MISSING+=(openssl)
    command -v curl >/dev/null || MISSING+=(curl)
  }
  missing
  if [ ${#MISSING[@]} -gt 0 ] || [ ! -x "$DEST/kube-apiserver" ]; then
    # parallel callers (the test suite's workers on a new machine) wait here for one that
    # installs and builds: several apt-get at once meet the package manager's lock (exit 100)
    mkdir -p "$CACHE"
    exec 9>"$CACHE/.lock"
    flock 9
    missing                                 # what a caller before us left to do
    if [ ${#MISSING[@]} -gt 0 ]; then
      echo "ensure-kube: installing ${MISSING[*]}" >&2
      # another program's apt-get (not ours: we hold the lock) is waited for, not failed on
      as_root apt-get -o DPkg::Lock::Timeout=600 update -qq >&2
      DEBIAN_FRONTEND=noninteractive as_root apt-get -o DPkg::Lock::Timeout=600 install -y -qq \
        --no-install-recommends "${MISSING[@]}" >&2
    fi
    if [ ! -x "$DEST/kube-apiserver" ]; then
      echo "ensure-kube: building Kubernetes v1.20.2 into $DEST (first use only, ~4 min)" >&2
      TMP=$(mktemp -d "$CACHE/.partial.XXXXXX")
      bash "$HERE/build-kube.sh" "$TMP" >&2 || { rm -rf "$TMP"; exit 1; }
      "$TMP/kube-apiserver" --version | grep -qx 'Kubernetes v1.20.2' || { rm -rf "$TMP"; exit 1; }
      chmod 755 "$TMP"
      rm -rf "$DEST"
      mv "$TMP" "$DEST"                     # atomic: a half-built cache is never used
    fi
    exec 9>&-
  fi
  echo "$DEST"
}
main "$@"
exit
