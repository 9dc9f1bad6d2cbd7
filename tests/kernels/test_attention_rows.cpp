// The attention row kernels: the portable version against straightforward
// double references, and every vector version this build and CPU run, plus
// the emulated 16-lane one (always), against the portable one, over row
// lengths that hit every SIMD tail, masked keys, empty rows, causal blocks,
// every table size class (one- and two-register lookups, gather; register
// and scatter histograms), huge scores and NaN. Built twice: natively and as
// test_attention_rows_default_flags (-march=x86-64), where the vector
// kernels exist only through their target pragmas.
#include <catch2/catch.hpp>

#include <synattn/kernels/attention_rows.hpp>
#include <synattn/kernels/packet_emulated.hpp>

#include <cstdlib>
#include <cstring>
#include <string>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace k = synattn::kernels;
using synattn::Index;

namespace {

// One ISA's row kernels called with the block's fields one by one (the
// order of the checks below): each call builds the kernels' RowBlock.
template <class S>
struct Positional {
  const k::KernelTable<S>* table;

  void softmax_numerators(S* z, Index ld, const std::int8_t* buckets, Index ldb, const S* shifted, int slots,
                          Index rows, Index kend, Index causal_row0, Index n, S* inv_sum, S* row_max) const {
    table->rows.softmax_numerators({rows, n, kend, causal_row0, buckets, ldb, shifted, slots}, z, ld, inv_sum, row_max);
  }
  void probabilities(S* z, Index ld, const std::int8_t* buckets, Index ldb, const S* shifted, int slots, Index rows,
                     Index kend, Index causal_row0, Index n, const S* row_max, const S* inv_sum) const {
    table->rows.probabilities({rows, n, kend, causal_row0, buckets, ldb, shifted, slots}, z, ld, row_max, inv_sum);
  }
  void softmax_backward(const S* p, Index ldp, S* dz, Index ld, const std::int8_t* buckets, Index ldb, Index rows,
                        Index kend, Index causal_row0, Index n, S* hist, Index stride, int slots, const S* dots) const {
    table->rows.softmax_backward({rows, n, kend, causal_row0, buckets, ldb, nullptr, slots}, p, ldp, dz, ld, hist,
                                 stride, dots);
  }
  void scale_rows(S* dst, Index ldd, const S* src, Index lds, Index rows, Index cols, const S* scale,
                  bool stream) const {
    table->rows.scale_rows(dst, ldd, src, lds, rows, cols, scale, stream);
  }
};

template <class S>
Positional<S> portable_of(S) {
  return {&k::portable::kernel_table<S>};
}

// One block of `rows` rows of length n with buckets in [-1, slots - 1).
template <class S>
struct Block {
  Index rows, n, kend, causal_row0;
  int slots;
  std::vector<S> z, dp, shifted;
  std::vector<std::int8_t> buckets;

  Block(Index rows_, Index n_, Index kend_, Index causal_row0_, int slots_, std::mt19937& rng)
      : rows(rows_), n(n_), kend(kend_), causal_row0(causal_row0_), slots(slots_) {
    std::normal_distribution<double> g(0.0, 3.0);
    z.resize(static_cast<std::size_t>(rows * n));
    dp.resize(z.size());
    buckets.resize(z.size());
    for (std::size_t i = 0; i < z.size(); ++i) {
      z[i] = static_cast<S>(g(rng));
      dp[i] = static_cast<S>(g(rng));
      // About one key in eight masked; the rest spread over every bucket.
      buckets[i] = static_cast<std::int8_t>(rng() % 8 == 0 ? -1 : static_cast<int>(rng() % (slots - 1)));
    }
    shifted.resize(static_cast<std::size_t>(slots));
    shifted[0] = -std::numeric_limits<S>::infinity();
    for (int s = 1; s < slots; ++s) shifted[static_cast<std::size_t>(s)] = static_cast<S>(g(rng));
  }
  Index ke(Index i) const { return k::visible_keys(kend, causal_row0, i); }
};

// p = softmax over the visible keys of z + shifted[bucket + 1], in double.
template <class S>
std::vector<double> reference_probabilities(const Block<S>& blk, bool biased) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> p(blk.z.size(), 0.0);
  for (Index i = 0; i < blk.rows; ++i) {
    std::vector<double> s(static_cast<std::size_t>(blk.n), -inf);
    double mx = -inf;
    for (Index j = 0; j < blk.ke(i); ++j) {
      const std::size_t at = static_cast<std::size_t>(i * blk.n + j);
      s[static_cast<std::size_t>(j)] =
          double(blk.z[at]) + (biased ? double(blk.shifted[static_cast<std::size_t>(blk.buckets[at] + 1)]) : 0.0);
      mx = std::max(mx, s[static_cast<std::size_t>(j)]);
    }
    if (mx == -inf) continue;
    double sum = 0;
    for (Index j = 0; j < blk.ke(i); ++j) sum += std::exp(s[static_cast<std::size_t>(j)] - mx);
    for (Index j = 0; j < blk.ke(i); ++j)
      p[static_cast<std::size_t>(i * blk.n + j)] = std::exp(s[static_cast<std::size_t>(j)] - mx) / sum;
  }
  return p;
}

struct Case {
  Index rows, n, kend, causal_row0;
};

