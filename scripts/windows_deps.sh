#!/usr/bin/env bash
# windows_deps.sh — builds WASTE's dependencies as static MinGW-w64 (Windows
# x86_64) libraries from Debian's own source packages and installs them into
# one prefix that the Windows cross build points pkg-config and find_package at.
#
#   scripts/windows_deps.sh [PREFIX] [--check | --no-check]
#
#   PREFIX      install prefix (default build/windows-deps/prefix)
#   --check     only run the final check (link every library into one .exe
#               and run it under Wine), build nothing
#   --no-check  build, but skip the Wine check
#
# Consumers: PKG_CONFIG_LIBDIR=$PREFIX/lib/pkgconfig and
# CMAKE_FIND_ROOT_PATH / CMAKE_PREFIX_PATH=$PREFIX (the toolchain file this
# script writes, build/windows-deps/toolchain.cmake, shows the whole setup).
#
# WINDOWS_DEPS_WORK overrides the work directory (default build/windows-deps).
#
# Rules it follows:
# - sources come only from Debian: `apt-get source` of the very source
#   package the host's library came from (a deb-src entry is added beside the
#   configured Debian one when missing), googletest from /usr/src/googletest,
#   and the header-only libraries (nlohmann-json, CLI11, fmt) copied from the
#   host's Debian -dev packages;
# - everything is static (.a) and every .pc file lists its dependencies in
#   Libs/Requires (not the .private fields), because CMake's
#   pkg_check_modules reads only those;
# - idempotent: a stamp per library records the Debian source version and a
#   hash of the recipe; a rerun skips whatever is current.
set -euo pipefail

# --- arguments and paths ----------------------------------------------------

repo="$(cd "$(dirname "$0")/.." && pwd)"
mode=all
prefix=""
for arg in "$@"; do
  case "$arg" in
    --check) mode=check ;;
    --no-check) mode=build ;;
    -h|--help) sed -n '2,14p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    -*) echo "windows_deps: unknown option $arg" >&2; exit 2 ;;
    *) prefix="$arg" ;;
  esac
done
# Work files (downloaded sources, build trees, logs, toolchain file) live in
# build/windows-deps whatever the prefix, so a custom prefix stays clean.
work="${WINDOWS_DEPS_WORK:-$repo/build/windows-deps}"
prefix="${prefix:-$work/prefix}"
mkdir -p "$work" "$prefix"
prefix="$(cd "$prefix" && pwd)"
work="$(cd "$work" && pwd)"
srcdir="$work/src"       # Debian source packages, as downloaded (kept: reruns need no network)
blddir="$work/build"     # unpacked sources and build trees (rebuilt from scratch when stale)
logdir="$work/logs"      # one log per library; its tail is printed on failure
stampdir="$prefix/share/windows-deps/stamps"  # with the prefix, so a cached prefix carries them
mkdir -p "$srcdir" "$blddir" "$logdir" "$stampdir"

# The posix thread-model MinGW-w64 compilers: Debian's default
# x86_64-w64-mingw32-g++ is the win32 model, which lacks std::thread/std::mutex
# in GCC 12. Every library and the check use the same compiler so the C++
# runtime (libstdc++, winpthread) matches the project's.
target=x86_64-w64-mingw32
CC="$target-gcc-posix"
CXX="$target-g++-posix"
AR="$target-ar"
WINDRES="$target-windres"
WINE="${WINE:-/usr/lib/wine/wine64}"
jobs="$(nproc)"
# -O2 (what Debian builds these libraries with) rather than CMake's Release
# -O3: faster to compile on CI's two cores.
opt="-O2 -DNDEBUG"

say() { echo "windows_deps: $*" >&2; }
die() { say "error: $*"; exit 1; }

# Elapsed seconds since $1 (a `date +%s.%N` value), one decimal.
since() { awk -v a="$1" -v b="$(date +%s.%N)" 'BEGIN { printf "%.1f", b - a }'; }

# --- host tools -------------------------------------------------------------

# Run as root: directly, through sudo, or fail with the command to run
# (the same policy as scripts/setup.sh).
as_root() {
  if [ "$(id -u)" -eq 0 ]; then "$@"
  elif command -v sudo >/dev/null 2>&1; then sudo "$@"
  else die "needs root for: $*"
  fi
}

