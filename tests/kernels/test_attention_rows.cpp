// The attention row kernels: the portable version against straightforward
// double references, and every instruction-set version the compiler targets
// against the portable one, over row lengths that hit every SIMD tail, masked
// keys, empty rows, causal blocks and every table size class (register
// permute, two-register permute, gather; register and scatter histograms).
#include <catch2/catch.hpp>

#include <synattn/kernels/attention_rows.hpp>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace k = synattn::kernels;
using synattn::Index;

namespace {

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
    out.push_back({std::max<Index>(n, 1), n, n, 0});      // causal, block at row 0
    if (n > 4) out.push_back({3, n, n, n / 2});            // causal, a later row block
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
      std::vector<S> z = blk.z, inv(static_cast<std::size_t>(cs.rows), S(-1));
      numerators(z.data(), cs.n, blk.buckets.data(), cs.n, biased ? blk.shifted.data() : nullptr, slots, cs.rows,
                 cs.kend, cs.causal_row0, cs.n, inv.data());
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
        dot += double(p[static_cast<std::size_t>(i * cs.n + j)]) * double(blk.dp[static_cast<std::size_t>(i * cs.n + j)]);
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
    check_numerators<TestType>(
        [](auto... a) { k::portable::softmax_numerators<TestType>(a...); }, slots, rng);
}

TEMPLATE_TEST_CASE("portable softmax backward and bucket histogram match a double reference", "[kernels][softmax]",
                   float, double) {
  std::mt19937 rng(7);
  for (int slots : kSlotCounts)
    for (bool give_dots : {false, true})
      check_backward<TestType>([](auto... a) { k::portable::softmax_backward<TestType>(a...); }, slots, rng,
                               give_dots);
}

TEMPLATE_TEST_CASE("a backward block without a histogram leaves the histogram alone", "[kernels][softmax]", float,
                   double) {
  std::mt19937 rng(3);
  Block<TestType> blk(4, 37, 30, -1, 12, rng);
  const auto p64 = reference_probabilities(blk, true);
  std::vector<TestType> p(p64.begin(), p64.end()), a = blk.dp, b = blk.dp, hist(8 * 12, TestType(0));
  k::softmax_backward<TestType>(p.data(), 37, a.data(), 37, blk.buckets.data(), 37, 4, 30, -1, 37, nullptr, 12, 12);
  k::softmax_backward<TestType>(p.data(), 37, b.data(), 37, blk.buckets.data(), 37, 4, 30, -1, 37, hist.data(), 12,
                                12);
  CHECK(a == b);
}

TEMPLATE_TEST_CASE("the dispatched kernels (the layer's) match the double references", "[kernels][softmax]", float,
                   double) {
  INFO("active kernels: " << k::active_isa());
  std::mt19937 rng(11);
  for (int slots : kSlotCounts) {
    check_numerators<TestType>([](auto... a) { k::softmax_numerators<TestType>(a...); }, slots, rng);
    for (bool give_dots : {false, true})
      check_backward<TestType>([](auto... a) { k::softmax_backward<TestType>(a...); }, slots, rng, give_dots);
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
          z[static_cast<std::size_t>(j)] =
              sign > 0 ? (tied ? top : top / S(2)) : (tied ? -top / S(2) : -top);
        }
        std::vector<std::int8_t> buckets(static_cast<std::size_t>(n), 0);
        const S shifted[2] = {-std::numeric_limits<S>::infinity(), S(0)};
        S inv = 0;
        numerators(z.data(), n, buckets.data(), n, shifted, 2, Index(1), n, Index(-1), n, &inv);
        INFO("n " << n << ", maximum " << (sign > 0 ? double(top) : -double(top) / 2));
        REQUIRE(double(inv) == Approx(1.0 / ties));
        for (Index j = 0; j < n; ++j) REQUIRE(z[static_cast<std::size_t>(j)] == (j % 5 == 2 ? S(1) : S(0)));
      }
}

TEMPLATE_TEST_CASE("rows whose maximum is near the float range keep exact ties and zeros", "[kernels][softmax]",
                   float, double) {
  check_huge_scores<TestType>([](auto... a) { k::portable::softmax_numerators<TestType>(a...); });
  check_huge_scores<TestType>([](auto... a) { k::softmax_numerators<TestType>(a...); });
#if defined(SYNATTN_HAVE_AVX512_KERNELS)
  check_huge_scores<TestType>([](auto... a) { k::avx512::softmax_numerators<TestType>(a...); });
#endif
#if defined(SYNATTN_HAVE_AVX2_KERNELS)
  check_huge_scores<TestType>([](auto... a) { k::avx2::softmax_numerators<TestType>(a...); });
#endif
}