std::vector<Case> cases() {
  std::vector<Case> out;
  for (Index n : {0, 1, 2, 7, 8, 9, 15, 16, 17, 31, 32, 33, 47, 64, 100}) {
    for (Index kend : {Index(0), Index(1), n / 2, n - 1, n}) {
      if (kend < 0 || kend > n) continue;
      out.push_back({3, n, kend, -1});
    }
    out.push_back({std::max<Index>(n, 1), n, n, 0});  // causal, block at row 0
    if (n > 4) out.push_back({3, n, n, n / 2});       // causal, a later row block
  }
  return out;
}

template <class S>
double tolerance() {
  return sizeof(S) == 4 ? 3e-6 : 1e-14;
}

// The numerators times inv_sum must be the probabilities; masked and
// invisible keys and empty rows exactly 0.
template <class S, class Numerators>
void check_numerators(Numerators numerators, int slots, std::mt19937& rng) {
  for (const Case& cs : cases())
    for (bool biased : {false, true}) {
      Block<S> blk(cs.rows, cs.n, cs.kend, cs.causal_row0, slots, rng);
      std::vector<S> z = blk.z, inv(static_cast<std::size_t>(cs.rows), S(-1)), row_max(inv);
      numerators(z.data(), cs.n, blk.buckets.data(), cs.n, biased ? blk.shifted.data() : nullptr, slots, cs.rows,
                 cs.kend, cs.causal_row0, cs.n, inv.data(), row_max.data());
      const auto want = reference_probabilities(blk, biased);
      INFO("rows " << cs.rows << ", n " << cs.n << ", kend " << cs.kend << ", causal_row0 " << cs.causal_row0
                   << ", biased " << biased << ", slots " << slots);
      double err = 0;
      bool zeros = true;
      for (Index i = 0; i < cs.rows; ++i)
        for (Index j = 0; j < cs.n; ++j) {
          const std::size_t at = static_cast<std::size_t>(i * cs.n + j);
          const double got = double(z[at]) * double(inv[static_cast<std::size_t>(i)]);
          err = std::max(err, std::abs(got - want[at]));
          if (want[at] == 0.0 && z[at] != S(0)) zeros = false;
        }
      CHECK(err <= tolerance<S>());
      CHECK(zeros);
      // Each row's maximum of score + bias (one rounding each, so exact), -inf with no visible key.
      std::size_t max_mismatch = row_max.size();
      for (Index i = 0; i < cs.rows; ++i) {
        S want_max = -std::numeric_limits<S>::infinity();
        for (Index j = 0; j < blk.ke(i); ++j) {
          const std::size_t at = static_cast<std::size_t>(i * cs.n + j);
          want_max = std::max(
              want_max, S(blk.z[at] + (biased ? blk.shifted[static_cast<std::size_t>(blk.buckets[at] + 1)] : S(0))));
        }
        if (row_max[static_cast<std::size_t>(i)] != want_max && max_mismatch == row_max.size())
          max_mismatch = static_cast<std::size_t>(i);
      }
      CHECK(max_mismatch == row_max.size());
      for (Index i = 0; i < cs.rows; ++i) {
        bool any = false;
        for (Index j = 0; j < cs.n; ++j) any = any || want[static_cast<std::size_t>(i * cs.n + j)] != 0.0;
        if (!any) CHECK(inv[static_cast<std::size_t>(i)] == S(0));
      }
    }
}

// dscore = p * (dp - <p, dp>) on visible keys, 0 beyond; the histogram (summed
// over its copies) = the sum of dscore per bucket.
// With give_dots the row dot products <p, dp> come from the caller.
template <class S, class Backward>
void check_backward(Backward backward, int slots, std::mt19937& rng, bool give_dots = false) {
  const Index stride = slots + 3;  // any stride >= slots
  for (const Case& cs : cases()) {
    Block<S> blk(cs.rows, cs.n, cs.kend, cs.causal_row0, slots, rng);
    const auto p64 = reference_probabilities(blk, true);
    std::vector<S> p(p64.begin(), p64.end()), dz = blk.dp;
    std::vector<S> hist(static_cast<std::size_t>(k::kHistogramCopies * stride), S(0));
    std::vector<S> dots(static_cast<std::size_t>(cs.rows), S(0));
    for (Index i = 0; i < cs.rows; ++i) {
      double dot = 0;
      for (Index j = 0; j < blk.ke(i); ++j)
        dot +=
            double(p[static_cast<std::size_t>(i * cs.n + j)]) * double(blk.dp[static_cast<std::size_t>(i * cs.n + j)]);
      dots[static_cast<std::size_t>(i)] = static_cast<S>(dot);
    }
    backward(p.data(), cs.n, dz.data(), cs.n, blk.buckets.data(), cs.n, cs.rows, cs.kend, cs.causal_row0, cs.n,
             hist.data(), stride, slots, give_dots ? dots.data() : nullptr);
    std::vector<double> want_hist(static_cast<std::size_t>(slots), 0.0);
    double err = 0, scale = 1;
    bool zeros = true;
    for (Index i = 0; i < cs.rows; ++i) {
      double dot = 0;
      for (Index j = 0; j < blk.ke(i); ++j) {
        const std::size_t at = static_cast<std::size_t>(i * cs.n + j);
        dot += double(p[at]) * double(blk.dp[at]);
      }
      for (Index j = 0; j < cs.n; ++j) {
        const std::size_t at = static_cast<std::size_t>(i * cs.n + j);
        const double want = j < blk.ke(i) ? double(p[at]) * (double(blk.dp[at]) - dot) : 0.0;
        if (j < blk.ke(i)) want_hist[static_cast<std::size_t>(blk.buckets[at] + 1)] += want;
        if (j >= blk.ke(i) && dz[at] != S(0)) zeros = false;
        err = std::max(err, std::abs(double(dz[at]) - want));
        scale = std::max(scale, std::abs(double(blk.dp[at])));
      }
    }
    INFO("rows " << cs.rows << ", n " << cs.n << ", kend " << cs.kend << ", causal_row0 " << cs.causal_row0
                 << ", slots " << slots);
    CHECK(err <= tolerance<S>() * scale * 4);
    CHECK(zeros);
    for (int s = 1; s < slots; ++s) {
      double got = 0;
      for (int c = 0; c < k::kHistogramCopies; ++c) got += double(hist[static_cast<std::size_t>(c * stride + s)]);
      CHECK(std::abs(got - want_hist[static_cast<std::size_t>(s)]) <= tolerance<S>() * scale * 8 * double(cs.n + 1));
    }
  }
}

