// qkscope/qkscope.hpp — the umbrella header: include this one.
//
// qkscope computes attention with interchangeable scoring functions (how a query and
// a key become a score), masks, biases and normalizers, exposing every intermediate.
// Start with attention_forward() in attention.hpp.
#pragma once

#include "qkscope/attention.hpp"
#include "qkscope/bias/bias.hpp"
#include "qkscope/linear/linear.hpp"
#include "qkscope/mask/mask.hpp"
#include "qkscope/mask/patterns.hpp"
#include "qkscope/merge/merge.hpp"
#include "qkscope/mha/multi_head.hpp"
#include "qkscope/norm/registry.hpp"
#include "qkscope/precision/precision.hpp"
#include "qkscope/score/registry.hpp"
#include "qkscope/types.hpp"
#include "qkscope/version.hpp"