# Debian packages this script needs on the host: the cross compilers,
# dpkg-dev (dpkg-source unpacks and patches the source packages), the build
# tools, python3 (cpp-httplib's split.py), the host packages whose files are
# copied (googletest sources, header-only libraries) and Wine for the check.
ensure_host_packages() {
  local packages=(
    gcc-mingw-w64-x86-64-posix g++-mingw-w64-x86-64-posix binutils-mingw-w64-x86-64
    dpkg-dev cmake ninja-build pkg-config python3 googletest
    nlohmann-json3-dev libcli11-dev libfmt-dev wine64
  )
  local missing=() package
  for package in "${packages[@]}"; do
    dpkg-query -W -f='${Status}\n' "$package" 2>/dev/null | grep "install ok installed" >/dev/null || missing+=("$package")
  done
  if [ ${#missing[@]} -gt 0 ]; then
    say "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    as_root apt-get update -qq
    as_root apt-get install -y -qq --no-install-recommends "${missing[@]}"
  fi
}

# --- Debian source packages -------------------------------------------------

deb_src_file=/etc/apt/sources.list.d/waste-deb-src.sources

# True when some configured Debian entry already serves source packages.
have_deb_src() {
  local f
  for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
    [ -f "$f" ] && grep -qE '^[[:space:]]*deb-src[[:space:]].*debian' "$f" && return 0
  done
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    # deb822: a paragraph whose Types include deb-src and whose URIs are Debian's.
    awk 'BEGIN { RS = ""; found = 1 }
         /(^|\n)Types:[^\n]*deb-src/ && /(^|\n)URIs:[^\n]*debian/ && !/(^|\n)Enabled:[[:space:]]*no/ { found = 0 }
         END { exit found }' "$f" && return 0
  done
  return 1
}

# Adds deb-src twins of the configured Debian entries (same mirror, suites,
# components and keyring) in a file of its own, deb822 when the machine uses
# deb822 (debian.sources), one-line format otherwise; then refreshes only that
# file's indices (the binary indices are left alone, and List-Cleanup=false
# keeps apt from deleting them).
add_deb_src() {
  local tmp f
  tmp="$(mktemp)"
  for f in /etc/apt/sources.list.d/*.sources; do
    [ -f "$f" ] || continue
    awk 'BEGIN { RS = ""; ORS = "\n\n" }
         /(^|\n)Types:[^\n]*deb/ && /(^|\n)URIs:[^\n]*debian/ && !/(^|\n)Enabled:[[:space:]]*no/ {
           sub(/Types:[^\n]*/, "Types: deb-src"); print }' "$f" >>"$tmp"
  done
  local list_file="${deb_src_file%.sources}.list" target_file="$deb_src_file"
  if [ ! -s "$tmp" ]; then
    for f in /etc/apt/sources.list /etc/apt/sources.list.d/*.list; do
      [ -f "$f" ] || continue
      sed -nE 's/^[[:space:]]*deb([[:space:]].*debian.*)$/deb-src\1/p' "$f" >>"$tmp"
    done
    target_file="$list_file"
  fi
  [ -s "$tmp" ] || { rm -f "$tmp"; die "no Debian entry in /etc/apt/sources.list{,.d} to add deb-src beside"; }
  say "adding $target_file (deb-src beside the configured Debian entries)"
  as_root install -m 0644 "$tmp" "$target_file"
  rm -f "$tmp"
  update_deb_src_only "$target_file"
}

update_deb_src_only() {
  local parts
  parts="$(mktemp -d)"
  cp "$1" "$parts/"
  chmod 755 "$parts"
  as_root apt-get update -qq -o Dir::Etc::SourceList=/dev/null -o Dir::Etc::SourceParts="$parts" \
    -o APT::Get::List-Cleanup=false
  rm -rf "$parts"
}

# Makes `apt-cache showsrc` answer: deb-src configured and its index present.
# Needed on every run (stamps are compared with the newest version apt
# knows), but apt-get update runs only when deb-src was missing or its index
# was never fetched (a fresh CI container).
# (grep without -q: an early exit would SIGPIPE apt-cache, failing under pipefail.)
has_source_index() { apt-cache showsrc --only-source zlib 2>/dev/null | grep '^Version:' >/dev/null; }
sources_ready=""
ensure_deb_src() {
  [ -n "$sources_ready" ] && return 0
  if ! have_deb_src; then
    add_deb_src
  elif ! has_source_index; then
    # deb-src configured but never fetched (fresh CI container).
    if [ -f "$deb_src_file" ]; then update_deb_src_only "$deb_src_file"
    elif [ -f "${deb_src_file%.sources}.list" ]; then update_deb_src_only "${deb_src_file%.sources}.list"
    else as_root apt-get update -qq
    fi
  fi
  has_source_index \
    || die "apt has no source index even after apt-get update"
  sources_ready=1
}

# Versions of a source package known to apt, newest first (dpkg ordering).
source_versions() {
  local versions=() v i j
  mapfile -t versions < <(apt-cache showsrc --only-source "$1" | awk '/^Version:/ { print $2 }' | sort -u)
  # Insertion sort with dpkg's comparison (sort -V mishandles ~ and epochs).
  for ((i = 1; i < ${#versions[@]}; i++)); do
    v="${versions[i]}"
    for ((j = i - 1; j >= 0; j--)); do
      dpkg --compare-versions "${versions[j]}" lt "$v" || break
      versions[j + 1]="${versions[j]}"
    done
    versions[j + 1]="$v"
  done
  printf '%s\n' "${versions[@]}"
}

# Downloads (or finds already downloaded) source package $1 version $2 into
# $srcdir/$1 and prints its .dsc path. apt verifies the files against the
# signed index; the download is kept so reruns need no network.
get_source() {
  local package="$1" version="$2" dir="$srcdir/$1"
  local dsc="$dir/${package}_${version#*:}.dsc"
  mkdir -p "$dir"
  if [ ! -f "$dsc" ]; then
    # As root, apt downloads as _apt, which cannot write here; say it may stay root.
    local sandbox=()
    [ "$(id -u)" -eq 0 ] && sandbox=(-o APT::Sandbox::User=root)
    (cd "$dir" && apt-get source -qq --download-only "${sandbox[@]}" "$package=$version") >&2 || return 1
  fi
  [ -f "$dsc" ] || return 1
  echo "$dsc"
}

# --- stamps -----------------------------------------------------------------

# The recipe hash: the library's build function, the shared helpers and the
# compiler, so editing a recipe or changing compilers rebuilds what it affects.
recipe_hash() {
  { declare -f "build_$1" cmake_build finish_pc; echo "$opt"; "$CXX" --version | head -1; } | sha256sum | cut -c1-12
}
stamp_ok() { [ -f "$stampdir/$1" ] && [ "$(cat "$stampdir/$1")" = "$2" ]; }

# --- the toolchain file -----------------------------------------------------

# One CMake toolchain file for every CMake-based dependency (and a working
# example for the project's own Windows toolchain): cross compilers, find_*
# rooted in the MinGW sysroot and the prefix only, pkg-config reading only the
# prefix, Wine as the emulator for anything CMake wants to run.
toolchain="$work/toolchain.cmake"
write_toolchain() {
  local new
  new="$(cat <<EOF
# Written by scripts/windows_deps.sh: cross build for Windows x86_64 with
# Debian's MinGW-w64 (posix thread model) against the deps in the prefix.
set(CMAKE_SYSTEM_NAME Windows)
set(CMAKE_SYSTEM_PROCESSOR x86_64)
set(CMAKE_C_COMPILER $CC)
set(CMAKE_CXX_COMPILER $CXX)
set(CMAKE_RC_COMPILER $WINDRES)
set(CMAKE_FIND_ROOT_PATH /usr/$target "$prefix")
set(CMAKE_PREFIX_PATH "$prefix")
set(CMAKE_FIND_ROOT_PATH_MODE_PROGRAM NEVER)
set(CMAKE_FIND_ROOT_PATH_MODE_LIBRARY ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_INCLUDE ONLY)
set(CMAKE_FIND_ROOT_PATH_MODE_PACKAGE ONLY)
set(ENV{PKG_CONFIG_LIBDIR} "$prefix/lib/pkgconfig")
set(ENV{PKG_CONFIG_PATH} "")
set(CMAKE_CROSSCOMPILING_EMULATOR "env;WINEDEBUG=-all;$WINE")
EOF
)"
  # Rewritten only when it changes, so its mtime does not retrigger CMake.
  [ -f "$toolchain" ] && [ "$(cat "$toolchain")" = "$new" ] || printf '%s\n' "$new" >"$toolchain"
}

# --- shared build helpers ---------------------------------------------------

# Configure, build and install a CMake project: static, Release at -O2, Ninja.
# $1 source dir, $2 build dir, the rest extra -D options.
cmake_build() {
  local src="$1" build="$2"
  shift 2
  cmake -G Ninja -S "$src" -B "$build" -Wno-dev \
    -DCMAKE_TOOLCHAIN_FILE="$toolchain" \
    -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_FLAGS_RELEASE="$opt" -DCMAKE_CXX_FLAGS_RELEASE="$opt" \
    -DCMAKE_INSTALL_PREFIX="$prefix" -DCMAKE_INSTALL_LIBDIR=lib \
    -DBUILD_SHARED_LIBS=OFF "$@"
  cmake --build "$build" -j "$jobs"
  cmake --install "$build"
}

# Compile C files $3... into static library $1 with extra flags $2 (one
# word-split string), in parallel: for the small Makefile-only libraries,
# where a configure step would cost more than the build.
compile_static() {
  local lib="$1" flags="$2" file
  shift 2
  local objects=()
  for file in "$@"; do objects+=("$file.o"); done
  # shellcheck disable=SC2086 # $opt and $flags are lists of flags
  printf '%s\n' "$@" | xargs -P "$jobs" -I{} $CC $opt $flags -c {} -o {}.o
  rm -f "$lib"
  "$AR" rcs "$lib" "${objects[@]}"
}

# Every installed .pc file made right for a static, relocatable prefix:
# the .private fields merged into Libs/Requires (CMake's pkg_check_modules
# does not read them, and with static libraries they are not optional), and
# the prefix written as ${pcfiledir}/../.. so a moved or cached prefix works.
# Idempotent; $1... are .pc files.
finish_pc() {
  local pc
  for pc in "$@"; do
    if [ ! -f "$pc" ] || [ -L "$pc" ]; then continue; fi
    awk -v abs="$prefix" '
      function subst(s,   i, out) {  # the absolute prefix -> ${prefix}
        out = ""
        while ((i = index(s, abs)) > 0) { out = out substr(s, 1, i - 1) "${prefix}"; s = substr(s, i + length(abs)) }
        return out s
      }
      /^prefix=/ { lines[++n] = "prefix=${pcfiledir}/../.."; has_prefix = 1; next }
      /^Libs\.private:/ { sub(/^Libs\.private:[ \t]*/, ""); if ($0 != "") libs_private = libs_private " " subst($0); next }
      /^Requires\.private:/ { sub(/^Requires\.private:[ \t]*/, ""); if ($0 != "") req_private = req_private ", " $0; next }
      { lines[++n] = subst($0) }
      END {
        # (some, like gtest.pc, have no prefix variable: one is added)
        if (!has_prefix) print "prefix=${pcfiledir}/../.."
        for (k = 1; k <= n; k++) {
          line = lines[k]
          if (line ~ /^Libs:/) { line = line libs_private; libs_private = "" }
          if (line ~ /^Requires:/ && req_private != "") {
            rest = line; sub(/^Requires:[ \t]*/, "", rest)
            line = "Requires: " (rest == "" ? substr(req_private, 3) : rest req_private); req_private = ""
          }
          print line
        }
        if (libs_private != "") print "Libs:" libs_private
        if (req_private != "") print "Requires: " substr(req_private, 3)
      }' "$pc" >"$pc.tmp"
    mv "$pc.tmp" "$pc"
  done
}