const std::vector<int> kSlotCounts = {2, 5, 9, 12, 16, 17, 20, 32, 33, 60, 129};

}  // namespace

TEMPLATE_TEST_CASE("portable softmax numerators match a double softmax for every length, mask and table size",
                   "[kernels][softmax]", float, double) {
  std::mt19937 rng(42);
  for (int slots : kSlotCounts)
    check_numerators<TestType>([](auto... a) { portable_of(TestType()).softmax_numerators(a...); }, slots, rng);
}

TEMPLATE_TEST_CASE("portable softmax backward and bucket histogram match a double reference", "[kernels][softmax]",
                   float, double) {
  std::mt19937 rng(7);
  for (int slots : kSlotCounts)
    for (bool give_dots : {false, true})
      check_backward<TestType>([](auto... a) { portable_of(TestType()).softmax_backward(a...); }, slots, rng,
                               give_dots);
}

namespace {

// One ISA's kernels under test, with its name for the failure messages.
template <class S>
struct Named {
  std::string name;
  Positional<S> kernels;
  void (*exp_array)(const S*, S*, Index) noexcept;  // the ISA's exp primitive (2^x float, e^x double)
};

// Every vector version to compare with the portable one: the emulated wide
// set always, then each ISA this build and CPU run (portable included: the
// dispatch table must hold the reference itself).
template <class S>
std::vector<Named<S>> versions() {
  std::vector<Named<S>> out;
  out.push_back({"emulated", {&k::emulated::kernel_table<S>}, k::emulated::kernel_table<S>.rows.exp_flushed});
  for (synattn::KernelIsa isa : k::supported_isas()) {
    const k::KernelTable<S>& table = k::kernels_for<S>(isa);
    out.push_back({synattn::to_string(isa), {&table}, table.rows.exp_flushed});
  }
  return out;
}

}  // namespace

TEST_CASE("the vector versions under test include the emulated set and every ISA the CPU runs", "[kernels][dispatch]") {
  const auto v = versions<float>();
  REQUIRE(v.size() == k::supported_isas().size() + 1);
  CHECK(v[0].name == "emulated");
  CHECK(v[1].name == "portable");
#if defined(SYNATTN_HAVE_AVX2_KERNELS)
  if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    REQUIRE(v.size() >= 3);
    CHECK(v[2].name == "avx2");
  }
#endif
}

TEMPLATE_TEST_CASE("every version matches the double references", "[kernels][softmax]", float, double) {
  std::mt19937 rng(11);
  for (const auto& ver : versions<TestType>()) {
    INFO("kernels: " << ver.name);
    for (int slots : kSlotCounts) {
      check_numerators<TestType>([&](auto... a) { ver.kernels.softmax_numerators(a...); }, slots, rng);
      for (bool give_dots : {false, true})
        check_backward<TestType>([&](auto... a) { ver.kernels.softmax_backward(a...); }, slots, rng, give_dots);
    }
  }
}

TEMPLATE_TEST_CASE("a backward block without a histogram leaves the histogram alone, in every version",
                   "[kernels][softmax]", float, double) {
  std::mt19937 rng(3);
  Block<TestType> blk(4, 37, 30, -1, 12, rng);
  const auto p64 = reference_probabilities(blk, true);
  for (const auto& ver : versions<TestType>()) {
    INFO("kernels: " << ver.name);
    std::vector<TestType> p(p64.begin(), p64.end()), a = blk.dp, b = blk.dp, hist(8 * 12, TestType(0));
    ver.kernels.softmax_backward(p.data(), 37, a.data(), 37, blk.buckets.data(), 37, 4, 30, -1, 37, nullptr, 12, 12,
                                 nullptr);
    ver.kernels.softmax_backward(p.data(), 37, b.data(), 37, blk.buckets.data(), 37, 4, 30, -1, 37, hist.data(), 12, 12,
                                 nullptr);
    CHECK(a == b);
  }
}

