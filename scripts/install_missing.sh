#!/usr/bin/env bash
# install_missing.sh — installs the Debian packages given that are not
# installed yet, as root or through sudo; the stages that need more than
# scripts/setup.sh's set (scripts/test_arm64.sh, scripts/test_windows.sh) call
# it. Without root or sudo it names what is missing, and how to install it,
# and fails.
#
#   scripts/install_missing.sh NAME [--architecture ARCH] PACKAGE...
#
# NAME prefixes the messages; --architecture first adds a foreign dpkg
# architecture (multiarch :ARCH packages need it).
set -euo pipefail
name=$1
shift
architecture=""
if [ "${1:-}" = --architecture ]; then
  architecture=$2
  shift 2
fi
packages=("$@")
if [ "$(id -u)" -eq 0 ]; then sudo_cmd=(); elif command -v sudo >/dev/null 2>&1; then sudo_cmd=(sudo); else sudo_cmd=(false); fi
missing=()
if [ -n "$architecture" ] && ! dpkg --print-foreign-architectures | grep -qx "$architecture"; then
  missing+=("(dpkg architecture $architecture)")
fi
for package in "${packages[@]}"; do
  if ! dpkg-query -W -f='${Status}' "$package" 2>/dev/null | grep -q "install ok installed"; then
    missing+=("$package")
  fi
done
[ ${#missing[@]} -eq 0 ] && exit 0
add_architecture=""
[ -n "$architecture" ] && add_architecture="dpkg --add-architecture $architecture && "
if [ "${sudo_cmd[0]:-}" = false ]; then
  echo "$name: missing and I am not root: ${missing[*]}" >&2
  echo "$name: as root: ${add_architecture}apt-get update && apt-get install ${packages[*]}" >&2
  exit 1
fi
echo "$name: installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
[ -n "$architecture" ] && "${sudo_cmd[@]}" dpkg --add-architecture "$architecture"
"${sudo_cmd[@]}" apt-get update -qq
"${sudo_cmd[@]}" apt-get install -y -qq --no-install-recommends "${packages[@]}"
