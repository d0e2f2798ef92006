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
echo "test-consumer-cmake: OK (find_package(qkscope) from a temporary prefix)"