// The float exp of an instruction-set file, 2^d for d <= 0, against double:
// relative error over [-126, 0] (every binade, dense near 0), and exactly 0
// below -127 (the caller flushes [-127, -126) itself where the kernel does not).
template <class Exp2>
void check_exp2(Exp2 exp2, int lanes, double tolerance) {
  std::vector<float> d, got;
  for (int i = 0; i <= 200000; ++i) d.push_back(-126.0f * float(i) / 200000.0f);
  for (int i = 0; i <= 20000; ++i) d.push_back(-float(i) / 20000.0f);
  for (float x : {-0.0f, -1e-30f, -0.5f, -1.0f, -1.5f, -125.99f, -126.0f}) d.push_back(x);
  while (d.size() % static_cast<std::size_t>(lanes) != 0) d.push_back(0.0f);
  got.resize(d.size());
  for (std::size_t i = 0; i < d.size(); i += static_cast<std::size_t>(lanes)) exp2(&d[i], &got[i]);
  double worst = 0;
  for (std::size_t i = 0; i < d.size(); ++i) {
    const double want = std::exp2(double(d[i]));
    worst = std::max(worst, std::abs(double(got[i]) - want) / want);
  }
  CHECK(worst <= tolerance);
  std::vector<float> low(static_cast<std::size_t>(lanes), -127.5f), out(low.size(), 1.0f);
  low[0] = -std::numeric_limits<float>::infinity();
  low[1] = -1000.0f;
  exp2(low.data(), out.data());
  for (float v : out) CHECK(v == 0.0f);
}

#if defined(SYNATTN_HAVE_AVX512_KERNELS)
TEST_CASE("the AVX-512 float exp2 is accurate to 1e-7 and flushes below 2^-126", "[kernels][softmax][avx512]") {
  check_exp2(
      [](const float* in, float* out) {
        _mm512_storeu_ps(out, k::avx512::detail::Ops<float>::exp2_flushed(_mm512_loadu_ps(in)));
      },
      16, 1e-7);
}
#endif

#if defined(SYNATTN_HAVE_AVX2_KERNELS)
TEST_CASE("the AVX2 float exp2 is accurate to 1e-7 and gives 0 below 2^-127", "[kernels][softmax][avx2]") {
  check_exp2(
      [](const float* in, float* out) {
        _mm256_storeu_ps(out, k::avx2::detail::Ops<float>::exp2(_mm256_loadu_ps(in)));
      },
      8, 1e-7);
}
#endif

