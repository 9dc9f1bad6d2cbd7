// The layer on every row-kernel ISA this build and CPU run, each forced with
// kernels::set_isa: forward and backward agree with the portable kernels
// within the documented tolerance (docs/math.md §4.4: max|got - want| <=
// tol max|want| per array, 1e-10 double, 1e-4 float); each ISA's results are
// bit-identical at 1 and 2 threads; and NaN propagates as the portable
// kernels propagate it (a NaN in Wq, s = inf with a zero table, a NaN table
// entry; check_finite off).
#include <catch2/catch.hpp>

#include <synattn/attention/syntax_attention.hpp>
#include <synattn/kernels/attention_rows.hpp>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#include "support/attention_calls.hpp"
#endif

using synattn::AttentionOptions;
using synattn::BucketBlock;
using synattn::Bucketing;
using synattn::Index;
using synattn::KernelIsa;
using synattn::SyntaxBiasedAttention;
namespace k = synattn::kernels;

namespace {

struct KeepIsa {
  KernelIsa saved = k::active_isa();
  ~KeepIsa() { k::set_isa(saved); }
};

struct Case {
  std::string label;
  AttentionOptions options;
  bool dropout = false;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  AttentionOptions o(16, 2);
  o.bias.bucketing = Bucketing::linear(10);  // 11 buckets: register lookups and histograms
  o.bias.init = synattn::TableInit::LinearDecay;
  out.push_back({"shared table, 11 buckets", o});
  AttentionOptions p = o;
  p.bias.bucketing = Bucketing::linear(30);  // 31 buckets: gathers, scattered histograms
  p.bias.per_head = true;
  p.causal = true;
  out.push_back({"per-head table, 31 buckets, causal", p});
  AttentionOptions t = o;
  t.talking_heads_pre = t.talking_heads_post = true;
  out.push_back({"talking heads", t});
  AttentionOptions n = o;
  n.syntax_bias = false;
  out.push_back({"no bias", n});
  AttentionOptions d = o;
  d.dropout = 0.2;
  out.push_back({"attention dropout", d, true});
  return out;
}

template <class S>
struct Result {
  typename SyntaxBiasedAttention<S>::Matrix out, dx;
  typename SyntaxBiasedAttention<S>::Vector grads;
};

// B = 2 sequences of n = 45 (a SIMD tail in every row; 2 x 2 x 45^2 x 16
// multiply-adds: above the parallel threshold), the second padded to 31.
template <class S>
struct Input {
  static constexpr Index B = 2, n = 45;
  std::vector<int> lengths{45, 31};
  typename SyntaxBiasedAttention<S>::Matrix x, dout;
  BucketBlock buckets;
  Input(int num_buckets, bool full = false) {
    if (full) lengths = {45, 45};
    std::mt19937 rng(23);
    std::normal_distribution<double> g(0.0, 1.0);
    x.resize(B * n, 16);
    dout.resize(B * n, 16);
    for (Index i = 0; i < x.size(); ++i) x.data()[i] = static_cast<S>(g(rng));
    for (Index i = 0; i < dout.size(); ++i) dout.data()[i] = static_cast<S>(g(rng));
    buckets.resize(B * n, n);
    for (Index i = 0; i < buckets.size(); ++i)
      buckets.data()[i] = static_cast<std::int8_t>(static_cast<int>(rng() % std::uint32_t(num_buckets + 1)) - 1);
    // Pairs beyond a sequence's length are padding, as the layer requires.
    for (Index b = 0; b < B; ++b)
      for (Index i = 0; i < n; ++i)
        for (Index j = 0; j < n; ++j)
          if (i >= lengths[std::size_t(b)] || j >= lengths[std::size_t(b)]) buckets(b * n + i, j) = -1;
  }
};

template <class S>
Result<S> run(SyntaxBiasedAttention<S>& layer, const Input<S>& in, bool dropout) {
  typename SyntaxBiasedAttention<S>::Cache cache;
  Result<S> r;
  r.out.resize(in.x.rows(), in.x.cols());
  const synattn::RandomStream stream(99);
  if (dropout)
    layer.forward({in.x, in.lengths, in.buckets}, cache, r.out, &stream);
  else
    layer.forward({in.x, in.lengths, in.buckets}, cache, r.out);
  layer.zero_grad();
  r.dx = synattn_test::backward_value(layer, cache, in.dout);
  r.grads = layer.gradients();
  return r;
}

template <class A, class B>
double relative_error(const A& got, const B& want) {
  const double scale = want.template cast<double>().cwiseAbs().maxCoeff();
  return (got.template cast<double>() - want.template cast<double>()).cwiseAbs().maxCoeff() / std::max(scale, 1e-300);
}

void set_threads(int t) {
#if defined(_OPENMP)
  omp_set_num_threads(t);
#else
  (void)t;
#endif
}

}  // namespace

