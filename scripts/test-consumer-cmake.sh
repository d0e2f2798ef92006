#!/usr/bin/env bash
# test-consumer-cmake.sh — install the header-only package into a temporary prefix, then
# configure, build and run tests/consumer/cmake (find_package(qkscope CONFIG REQUIRED)).
# Uses the build/native tree of test:cpp (configured here if missing); installing an
# INTERFACE library builds nothing.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
if [[ ! -f build/native/CMakeCache.txt ]]; then
  cmake --preset native >/dev/null
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cmake --install build/native --prefix "$tmp/prefix" >/dev/null
test -f "$tmp/prefix/include/qkscope/qkscope.hpp"
# The consumer sees only the prefix (and the system Eigen), never this source tree.
cmake -S tests/consumer/cmake -B "$tmp/build" -DCMAKE_PREFIX_PATH="$tmp/prefix" \
      -DCMAKE_BUILD_TYPE=Release >/dev/null
grep -q "^qkscope_DIR:PATH=$tmp/prefix/" "$tmp/build/CMakeCache.txt"
cmake --build "$tmp/build" --parallel 2 >/dev/null
"$tmp/build/worked_example"
# The version file must refuse what the version policy calls incompatible
# (docs/npm-package.md): the next major, and while the major is 0, the next minor.
ver=$(sed -n 's/^project(qkscope VERSION \([0-9.]*\).*/\1/p' CMakeLists.txt)
IFS=. read -r major minor _ <<<"$ver"
bad=("$((major + 1)).0")
if [[ $major == 0 ]]; then bad+=("0.$((minor + 1))"); if ((minor > 0)); then bad+=("0.$((minor - 1))"); fi; fi
for req in "${bad[@]}" ok; do
  if [[ $req == ok ]]; then req="$major.$minor"; fi
  mkdir -p "$tmp/v$req"
  printf 'cmake_minimum_required(VERSION 3.25)\nproject(v LANGUAGES NONE)\nfind_package(qkscope %s CONFIG REQUIRED)\n' \
    "$req" >"$tmp/v$req/CMakeLists.txt"
  if cmake -S "$tmp/v$req" -B "$tmp/v$req/b" -DCMAKE_PREFIX_PATH="$tmp/prefix" >/dev/null 2>&1; then got=accepted; else got=refused; fi
  want=refused; if [[ $req == "$major.$minor" ]]; then want=accepted; fi
  if [[ $got != "$want" ]]; then
    echo "test-consumer-cmake: find_package(qkscope $req) was $got by qkscope $ver, expected $want" >&2
    exit 1
  fi
done
echo "test-consumer-cmake: OK (find_package(qkscope) from a temporary prefix)"