// Without a bias the layer has no bucket block: buckets is null while ldb
// still holds the row stride. No version may form a row pointer into it
// (pointer arithmetic on null is undefined; fuzz_attention found it under
// UBSan), and each must agree with the portable one.
TEMPLATE_TEST_CASE("without a bias, a null bucket block with a row stride is never offset, in every version",
                   "[kernels][softmax]", float, double) {
  std::mt19937 rng(5);
  Block<TestType> blk(5, 21, 18, -1, 12, rng);  // its buckets are not passed
  const auto p64 = reference_probabilities(blk, false);
  const Positional<TestType> ref = portable_of(TestType());
  std::vector<TestType> want = blk.dp, p(p64.begin(), p64.end());
  ref.softmax_backward(p.data(), 21, want.data(), 21, nullptr, 21, 5, 18, -1, 21, nullptr, 0, 0, nullptr);
  std::vector<TestType> zref = blk.z, inv_ref(5);
  ref.softmax_numerators(zref.data(), 21, nullptr, 21, nullptr, 0, 5, 18, -1, 21, inv_ref.data(), nullptr);
  for (const auto& ver : versions<TestType>()) {
    INFO("kernels: " << ver.name);
    std::vector<TestType> got = blk.dp;
    ver.kernels.softmax_backward(p.data(), 21, got.data(), 21, nullptr, 21, 5, 18, -1, 21, nullptr, 0, 0, nullptr);
    for (std::size_t i = 0; i < got.size(); ++i) CHECK(got[i] == Approx(want[i]).margin(1e-6));
    std::vector<TestType> z = blk.z, inv(5);
    ver.kernels.softmax_numerators(z.data(), 21, nullptr, 21, nullptr, 0, 5, 18, -1, 21, inv.data(), nullptr);
    for (std::size_t i = 0; i < z.size(); ++i) CHECK(z[i] == Approx(zref[i]).epsilon(1e-5).margin(1e-30));
  }
}

// Same inputs through each version and the portable reference: numerators
// and inverse sums with and without the bias (the same zeros), the backward
// with and without caller-given dots and histogram (masked and invisible keys
// get no gradient, histogram padding untouched), and scale_rows (one
// multiplication per value either way: exactly equal, at every alignment).
TEMPLATE_TEST_CASE("every version agrees with the portable kernels", "[kernels][softmax]", float, double) {
  using S = TestType;
  const Positional<S> ref = portable_of(S());
  for (const auto& ver : versions<S>()) {
    INFO("kernels: " << ver.name);
    std::mt19937 rng(2025);
    for (int slots : kSlotCounts)
      for (const Case& cs : cases()) {
        Block<S> blk(cs.rows, cs.n, cs.kend, cs.causal_row0, slots, rng);
        INFO("rows " << cs.rows << ", n " << cs.n << ", kend " << cs.kend << ", causal_row0 " << cs.causal_row0
                     << ", slots " << slots);
        std::vector<S> zp, ip;
        for (bool biased : {false, true}) {
          INFO("biased " << biased);
          const S* shifted = biased ? blk.shifted.data() : nullptr;
          std::vector<S> za = blk.z, ia(static_cast<std::size_t>(cs.rows), S(-1));
          zp = blk.z;
          ip.assign(ia.size(), S(-1));
          ver.kernels.softmax_numerators(za.data(), cs.n, blk.buckets.data(), cs.n, shifted, slots, cs.rows, cs.kend,
                                         cs.causal_row0, cs.n, ia.data(), nullptr);
          ref.softmax_numerators(zp.data(), cs.n, blk.buckets.data(), cs.n, shifted, slots, cs.rows, cs.kend,
                                 cs.causal_row0, cs.n, ip.data(), nullptr);
          // One check per array (per-value REQUIREs made this test 5x slower
          // under sanitizers); a failure names the first differing zero.
          double err = 0, inv_err = 0;
          std::size_t zero_mismatch = za.size(), inv_zero_mismatch = ia.size();
          for (std::size_t i = 0; i < za.size(); ++i) {
            if ((za[i] == S(0)) != (zp[i] == S(0)) && zero_mismatch == za.size()) zero_mismatch = i;
            err = std::max(err, std::abs(double(za[i]) - double(zp[i])));
          }
          for (std::size_t i = 0; i < ia.size(); ++i) {
            if ((ia[i] == S(0)) != (ip[i] == S(0)) && inv_zero_mismatch == ia.size()) inv_zero_mismatch = i;
            inv_err = std::max(inv_err, std::abs(double(ia[i]) - double(ip[i])) / std::max(1.0, double(ip[i])));
          }
          CHECK(zero_mismatch == za.size());
          CHECK(inv_zero_mismatch == ia.size());
          CHECK(err <= tolerance<S>());
          CHECK(inv_err <= tolerance<S>());
        }

        std::vector<S> p(zp.size()), dots(static_cast<std::size_t>(cs.rows), S(0));
        for (Index i = 0; i < cs.rows; ++i) {
          double dot = 0;
          for (Index j = 0; j < cs.n; ++j) {
            const std::size_t at = static_cast<std::size_t>(i * cs.n + j);
            p[at] = zp[at] * ip[static_cast<std::size_t>(i)];
            if (j < blk.ke(i)) dot += double(p[at]) * double(blk.dp[at]);
          }
          dots[static_cast<std::size_t>(i)] = static_cast<S>(dot);
        }
        const Index stride = slots + 1;  // any stride >= slots
        for (bool give_dots : {false, true})
          for (bool with_hist : {false, true}) {
            INFO("dots " << give_dots << ", histogram " << with_hist);
            std::vector<S> da = blk.dp, dpp = blk.dp;
            std::vector<S> ha(static_cast<std::size_t>(k::kHistogramCopies * stride), S(0)), hp(ha.size(), S(0));
            ver.kernels.softmax_backward(p.data(), cs.n, da.data(), cs.n, blk.buckets.data(), cs.n, cs.rows, cs.kend,
                                         cs.causal_row0, cs.n, with_hist ? ha.data() : nullptr, stride, slots,
                                         give_dots ? dots.data() : nullptr);
            ref.softmax_backward(p.data(), cs.n, dpp.data(), cs.n, blk.buckets.data(), cs.n, cs.rows, cs.kend,
                                 cs.causal_row0, cs.n, with_hist ? hp.data() : nullptr, stride, slots,
                                 give_dots ? dots.data() : nullptr);
            double err = 0, hist_err = 0;
            std::size_t nonzero = da.size();  // first masked or invisible key with a gradient
            for (std::size_t i = 0; i < da.size(); ++i) {
              if (p[i] == S(0) && da[i] != S(0) && nonzero == da.size()) nonzero = i;
              err = std::max(err, std::abs(double(da[i]) - double(dpp[i])));
            }
            for (int s = 1; s < slots; ++s) {
              double a = 0, b = 0;
              for (int c = 0; c < k::kHistogramCopies; ++c) {
                a += double(ha[static_cast<std::size_t>(c * stride + s)]);
                b += double(hp[static_cast<std::size_t>(c * stride + s)]);
              }
              hist_err = std::max(hist_err, std::abs(a - b));
            }
            bool padding = true;  // beyond each copy's slots the histogram is untouched
            for (int c = 0; c < k::kHistogramCopies; ++c)
              padding = padding && ha[static_cast<std::size_t>(c * stride + slots)] == S(0);
            CHECK(nonzero == da.size());
            CHECK(err <= 1e2 * tolerance<S>());
            CHECK(hist_err <= 1e2 * tolerance<S>() * double(cs.rows * cs.n + 1));
            CHECK(padding);
          }
      }

    std::normal_distribution<double> g(0.0, 1.0);
    for (Index cols : {0, 1, 3, 4, 5, 7, 8, 9, 15, 16, 17, 31, 33, 100})
      for (Index offset : {0, 1, 2, 3, 5, 8, 15})  // dst misaligned by `offset` scalars
        for (bool stream : {false, true}) {
          const Index rows = 3, ld = cols + 5;
          std::vector<S> src(static_cast<std::size_t>(rows * ld)), scale(static_cast<std::size_t>(rows));
          for (auto& v : src) v = static_cast<S>(g(rng));
          for (auto& v : scale) v = static_cast<S>(g(rng));
          // 64-byte aligned storage, so `offset` is the misalignment.
          std::vector<S, Eigen::aligned_allocator<S>> ba(static_cast<std::size_t>(rows * ld + offset + 16), S(-7)),
              bp(ba);
          ver.kernels.scale_rows(ba.data() + offset, ld, src.data(), ld, rows, cols, scale.data(), stream);
          ref.scale_rows(bp.data() + offset, ld, src.data(), ld, rows, cols, scale.data(), false);
          INFO("cols " << cols << ", offset " << offset << ", stream " << stream);
          REQUIRE(ba == bp);  // including the untouched padding (-7)
        }
  }
}