# --- the recipes ------------------------------------------------------------
# Each build_<name> runs in its own build tree ($b, fresh) with the unpacked
# Debian source in $s and the version in $v, and installs into $prefix.

# zlib: Debian's dfsg tarball drops win32/Makefile.gcc, and zlib's CMake
# builds a DLL, examples and a libzlibstatic.a nobody finds; the library is
# 15 C files, so compile them directly as libz.a (the name FindZLIB and
# libpng's CMake look for).
build_zlib() {
  cd "$s"
  compile_static "$b/libz.a" "-I." adler32.c crc32.c deflate.c infback.c inffast.c inflate.c \
    inftrees.c trees.c zutil.c compress.c uncompr.c gzclose.c gzlib.c gzread.c gzwrite.c
  install -Dm644 "$b/libz.a" "$prefix/lib/libz.a"
  install -Dm644 -t "$prefix/include" zlib.h zconf.h
  local version
  version="$(sed -n 's/^#define ZLIB_VERSION "\(.*\)"/\1/p' zlib.h)"
  sed -e "s|@prefix@|$prefix|; s|@exec_prefix@|\${prefix}|; s|@libdir@|\${exec_prefix}/lib|" \
      -e "s|@sharedlibdir@|\${libdir}|; s|@includedir@|\${prefix}/include|; s|@VERSION@|$version|" \
      zlib.pc.in >"$prefix/lib/pkgconfig/zlib.pc"
  finish_pc "$prefix/lib/pkgconfig/zlib.pc"
}

