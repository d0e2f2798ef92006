// qkscope/tile/tile.hpp — host/device-shared tile functors of the flash-style kernels:
// block bounds and classification (mask.hpp), score modifiers (mods.hpp), the online
// softmax and its backward, GQA head mapping (softmax.hpp). PODs and raw pointers only:
// the CPU tests (tests/core/tile/), the CUDA kernels (native/cuda/) and the CUDA
// kernels' CPU interpreter (native/cuda/emu/) all run these same functions.
#pragma once

#include "qkscope/tile/host_device.hpp"
#include "qkscope/tile/mask.hpp"
#include "qkscope/tile/mods.hpp"
#include "qkscope/tile/softmax.hpp"
