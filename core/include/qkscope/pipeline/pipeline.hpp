// qkscope/pipeline/pipeline.hpp — the one per-element pipeline, as host/device functors on
// PODs and raw pointers: the mask predicate, block bounds and block classification
// (mask.hpp), the score modifiers and their backward (mods.hpp), the online softmax and its
// backward, GQA head mapping (softmax.hpp). The core's all-intermediates path
// (attention.hpp), the CPU tiled kernels (cpu/), the CUDA kernels (native/cuda/) and their
// CPU interpreter (native/cuda/emu/) all run these same functions. mask/ and bias/ hold
// the user-facing descriptions (MaskSpec, BiasSpec) and resolve them into these PODs.
#pragma once

#include "qkscope/pipeline/host_device.hpp"
#include "qkscope/pipeline/mask.hpp"
#include "qkscope/pipeline/mods.hpp"
#include "qkscope/pipeline/softmax.hpp"
