// qkscope/precision/precision.hpp — reduced precision in one include:
//   finfo.hpp      finfo<T>(), round_to<S>(), to_storage / widen / round_trip, ValueCast
//   mixed.hpp      attention_forward_mixed / attention_backward_mixed (fp16/bf16 storage,
//                  fp32 math), masked_softmax (the correct masked softmax, fp32)
//   naive.hpp      naive::* — the classic failures reproduced on purpose, with a Diagnosis
//   diagnosis.hpp  Outcome and Diagnosis, what the demonstrations return
// Source of the failure cases: shared/cases B01, B03, B04, B05, B16; TUTORIAL_FACTS §7.
#pragma once

#include "qkscope/precision/diagnosis.hpp"
#include "qkscope/precision/finfo.hpp"
#include "qkscope/precision/mixed.hpp"
#include "qkscope/precision/naive.hpp"