# PCRE2: 8-bit only, with the JIT (tests/tokenizer_test.cpp expects
# pretokenizer.jit()); no pcre2grep/pcre2test, no optional compressors.
# Its CMake leaves PCRE2_STATIC out of the .pc (a static pcre2.h otherwise
# declares everything dllimport), so it is added here.
build_pcre2() {
  cmake_build "$s" "$b" \
    -DBUILD_STATIC_LIBS=ON -DPCRE2_BUILD_PCRE2_8=ON -DPCRE2_BUILD_PCRE2_16=OFF -DPCRE2_BUILD_PCRE2_32=OFF \
    -DPCRE2_SUPPORT_JIT=ON -DPCRE2_BUILD_PCRE2GREP=OFF -DPCRE2_BUILD_TESTS=OFF -DPCRE2_SHOW_REPORT=OFF \
    -DPCRE2_SUPPORT_LIBBZ2=OFF -DPCRE2_SUPPORT_LIBZ=OFF -DPCRE2_SUPPORT_LIBEDIT=OFF -DPCRE2_SUPPORT_LIBREADLINE=OFF
  local pc
  for pc in "$prefix"/lib/pkgconfig/libpcre2-8.pc "$prefix"/lib/pkgconfig/libpcre2-posix.pc; do
    grep -q -- '-DPCRE2_STATIC' "$pc" || sed -i 's|^Cflags:.*|& -DPCRE2_STATIC|' "$pc"
  done
  finish_pc "$prefix"/lib/pkgconfig/libpcre2-*.pc
}

# libdeflate 1.14 (Debian's) has only a Makefile; its own MinGW branch builds
# libdeflatestatic.lib, installed under the usual libdeflate.a name.
build_libdeflate() {
  cp -a "$s/." "$b/"
  cd "$b"
  make -j "$jobs" CC="$CC" AR="$AR" CFLAGS="-O2" libdeflatestatic.lib
  install -Dm644 libdeflatestatic.lib "$prefix/lib/libdeflate.a"
  install -Dm644 libdeflate.h "$prefix/include/libdeflate.h"
  sed -e "s|@PREFIX@|$prefix|; s|@INCDIR@|\${prefix}/include|; s|@LIBDIR@|\${prefix}/lib|" \
      -e "s|@VERSION@|$(sed -n 's/#define LIBDEFLATE_VERSION_STRING.*"\(.*\)"/\1/p' libdeflate.h)|" \
      libdeflate.pc.in >"$prefix/lib/pkgconfig/libdeflate.pc"
  finish_pc "$prefix/lib/pkgconfig/libdeflate.pc"
}

# libpng (needs zlib first): static, no tools/tests; keeps its SSE code
# (plain C intrinsics, no assembler).
build_libpng() {
  cmake_build "$s" "$b" -DPNG_SHARED=OFF -DPNG_STATIC=ON -DPNG_EXECUTABLES=OFF -DPNG_TESTS=OFF \
    -Dld-version-script=OFF
  finish_pc "$prefix/lib/pkgconfig/libpng16.pc"
}

# libjpeg-turbo: the libjpeg (6b ABI, Debian's libjpeg62-turbo) static
# library only. WITH_SIMD=OFF needs no nasm; its CMake has no switch for the
# static cjpeg/djpeg/jpegtran, so only the jpeg-static target is built and
# the library, headers and generated libjpeg.pc are installed by hand.
build_libjpeg() {
  # (no CMAKE_INSTALL_LIBDIR=lib: its own GNUInstallDirs resolves that
  # against the working directory in libjpeg.pc; lib is its Windows default)
  cmake -G Ninja -S "$s" -B "$b" -Wno-dev -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DCMAKE_BUILD_TYPE=Release \
    -DCMAKE_C_FLAGS_RELEASE="$opt" -DCMAKE_INSTALL_PREFIX="$prefix" \
    -DENABLE_SHARED=OFF -DENABLE_STATIC=ON -DWITH_SIMD=OFF -DWITH_TURBOJPEG=OFF -DWITH_JAVA=OFF
  cmake --build "$b" -j "$jobs" --target jpeg-static
  install -Dm644 "$b/libjpeg.a" "$prefix/lib/libjpeg.a"
  install -Dm644 -t "$prefix/include" "$s/jpeglib.h" "$s/jerror.h" "$s/jmorecfg.h" "$b/jconfig.h"
  install -Dm644 "$b/pkgscripts/libjpeg.pc" "$prefix/lib/pkgconfig/libjpeg.pc"
  finish_pc "$prefix/lib/pkgconfig/libjpeg.pc"
}

