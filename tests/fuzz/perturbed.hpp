// tests/fuzz/perturbed.hpp — the bars of the harness's float fast paths beyond the core's own
// float run: the same call on inputs within rounding of the case's.
//  - The core in double on the inputs rounded once more: every float input x (Q, K, V, dO,
//    the scoring parameters, the bias tables) and the temperature, an explicit scale, softcap
//    and ALiBi slope become x (1 + d) with |d| = 2^-24 (half of float's epsilon) and a sign
//    from a fixed stream, so the run is reproducible. Six streams, three seeds each with its
//    reverse (kInputStreams): with one, equal inputs (tied keys) often got equal signs and
//    stayed tied, and the bar missed how far the answer moves once they part (bilinear keys
//    tied at 1e-8, tau 1e-4: dW moves by 1e16 when the keys part by one rounding, and the
//    one-stream bar said 2e7); with independent streams alone, one entry's harmful direction
//    was left out one time in 2^streams. The same runs also move each logit to a float next
//    to it (round_logits). Two more read the first seed's signs as directions, which parts
//    inputs x and -x wherever the factors kept them opposite (kDirectionalStreams).
//  - The core in double on the case's inputs with each raw score rounded to the nearest float
//    (round_raw_scores): the rounding every float path makes, alike for tied keys.
//  - The core in float from the double forward with its weights rounded up or down at
//    random (weights_rounded_randomly; a stream and its reverse): the rounding of each P.
//  - The core in float with the queries, and with the keys, in reverse order (reversed):
//    other orders of its sums.
//  - The core in float on the float inputs moved by one ulp (signs from a stream): a second
//    sample of naive float math's error. One float run can be far luckier than its error
//    model (where two gradient terms of 1e35 cancel to 4e31 it was 3 times closer than
//    another rounding of the same math).
//  - Where the core's float backward overflows (float's range, not its precision), each of
//    these float runs on dO scaled by a power of two, scaled back (float_core_backward).
// The rule (core/reference/tolerance.hpp) compares against naive math in float; where the
// answer moves this much when its inputs round once, a float path is held to that
// (docs/RELIABILITY.md, "The bar").
#pragma once

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <string_view>
#include <type_traits>
#include <utility>
#include <vector>

#include "qkscope/qkscope.hpp"
#include "support/convert.hpp"

namespace qkfuzz {

/// Signs +-1 from a xorshift stream (fixed seed per stream); `opposite` gives the same stream
/// with every sign reversed (the antithetic run of perturbed_references).
class Signs {
 public:
  explicit Signs(std::uint64_t seed, bool opposite = false) : s_(seed), flip_(opposite) {}
  bool next() {
    s_ ^= s_ << 13;
    s_ ^= s_ >> 7;
    s_ ^= s_ << 17;
    return bool(s_ & 1) != flip_;
  }

