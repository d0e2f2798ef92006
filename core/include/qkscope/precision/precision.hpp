// qkscope/precision/precision.hpp — reduced precision in one include:
//   finfo.hpp      finfo<T>(), round_to<S>(), to_storage / widen / round_trip, ValueCast
//   mixed.hpp      attention_forward_mixed / attention_backward_mixed (fp16/bf16 storage,
//                  fp32 math), masked_softmax (the correct masked softmax, fp32)
//   naive.hpp      naive::* — the classic failures reproduced on purpose, with a Diagnosis
//   diagnosis.hpp  Outcome and Diagnosis, what the demonstrations return
// Failure cases: tests/data/fault_cases.json B01, B03, B04, B05, B16; docs/facts.md §10.
#pragma once

#include "qkscope/precision/diagnosis.hpp"
#include "qkscope/precision/finfo.hpp"
#include "qkscope/precision/mixed.hpp"
#include "qkscope/precision/naive.hpp"