// The layer's scratch blocks are per thread, so a row's address depends on
// the thread count: every version must give the same bits at any address
// (the portable one did not while Eigen peeled its loops to alignment).
TEMPLATE_TEST_CASE("every version gives the same bits wherever the block lies in memory", "[kernels][softmax]", float,
                   double) {
  using S = TestType;
  std::mt19937 rng(31);
  const Index rows = 4, n = 77;
  const int slots = 12;
  Block<S> blk(rows, n, n, -1, slots, rng);
  const auto p64 = reference_probabilities(blk, true);
  for (const auto& ver : versions<S>()) {
    INFO("kernels: " << ver.name);
    std::vector<std::vector<S>> z, d;
    std::vector<std::vector<S>> inv, hist;
    for (Index offset = 0; offset < 8; ++offset) {  // 64-byte-aligned storage shifted by `offset` scalars
      std::vector<S, Eigen::aligned_allocator<S>> zb(static_cast<std::size_t>(rows * n + 8)),
          db(static_cast<std::size_t>(rows * n + 8)), pb(db.size());
      std::copy(blk.z.begin(), blk.z.end(), zb.begin() + offset);
      std::copy(blk.dp.begin(), blk.dp.end(), db.begin() + offset);
      std::copy(p64.begin(), p64.end(), pb.begin() + offset);
      std::vector<S> i(static_cast<std::size_t>(rows)), h(static_cast<std::size_t>(k::kHistogramCopies * slots));
      ver.kernels.softmax_numerators(zb.data() + offset, n, blk.buckets.data(), n, blk.shifted.data(), slots, rows, n,
                                     -1, n, i.data(), nullptr);
      ver.kernels.softmax_backward(pb.data() + offset, n, db.data() + offset, n, blk.buckets.data(), n, rows, n, -1, n,
                                   h.data(), slots, slots, nullptr);
      z.emplace_back(zb.begin() + offset, zb.begin() + offset + rows * n);
      d.emplace_back(db.begin() + offset, db.begin() + offset + rows * n);
      inv.push_back(i);
      hist.push_back(h);
    }
    for (std::size_t o = 1; o < z.size(); ++o) {
      INFO("offset " << o);
      CHECK(z[o] == z[0]);
      CHECK(inv[o] == inv[0]);
      CHECK(d[o] == d[0]);
      CHECK(hist[o] == hist[0]);
    }
  }
}