# giflib: a plain Makefile for Unix shared libraries; its library sources
# (the Makefile's SOURCES) are compiled directly, and the .pc written like
# Debian's libgif.pc.
build_giflib() {
  cd "$s"
  local sources
  sources="$(sed -n '/^SOURCES = /,/[^\\]$/p' Makefile | sed 's/SOURCES = //; s/\\//g')"
  # shellcheck disable=SC2086 # the file list is meant to split
  compile_static "$b/libgif.a" "-std=gnu99 -Wall -I." $sources
  install -Dm644 "$b/libgif.a" "$prefix/lib/libgif.a"
  install -Dm644 gif_lib.h "$prefix/include/gif_lib.h"
  cat >"$prefix/lib/pkgconfig/libgif.pc" <<EOF
prefix=$prefix
exec_prefix=\${prefix}
libdir=\${prefix}/lib
includedir=\${prefix}/include

Name: libgif
Description: Loads and saves GIF files
Version: ${v%%-*}
Cflags: -I\${includedir}
Libs: -L\${libdir} -lgif
EOF
  finish_pc "$prefix/lib/pkgconfig/libgif.pc"
}

# libwebp: the libraries only (webp, webpdecoder, webpdemux, sharpyuv), no
# tools, no mux; its SIMD code is intrinsics (no assembler), kept.
build_libwebp() {
  cmake_build "$s" "$b" -DWEBP_BUILD_ANIM_UTILS=OFF -DWEBP_BUILD_CWEBP=OFF -DWEBP_BUILD_DWEBP=OFF \
    -DWEBP_BUILD_GIF2WEBP=OFF -DWEBP_BUILD_IMG2WEBP=OFF -DWEBP_BUILD_VWEBP=OFF -DWEBP_BUILD_WEBPINFO=OFF \
    -DWEBP_BUILD_LIBWEBPMUX=OFF -DWEBP_BUILD_WEBPMUX=OFF -DWEBP_BUILD_EXTRAS=OFF
  finish_pc "$prefix"/lib/pkgconfig/libwebp*.pc "$prefix"/lib/pkgconfig/libsharpyuv.pc
}

