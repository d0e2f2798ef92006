// tests/fuzz/fuzz_multihead.cpp — libFuzzer harness over multi-head attention
// (mha/multi_head.hpp), forward and backward, float and double: batches, grouped KV heads
// (MHA, GQA, MQA), every scoring function and normalizer of the registries, causal masks,
// key padding per sequence (0 included), ALiBi, and entries from the edges of float
// (case.hpp's value(): huge, denormal, NaN, inf).
// Properties (violations trap):
//   - an std::invalid_argument with a message, or a result; never another exception;
//   - every returned value finite (output, projections, head weights, every gradient): an
//     overflow is an error naming it, never an inf or NaN handed back (docs/RELIABILITY.md);
//   - float and double refuse alike for every reason but range: an error that does not say
//     "overflow" or "underflow" in one precision is an error in the other;
//   - where the inputs are moderate (entries within [-1, 1], temperature in [0.5, 4], a score
//     other than cosine, softmax or sparsemax), the float output and dW_O match the double
//     ones within 1 % of their entries' scale (max of |X_kv| |W_V|, a bound on |V| by its
//     terms, times the column sums of |W_O| or |dO|):
//     a wrong head, group or sequence shows up as a difference of that order.
#include <stdexcept>
#include <string>

#include "case.hpp"
#include "qkscope/mha/multi_head.hpp"
#include "support/convert.hpp"

using namespace qkscope;