// Large scores: the float kernels subtract the maximum first once it passes
// 2^20 (beyond, rounding max log2(e) would shift the exponents by more than
// 1/8; near the float range it overflows). Every row ties several keys at
// the maximum (the rest are half of it, so exp gives 0): each tied key gets
// exactly 1 / ties, whatever the sign of the maximum.
template <class S, class Numerators>
void check_huge_scores(Numerators numerators) {
  for (Index n : {Index(37), Index(70)})
    for (S sign : {S(1), S(-1)})
      for (S top : {S(4096), S(1048576), S(3e7), S(1e37), S(3e38), std::numeric_limits<S>::max()}) {
        std::vector<S> z(static_cast<std::size_t>(n));
        int ties = 0;
        for (Index j = 0; j < n; ++j) {
          const bool tied = j % 5 == 2;
          ties += tied;
          z[static_cast<std::size_t>(j)] = sign > 0 ? (tied ? top : top / S(2)) : (tied ? -top / S(2) : -top);
        }
        std::vector<std::int8_t> buckets(static_cast<std::size_t>(n), 0);
        const S shifted[2] = {-std::numeric_limits<S>::infinity(), S(0)};
        S inv = 0;
        numerators(z.data(), n, buckets.data(), n, shifted, 2, Index(1), n, Index(-1), n, &inv, nullptr);
        INFO("n " << n << ", maximum " << (sign > 0 ? double(top) : -double(top) / 2));
        REQUIRE(double(inv) == Approx(1.0 / ties));
        for (Index j = 0; j < n; ++j) REQUIRE(z[static_cast<std::size_t>(j)] == (j % 5 == 2 ? S(1) : S(0)));
      }
}

TEMPLATE_TEST_CASE("rows whose maximum is near the float range keep exact ties and zeros", "[kernels][softmax]", float,
                   double) {
  check_huge_scores<TestType>([](auto... a) { portable_of(TestType()).softmax_numerators(a...); });
  for (const auto& ver : versions<TestType>()) {
    INFO("kernels: " << ver.name);
    check_huge_scores<TestType>([&](auto... a) { ver.kernels.softmax_numerators(a...); });
  }
}

// The exp primitive of each version, 2^d (float) / e^d (double) for d <= 0,
// against long double: relative error over the normal range (every binade,
// dense near 0), exactly 0 below it and for -inf, NaN for NaN.
TEMPLATE_TEST_CASE("every version's exp is accurate, flushes below the smallest normal and keeps NaN",
                   "[kernels][softmax]", float, double) {
  using S = TestType;
  const bool is_float = sizeof(S) == 4;
  const double lowest = is_float ? -126.0 : -708.39;  // log(smallest normal) in the exp's base
  std::vector<S> d;
  for (int i = 0; i <= 200000; ++i) d.push_back(static_cast<S>(lowest * i / 200000.0));
  for (int i = 0; i <= 20000; ++i) d.push_back(static_cast<S>(-i / 20000.0));
  for (S x : {S(-0.0), S(-1e-30), S(-0.5), S(-1), S(-1.5)}) d.push_back(x);
  const std::size_t normal = d.size();
  for (S x : {S(lowest - 1.5), S(-1000), S(-1e30), -std::numeric_limits<S>::infinity()}) d.push_back(x);
  d.push_back(std::numeric_limits<S>::quiet_NaN());
  for (const auto& ver : versions<S>()) {
    if (ver.exp_array == nullptr) continue;  // portable: Eigen's exp, checked through the softmax
    INFO("kernels: " << ver.name);
    std::vector<S> got(d.size(), S(-1));
    ver.exp_array(d.data(), got.data(), static_cast<Index>(d.size()));
    double worst = 0;
    for (std::size_t i = 0; i < normal; ++i) {
      const long double want =
          is_float ? std::exp2(static_cast<long double>(d[i])) : std::exp(static_cast<long double>(d[i]));
      worst = std::max(worst, double(std::abs((static_cast<long double>(got[i]) - want) / want)));
    }
    CHECK(worst <= (is_float ? 1e-7 : 4e-16));
    for (std::size_t i = normal; i + 1 < d.size(); ++i) CHECK(got[i] == S(0));
    CHECK(std::isnan(got.back()));
  }
}

