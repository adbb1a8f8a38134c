#!/usr/bin/env bash
# What the browser tests need beyond the Python packages, installed when missing (idempotent):
# Debian's chromium and chromium-driver (and the Inter font the stylesheet names first, so
# screenshots look the same on every machine), and axe-core's axe.min.js packed from the npm
# registry into .cache/axe-core/ (not committed: a pinned version fetched by this script).
set -euo pipefail
cd "$(dirname "$0")/../.."

AXE_VERSION=4.14.1
AXE_DIR=.cache/axe-core
missing=()
command -v chromium >/dev/null 2>&1 || missing+=(chromium)
command -v chromedriver >/dev/null 2>&1 || missing+=(chromium-driver)
[ -d /usr/share/fonts/opentype/inter ] || missing+=(fonts-inter)
command -v npm >/dev/null 2>&1 || missing+=(npm)  # packs axe-core from the npm registry
if [ ${#missing[@]} -gt 0 ]; then
  if [ "$(id -u)" = 0 ]; then sudo=(); elif command -v sudo >/dev/null 2>&1; then sudo=(sudo); else
    echo "browser tests need: apt-get install ${missing[*]} (run as root)" >&2
    exit 0  # the tests say what is missing (and fail under CI=true)
  fi
  echo "installing ${missing[*]}" >&2
  "${sudo[@]}" apt-get update -qq
  DEBIAN_FRONTEND=noninteractive "${sudo[@]}" apt-get install -y -qq --no-install-recommends \
    "${missing[@]}" >/dev/null
fi

if [ "$(cat "$AXE_DIR/VERSION" 2>/dev/null)" != "$AXE_VERSION" ] || [ ! -s "$AXE_DIR/axe.min.js" ]; then
  if ! command -v npm >/dev/null 2>&1; then
    echo "browser tests need npm to fetch axe-core $AXE_VERSION" >&2
    exit 0
  fi
  tmp=$(mktemp -d)
  trap 'rm -rf "$tmp"' EXIT
  (cd "$tmp" && npm pack --silent "axe-core@$AXE_VERSION" >/dev/null && tar -xzf axe-core-*.tgz package/axe.min.js)
  mkdir -p "$AXE_DIR"
  mv "$tmp/package/axe.min.js" "$AXE_DIR/axe.min.js"
  echo "$AXE_VERSION" > "$AXE_DIR/VERSION"
  echo "axe-core $AXE_VERSION in $AXE_DIR" >&2
fi