# stb: Debian's libstb builds each header with its *_IMPLEMENTATION define
# into libstb (stb.pc: -lstb; bmp_decode.cpp includes <stb/stb_image.h>
# without the define). The image headers are the ones WASTE uses and the
# portable ones; all headers are installed under include/stb like libstb-dev.
build_libstb() {
  cd "$b"
  local header name
  for header in stb_image stb_image_write stb_image_resize; do
    name="$(echo "$header" | tr '[:lower:]' '[:upper:]')"
    printf '#define %s_IMPLEMENTATION\n#include "%s.h"\n' "$name" "$header" >"$header.c"
  done
  compile_static "$b/libstb.a" "-DSTB_DEFINE -DSTB_PERFECT_HASH -Wall -I$s" stb_image.c stb_image_write.c stb_image_resize.c
  install -Dm644 "$b/libstb.a" "$prefix/lib/libstb.a"
  install -Dm644 -t "$prefix/include/stb" "$s"/*.h
  # Cflags: include/stb like Debian's stb.pc, plus include for <stb/...>.
  cat >"$prefix/lib/pkgconfig/stb.pc" <<EOF
prefix=$prefix
libdir=\${prefix}/lib
includedir=\${prefix}/include/stb

Name: stb
Description: single-file image and audio processing libraries for C/C++
Version: 0.0
Libs: -L\${libdir} -lstb
Cflags: -I\${includedir} -I\${prefix}/include
EOF
  finish_pc "$prefix/lib/pkgconfig/stb.pc"
}

# cpp-httplib: Debian builds it as a compiled library (split.py cuts
# httplib.h into a declarations header and httplib.cc); the same here,
# without OpenSSL/zlib/brotli (not needed by `waste serve`). Debian's
# CPPHTTPLIB_USE_POLL is left out: on Windows it maps poll to WSAPoll with a
# macro that the split header #undefs before httplib.cc's code, so it does
# not compile; select() serves (Windows' FD_SETSIZE bounds how many sockets a
# set holds, not their values, and httplib selects on one at a time).
# Windows sockets come from ws2_32.
build_cpp_httplib() {
  python3 "$s/split.py" --out "$b"
  cd "$b"
  # shellcheck disable=SC2086 # $opt is a list of flags
  "$CXX" $opt -std=c++17 -I. -c httplib.cc -o httplib.o
  "$AR" rcs libcpp-httplib.a httplib.o
  install -Dm644 libcpp-httplib.a "$prefix/lib/libcpp-httplib.a"
  install -Dm644 httplib.h "$prefix/include/httplib.h"
  cat >"$prefix/lib/pkgconfig/cpp-httplib.pc" <<EOF
prefix=$prefix
includedir=\${prefix}/include
libdir=\${prefix}/lib

Name: cpp-httplib
Description: A C++ HTTP/HTTPS server and client library
Version: ${v%%+*}
Libs: -L\${libdir} -lcpp-httplib -lws2_32
Cflags: -I\${includedir}
EOF
  finish_pc "$prefix/lib/pkgconfig/cpp-httplib.pc"
}

# GoogleTest from Debian's googletest package sources (/usr/src/googletest):
# gtest, gtest_main, gmock, gmock_main with GTestConfig.cmake, so
# find_package(GTest) gives GTest::gtest/gtest_main/gmock/gmock_main. Its
# CMake already builds MinGW without pthreads (Win32 threads, matching what
# gtest-port.h picks for consumers).
build_googletest() {
  cmake_build "$s" "$b" -DBUILD_GMOCK=ON -DINSTALL_GTEST=ON -Dgtest_build_tests=OFF \
    -Dgtest_build_samples=OFF -Dgmock_build_tests=OFF
  finish_pc "$prefix"/lib/pkgconfig/gtest*.pc "$prefix"/lib/pkgconfig/gmock*.pc
}

# Header-only libraries, copied (not symlinked: /usr/include would drag glibc
# in) from the host's Debian packages with their CMake package files, which
# find the headers relative to themselves.
build_nlohmann_json() {
  rm -rf "$prefix/include/nlohmann" "$prefix/share/cmake/nlohmann_json"
  mkdir -p "$prefix/include" "$prefix/share/cmake"
  cp -a /usr/include/nlohmann "$prefix/include/"
  cp -a /usr/share/cmake/nlohmann_json "$prefix/share/cmake/"
}
build_cli11() {
  rm -rf "$prefix/include/CLI" "$prefix/share/cmake/CLI11"
  mkdir -p "$prefix/include" "$prefix/share/cmake"
  cp -a /usr/include/CLI "$prefix/include/"
  cp -a /usr/share/cmake/CLI11 "$prefix/share/cmake/"
}
# fmt header-only: libfmt-dev's headers plus a package config whose fmt::fmt
# (and fmt::fmt-header-only, upstream's name) carries FMT_HEADER_ONLY=1, so a
# consumer's find_package(fmt) + fmt::fmt needs no change and no libfmt.a.
build_fmt() {
  rm -rf "$prefix/include/fmt" "$prefix/lib/cmake/fmt"
  mkdir -p "$prefix/include" "$prefix/lib/cmake/fmt"
  cp -a /usr/include/fmt "$prefix/include/"
  local version
  version="$(awk '/define FMT_VERSION/ { v = $3; printf "%d.%d.%d", v / 10000, (v / 100) % 100, v % 100 }' /usr/include/fmt/core.h)"
  cat >"$prefix/lib/cmake/fmt/fmt-config.cmake" <<'EOF'
# Written by scripts/windows_deps.sh: fmt header-only (FMT_HEADER_ONLY=1).
get_filename_component(_fmt_prefix "${CMAKE_CURRENT_LIST_DIR}/../../.." ABSOLUTE)
if(NOT TARGET fmt::fmt-header-only)
  add_library(fmt::fmt-header-only INTERFACE IMPORTED)
  set_target_properties(fmt::fmt-header-only PROPERTIES
    INTERFACE_INCLUDE_DIRECTORIES "${_fmt_prefix}/include"
    INTERFACE_COMPILE_DEFINITIONS "FMT_HEADER_ONLY=1"
    INTERFACE_COMPILE_FEATURES cxx_std_11)
endif()
if(NOT TARGET fmt::fmt)
  add_library(fmt::fmt INTERFACE IMPORTED)
  set_target_properties(fmt::fmt PROPERTIES INTERFACE_LINK_LIBRARIES fmt::fmt-header-only)
endif()
unset(_fmt_prefix)
EOF
  cat >"$prefix/lib/cmake/fmt/fmt-config-version.cmake" <<EOF
# Written by scripts/windows_deps.sh: same major version, not older than asked.
set(PACKAGE_VERSION "$version")
if(PACKAGE_FIND_VERSION VERSION_GREATER PACKAGE_VERSION OR NOT PACKAGE_FIND_VERSION_MAJOR STREQUAL "${version%%.*}")
  set(PACKAGE_VERSION_COMPATIBLE FALSE)
else()
  set(PACKAGE_VERSION_COMPATIBLE TRUE)
  if(PACKAGE_FIND_VERSION STREQUAL PACKAGE_VERSION)
    set(PACKAGE_VERSION_EXACT TRUE)
  endif()
endif()
EOF
}

# --- running the recipes ----------------------------------------------------

# Builds library $1 from Debian source package $2 ("-" for a host package
# whose files are used directly: $3 is then that package and $4 the source
# directory). Runs in the background: prints one line, logs the rest.
build_one() {
  local name="$1" package="$2" t0 recipe v="" s="" dsc="" candidate
  t0="$(date +%s.%N)"
  recipe="$(recipe_hash "$name")"
  if [ "$package" = "-" ]; then
    # (the first line: a Multi-Arch package may be installed for two architectures)
    v="$(dpkg-query -W -f='${Version}\n' "$3" | awk 'NR == 1')"
    s="${4:-}"
    if stamp_ok "$name" "$v $recipe"; then echo "  $name $v: up to date"; return 0; fi
  else
    # Newest version first; an older one only when the newer is not
    # downloadable (a lagging mirror), and then with a warning.
    : >"$logdir/$name.download.log"
    for candidate in $(source_versions "$package"); do
      if stamp_ok "$name" "$candidate $recipe"; then
        echo "  $name $candidate: up to date"; return 0
      fi
      if dsc="$(get_source "$package" "$candidate" 2>>"$logdir/$name.download.log")"; then v="$candidate"; break; fi
      say "warning: $package $candidate could not be downloaded, trying an older version"
    done
    [ -n "$v" ] || { say "$package: no version could be downloaded (see $logdir/$name.download.log)"; return 1; }
    s="$blddir/$name-src"
    rm -rf "$s"
    # dpkg-source applies Debian's patches (security fixes included).
    dpkg-source -q --no-copy -x "$dsc" "$s" >"$logdir/$name.log" 2>&1
  fi
  local b="$blddir/$name"
  [ "$package" = "-" ] && : >"$logdir/$name.log"
  rm -rf "${b:?}" "${stampdir:?}/$name"
  mkdir -p "$b" "$prefix/lib/pkgconfig"
  # Timed: wall is shared with the other builds running at once; the CPU
  # seconds (user + system, compilers included) are this library's own cost.
  local TIMEFORMAT="%U %S" rc cpu
  set +e
  # (the inner braces keep time's own report out of the log's redirection)
  { time { (set -e; "build_$name") >>"$logdir/$name.log" 2>&1; }; } 2>"$b.time"
  rc=$?
  set -e
  if [ "$rc" -ne 0 ]; then
    say "$name $v FAILED after $(since "$t0") s; the end of $logdir/$name.log:"
    tail -n 30 "$logdir/$name.log" >&2
    return "$rc"
  fi
  cpu="$(awk '{ printf "%.1f", $1 + $2 }' "$b.time")"
  echo "$v $recipe" >"$stampdir/$name"
  echo "  $name $v: built in $(since "$t0") s wall, $cpu s CPU"
}

# Starts build_one in the background, its pid in pids[name]; wait_for
# collects one and remembers a failure.
declare -A pids=()
failed=""
start() { build_one "$@" & pids[$1]=$!; }
wait_for() { wait "${pids[$1]}" || failed="$failed $1"; unset "pids[$1]"; }

build_all() {
  ensure_host_packages
  write_toolchain
  local t0
  t0="$(date +%s.%N)"
  ensure_deb_src
  say "building into $prefix (logs in $logdir)"
  # All libraries at once: on few cores this overlaps the serial parts
  # (downloads, CMake's configure checks) with the compiles of the others.
  # The slowest (GoogleTest, pcre2's JIT, libwebp, httplib) start first;
  # libpng waits for zlib.
  start googletest - googletest /usr/src/googletest
  start pcre2 pcre2
  start libwebp libwebp
  start cpp_httplib cpp-httplib
  start zlib zlib
  start libjpeg libjpeg-turbo
  start libdeflate libdeflate
  start giflib giflib
  start libstb libstb
  start nlohmann_json - nlohmann-json3-dev
  start cli11 - libcli11-dev
  start fmt - libfmt-dev
  wait_for zlib
  if [[ " $failed " == *" zlib "* ]]; then say "skipping libpng (zlib failed)"; failed="$failed libpng"
  else start libpng libpng1.6
  fi
  local name
  for name in "${!pids[@]}"; do wait_for "$name"; done
  [ -z "$failed" ] || die "failed:$failed"
  # Manuals and documentation some installs add are not needed to link
  # (removed here, not in the recipes, which run concurrently).
  rm -rf "$prefix/man" "$prefix/share/man" "$prefix/share/doc"
  say "all libraries current in $(since "$t0") s"
}

# --- the check --------------------------------------------------------------

# A CMake project that finds every dependency the way WASTE's CMakeLists does
# (find_package for nlohmann_json/CLI11/fmt/GTest, pkg_check_modules for the
# rest), links one -static .exe that calls into each, and runs it under Wine.
check() {
  write_toolchain
  local t0 dir="$work/check" key
  t0="$(date +%s.%N)"
  # After a build, a check that passed for exactly these stamps (and this
  # check) is not repeated; --check always runs it.
  compgen -G "$stampdir/*" >/dev/null || die "check: nothing built in $prefix yet"
  key="$(cat "$stampdir"/* <(declare -f check) | sha256sum | cut -c1-16)"
  if [ "$mode" = all ] && [ -f "$dir/passed" ] && [ "$(cat "$dir/passed")" = "$key" ]; then
    say "check: passed before with these libraries (--check reruns it)"
    return 0
  fi
  rm -rf "$dir"
  mkdir -p "$dir"
  # Every .pc resolves, and points only inside the prefix (a stray -L or -I
  # would go unnoticed by the link below, which finds the libraries anyway).
  local modules=(libdeflate libpcre2-8 zlib libpng16 libjpeg libgif libwebp stb cpp-httplib gtest gmock)
  local flags flag real_prefix
  real_prefix="$(cd "$prefix" && pwd -P)"
  flags="$(PKG_CONFIG_LIBDIR="$prefix/lib/pkgconfig" pkg-config --cflags --libs "${modules[@]}")" \
    || die "check: pkg-config cannot resolve ${modules[*]}"
  for flag in $flags; do
    case "$flag" in
      -I*|-L*)
        [ -d "${flag:2}" ] || die "check: pkg-config gives $flag, which does not exist"
        case "$(cd "${flag:2}" && pwd -P)/" in
          "$real_prefix"/*) ;;
          *) die "check: pkg-config gives $flag, outside $prefix" ;;
        esac ;;
    esac
  done
  cat >"$dir/CMakeLists.txt" <<'EOF'
cmake_minimum_required(VERSION 3.20)
project(windows_deps_check C CXX)
set(CMAKE_CXX_STANDARD 20)
find_package(nlohmann_json 3.10 REQUIRED)
find_package(CLI11 REQUIRED)
find_package(fmt REQUIRED)
find_package(GTest REQUIRED)
find_package(Threads REQUIRED)
find_package(PkgConfig REQUIRED)
pkg_check_modules(DEPS REQUIRED IMPORTED_TARGET libdeflate libpcre2-8 zlib libpng16 libjpeg libgif libwebp stb cpp-httplib)
add_executable(check check_c.cpp check_cxx.cpp)
target_link_libraries(check PRIVATE PkgConfig::DEPS nlohmann_json::nlohmann_json CLI11::CLI11 fmt::fmt
  GTest::gtest_main GTest::gmock Threads::Threads)
# One self-contained .exe: libstdc++, libgcc and winpthread linked in.
target_link_options(check PRIVATE -static)
EOF
  # Two files, so the two cores compile them at once.
  cat >"$dir/check_c.cpp" <<'EOF'
// Calls into every C library (and cpp-httplib, which wraps Winsock).
#define PCRE2_CODE_UNIT_WIDTH 8
#include <pcre2.h>
#include <libdeflate.h>
#include <zlib.h>
#include <png.h>
#include <cstdio>  // before jpeglib.h, which needs FILE
#include <jpeglib.h>
#include <gif_lib.h>
#include <webp/decode.h>
#include <stb/stb_image.h>
#include <httplib.h>
#include <gtest/gtest.h>
#include <string>
#include <vector>

TEST(WindowsDeps, Pcre2CompilesJitsAndMatches) {
    int error = 0;
    PCRE2_SIZE offset = 0;
    pcre2_code* code = pcre2_compile(reinterpret_cast<PCRE2_SPTR>("\\p{L}+"), PCRE2_ZERO_TERMINATED, PCRE2_UTF | PCRE2_UCP, &error, &offset, nullptr);
    ASSERT_NE(code, nullptr);
    EXPECT_EQ(pcre2_jit_compile(code, PCRE2_JIT_COMPLETE), 0);
    pcre2_match_data* match = pcre2_match_data_create_from_pattern(code, nullptr);
    const std::string subject = "  h\xc3\xa9llo world";
    EXPECT_EQ(pcre2_jit_match(code, reinterpret_cast<PCRE2_SPTR>(subject.data()), subject.size(), 0, 0, match, nullptr), 1);
    EXPECT_EQ(pcre2_get_ovector_pointer(match)[0], 2u);
    EXPECT_EQ(pcre2_get_ovector_pointer(match)[1], 8u);
    pcre2_match_data_free(match);
    pcre2_code_free(code);
}

TEST(WindowsDeps, LibdeflateAndZlibRoundTrip) {
    const std::string text(10000, 'w');
    libdeflate_compressor* compressor = libdeflate_alloc_compressor(6);
    std::vector<char> packed(libdeflate_zlib_compress_bound(compressor, text.size()));
    size_t size = libdeflate_zlib_compress(compressor, text.data(), text.size(), packed.data(), packed.size());
    libdeflate_free_compressor(compressor);
    ASSERT_GT(size, 0u);
    std::vector<unsigned char> out(text.size());
    uLongf out_size = out.size();  // zlib inflates libdeflate's zlib stream
    ASSERT_EQ(uncompress(out.data(), &out_size, reinterpret_cast<const Bytef*>(packed.data()), size), Z_OK);
    EXPECT_EQ(std::string(out.begin(), out.end()), text);
}

TEST(WindowsDeps, ImageCodecs) {
    EXPECT_STREQ(png_get_libpng_ver(nullptr), PNG_LIBPNG_VER_STRING);
    jpeg_decompress_struct cinfo;
    jpeg_error_mgr jerr;
    cinfo.err = jpeg_std_error(&jerr);
    jpeg_create_decompress(&cinfo);
    jpeg_destroy_decompress(&cinfo);
    int error = 0;  // a reader with no bytes: DGifOpen fails cleanly
    GifFileType* gif = DGifOpen(nullptr, [](GifFileType*, GifByteType*, int) { return 0; }, &error);
    EXPECT_EQ(gif, nullptr);
    EXPECT_EQ(error, D_GIF_ERR_READ_FAILED);
    EXPECT_GT(WebPGetDecoderVersion(), 0);
    const unsigned char not_an_image[4] = {1, 2, 3, 4};
    int x, y, n;
    EXPECT_EQ(stbi_info_from_memory(not_an_image, 4, &x, &y, &n), 0);
}

TEST(WindowsDeps, Httplib) {
    httplib::Client client("127.0.0.1", 9);  // constructed only (WSAStartup)
    EXPECT_TRUE(client.is_valid());
}
EOF
  cat >"$dir/check_cxx.cpp" <<'EOF'
// The header-only C++ libraries, gmock, and std::thread (posix thread model).
#include <nlohmann/json.hpp>
#include <CLI/CLI.hpp>
#include <fmt/core.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <mutex>
#include <thread>
#include <vector>

TEST(WindowsDeps, HeaderOnlyAndThreads) {
    EXPECT_EQ(nlohmann::json::parse(R"({"a": [1, 2]})")["a"][1], 2);
    CLI::App app;
    int count = 0;
    app.add_option("--count", count);
    const char* argv[] = {"check", "--count", "3"};
    app.parse(3, argv);
    EXPECT_EQ(count, 3);
    EXPECT_EQ(fmt::format("{}-{}", "fmt", 9), "fmt-9");
    std::mutex mutex;
    int total = 0;
    std::vector<std::thread> threads;
    for (int i = 0; i < 4; ++i) threads.emplace_back([&] { std::lock_guard lock(mutex); ++total; });
    for (auto& thread : threads) thread.join();
    EXPECT_EQ(total, 4);
}

struct Source {
    virtual ~Source() = default;
    virtual int next() = 0;
};
struct MockSource : Source {
    MOCK_METHOD(int, next, (), (override));
};
TEST(WindowsDeps, Gmock) {
    MockSource source;
    EXPECT_CALL(source, next()).WillOnce(testing::Return(7));
    EXPECT_EQ(source.next(), 7);
}
EOF
  # -O1: as fast to compile as -O0, and MinGW's ld links -O0's mass of
  # template COMDAT sections about 10x slower (9 s against 0.6 s here).
  cmake -G Ninja -S "$dir" -B "$dir/build" -DCMAKE_TOOLCHAIN_FILE="$toolchain" -DCMAKE_CXX_FLAGS=-O1 \
    >"$logdir/check.log" 2>&1 || { tail -n 40 "$logdir/check.log" >&2; die "check: configure failed"; }
  cmake --build "$dir/build" -j "$jobs" -v >>"$logdir/check.log" 2>&1 \
    || { tail -n 40 "$logdir/check.log" >&2; die "check: build failed"; }
  # -all silences Wine's own diagnostics; the first run creates the Wine
  # prefix (~/.wine, or $WINEPREFIX) and takes several seconds longer.
  WINEDEBUG=-all "$WINE" "$dir/build/check.exe" --gtest_brief=1 \
    || die "check: check.exe failed under Wine"
  echo "$key" >"$dir/passed"
  say "check passed in $(since "$t0") s"
}

t_start="$(date +%s.%N)"
case "$mode" in
  check) check ;;
  build) build_all ;;
  all) build_all; check ;;
esac
say "done in $(since "$t_start") s"
