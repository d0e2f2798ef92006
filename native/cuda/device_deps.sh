#!/usr/bin/env bash
# native/cuda/device_deps.sh — run HERE (the dev machine) before device_check.sh: the GPU
# machine's image has CMake, nvcc and PyTorch but no Eigen 3.4, Catch2 v2 or nlohmann/json, and cannot download
# anything. This copies Debian's headers and their relocatable CMake package files into
# build-deps/usr (ignored by git through build-*/, about 13 MB), to be carried:
#   run(command="bash native/cuda/device_check.sh", carry=["build-deps"], timeout_s=540)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/../.."
dst=build-deps/usr
rm -rf build-deps
mkdir -p "$dst/include" "$dst/share/cmake" "$dst/lib/cmake"
cp -r /usr/include/eigen3 "$dst/include/"
cp -r /usr/share/eigen3 "$dst/share/"         # share/eigen3/cmake: prefix = 3 levels up
cp -r /usr/include/catch2 "$dst/include/"
cp -r /usr/lib/cmake/Catch2 "$dst/lib/cmake/"  # lib/cmake/Catch2: prefix = 3 levels up
cp /usr/lib/libCatch2WithMain.a "$dst/lib/"      # the package's targets file checks it exists
cp -r /usr/include/nlohmann "$dst/include/"      # the tests read tests/data/*.json with it
cp -r /usr/share/cmake/nlohmann_json "$dst/share/cmake/"  # prefix = 3 levels up
du -sh build-deps
