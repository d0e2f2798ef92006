// wasm/tiled/eigen_simd_prelude.hpp — force-included (-include) before any other header of
// the tiled module, which is built with -msimd128 -msse4.2.
// Eigen 3.4 has no WebAssembly SIMD backend; its SSE kernels compile to wasm SIMD through
// Emscripten's SSE emulation headers (docs/toolchain.md). Two things stand in the way:
//  - clang reports itself as GCC 4.2, so Eigen's SSE pmin/pmax take an x86 inline-asm
//    workaround for a GCC < 6.3 bug that wasm cannot assemble: claim GCC 6.3 instead;
//  - <mmintrin.h> (MMX) has no emulation: -D__MMINTRIN_H on the command line skips it.
#pragma once

#include <Eigen/src/Core/util/Macros.h>

#undef EIGEN_COMP_GNUC
#define EIGEN_COMP_GNUC 63