 private:
  std::uint64_t s_;
  bool flip_;
};

/// The sign streams of the runs on moved inputs (perturbed_references): three seeds, each
/// also reversed. A stream and its reverse move every single entry both up and down; the three
/// independent streams alone left one entry's harmful direction out of all of them one time in
/// eight, and a logit whose one rounding decides the answer then set no bar (cosine keys
/// 1.3e-15 from a tie at tau = 0.0018: the tiled dV 7.3 times the bar; docs/RELIABILITY.md,
/// "The bar"). Two entries that must move opposite ways are moved so with probability 7/8
/// (37/64 with the three streams alone). The streams as drawn are those of the bar before the
/// reverses were added, so the bar only widened.
inline constexpr std::pair<std::uint64_t, bool> kInputStreams[] = {
    {0x9E3779B97F4A7C15ull, false}, {0xD1B54A32D192ED03ull, false}, {0x8CB92BA72F3D8DD7ull, false},
    {0x9E3779B97F4A7C15ull, true},  {0xD1B54A32D192ED03ull, true},  {0x8CB92BA72F3D8DD7ull, true}};

/// The same first seed, as drawn and reversed, read as directions on the number line (up:
/// toward +inf): x (1 + 2^-24) for a positive x moved up, x (1 - 2^-24) for a negative one.
/// Where two inputs are x and -x (keys 1 and -1 under a query of 0), a run moving both by the
/// same factor keeps them opposite, and their gradients' exact cancellation with them; a run
/// by direction parts them exactly where its stream as a factor did not. So with both readings
/// of one seed every such pair is parted by some run, where the six factor runs kept it intact
/// one time in eight: additive keys 1 and -1 under a softcap, dQ exactly 0 in every run of the
/// bar, while parting the keys by one rounding moves it by 4.4e30 (dS of 7.6e37; the tiled
/// path's fused tanh is not odd and gave 2.8e30: `additive-dQ-softcap-twentythird-2026-12-07-w1`).
inline constexpr std::pair<std::uint64_t, bool> kDirectionalStreams[] = {{0x9E3779B97F4A7C15ull, false},
                                                                         {0x9E3779B97F4A7C15ull, true}};

/// The streams of weights_rounded_randomly's runs: two seeds, each also reversed, so each
/// weight is rounded both up and down (the two streams alone left one weight's harmful
/// direction out one time in four).
inline constexpr std::pair<std::uint64_t, bool> kWeightStreams[] = {
    {0x7A3C9E1D5B2F4861ull, false}, {0x3F84D5B5B5470917ull, false},
    {0x7A3C9E1D5B2F4861ull, true},  {0x3F84D5B5B5470917ull, true}};

/// Moves every entry of a call's inputs: fn(x, up) gives the moved value of x.
template <class T, class Fn>
void move_inputs(qkscope::Mat<T>& q, qkscope::Mat<T>& k, qkscope::Mat<T>& v, qkscope::Mat<T>& g,
                 qkscope::ScoreParams<T>& p, qkscope::AttentionConfig<T>& c, Signs& s, Fn fn) {
  auto apply = [&](auto& m) {
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = fn(m.data()[i], s.next());
  };
  for (auto* m : {&q, &k, &v, &g}) apply(*m);
  for (auto* m : {&p.W, &p.W_q, &p.W_k}) apply(*m);
  for (auto* m : {&p.v, &p.b, &p.w}) apply(*m);
  auto scalar = [&](double x) { return double(fn(T(x), s.next())); };
  c.temperature = scalar(c.temperature);
  if (c.scale) c.scale = scalar(*c.scale);
  if (c.bias.softcap) c.bias.softcap = scalar(*c.bias.softcap);
  if (c.bias.alibi_slope) c.bias.alibi_slope = scalar(*c.bias.alibi_slope);
  apply(c.bias.relative);
  apply(c.bias.dense);
  apply(c.bias.t5_table);
}

/// Moves each logit z_ij to a float next to it, up or down (signs from the stream), through the
/// dense bias (the last term of z, bias.hpp); a z that is a float, or masked, stays. A float
/// path holds each logit in float at least once, rounded independently per key; moving the
/// inputs does not model that where keys are tied within an ulp (their roundings are shared
/// by every key of a row): additive logits 0.306 apart by 1.5e-8 give a dL/dtau of 1e26 whose
/// every float evaluation is off by as much (docs/RELIABILITY.md, "The bar"). Up or down, not
/// to nearest: up to an ulp, twice round-to-nearest's half (a review's point; the rule's own
/// factor of 2 comes on top).
inline void round_logits(qkscope::AttentionConfig<double>& c, const qkscope::MatrixD& z, Signs& s) {
  if (c.bias.dense.size() == 0) c.bias.dense = qkscope::MatrixD::Zero(z.rows(), z.cols());
  constexpr float inf = std::numeric_limits<float>::infinity();
  for (Eigen::Index i = 0; i < z.rows(); ++i)
    for (Eigen::Index j = 0; j < z.cols(); ++j) {
      const bool up = s.next();
      const double x = z(i, j);
      const float f = float(x);
      if (!std::isfinite(x) || !std::isfinite(f) || double(f) == x || !std::isfinite(c.bias.dense(i, j))) continue;
      const float below = double(f) < x ? f : std::nextafter(f, -inf);
      const float above = double(f) > x ? f : std::nextafter(f, inf);
      const float to = up ? above : below;
      if (std::isfinite(to)) c.bias.dense(i, j) += double(to) - x;
    }
}

/// Moves each logit by as much as rounding its raw score f(q_i, k_j) to the nearest float moves
/// it (through the dense bias, as round_logits; through the softcap too where there is one): the
/// one rounding every float path makes, since each holds its raw scores in float. Unlike
/// round_logits' random directions, to nearest moves tied keys alike, as a float path does:
/// five additive keys tied at S = 1.41034 beside one at 1.41042, tau = 1e-3, moved together
/// by half an ulp of S, which no stream of round_logits did (a tiled path with its tiles formed
/// in double and rounded once was 1.4 times the bar: twenty-first session).
inline void round_raw_scores(qkscope::AttentionConfig<double>& c, const qkscope::AttentionResult<double>& f) {
  const qkscope::MatrixD& raw = f.raw_scores;
  if (c.bias.dense.size() == 0) c.bias.dense = qkscope::MatrixD::Zero(raw.rows(), raw.cols());
  auto scaled = [&](double r) {
    const double x = f.scale * r;
    return c.bias.softcap ? *c.bias.softcap * std::tanh(x / *c.bias.softcap) : x;
  };
  for (Eigen::Index i = 0; i < raw.rows(); ++i)
    for (Eigen::Index j = 0; j < raw.cols(); ++j) {
      const double r = raw(i, j), rf = double(float(r));
      if (rf == r || !std::isfinite(rf) || !std::isfinite(c.bias.dense(i, j))) continue;
      const double delta = scaled(rf) - scaled(r);
      if (std::isfinite(delta)) c.bias.dense(i, j) += delta;
    }
}

/// The double forward's weights rounded to float, each up or down (signs from the stream)
/// instead of to nearest; exact ones stay. The float backward from them is a sample of the
/// error of any float path, which holds P in float: where a gradient is a difference of two
/// keys' terms (a zero query's cosine dQ = -D (P_6 - P_5) / eps with P_6 - P_5 = 0.011 P),
/// one rounding of each P moves it by ~100 eps, and one float run can be far luckier.
inline qkscope::AttentionResult<float> weights_rounded_randomly(const qkscope::AttentionResult<double>& f, Signs& s) {
  qkscope::AttentionResult<float> r = qktest::result_as<float>(f);
  for (Eigen::Index k = 0; k < r.weights.size(); ++k) {
    const double w = f.weights.data()[k];
    float& x = r.weights.data()[k];
    const bool up = s.next();
    if (double(x) == w || !std::isfinite(w)) continue;
    const float below = double(x) < w ? x : std::nextafter(x, -std::numeric_limits<float>::infinity());
    const float above = double(x) > w ? x : std::nextafter(x, std::numeric_limits<float>::infinity());
    x = up ? above : below;
  }
  return r;
}

/// One evaluation on moved inputs, in double (ok = false when it throws on them, e.g. a
/// temperature moved past a limit). The forward counts where only the backward threw
/// (grads_ok = false: dO with -inf entries); before, such a run was dropped whole and its
/// output with it.
struct PerturbedReference {
  bool ok = false;        // the forward ran: fwd holds it
  bool grads_ok = false;  // the backward ran too: grads holds it
  qkscope::AttentionResult<double> fwd;
  qkscope::AttentionGrads<double> grads;
};

/// The double core forward and backward on one set of inputs, as a PerturbedReference.
inline PerturbedReference run_double(const qkscope::MatrixD& q, const qkscope::MatrixD& k, const qkscope::MatrixD& v,
                                     const qkscope::ScoreParams<double>& p, const qkscope::AttentionConfig<double>& c,
                                     const qkscope::MatrixD& g) {
  PerturbedReference r;
  try {
    r.fwd = qkscope::attention_forward<double>(q, k, v, p, c);
    r.ok = true;
    r.grads = qkscope::attention_backward<double>(q, k, v, p, c, r.fwd, g);
    r.grads_ok = true;
  } catch (const std::invalid_argument&) {
  }
  return r;
}

/// Calls f(a.x, b.x) for every gradient field x of two AttentionGrads, dL/dtau included: the
/// one list of the fields that grads_as_double and float_core_backward walk.
template <class A, class B, class F>
void each_gradient(A& a, B& b, F&& f) {
  f(a.dQ, b.dQ);
  f(a.dK, b.dK);
  f(a.dV, b.dV);
  f(a.dparams.W, b.dparams.W);
  f(a.dparams.W_q, b.dparams.W_q);
  f(a.dparams.W_k, b.dparams.W_k);
  f(a.dparams.v, b.dparams.v);
  f(a.dparams.b, b.dparams.b);
  f(a.dparams.w, b.dparams.w);
  f(a.drelative, b.drelative);
  f(a.dt5_table, b.dt5_table);
  f(a.ddense, b.ddense);
  f(a.dtemperature, b.dtemperature);
}

inline qkscope::AttentionGrads<double> grads_as_double(const qkscope::AttentionGrads<float>& g) {
  qkscope::AttentionGrads<double> d;
  each_gradient(d, g, [](auto& x, const auto& y) {
    if constexpr (std::is_arithmetic_v<std::remove_cvref_t<decltype(y)>>) x = y;
    else x = y.template cast<double>();
  });
  return d;
}

/// The core's float backward from a float forward f, as double. Where it overflows ("gradient
/// overflowed"), the same on dO scaled by 2^-k (k = 16, 32, 64, 80), scaled back by 2^k in
/// double: every gradient is linear in dO, and a power-of-two scale keeps each rounding of
/// float math until something underflows. So the bar keeps float math's own error where only
/// float's range stopped the core, and a tiled path that answers is held to it rather than to
/// the runs on moved inputs alone (additive at tau 0.107: dS / tau of 4.7e38 where dK is
/// 7.8e36; the logits' rounding, ~2 ulps times 1 / tau, was in no run's bar and the tiled dK
/// was 4 times "off": docs/RELIABILITY.md, "The bar"). A scaled run counts only where the run
/// at 2^-(k + 16) gives the same bits scaled back: a product the scale pushed below float's
/// normal range (dO V, P (dP - D)), which a later 1 / tau magnifies, is the scaling's error,
/// not float math's (a review's dot case: dK 1e-3 relative off where float keeps 1e-7). Throws
/// what the core throws otherwise.
inline qkscope::AttentionGrads<double> float_core_backward(const qkscope::Matrix& Q, const qkscope::Matrix& K,
                                                          const qkscope::Matrix& V, const qkscope::ScoreParams<float>& p,
                                                          const qkscope::AttentionConfig<float>& c,
                                                          const qkscope::AttentionResult<float>& f,
                                                          const qkscope::Matrix& dO) {
  auto overflowed = [](const std::invalid_argument& e) {
    return std::string_view(e.what()).rfind("gradient overflowed", 0) == 0;
  };
  try {
    return grads_as_double(qkscope::attention_backward<float>(Q, K, V, p, c, f, dO));
  } catch (const std::invalid_argument& e) {
    if (!overflowed(e)) throw;
    float smallest = std::numeric_limits<float>::infinity();
    for (Eigen::Index i = 0; i < dO.size(); ++i)
      if (dO.data()[i] != 0) smallest = std::min(smallest, std::abs(dO.data()[i]));
    auto scaled = [&](int k) {
      auto g = grads_as_double(qkscope::attention_backward<float>(Q, K, V, p, c, f, (dO * std::ldexp(1.0f, -k)).eval()));
      const double up = std::ldexp(1.0, k);
      each_gradient(g, g, [up](auto& x, const auto&) { x *= up; });
      return g;
    };
    auto same = [](const qkscope::AttentionGrads<double>& a, const qkscope::AttentionGrads<double>& b) {
      bool equal = true;
      each_gradient(a, b, [&](const auto& x, const auto& y) { equal = equal && x == y; });
      return equal;
    };
    for (const int k : {16, 32, 64, 80}) {
      if (std::ldexp(smallest, -(k + 16)) < std::numeric_limits<float>::min()) break;
      try {
        auto g = scaled(k);
        if (!same(g, scaled(k + 16))) break;
        return g;
      } catch (const std::invalid_argument& e2) {
        if (!overflowed(e2)) throw;
      }
    }
    throw;
  }
}

/// The evaluations above for a case in double (Q ... cfg) and in float (the case itself).
inline std::vector<PerturbedReference> perturbed_references(
    const qkscope::MatrixD& Q, const qkscope::MatrixD& K, const qkscope::MatrixD& V, const qkscope::MatrixD& dO,
    const qkscope::ScoreParams<double>& params, const qkscope::AttentionConfig<double>& cfg, const qkscope::Matrix& Qf,
    const qkscope::Matrix& Kf, const qkscope::Matrix& Vf, const qkscope::Matrix& dOf,
    const qkscope::ScoreParams<float>& pf, const qkscope::AttentionConfig<float>& cf) {
  std::vector<PerturbedReference> out;
  // The case's logits z (for the rounding of z and of the weights, below); none if it throws.
  qkscope::MatrixD z;
  qkscope::AttentionResult<double> full;
  try {
    full = qkscope::attention_forward<double>(Q, K, V, params, cfg);
    z = full.masked_scores;
  } catch (const std::invalid_argument&) {
  }
  auto moved_run = [&](std::uint64_t seed, bool opposite, bool directional) {
    Signs s(seed, opposite);
    qkscope::MatrixD q = Q, k = K, v = V, g = dO;
    qkscope::ScoreParams<double> p = params;
    qkscope::AttentionConfig<double> c = cfg;
    move_inputs(q, k, v, g, p, c, s, [directional](double x, bool up) {
      const bool larger = directional && x < 0 ? !up : up;  // |x| grows
      return x * (1 + (larger ? 1 : -1) * 0x1p-24);
    });
    if (z.size()) round_logits(c, z, s);
    out.push_back(run_double(q, k, v, p, c, g));
  };
  for (const auto& [seed, opposite] : kInputStreams) moved_run(seed, opposite, false);
  Signs s(0x2545F4914F6CDD1Dull);
  qkscope::Matrix q = Qf, k = Kf, v = Vf, g = dOf;
  qkscope::ScoreParams<float> p = pf;
  qkscope::AttentionConfig<float> c = cf;
  move_inputs(q, k, v, g, p, c, s, [](float x, bool up) {
    if (!std::isfinite(x) || x == 0) return x;  // zeros and non-finite entries stay what they are
    const float y = std::nextafter(x, (up ? 1.0f : -1.0f) * std::numeric_limits<float>::infinity());
    return std::isfinite(y) ? y : x;
  });
  PerturbedReference r;
  try {
    const auto f = qkscope::attention_forward<float>(q, k, v, p, c);
    r.fwd = qktest::result_as<double>(f);
    r.ok = true;
    r.grads = float_core_backward(q, k, v, p, c, f, g);
    r.grads_ok = true;
  } catch (const std::invalid_argument&) {
  }
  out.push_back(std::move(r));
  // Last (the runs above keep their places): the case's inputs with each raw score rounded to
  // the nearest float (round_raw_scores), then the directional runs (kDirectionalStreams).
  if (z.size()) {
    qkscope::AttentionConfig<double> c = cfg;
    round_raw_scores(c, full);
    out.push_back(run_double(Q, K, V, params, c, dO));
  }
  for (const auto& [seed, opposite] : kDirectionalStreams) moved_run(seed, opposite, true);
  return out;
}

/// Of the evaluations given, the one farthest from ref in max abs difference (ref itself when
/// none has its shape): the bar of the Catch2 sweeps, as the harness's `farthest` is its own.
inline qkscope::MatrixD farthest_of(const qkscope::MatrixD& ref, const std::vector<qkscope::MatrixD>& runs) {
  qkscope::MatrixD best = ref;
  double worst = -1;
  for (const qkscope::MatrixD& x : runs) {
    if (x.rows() != ref.rows() || x.cols() != ref.cols()) continue;
    // Entries finite in both only (as the harness's own `farthest`): a logsumexp of -inf for
    // a fully masked row made the difference NaN, and then no run was picked.
    double err = 0;
    for (Eigen::Index k = 0; k < x.size(); ++k)
      if (std::isfinite(x.data()[k]) && std::isfinite(ref.data()[k]))
        err = std::max(err, std::abs(x.data()[k] - ref.data()[k]));
    if (err > worst) worst = err, best = x;
  }
  return best;
}

}  // namespace qkfuzz