TEMPLATE_TEST_CASE("scale_rows multiplies each row by its factor, streamed or not, at any alignment",
                   "[kernels][copy]", float, double) {
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

#if defined(SYNATTN_HAVE_AVX512_KERNELS)
// Same inputs through both versions: AVX-512 against the portable reference.
TEMPLATE_TEST_CASE("AVX-512 kernels agree with the portable kernels", "[kernels][softmax][avx512]", float, double) {
  using S = TestType;
  std::mt19937 rng(2024);
  for (int slots : kSlotCounts)
    for (const Case& cs : cases()) {
      Block<S> blk(cs.rows, cs.n, cs.kend, cs.causal_row0, slots, rng);
      INFO("rows " << cs.rows << ", n " << cs.n << ", kend " << cs.kend << ", causal_row0 " << cs.causal_row0
                   << ", slots " << slots);
      std::vector<S> za = blk.z, zp = blk.z, ia(static_cast<std::size_t>(cs.rows)), ip(ia.size());
      k::avx512::softmax_numerators<S>(za.data(), cs.n, blk.buckets.data(), cs.n, blk.shifted.data(), slots, cs.rows,
                                       cs.kend, cs.causal_row0, cs.n, ia.data());
      k::portable::softmax_numerators<S>(zp.data(), cs.n, blk.buckets.data(), cs.n, blk.shifted.data(), slots,
                                         cs.rows, cs.kend, cs.causal_row0, cs.n, ip.data());
      for (std::size_t i = 0; i < za.size(); ++i) {
        REQUIRE((za[i] == S(0)) == (zp[i] == S(0)));  // the same zeros
        REQUIRE(std::abs(double(za[i]) - double(zp[i])) <= tolerance<S>());
      }
      for (std::size_t i = 0; i < ia.size(); ++i)
        REQUIRE(std::abs(double(ia[i]) - double(ip[i])) <= tolerance<S>() * std::max(1.0, double(ip[i])));

      // Backward on the portable probabilities.
      std::vector<S> p(zp.size());
      for (Index i = 0; i < cs.rows; ++i)
        for (Index j = 0; j < cs.n; ++j) {
          const std::size_t at = static_cast<std::size_t>(i * cs.n + j);
          p[at] = zp[at] * ip[static_cast<std::size_t>(i)];
        }
      const Index stride = slots;
      std::vector<S> da = blk.dp, dpp = blk.dp;
      std::vector<S> ha(static_cast<std::size_t>(k::kHistogramCopies * stride), S(0)), hp(ha.size(), S(0));
      k::avx512::softmax_backward<S>(p.data(), cs.n, da.data(), cs.n, blk.buckets.data(), cs.n, cs.rows, cs.kend,
                                     cs.causal_row0, cs.n, ha.data(), stride, slots);
      k::portable::softmax_backward<S>(p.data(), cs.n, dpp.data(), cs.n, blk.buckets.data(), cs.n, cs.rows, cs.kend,
                                       cs.causal_row0, cs.n, hp.data(), stride, slots);
      for (std::size_t i = 0; i < da.size(); ++i) REQUIRE(std::abs(double(da[i]) - double(dpp[i])) <= 1e2 * tolerance<S>());
      for (int s = 1; s < slots; ++s) {
        double a = 0, b = 0;
        for (int c = 0; c < k::kHistogramCopies; ++c) {
          a += double(ha[static_cast<std::size_t>(c * stride + s)]);
          b += double(hp[static_cast<std::size_t>(c * stride + s)]);
        }
        REQUIRE(std::abs(a - b) <= 1e2 * tolerance<S>() * double(cs.rows * cs.n + 1));
      }
    }
}
#endif

#if defined(SYNATTN_HAVE_AVX2_KERNELS)
// Same inputs through both versions: AVX2 against the portable reference
// (compiled when the compiler targets AVX2 and FMA, e.g. -march=haswell; with
// -march=native on an AVX-512 machine this runs next to the AVX-512 test).
TEMPLATE_TEST_CASE("AVX2 kernels agree with the portable kernels", "[kernels][softmax][avx2]", float, double) {
  using S = TestType;
  std::mt19937 rng(2025);
  for (int slots : kSlotCounts)
    for (const Case& cs : cases()) {
      Block<S> blk(cs.rows, cs.n, cs.kend, cs.causal_row0, slots, rng);
      INFO("rows " << cs.rows << ", n " << cs.n << ", kend " << cs.kend << ", causal_row0 " << cs.causal_row0
                   << ", slots " << slots);
      // Numerators and inverse sums, with and without the bias.
      std::vector<S> zp, ip;
      for (bool biased : {false, true}) {
        INFO("biased " << biased);
        const S* shifted = biased ? blk.shifted.data() : nullptr;
        std::vector<S> za = blk.z, ia(static_cast<std::size_t>(cs.rows), S(-1));
        zp = blk.z;
        ip.assign(ia.size(), S(-1));
        k::avx2::softmax_numerators<S>(za.data(), cs.n, blk.buckets.data(), cs.n, shifted, slots, cs.rows, cs.kend,
                                       cs.causal_row0, cs.n, ia.data());
        k::portable::softmax_numerators<S>(zp.data(), cs.n, blk.buckets.data(), cs.n, shifted, slots, cs.rows,
                                           cs.kend, cs.causal_row0, cs.n, ip.data());
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
        CHECK(zero_mismatch == za.size());  // the same zeros
        CHECK(inv_zero_mismatch == ia.size());
        CHECK(err <= tolerance<S>());
        CHECK(inv_err <= tolerance<S>());
      }

      // Backward on the portable probabilities (of the biased scores), with
      // and without caller-given row dots, with and without a histogram.
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
          k::avx2::softmax_backward<S>(p.data(), cs.n, da.data(), cs.n, blk.buckets.data(), cs.n, cs.rows, cs.kend,
                                       cs.causal_row0, cs.n, with_hist ? ha.data() : nullptr, stride, slots,
                                       give_dots ? dots.data() : nullptr);
          k::portable::softmax_backward<S>(p.data(), cs.n, dpp.data(), cs.n, blk.buckets.data(), cs.n, cs.rows,
                                           cs.kend, cs.causal_row0, cs.n, with_hist ? hp.data() : nullptr, stride,
                                           slots, give_dots ? dots.data() : nullptr);
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

  // scale_rows: one multiplication per value either way, so exactly equal.
  std::normal_distribution<double> g(0.0, 1.0);
  for (Index cols : {0, 1, 3, 4, 5, 7, 8, 9, 16, 17, 33, 100})
    for (Index offset : {0, 1, 2, 3, 5, 8})  // dst misaligned by `offset` scalars
      for (bool stream : {false, true}) {
        const Index rows = 3, ld = cols + 5;
        std::vector<S> src(static_cast<std::size_t>(rows * ld)), scale(static_cast<std::size_t>(rows));
        for (auto& v : src) v = static_cast<S>(g(rng));
        for (auto& v : scale) v = static_cast<S>(g(rng));
        std::vector<S> ba(static_cast<std::size_t>(rows * ld + offset + 16), S(-7)), bp(ba);
        k::avx2::scale_rows<S>(ba.data() + offset, ld, src.data(), ld, rows, cols, scale.data(), stream);
        k::portable::scale_rows<S>(bp.data() + offset, ld, src.data(), ld, rows, cols, scale.data(), false);
        INFO("cols " << cols << ", offset " << offset << ", stream " << stream);
        REQUIRE(ba == bp);  // including the untouched padding (-7)
      }
}
#endif
