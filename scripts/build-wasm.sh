#!/usr/bin/env bash
# build-wasm.sh — configure (first time) and build the Emscripten preset:
# wasm/src/*.cpp -> wasm/dist/qkscope_core.{mjs,wasm}, and the tiled module
# wasm/tiled/bindings.cpp -> wasm/dist/qkscope_tiled.{mjs,wasm} (loaded on the first fast call),
# the training module wasm/train/bindings.cpp -> wasm/dist/qkscope_train.{mjs,wasm} (createTrainer),
# and the test-only double reference build/wasm/qkscope_reference.{mjs,wasm} and kernel
# checks build/wasm/qkscope_wasm_kernel_tests.cjs (tests/wasm).
# Up-to-date builds return in about a second (make does nothing).
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
export NODE_PATH=/usr/share/nodejs   # em++ links at -O1+ need node-acorn (docs/toolchain.md)

if [[ ! -f build/wasm/CMakeCache.txt ]]; then
  cmake --preset wasm
fi
cmake --build --preset wasm --parallel "${QKSCOPE_JOBS:-$(nproc)}"
for f in wasm/dist/qkscope_core.mjs wasm/dist/qkscope_core.wasm wasm/dist/qkscope_tiled.mjs wasm/dist/qkscope_tiled.wasm \
         wasm/dist/qkscope_train.mjs wasm/dist/qkscope_train.wasm \
         build/wasm/qkscope_reference.mjs build/wasm/qkscope_reference.wasm build/wasm/qkscope_wasm_kernel_tests.cjs; do
  [[ -s $f ]] || { echo "build-wasm: $f was not produced" >&2; exit 1; }
done
echo "build-wasm: wasm/dist/qkscope_{core,tiled,train}.{mjs,wasm} up to date"
