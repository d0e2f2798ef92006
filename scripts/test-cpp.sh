#!/usr/bin/env bash
# test-cpp.sh — configure (first time), build and run the native Catch2 tests.
# Extra arguments go to ctest, e.g. scripts/test-cpp.sh -V.
# Hidden long sweeps: build/native/tests/qkscope_tests "[.slow]"
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
jobs=${QKSCOPE_JOBS:-$(nproc)}

if [[ ! -f build/native/CMakeCache.txt ]]; then
  cmake --preset native
fi
cmake --build --preset native --parallel "$jobs"
ctest --preset native --parallel "$jobs" "$@"