// NaN policy (kernels/attention_rows_portable.hpp): a NaN score of a visible
// key, masked or not, or a NaN table entry a visible key reads, makes its
// row's inv_sum NaN, in every version; other rows, and fully masked rows
// without NaN, are unaffected. The backward of a NaN row is NaN where the
// portable one is.
TEMPLATE_TEST_CASE("NaN scores and NaN table entries make their row NaN in every version, as in the portable one",
                   "[kernels][softmax][nan]", float, double) {
  using S = TestType;
  const S nan = std::numeric_limits<S>::quiet_NaN(), inf = std::numeric_limits<S>::infinity();
  const Positional<S> ref = portable_of(S());
  for (int slots : {5, 12, 20, 40})
    for (Index n : {Index(7), Index(16), Index(37), Index(70)}) {
      const Index rows = 6;
      std::mt19937 rng(static_cast<unsigned>(slots * 100 + n));
      Block<S> blk(rows, n, n, -1, slots, rng);
      // Row 0: a NaN score on a visible key. Row 1: a NaN score on a masked
      // key (NaN + -inf is NaN). Row 2: every visible key masked, one NaN
      // among them (the maximum is -inf unless NaN). Row 3: every key masked,
      // no NaN: zeros. Row 4: reads table slot 2, which is NaN. Row 5: clean
      // (must stay finite).
      blk.z[static_cast<std::size_t>(0 * n + n / 2)] = nan;
      blk.buckets[static_cast<std::size_t>(1 * n + n - 1)] = -1;
      blk.z[static_cast<std::size_t>(1 * n + n - 1)] = nan;
      for (Index j = 0; j < n; ++j) {
        blk.buckets[static_cast<std::size_t>(2 * n + j)] = -1;
        blk.buckets[static_cast<std::size_t>(3 * n + j)] = -1;
        if (blk.buckets[static_cast<std::size_t>(4 * n + j)] == 1) blk.buckets[static_cast<std::size_t>(4 * n + j)] = 0;
        if (blk.buckets[static_cast<std::size_t>(5 * n + j)] == 1) blk.buckets[static_cast<std::size_t>(5 * n + j)] = 0;
      }
      blk.z[static_cast<std::size_t>(2 * n + n / 3)] = nan;
      blk.buckets[static_cast<std::size_t>(4 * n + n / 2)] = 1;  // slot 2
      for (Index i = 0; i < 4; ++i)                              // rows 0-3 never read slot 2 either
        for (Index j = 0; j < n; ++j)
          if (blk.buckets[static_cast<std::size_t>(i * n + j)] == 1)
            blk.buckets[static_cast<std::size_t>(i * n + j)] = 0;
      std::vector<S> shifted = blk.shifted;
      shifted[2] = nan;
      std::vector<S> zp = blk.z, ip(static_cast<std::size_t>(rows));
      ref.softmax_numerators(zp.data(), n, blk.buckets.data(), n, shifted.data(), slots, rows, n, -1, n, ip.data(),
                             nullptr);
      INFO("slots " << slots << ", n " << n);
      for (Index i = 0; i < 3; ++i) CHECK(std::isnan(ip[static_cast<std::size_t>(i)]));
      CHECK(ip[3] == S(0));
      CHECK(std::isnan(ip[4]));
      CHECK(std::isfinite(ip[5]));
      for (Index j = 0; j < n; ++j) CHECK(zp[static_cast<std::size_t>(3 * n + j)] == S(0));

      // The "scale = inf with a zero table": every entry inf * 0 = NaN.
      std::vector<S> all_nan(static_cast<std::size_t>(slots), nan);
      all_nan[0] = -inf;
      std::vector<S> zq = blk.z, iq(static_cast<std::size_t>(rows));
      ref.softmax_numerators(zq.data(), n, blk.buckets.data(), n, all_nan.data(), slots, rows, n, -1, n, iq.data(),
                             nullptr);
      for (Index i = 0; i < rows; ++i)
        if (i != 3) CHECK(std::isnan(iq[static_cast<std::size_t>(i)]));

      for (const auto& ver : versions<S>()) {
        INFO("kernels: " << ver.name);
        std::vector<S> za = blk.z, ia(static_cast<std::size_t>(rows));
        ver.kernels.softmax_numerators(za.data(), n, blk.buckets.data(), n, shifted.data(), slots, rows, n, -1, n,
                                       ia.data(), nullptr);
        for (Index i = 0; i < rows; ++i) {
          INFO("row " << i);
          CHECK(std::isnan(ia[static_cast<std::size_t>(i)]) == std::isnan(ip[static_cast<std::size_t>(i)]));
          for (Index j = 0; j < n; ++j) {
            const std::size_t at = static_cast<std::size_t>(i * n + j);
            // Probabilities (numerator x inv_sum): NaN exactly where portable's are.
            CHECK(std::isnan(za[at] * ia[static_cast<std::size_t>(i)]) ==
                  std::isnan(zp[at] * ip[static_cast<std::size_t>(i)]));
          }
        }
        std::vector<S> zb = blk.z, ib(static_cast<std::size_t>(rows));
        ver.kernels.softmax_numerators(zb.data(), n, blk.buckets.data(), n, all_nan.data(), slots, rows, n, -1, n,
                                       ib.data(), nullptr);
        for (Index i = 0; i < rows; ++i)
          CHECK(std::isnan(ib[static_cast<std::size_t>(i)]) == std::isnan(iq[static_cast<std::size_t>(i)]));

        // Backward through the NaN probabilities: NaN positions and histogram
        // slots as portable's.
        std::vector<S> p(zp.size());
        for (std::size_t at = 0; at < p.size(); ++at) p[at] = zp[at] * ip[at / static_cast<std::size_t>(n)];
        const Index stride = slots;
        std::vector<S> da = blk.dp, dr = blk.dp;
        std::vector<S> ha(static_cast<std::size_t>(k::kHistogramCopies * stride), S(0)), hr(ha.size(), S(0));
        ver.kernels.softmax_backward(p.data(), n, da.data(), n, blk.buckets.data(), n, rows, n, -1, n, ha.data(),
                                     stride, slots, nullptr);
        ref.softmax_backward(p.data(), n, dr.data(), n, blk.buckets.data(), n, rows, n, -1, n, hr.data(), stride, slots,
                             nullptr);
        for (std::size_t at = 0; at < da.size(); ++at) CHECK(std::isnan(da[at]) == std::isnan(dr[at]));
        for (int s = 1; s < slots; ++s) {
          S a = 0, b = 0;
          for (int c = 0; c < k::kHistogramCopies; ++c) {
            a += ha[static_cast<std::size_t>(c * stride + s)];
            b += hr[static_cast<std::size_t>(c * stride + s)];
          }
          CHECK(std::isnan(a) == std::isnan(b));
        }
      }
    }
}