TEMPLATE_TEST_CASE("the layer agrees with the portable kernels on every ISA, and each ISA at 1 and 2 threads",
                   "[attention][kernels][dispatch]", float, double) {
  using S = TestType;
  KeepIsa keep;
  const double tol = sizeof(S) == 4 ? 1e-4 : 1e-10;
#if defined(_OPENMP)
  const int threads_before = omp_get_max_threads();
#endif
  for (const Case& c : cases()) {
    INFO(c.label);
    SyntaxBiasedAttention<S> layer(c.options);
    const Input<S> in(std::max(layer.num_buckets(), 1));
    k::set_isa(KernelIsa::portable);
    set_threads(1);
    const Result<S> ref = run(layer, in, c.dropout);
    for (KernelIsa isa : k::supported_isas()) {
      INFO("isa " << synattn::to_string(isa));
      k::set_isa(isa);
      set_threads(1);
      const Result<S> one = run(layer, in, c.dropout);
      CHECK(relative_error(one.out, ref.out) <= tol);
      CHECK(relative_error(one.dx, ref.dx) <= tol);
      CHECK(relative_error(one.grads, ref.grads) <= tol);
      set_threads(2);
      const Result<S> two = run(layer, in, c.dropout);
      CHECK(two.out == one.out);
      CHECK(two.dx == one.dx);
      CHECK(two.grads == one.grads);
    }
  }
#if defined(_OPENMP)
  omp_set_num_threads(threads_before);
#endif
}

namespace {

// NaN where `a` is NaN exactly where `b` is.
template <class A, class B>
bool same_nans(const A& a, const B& b) {
  if (a.size() != b.size()) return false;
  for (Index i = 0; i < a.size(); ++i)
    if (std::isnan(a.data()[i]) != std::isnan(b.data()[i])) return false;
  return true;
}

template <class A>
bool all_nan(const A& a) {
  for (Index i = 0; i < a.size(); ++i)
    if (!std::isnan(a.data()[i])) return false;
  return true;
}

}  // namespace

TEMPLATE_TEST_CASE("NaN parameters propagate to the output on every ISA as on the portable kernels",
                   "[attention][kernels][nan]", float, double) {
  using S = TestType;
  KeepIsa keep;
  AttentionOptions o(16, 2);
  o.bias.bucketing = Bucketing::linear(10);
  o.check_finite = false;
  struct Poison {
    const char* label;
    void (*apply)(SyntaxBiasedAttention<S>&);
    bool everything;  // the whole output is NaN
  };
  const Poison poisons[] = {
      {"NaN in Wq(0, 0)", [](SyntaxBiasedAttention<S>& l) { l.Wq()(0, 0) = std::numeric_limits<S>::quiet_NaN(); },
       true},
      {"scale = inf with a zero table (s * T = inf * 0 = NaN)",
       [](SyntaxBiasedAttention<S>& l) { l.scale() = std::numeric_limits<S>::infinity(); }, true},
      {"a NaN table entry", [](SyntaxBiasedAttention<S>& l) { l.table()(0, 3) = std::numeric_limits<S>::quiet_NaN(); },
       false},
  };
  for (const Poison& poison : poisons) {
    INFO(poison.label);
    SyntaxBiasedAttention<S> layer(o);
    poison.apply(layer);
    const Input<S> in(layer.num_buckets(), true);  // no padding rows: every output row is attention's
    k::set_isa(KernelIsa::portable);
    const Result<S> ref = run(layer, in, false);
    if (poison.everything) {
      CHECK(all_nan(ref.out));
    } else {
      CHECK(!all_nan(ref.out));
      CHECK(ref.out.array().isNaN().any());
    }
    for (KernelIsa isa : k::supported_isas()) {
      INFO("isa " << synattn::to_string(isa));
      k::set_isa(isa);
      const Result<S> got = run(layer, in, false);
      CHECK(same_nans(got.out, ref.out));
      CHECK(same_nans(got.dx, ref.dx));
      CHECK(same_nans(got.grads, ref.grads));
    }
  }
}

TEST_CASE("fully masked rows still give zeros, not NaN, on every ISA", "[attention][kernels][nan]") {
  KeepIsa keep;
  AttentionOptions o(16, 2);
  o.bias.bucketing = Bucketing::linear(10);
  SyntaxBiasedAttention<double> layer(o);
  Input<double> in(layer.num_buckets(), true);
  in.buckets.row(3).setConstant(-1);  // query 3 of sequence 0 sees no key
  for (KernelIsa isa : k::supported_isas()) {
    INFO("isa " << synattn::to_string(isa));
    k::set_isa(isa);
    const Result<double> r = run(layer, in, false);
    CHECK(r.out.allFinite());
    CHECK(r.dx.allFinite());
    CHECK(r.grads.allFinite());
    // Its context is zero, so its output is the output projection's bias.
    CHECK((r.out.row(3) - layer.bo()).cwiseAbs().maxCoeff() == 0.0);
  }
}
