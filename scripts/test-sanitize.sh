#!/usr/bin/env bash
# test-sanitize.sh — the C++ tests under AddressSanitizer + UndefinedBehaviorSanitizer
# (CMake preset `sanitize`: clang, -O1), then a bounded libFuzzer run of every harness
# (scripts/fuzz.sh: QKSCOPE_FUZZ_RUNS inputs per harness, default 20000, from the fixed seed 1,
# so every machine runs the same inputs), then valgrind's memcheck over the harness's cases
# (scripts/test-valgrind.sh: uninitialised reads, which the sanitizers do not see). Any
# sanitizer or memcheck report or finding fails the step.
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
jobs=${QKSCOPE_JOBS:-$(nproc)}
if [[ ! -f build/sanitize/CMakeCache.txt ]]; then
  cmake --preset sanitize
fi
# Only the tests and the harnesses (the benchmark CLI needs no sanitizer run).
cmake --build --preset sanitize --parallel "$jobs" --target qkscope_tests fuzz_attention fuzz_normalizers fuzz_multihead
ctest --preset sanitize "$@"
bash scripts/fuzz.sh --runs "${QKSCOPE_FUZZ_RUNS:-20000}" --seed 1
bash scripts/test-valgrind.sh
