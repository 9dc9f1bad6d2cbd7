// The attention row kernels against straightforward double references, over
// row lengths that hit every SIMD tail, masked keys and empty rows.
#include <catch2/catch.hpp>

#include <synattn/attention/softmax.hpp>

#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <vector>

namespace k = synattn::kernels;

namespace {

// p = softmax over the visible keys of z + shifted[bucket + 1] (all in double).
std::vector<double> reference_softmax(const std::vector<double>& z, const std::vector<std::int8_t>& b,
                                      const std::vector<double>* shifted, long kend) {
  const double inf = std::numeric_limits<double>::infinity();
  std::vector<double> p(z.size(), 0.0), s(z.size(), -inf);
  double mx = -inf;
  for (long j = 0; j < kend; ++j) {
    s[static_cast<std::size_t>(j)] =
        z[static_cast<std::size_t>(j)] +
        (shifted ? (*shifted)[static_cast<std::size_t>(b[static_cast<std::size_t>(j)] + 1)] : 0.0);
    mx = std::max(mx, s[static_cast<std::size_t>(j)]);
  }
  if (mx == -inf) return p;
  double sum = 0;
  for (long j = 0; j < kend; ++j)
    if (s[static_cast<std::size_t>(j)] != -inf) sum += std::exp(s[static_cast<std::size_t>(j)] - mx);
  for (long j = 0; j < kend; ++j)
    if (s[static_cast<std::size_t>(j)] != -inf)
      p[static_cast<std::size_t>(j)] = std::exp(s[static_cast<std::size_t>(j)] - mx) / sum;
  return p;
}

}  // namespace

TEMPLATE_TEST_CASE("softmax_row matches a double reference for every length and mask", "[attention][softmax]", float,
                   double) {
  using S = TestType;
  const double tol = sizeof(S) == 4 ? 2e-6 : 1e-14;
  std::mt19937 rng(42);
  std::normal_distribution<double> g(0.0, 3.0);
  const int nb = 7;
  std::vector<double> table(nb + 1);
  table[0] = -std::numeric_limits<double>::infinity();
  for (int t = 1; t <= nb; ++t) table[static_cast<std::size_t>(t)] = static_cast<double>(static_cast<S>(g(rng)));
  std::vector<S> table_s(table.begin(), table.end());
  for (long n = 0; n <= 37; ++n) {
    for (long kend : {0L, 1L, n / 2, n - 1, n}) {
      if (kend < 0 || kend > n) continue;
      for (bool biased : {false, true}) {
        std::vector<double> z(static_cast<std::size_t>(n));
        std::vector<std::int8_t> b(static_cast<std::size_t>(n));
        for (long j = 0; j < n; ++j) {
          z[static_cast<std::size_t>(j)] = static_cast<double>(static_cast<S>(g(rng)));
          b[static_cast<std::size_t>(j)] =
              static_cast<std::int8_t>(static_cast<int>(rng() % (nb + 1)) - 1);  // -1 .. nb-1
        }
        std::vector<S> row(z.begin(), z.end());
        k::softmax_row<S>(row.data(), b.data(), biased ? table_s.data() : nullptr, kend, n);
        const auto want = reference_softmax(z, b, biased ? &table : nullptr, kend);
        INFO("n " << n << ", kend " << kend << ", biased " << biased);
        double sum = 0, err = 0;
        bool exact_zeros = true;
        for (long j = 0; j < n; ++j) {
          sum += static_cast<double>(row[static_cast<std::size_t>(j)]);
          err = std::max(
              err, std::abs(static_cast<double>(row[static_cast<std::size_t>(j)]) - want[static_cast<std::size_t>(j)]));
          if (want[static_cast<std::size_t>(j)] == 0.0 && row[static_cast<std::size_t>(j)] != S(0)) exact_zeros = false;
        }
        CHECK(err <= tol);
        CHECK(exact_zeros);  // beyond kend, masked keys, empty rows: exactly 0
        const bool empty = std::all_of(want.begin(), want.end(), [](double v) { return v == 0.0; });
        CHECK((empty ? sum == 0.0 : std::abs(sum - 1.0) <= 4 * tol + 1e-15));
      }
    }
  }
}

