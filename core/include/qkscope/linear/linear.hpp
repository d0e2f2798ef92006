// qkscope/linear/linear.hpp — kernelised ("linear") attention: feature maps (elu + 1,
// FAVOR+) and the forward/backward passes, non-causal and causal.
#pragma once

#include "qkscope/linear/attention.hpp"
#include "qkscope/linear/features.hpp"
