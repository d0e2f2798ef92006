// qkscope/train/weights.hpp — the tensors of a trained model as text: the encoding of the
// weights files web/public/train-models/devil-<score>.json (format "qkscope-char-model",
// version 1; written by `npm run train:text-models`, read by loadCharModel in the wasm
// training module; docs/training.md lists every field).
//
// A tensor is {"shape": [rows, cols] (vectors: [n]), "data": base64 of its float32 entries,
// row-major, little-endian} (RFC 4648 §4 base64, with padding). Tensors are named as
// for_each_tensor names them (train/model.hpp): "E", "P", "layers[0].W_Q", ...,
// "layers[0].score_params[1].W", "W_out", "b_out". The core does no file or JSON I/O; the
// native driver writes the JSON, the wasm binding reads the parsed object.
#pragma once

#include <cmath>
#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <vector>

#include "qkscope/detail/check.hpp"

namespace qkscope::train {

inline constexpr const char* kCharModelFormat = "qkscope-char-model";
inline constexpr int kCharModelVersion = 1;

/// Base64 (RFC 4648 §4) of n float32 values, little-endian.
inline std::string floats_to_base64(const float* x, std::size_t n) {
  static constexpr char kAlphabet[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
  std::vector<unsigned char> bytes(n * 4);
  for (std::size_t i = 0; i < n; ++i) {
    std::uint32_t u;
    std::memcpy(&u, x + i, 4);
    for (int b = 0; b < 4; ++b) bytes[4 * i + std::size_t(b)] = static_cast<unsigned char>(u >> (8 * b));
  }
  std::string out;
  out.reserve((bytes.size() + 2) / 3 * 4);
  for (std::size_t i = 0; i < bytes.size(); i += 3) {
    const std::size_t left = bytes.size() - i;
    const std::uint32_t v = std::uint32_t(bytes[i]) << 16 | (left > 1 ? std::uint32_t(bytes[i + 1]) << 8 : 0u) |
                            (left > 2 ? std::uint32_t(bytes[i + 2]) : 0u);
    out += kAlphabet[v >> 18 & 63];
    out += kAlphabet[v >> 12 & 63];
    out += left > 1 ? kAlphabet[v >> 6 & 63] : '=';
    out += left > 2 ? kAlphabet[v & 63] : '=';
  }
  return out;
}

/// The float32 values of base64 text `s` (see floats_to_base64). Throws
/// std::invalid_argument naming `name` when `s` is not base64, does not hold exactly
/// `count` values, or holds a value that is not finite.
inline std::vector<float> floats_from_base64(std::string_view s, std::size_t count, const std::string& name) {
  auto digit = [](char c) -> int {
    if (c >= 'A' && c <= 'Z') return c - 'A';
    if (c >= 'a' && c <= 'z') return c - 'a' + 26;
    if (c >= '0' && c <= '9') return c - '0' + 52;
    return c == '+' ? 62 : c == '/' ? 63 : -1;
  };
  const std::size_t want = (count * 4 + 2) / 3 * 4;
  detail::require(s.size() == want, name + " must be " + std::to_string(want) + " base64 characters (" +
                                        std::to_string(count) + " float32 values), got " + std::to_string(s.size()));
  std::vector<unsigned char> bytes;
  bytes.reserve(count * 4 + 2);
  for (std::size_t i = 0; i < s.size(); i += 4) {
    std::uint32_t v = 0;
    int pad = 0;
    for (std::size_t k = 0; k < 4; ++k) {
      const char c = s[i + k];
      const bool last = i + 4 == s.size();
      int d = digit(c);
      if (c == '=' && last && k >= 2 && (k == 3 || s[i + 3] == '=')) d = 0, ++pad;
      detail::require(d >= 0 && (pad == 0 || c == '='),
                      name + " is not base64: character " + std::to_string(i + k) + " is '" + std::string(1, c) + "'");
      v = v << 6 | std::uint32_t(d);
    }
    bytes.push_back(static_cast<unsigned char>(v >> 16));
    if (pad < 2) bytes.push_back(static_cast<unsigned char>(v >> 8));
    if (pad < 1) bytes.push_back(static_cast<unsigned char>(v));
  }
  detail::require(bytes.size() == count * 4, name + " must hold " + std::to_string(count) + " float32 values, got " +
                                                 std::to_string(bytes.size()) + " bytes");
  std::vector<float> out(count);
  for (std::size_t i = 0; i < count; ++i) {
    std::uint32_t u = 0;
    for (int b = 0; b < 4; ++b) u |= std::uint32_t(bytes[4 * i + std::size_t(b)]) << (8 * b);
    std::memcpy(&out[i], &u, 4);
    detail::require(std::isfinite(out[i]), name + "[" + std::to_string(i) + "] must be finite, got " +
                                               detail::num(double(out[i])));
  }
  return out;
}

}  // namespace qkscope::train