TEMPLATE_TEST_CASE("softmax_row is finite and exact at the extremes", "[attention][softmax]", float, double) {
  using S = TestType;
  const S inf = std::numeric_limits<S>::infinity();
  // Lengths the compiler cannot see: with constant tiny lengths GCC 12 warns
  // (-Warray-bounds) about SIMD paths that the runtime length rules out.
  volatile long one = 1, three = 3, four = 4;
  SECTION("huge score differences: no overflow, tiny probabilities flushed to exactly 0") {
    std::vector<S> row = {S(1000), S(0), S(-1000), S(999)};
    k::softmax_row<S>(row.data(), nullptr, nullptr, four, four);
    CHECK(row[1] == S(0));
    CHECK(row[2] == S(0));
    CHECK(row[0] + row[3] == Approx(1.0).epsilon(1e-6));
    CHECK(row[0] / row[3] == Approx(std::exp(1.0)).epsilon(1e-5));
  }
  SECTION("every key masked by its bucket: a zero row, not NaN") {
    std::vector<S> row = {S(1), S(2), S(3)};
    const std::vector<std::int8_t> b = {-1, -1, -1};
    const std::vector<S> shifted = {-inf, S(0.5)};
    k::softmax_row<S>(row.data(), b.data(), shifted.data(), three, three);
    CHECK(row == std::vector<S>{0, 0, 0});
  }
  SECTION("a single visible key gets probability exactly 1") {
    std::vector<S> row = {S(-7), S(4), S(4)};
    k::softmax_row<S>(row.data(), nullptr, nullptr, one, three);
    CHECK(row == std::vector<S>{1, 0, 0});
  }
}

TEMPLATE_TEST_CASE("softmax_backward_row is the adjoint of softmax_row", "[attention][softmax]", float, double) {
  using S = TestType;
  std::mt19937 rng(7);
  std::normal_distribution<double> g(0.0, 1.0);
  for (long n : {1L, 5L, 16L, 17L, 33L}) {
    for (long kend : {0L, 1L, n}) {
      std::vector<double> z(static_cast<std::size_t>(n)), up(static_cast<std::size_t>(n));
      for (auto& v : z) v = g(rng);
      for (auto& v : up) v = g(rng);
      std::vector<S> p(z.begin(), z.end());
      k::softmax_row<S>(p.data(), nullptr, nullptr, kend, n);
      std::vector<S> ds(up.begin(), up.end());
      k::softmax_backward_row<S>(p.data(), ds.data(), kend, n);
      // Central differences of L(z) = <up, softmax(z)> in double.
      auto loss = [&](const std::vector<double>& zz) {
        const auto pp = reference_softmax(zz, std::vector<std::int8_t>(zz.size(), 0), nullptr, kend);
        double l = 0;
        for (std::size_t j = 0; j < zz.size(); ++j) l += up[j] * pp[j];
        return l;
      };
      const double eps = 1e-6;
      for (long j = 0; j < n; ++j) {
        auto zp = z, zm = z;
        zp[static_cast<std::size_t>(j)] += eps;
        zm[static_cast<std::size_t>(j)] -= eps;
        const double num = (loss(zp) - loss(zm)) / (2 * eps);
        INFO("n " << n << ", kend " << kend << ", key " << j);
        CHECK(static_cast<double>(ds[static_cast<std::size_t>(j)]) == Approx(num).margin(sizeof(S) == 4 ? 1e-5 : 1e-9));
        if (j >= kend) CHECK(ds[static_cast<std::size_t>(j)] == S(0));
      }
    }
  }
}

TEMPLATE_TEST_CASE("bucket_histogram_row sums the gradients per bucket", "[attention][softmax]", float, double) {
  using S = TestType;
  std::mt19937 rng(3);
  std::normal_distribution<double> g(0.0, 1.0);
  const int nb = 5;
  const long stride = nb + 1;
  for (long kend = 0; kend <= 23; ++kend) {
    std::vector<S> ds(static_cast<std::size_t>(kend));
    std::vector<std::int8_t> b(static_cast<std::size_t>(kend));
    std::vector<double> want(nb + 1, 0.0);
    for (long j = 0; j < kend; ++j) {
      ds[static_cast<std::size_t>(j)] = static_cast<S>(g(rng));
      b[static_cast<std::size_t>(j)] = static_cast<std::int8_t>(static_cast<int>(rng() % (nb + 1)) - 1);
      want[static_cast<std::size_t>(b[static_cast<std::size_t>(j)] + 1)] +=
          static_cast<double>(ds[static_cast<std::size_t>(j)]);
    }
    std::vector<S> hist(k::kHistogramCopies * stride, S(0));
    k::bucket_histogram_row<S>(ds.data(), b.data(), kend, hist.data(), stride);
    for (int slot = 0; slot <= nb; ++slot) {
      double got = 0;
      for (int c = 0; c < k::kHistogramCopies; ++c)
        got += static_cast<double>(hist[static_cast<std::size_t>(c * stride + slot)]);
      INFO("kend " << kend << ", slot " << slot);
      CHECK(got == Approx(want[static_cast<std::size_t>(slot)]).margin(1e-5));
    }
  }
}