namespace {

/// The current input, printed with a finding (every digit: a test must rebuild it).
std::string (*current_inputs)() = nullptr;

[[noreturn]] void finding(const std::string& what, const std::string& detail) {
  std::fprintf(stderr, "FUZZ FINDING: %s\n  %s\n%s", what.c_str(), detail.c_str(),
               current_inputs ? current_inputs().c_str() : "");
  __builtin_trap();
}

std::string dump(const char* name, const Matrix& m) {
  std::string s = "  " + std::string(name) + " (" + std::to_string(m.rows()) + " x " + std::to_string(m.cols()) + ") =";
  for (Eigen::Index i = 0; i < m.rows(); ++i) {
    s += " [";
    for (Eigen::Index j = 0; j < m.cols(); ++j) s += " " + qkfuzz::num(double(m(i, j)));
    s += " ]";
  }
  return s + "\n";
}

template <class M>
bool finite(const M& m) {
  return m.size() == 0 || m.allFinite();
}

template <class T>
bool finite(const MultiHeadResult<T>& r) {
  bool ok = finite(r.output) && finite(r.Q) && finite(r.K) && finite(r.V) && finite(r.concat);
  for (const auto& h : r.heads) ok = ok && finite(h.weights) && finite(h.output);
  return ok;
}

template <class T>
bool finite(const MultiHeadGrads<T>& g) {
  bool ok = finite(g.dX_q) && finite(g.dX_kv) && finite(g.dW_Q) && finite(g.dW_K) && finite(g.dW_V) &&
            finite(g.dW_O) && finite(g.drelative) && finite(g.dt5_tables) && finite(g.dt5_table) &&
            finite(g.ddense) && std::isfinite(g.dtemperature);
  for (const auto& p : g.dscore_params)
    ok = ok && finite(p.W) && finite(p.W_q) && finite(p.W_k) && finite(p.v) && finite(p.b) && finite(p.w);
  return ok;
}

/// One precision's outcome: the error message (empty when it returned) and the results.
template <class T>
struct Run {
  std::string error;
  MultiHeadResult<T> fwd;
  MultiHeadGrads<T> grads;
};

template <class T>
Run<T> run(const Mat<T>& Xq, const Mat<T>& Xkv, const MultiHeadWeights<T>& w, const MultiHeadConfig<T>& c,
           const Mat<T>& dO, const std::string& label) {
  Run<T> r;
  try {
    r.fwd = multi_head_forward<T>(Xq, Xkv, w, c);
    r.grads = multi_head_backward<T>(Xq, Xkv, w, c, r.fwd, dO);
  } catch (const std::invalid_argument& e) {
    r.error = e.what();
    if (r.error.empty()) finding("an error without a message", label);
    return r;
  } catch (const std::exception& e) {
    finding(std::string("an exception other than std::invalid_argument: ") + e.what(), label);
  }
  if (!finite(r.fwd)) finding("a non-finite forward result returned", label);
  if (!finite(r.grads)) finding("a non-finite gradient returned", label);
  return r;
}

/// Errors of range ("... overflowed", "overflows to inf", "underflows to 0"), which may differ
/// between float and double.
bool about_range(const std::string& e) {
  return e.find("overflow") != std::string::npos || e.find("underflow") != std::string::npos;
}

/// |a_ij - b_ij| <= 1 % of scale_ij for a float and a double matrix of one shape.
template <class MF, class MD, class MS>
void close(const MF& a, const MD& b, const MS& scale, const char* what, const std::string& label) {
  if (a.rows() != b.rows() || a.cols() != b.cols()) finding(std::string(what) + ": shapes differ", label);
  for (Eigen::Index j = 0; j < b.cols(); ++j)
    for (Eigen::Index i = 0; i < b.rows(); ++i)
      if (!(std::abs(double(a(i, j)) - b(i, j)) <= 1e-2 * scale(i, j) + 1e-300))
        finding(std::string(what) + " (" + std::to_string(i) + ", " + std::to_string(j) + "): float " +
                    qkfuzz::num(double(a(i, j))) + ", double " + qkfuzz::num(b(i, j)) + ", scale " +
                    qkfuzz::num(scale(i, j)),
                label);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider f(data, size);
  // Moderate entries, within [-1, 1]: logits of at most ~200 in magnitude (neg_sq at d_model 4),
  // whose float rounding moves the weights by under 1e-4 at tau >= 0.5.
  const bool moderate_values = f.ConsumeBool();
  auto entry = [&] { return moderate_values ? f.ConsumeFloatingPointInRange<float>(-1, 1) : qkfuzz::value(f); };
  auto mat = [&](Eigen::Index r, Eigen::Index c) {
    Matrix m(r, c);
    for (Eigen::Index i = 0; i < m.size(); ++i) m.data()[i] = entry();
    return m;
  };
  MultiHeadConfig<float> c;
  c.batch = f.ConsumeIntegralInRange<int>(1, 2);
  c.kv_heads = f.ConsumeIntegralInRange<int>(1, 2);
  c.heads = *c.kv_heads * f.ConsumeIntegralInRange<int>(1, 2);
  c.d_k = f.ConsumeIntegralInRange<int>(1, 3);
  c.d_v = f.ConsumeIntegralInRange<int>(1, 3);
  const Eigen::Index L_q = f.ConsumeIntegralInRange<int>(1, 4), L_k = f.ConsumeIntegralInRange<int>(1, 4);
  const Eigen::Index d_model = f.ConsumeIntegralInRange<int>(1, 4), d_out = f.ConsumeIntegralInRange<int>(1, 3);
  const auto scores = score_infos();
  const auto norms = normalizer_infos();
  const auto& score = scores[f.ConsumeIntegralInRange<std::size_t>(0, scores.size() - 1)];
  const auto& norm = norms[f.ConsumeIntegralInRange<std::size_t>(0, norms.size() - 1)];
  c.attention.score = score.name;
  c.attention.normalizer = norm.name;
  c.attention.temperature = f.ConsumeBool() ? 1.0 : qkfuzz::edge_number(f);
  c.attention.mask.causal = f.ConsumeBool();
  c.alibi = f.ConsumeIntegralInRange<int>(0, 3) == 0;
  if (f.ConsumeBool())
    for (Eigen::Index b = 0; b < c.batch; ++b) c.key_lengths.push_back(f.ConsumeIntegralInRange<int>(0, int(L_k)));
  c.param_seed = f.ConsumeIntegral<std::uint8_t>();
  const Matrix Xq = mat(c.batch * L_q, d_model);
  const Matrix Xkv = f.ConsumeBool() ? Xq : mat(c.batch * L_k, d_model);
  const Eigen::Index Lk = Xkv.rows() / c.batch;
  MultiHeadWeights<float> w;
  w.W_Q = mat(d_model, c.heads * c.d_k);
  w.W_K = mat(d_model, *c.kv_heads * c.d_k);
  w.W_V = mat(d_model, *c.kv_heads * c.d_v);
  w.W_O = mat(c.heads * c.d_v, d_out);
  const Matrix dO = mat(c.batch * L_q, d_out);
  for (auto& n : c.key_lengths) n = std::min(n, Lk);

  const std::string label = "score " + std::string(score.name) + ", normalizer " + norm.name + ", B " +
                            std::to_string(c.batch) + ", H " + std::to_string(c.heads) + ", H_kv " +
                            std::to_string(*c.kv_heads) + ", L_q " + std::to_string(L_q) + ", L_k " +
                            std::to_string(Lk) + ", tau " + qkfuzz::num(c.attention.temperature);
  static const Matrix *pXq, *pXkv, *pdO;
  static const MultiHeadWeights<float>* pw;
  static const MultiHeadConfig<float>* pc;
  pXq = &Xq, pXkv = &Xkv, pdO = &dO, pw = &w, pc = &c;
  current_inputs = [] {
    std::string s = dump("X_q", *pXq) + dump("X_kv", *pXkv) + dump("W_Q", pw->W_Q) + dump("W_K", pw->W_K) +
                    dump("W_V", pw->W_V) + dump("W_O", pw->W_O) + dump("grad_output", *pdO);
    s += "  d_k " + std::to_string(pc->d_k) + ", d_v " + std::to_string(pc->d_v) + ", causal " +
         std::to_string(pc->attention.mask.causal) + ", alibi " + std::to_string(pc->alibi) + ", param_seed " +
         std::to_string(pc->param_seed) + ", key_lengths [";
    for (auto n : pc->key_lengths) s += " " + std::to_string(n);
    return s + " ]\n";
  };
  const Run<float> rf = run<float>(Xq, Xkv, w, c, dO, label);

  MultiHeadConfig<double> cd;
  cd.batch = c.batch;
  cd.heads = c.heads;
  cd.kv_heads = c.kv_heads;
  cd.d_k = c.d_k;
  cd.d_v = c.d_v;
  cd.attention = qktest::config_as<double>(c.attention);
  cd.alibi = c.alibi;
  cd.key_lengths = c.key_lengths;
  cd.param_seed = c.param_seed;
  const MultiHeadWeights<double> wd{w.W_Q.cast<double>(), w.W_K.cast<double>(), w.W_V.cast<double>(),
                                    w.W_O.cast<double>(), {}};
  const Run<double> rd = run<double>(Xq.cast<double>(), Xkv.cast<double>(), wd, cd, dO.cast<double>(), label);

  if (!rf.error.empty() && !about_range(rf.error) && rd.error.empty())
    finding("float refused for a reason other than range, double returned: " + rf.error, label);
  if (!rd.error.empty() && !about_range(rd.error) && rf.error.empty())
    finding("double refused for a reason other than range, float returned: " + rd.error, label);

  // The forward's rows are convex (softmax, sparsemax), so |concat| <= max |V| and output_ij
  // is within max |V| sum_k |W_O|_kj; the float error of a moderate call is far below 1 % of
  // that, and a wrong head, group or sequence is of its order. Likewise dW_O = concat^T dO.
  const std::string sname = score.name, nname = norm.name;
  const bool smooth = sname != "cosine" && (nname == "softmax" || nname == "sparsemax");
  if (moderate_values && smooth && c.attention.temperature >= 0.5 && c.attention.temperature <= 4 &&
      rf.error.empty() && rd.error.empty()) {
    // |V| bounded by its terms' magnitudes, |X_kv| |W_V|: V itself may cancel (rows of X_kv and
    // columns of W_V nearly opposite gave V ~ 2.5e-8 from terms of 0.18, which float rounds
    // at 1e-8: the harness's own finding, not the library's).
    const Eigen::MatrixXd v_terms = Xkv.cast<double>().cwiseAbs() * wd.W_V.cwiseAbs();
    const double vmax = v_terms.size() ? v_terms.maxCoeff() : 0.0;
    const Eigen::MatrixXd Wd = wd.W_O;
    const Eigen::MatrixXd ones_o = Eigen::MatrixXd::Ones(rd.fwd.output.rows(), Wd.rows());
    const Eigen::MatrixXd out_scale = vmax * (ones_o * Wd.cwiseAbs());
    close(rf.fwd.output, rd.fwd.output, out_scale, "output", label);
    const Eigen::MatrixXd dOd = dO.cast<double>();
    const Eigen::MatrixXd ones_w = Eigen::MatrixXd::Ones(Wd.rows(), dOd.rows());
    const Eigen::MatrixXd dwo_scale = vmax * (ones_w * dOd.cwiseAbs());
    close(rf.grads.dW_O, rd.grads.dW_O, dwo_scale, "dW_O", label);
  }
  return 0;
}
