// tests/core/support/compare.hpp — the one tolerance rule (core/reference/tolerance.hpp) as a
// Catch2 matcher:
//     CHECK_THAT(fast.output, MatchesReference("output", naive.output, ref.output));
// passes when max|fast - ref64| <= 2 max|naive32 - ref64| + 1e-6 (1 + max|ref64|), -inf
// matching -inf exactly and NaN never passing; a failure prints the report (max abs, max
// rel, NMSE, first mismatching (i, j)). Gradients: see gradcheck.hpp.
#pragma once

#include <catch2/catch.hpp>

#include <string>
#include <utility>

#include "reference/tolerance.hpp"

namespace qktest {

using Report = qkscope::reference::Comparison;
using qkscope::reference::compare;

/// Matches a fast-path matrix or vector against the double reference `ref`, with naive
/// float math `naive` setting the bar. Holds copies, so temporaries may be passed.
class MatchesReference : public Catch::MatcherBase<Eigen::MatrixXd> {
 public:
  template <class B, class C>
  MatchesReference(std::string what, const Eigen::MatrixBase<B>& naive, const Eigen::MatrixBase<C>& ref)
      : what_(std::move(what)), naive_(naive.template cast<double>()), ref_(ref.template cast<double>()) {}

  /// Any Eigen matrix or vector type (Catch2 v2 calls match() with the argument's own type).
  template <class A>
  bool match(const Eigen::MatrixBase<A>& fast) const {
    report_ = compare(what_, fast, naive_, ref_);
    return report_.ok;
  }
  bool match(const Eigen::MatrixXd& fast) const override { return match<Eigen::MatrixXd>(fast); }
  std::string describe() const override { return "matches the double reference: " + report_.text; }

 private:
  std::string what_;
  Eigen::MatrixXd naive_, ref_;
  mutable Report report_;
};

}  // namespace qktest

/// CHECKs fast ~ ref under the rule above; the report names `what`.
#define CHECK_MATCHES_REFERENCE(what, fast, naive, ref) \
  CHECK_THAT(fast, ::qktest::MatchesReference(what, naive, ref))