namespace {

// Bit for bit, NaN for NaN (a NaN's payload may differ).
template <class S>
bool same_bits(const std::vector<S>& a, const std::vector<S>& b) {
  if (a.size() != b.size()) return false;
  for (std::size_t i = 0; i < a.size(); ++i)
    if (!(std::isnan(a[i]) && std::isnan(b[i])) && std::memcmp(&a[i], &b[i], sizeof(S)) != 0) return false;
  return true;
}

// `kernels`' probabilities on blk's scores, from the row maxima and inverse
// sums its softmax_numerators wrote, give exactly the numerators scaled by
// the inverse sums (what the materialized path keeps), on every column.
template <class S>
void check_probabilities(const Positional<S>& kernels, const Block<S>& blk, const S* shifted) {
  const std::size_t rows = static_cast<std::size_t>(blk.rows);
  std::vector<S> e = blk.z, inv(rows, S(-1)), row_max(rows, S(-1));
  kernels.softmax_numerators(e.data(), blk.n, blk.buckets.data(), blk.n, shifted, blk.slots, blk.rows, blk.kend,
                             blk.causal_row0, blk.n, inv.data(), row_max.data());
  std::vector<S> want(e.size());
  kernels.scale_rows(want.data(), blk.n, e.data(), blk.n, blk.rows, blk.n, inv.data(), false);
  std::vector<S> got = blk.z;
  kernels.probabilities(got.data(), blk.n, blk.buckets.data(), blk.n, shifted, blk.slots, blk.rows, blk.kend,
                        blk.causal_row0, blk.n, row_max.data(), inv.data());
  CHECK(same_bits(got, want));
}

}  // namespace

// The fused training path recomputes P in the backward pass from the row
// maxima and inverse sums the forward kept; it must be the P the
// materialized path keeps, bit for bit, in every version: every length,
// mask, causal block and table size class, rows with no visible key, huge
// scores and NaN scores and table entries.
TEMPLATE_TEST_CASE("every version's probabilities are the normalised numerators, bit for bit", "[kernels][softmax]",
                   float, double) {
  using S = TestType;
  const S nan = std::numeric_limits<S>::quiet_NaN();
  for (const auto& ver : versions<S>()) {
    INFO("kernels: " << ver.name);
    std::mt19937 rng(77);
    for (int slots : kSlotCounts)
      for (const Case& cs : cases())
        for (bool biased : {false, true}) {
          Block<S> blk(cs.rows, cs.n, cs.kend, cs.causal_row0, slots, rng);
          INFO("rows " << cs.rows << ", n " << cs.n << ", kend " << cs.kend << ", causal_row0 " << cs.causal_row0
                       << ", slots " << slots << ", biased " << biased);
          check_probabilities<S>(ver.kernels, blk, biased ? blk.shifted.data() : nullptr);
        }
    // Row 0 NaN, row 1 fully masked, row 2 fully masked with a NaN, row 3
    // huge scores (the float kernels' subtract-first branch), row 4 a NaN
    // table entry, row 5 clean.
    for (int slots : {5, 20, 60}) {
      const Index n = 45;
      Block<S> blk(6, n, n, -1, slots, rng);
      blk.z[static_cast<std::size_t>(n / 2)] = nan;
      for (Index j = 0; j < n; ++j) {
        blk.buckets[static_cast<std::size_t>(1 * n + j)] = -1;
        blk.buckets[static_cast<std::size_t>(2 * n + j)] = -1;
        blk.z[static_cast<std::size_t>(3 * n + j)] *= S(3e6);
        for (Index i : {0, 1, 2, 3, 5})
          if (blk.buckets[static_cast<std::size_t>(i * n + j)] == 1)
            blk.buckets[static_cast<std::size_t>(i * n + j)] = 0;
      }
      blk.z[static_cast<std::size_t>(2 * n + 7)] = nan;
      blk.buckets[static_cast<std::size_t>(4 * n + 3)] = 1;  // slot 2
      std::vector<S> shifted = blk.shifted;
      shifted[2] = nan;
      INFO("special rows, slots " << slots);
      check_probabilities<S>(ver.kernels, blk, shifted.data());
    }
  }
}

TEMPLATE_TEST_CASE("scale_rows multiplies each row by its factor, streamed or not, at any alignment", "[kernels][copy]",
                   float, double) {
  using S = TestType;
  std::mt19937 rng(99);
  std::normal_distribution<double> g(0.0, 1.0);
  for (Index cols : {0, 1, 5, 16, 17, 33, 100})
    for (Index offset : {0, 1, 3, 8})  // dst misaligned by `offset` scalars
      for (bool stream : {false, true}) {
        const Index rows = 3, ld = cols + 5;
        std::vector<S> src(static_cast<std::size_t>(rows * ld)), scale(static_cast<std::size_t>(rows));
        for (auto& v : src) v = static_cast<S>(g(rng));
        for (auto& v : scale) v = static_cast<S>(g(rng));
        std::vector<S> buffer(static_cast<std::size_t>(rows * ld + offset + 16), S(-7));
        S* dst = buffer.data() + offset;
        k::scale_rows<S>(dst, ld, src.data(), ld, rows, cols, scale.data(), stream);
        INFO("cols " << cols << ", offset " << offset << ", stream " << stream);
        for (Index i = 0; i < rows; ++i)
          for (Index j = 0; j < ld; ++j) {
            const std::size_t at = static_cast<std::size_t>(i * ld + j);
            if (j < cols)
              REQUIRE(dst[at] == src[at] * scale[static_cast<std::size_t>(i)]);
            else
              REQUIRE(dst[at] == S(-7));  // padding between rows untouched
          }
      }
}
