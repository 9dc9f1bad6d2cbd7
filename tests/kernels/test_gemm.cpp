// Tests of kernels/gemm.hpp (the run-time-dispatched blocked GEMM) and
// kernels/product.hpp (the wrapper the layer calls, with its measured rule):
// every kernel set this CPU runs, forced in turn through the registry,
// against a naive triple loop in long double.
#include <synattn/kernels/gemm.hpp>
#include <synattn/kernels/product.hpp>

#include <catch2/catch.hpp>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace {

using synattn::Index;
using synattn::kernels::KernelIsa;
using synattn::kernels::Transpose;
using synattn::kernels::transposes_lhs;
using synattn::kernels::transposes_rhs;

// The kernel sets this build and CPU run whose GEMMs differ (NEON's set runs
// the portable GEMM, which the portable set already covers).
std::vector<KernelIsa> available_isas() {
  std::vector<KernelIsa> out;
  for (KernelIsa isa : synattn::kernels::supported_isas())
    if (isa != KernelIsa::neon) out.push_back(isa);
  return out;
}

// Selects `isa`'s kernel set; restores the one before when a test leaves.
struct IsaGuard {
  KernelIsa saved = synattn::kernels::active_isa();
  explicit IsaGuard(KernelIsa isa) { synattn::kernels::set_isa(isa); }
  ~IsaGuard() { synattn::kernels::set_isa(saved); }
};

// One operand stored row-major in a buffer with a leading dimension larger
// than its row, the gap filled with NaN: a kernel that reads past a row
// turns the result into NaN.
template <class Scalar>
struct Strided {
  Index rows, cols, ld;
  std::vector<Scalar> data;
  Strided(Index r, Index c, Index pad, std::mt19937& rng) : rows(r), cols(c), ld(c + pad) {
    data.assign(static_cast<std::size_t>(std::max<Index>(1, r * ld)), std::numeric_limits<Scalar>::quiet_NaN());
    std::uniform_real_distribution<double> u(-1.0, 1.0);
    for (Index i = 0; i < r; ++i)
      for (Index j = 0; j < c; ++j) at(i, j) = static_cast<Scalar>(u(rng));
  }
  Scalar& at(Index i, Index j) { return data[static_cast<std::size_t>(i * ld + j)]; }
  Scalar at(Index i, Index j) const { return data[static_cast<std::size_t>(i * ld + j)]; }
};

struct Case {
  Transpose t;
  Index m, n, k;
  double alpha, beta;
};

std::string describe(const Case& c, KernelIsa isa) {
  return std::string(synattn::to_string(isa)) + " op_a=" + (transposes_lhs(c.t) ? "T" : "N") +
         " op_b=" + (transposes_rhs(c.t) ? "T" : "N") + " m=" + std::to_string(c.m) + " n=" + std::to_string(c.n) +
         " k=" + std::to_string(c.k) + " alpha=" + std::to_string(c.alpha) + " beta=" + std::to_string(c.beta);
}

// Runs one case against the long double triple loop; returns the number of
// elements outside the bound |c - ref| <= (k + 2) eps (|alpha| sum |a b| +
// |beta c0|) (the standard forward error bound of a dot product), plus any
// change to C's padding.
template <class Scalar>
int mismatches(const Case& c, std::mt19937& rng) {
  const bool ta = transposes_lhs(c.t), tb = transposes_rhs(c.t);
  const Strided<Scalar> A(ta ? c.k : c.m, ta ? c.m : c.k, 3, rng);
  const Strided<Scalar> B(tb ? c.n : c.k, tb ? c.k : c.n, 5, rng);
  Strided<Scalar> C(c.m, c.n, 2, rng);
  for (Index i = 0; i < c.m; ++i)
    for (Index j = 0; j < c.n; ++j) C.at(i, j) = c.beta == 0 ? std::numeric_limits<Scalar>::quiet_NaN() : C.at(i, j);
  // The padding of C is a sentinel that must survive.
  const Scalar sentinel = Scalar(12345);
  for (Index i = 0; i < c.m; ++i)
    for (Index j = c.n; j < C.ld; ++j) C.at(i, j) = sentinel;
  const Strided<Scalar> C0 = C;
  synattn::kernels::gemm<Scalar>(c.t, c.m, c.n, c.k, Scalar(c.alpha), A.data.data(), A.ld, B.data.data(),
                                 B.ld, Scalar(c.beta), C.data.data(), C.ld);
  const long double eps = std::numeric_limits<Scalar>::epsilon();
  int bad = 0;
  for (Index i = 0; i < c.m; ++i) {
    for (Index j = 0; j < c.n; ++j) {
      long double ref = 0, mag = 0;
      for (Index p = 0; p < c.k; ++p) {
        const long double ab = (long double)(ta ? A.at(p, i) : A.at(i, p)) * (tb ? B.at(j, p) : B.at(p, j));
        ref += ab;
        mag += std::fabs(ab);
      }
      ref *= c.alpha;
      mag *= std::fabs(c.alpha);
      if (c.beta != 0) {
        ref += (long double)c.beta * C0.at(i, j);
        mag += std::fabs((long double)c.beta * C0.at(i, j));
      }
      const long double got = C.at(i, j);
      if (!(std::fabs(got - ref) <= (c.k + 2) * eps * mag + std::numeric_limits<Scalar>::min())) ++bad;
    }
    for (Index j = c.n; j < C.ld; ++j)
      if (C.at(i, j) != sentinel) ++bad;
  }
  return bad;
}

template <class Scalar>
void check_cases(const std::vector<Case>& cases) {
  std::mt19937 rng(7);
  for (KernelIsa isa : available_isas()) {
    IsaGuard guard(isa);
    for (const Case& c : cases) {
      INFO(describe(c, isa));
      CHECK(mismatches<Scalar>(c, rng) == 0);
    }
  }
}

// Sizes around every ISA's tile (MR 4/6/14, NR 4/8/16/32), 1, and odd ones.
const Index kEdgeSizes[] = {1, 3, 5, 6, 7, 9, 13, 15, 16, 17, 31, 33};

std::vector<Case> small_cases() {
  std::vector<Case> out;
  for (Transpose t : synattn::kernels::kAllTransposes)
    for (Index m : kEdgeSizes)
      for (Index n : kEdgeSizes)
        for (Index k : {Index(1), Index(7), Index(33)}) out.push_back({t, m, n, k, 1.0, 0.0});
  return out;
}

// Depths around KC (256 in every version) and rows/columns around MC and NC.
std::vector<Case> blocking_cases() {
  std::vector<Case> out;
  for (Transpose t : synattn::kernels::kAllTransposes) {
    for (Index k : {255, 256, 257, 513}) out.push_back({t, 13, 35, k, 1.0, 0.0});
    for (Index m : {69, 71, 73, 139, 141, 143, 145}) out.push_back({t, m, 19, 21, 1.0, 0.0});
    for (Index n : {1023, 1025, 2047, 2049}) out.push_back({t, 7, n, 5, 1.0, 0.0});
    out.push_back({t, 300, 200, 280, 1.0, 0.0});
  }
  return out;
}

std::vector<Case> scaling_cases() {
  std::vector<Case> out;
  for (Transpose t : synattn::kernels::kAllTransposes)
    for (double alpha : {1.0, -0.5, 0.0})
      for (double beta : {0.0, 1.0, 0.25}) {
        out.push_back({t, 17, 33, 9, alpha, beta});
        out.push_back({t, 150, 40, 300, alpha, beta});  // two depth blocks: beta on the first only
      }
  return out;
}

}  // namespace

TEMPLATE_TEST_CASE("gemm matches a long double triple loop for every op at sizes around the tiles",
                   "[kernels][gemm]", float, double) {
  check_cases<TestType>(small_cases());
}

TEMPLATE_TEST_CASE("gemm matches the triple loop across the cache blocks (KC, MC, NC +- 1, a few hundred)",
                   "[kernels][gemm]", float, double) {
  check_cases<TestType>(blocking_cases());
}

TEMPLATE_TEST_CASE("gemm applies alpha and beta; beta = 0 overwrites a C full of NaN", "[kernels][gemm]", float,
                   double) {
  check_cases<TestType>(scaling_cases());
}

TEMPLATE_TEST_CASE("gemm with k = 0 leaves beta C, and empty C is a no-op", "[kernels][gemm]", float, double) {
  using S = TestType;
  for (KernelIsa isa : available_isas()) {
    IsaGuard guard(isa);
    std::vector<S> C = {1, 2, 3, 4, 5, 6};
    const S dummy = 0;
    synattn::kernels::gemm<S>(Transpose::none, 2, 3, 0, S(1), &dummy, 1, &dummy, 3, S(2), C.data(), 3);
    CHECK(C == std::vector<S>{2, 4, 6, 8, 10, 12});
    std::fill(C.begin(), C.end(), std::numeric_limits<S>::quiet_NaN());
    synattn::kernels::gemm<S>(Transpose::none, 2, 3, 0, S(1), &dummy, 1, &dummy, 3, S(0), C.data(), 3);
    CHECK(C == std::vector<S>(6, S(0)));
    synattn::kernels::gemm<S>(Transpose::none, 0, 3, 4, S(1), &dummy, 4, &dummy, 3, S(0), C.data(), 3);
    CHECK(C == std::vector<S>(6, S(0)));
  }
}

TEMPLATE_TEST_CASE("gemm propagates NaN and infinity from A and B", "[kernels][gemm]", float, double) {
  using S = TestType;
  const S nan = std::numeric_limits<S>::quiet_NaN(), inf = std::numeric_limits<S>::infinity();
  for (KernelIsa isa : available_isas()) {
    IsaGuard guard(isa);
    INFO(synattn::to_string(isa));
    const Index m = 9, n = 20, k = 300;  // two depth blocks; the bad entries sit in the second
    std::vector<S> A(m * k, S(0.5)), B(k * n, S(0.25)), C(m * n, S(0));
    A[static_cast<std::size_t>(4 * k + 290)] = nan;  // A(4, 290): row 4 of C is NaN
    B[static_cast<std::size_t>(270 * n + 17)] = inf;  // B(270, 17): column 17 is +inf (NaN on row 4)
    synattn::kernels::gemm<S>(Transpose::none, m, n, k, S(1), A.data(), k, B.data(), n, S(0), C.data(), n);
    for (Index i = 0; i < m; ++i)
      for (Index j = 0; j < n; ++j) {
        const S c = C[static_cast<std::size_t>(i * n + j)];
        if (i == 4)
          CHECK(std::isnan(c));
        else if (j == 17)
          CHECK(c == inf);
        else
          CHECK(c == S(0.5 * 0.25 * k));
      }
  }
}

TEMPLATE_TEST_CASE("gemm gives the same bits for C computed whole, in row or column blocks, or on two threads",
                   "[kernels][gemm][determinism]", float, double) {
  using S = TestType;
  const Index m = 203, n = 77, k = 300;
  std::mt19937 rng(11);
  std::uniform_real_distribution<double> u(-1, 1);
  std::vector<S> A(m * k), B(n * k);
  for (auto& x : A) x = S(u(rng));
  for (auto& x : B) x = S(u(rng));
  for (KernelIsa isa : available_isas()) {
    IsaGuard guard(isa);
    INFO(synattn::to_string(isa));
    const auto run = [&](Index r0, Index rows, Index c0, Index cols, std::vector<S>& C) {
      synattn::kernels::gemm<S>(Transpose::rhs, rows, cols, k, S(0.75), A.data() + r0 * k, k,
                                B.data() + c0 * k, k, S(0), C.data() + r0 * n + c0, n);
    };
    std::vector<S> whole(m * n), rows(m * n), cols(m * n), twice(m * n);
    run(0, m, 0, n, whole);
    for (Index r0 = 0; r0 < m; r0 += 50) run(r0, std::min<Index>(50, m - r0), 0, n, rows);
    for (Index c0 = 0; c0 < n; c0 += 13) run(0, m, c0, std::min<Index>(13, n - c0), cols);
    const auto differing = [&](const std::vector<S>& x) {
      int count = 0;
      for (std::size_t i = 0; i < x.size(); ++i) count += x[i] != whole[i];
      return count;
    };
    CHECK(differing(rows) == 0);
    CHECK(differing(cols) == 0);
    // Two threads, each with its own packing buffers, on halves of C.
#if defined(_OPENMP)
#pragma omp parallel for num_threads(2) schedule(static, 1)
#endif
    for (int h = 0; h < 2; ++h) run(h * 100, h == 0 ? 100 : m - 100, 0, n, twice);
    CHECK(differing(twice) == 0);
  }
}

// A product that fits one cache block in every dimension takes a path that
// reads operands in place instead of packing them (gemm_one_block), and
// with B transposed and few rows computes C^T instead (5 and 16 rows of 77
// columns; 40 rows only when A is transposed too); its elements must be the
// blocked path's bits. Rows of C computed in blocks of 40, 16 or 5 (every
// version's MC is larger) against C computed whole with m = 203 (larger than
// every MC: the blocked path), for every op, with edge tiles in both
// directions (n = 77, 40 = 6 * 6 + 4 rows) and k up to KC.
TEMPLATE_TEST_CASE("gemm's one-block path, plain or swapped, gives the blocked path's bits, for every op",
                   "[kernels][gemm][determinism]", float, double) {
  using S = TestType;
  const Index m = 203, n = 77;
  std::mt19937 rng(13);
  std::uniform_real_distribution<double> u(-1, 1);
  for (const Index k : {Index(1), Index(37), Index(256)}) {
    std::vector<S> A(m * k), B(n * k);
    for (auto& x : A) x = S(u(rng));
    for (auto& x : B) x = S(u(rng));
    for (KernelIsa isa : available_isas()) {
      IsaGuard guard(isa);
      for (Transpose t : synattn::kernels::kAllTransposes) {
        INFO(describe({t, m, n, k, 0.75, 1.0}, isa));
        const bool ta = transposes_lhs(t), tb = transposes_rhs(t);
        const Index lda = ta ? m : k, ldb = tb ? k : n;
        // op(A) rows [r0, r0 + rows): A's rows, or A^T's columns.
        const auto run = [&](Index r0, Index rows, std::vector<S>& C) {
          synattn::kernels::gemm<S>(t, rows, n, k, S(0.75), A.data() + (ta ? r0 : r0 * lda), lda, B.data(),
                                    ldb, S(1), C.data() + r0 * n, n);
        };
        std::vector<S> C0(m * n);
        for (auto& x : C0) x = S(u(rng));
        std::vector<S> whole = C0;
        run(0, m, whole);
        for (const Index height : {Index(40), Index(16), Index(5)}) {
          INFO("row blocks of " << height);
          std::vector<S> blocks = C0;
          for (Index r0 = 0; r0 < m; r0 += height) run(r0, std::min<Index>(height, m - r0), blocks);
          int differing = 0;
          for (std::size_t i = 0; i < whole.size(); ++i) differing += whole[i] != blocks[i];
          CHECK(differing == 0);
        }
      }
    }
  }
}

// The packs' vector copies (gemm_blocked.inc: copy_transposed, a register
// transpose per ISA, and copy_rows, masked) against scalar loops, for a
// panel's MR and NR and depths around the vector width, on a source whose
// gaps hold NaN. Every destination element is written exactly once with
// its source's bits, and nothing past the panel is touched.
template <class S, int kCount, class Transposed, class Rows>
void check_panel_copies(Transposed transposed, Rows rows, const char* isa) {
  std::mt19937 rng(29);
  std::uniform_real_distribution<double> u(-1, 1);
  for (const Index kc : {Index(1), Index(7), Index(8), Index(15), Index(16), Index(17), Index(33), Index(64)}) {
    INFO(isa << " count " << kCount << " kc " << kc);
    const Index ld = std::max<Index>(kc, kCount) + 3;
    std::vector<S> src(static_cast<std::size_t>(std::max<Index>(kc, kCount) * ld), std::numeric_limits<S>::quiet_NaN());
    for (Index i = 0; i < kCount; ++i)
      for (Index p = 0; p < kc; ++p) src[i * ld + p] = S(u(rng));  // kCount rows of kc
    for (Index p = 0; p < kc; ++p)
      for (Index i = 0; i < kCount; ++i)
        if (std::isnan(src[p * ld + i])) src[p * ld + i] = S(u(rng));  // and kc rows of kCount
    const S sentinel = S(12345);
    std::vector<S> got(static_cast<std::size_t>(kc * kCount + 16), sentinel), want = got;
    transposed(src.data(), ld, kc, got.data());
    for (Index p = 0; p < kc; ++p)
      for (Index i = 0; i < kCount; ++i) want[p * kCount + i] = src[i * ld + p];
    CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(S)) == 0);
    std::fill(got.begin(), got.end(), sentinel);
    rows(src.data(), ld, kc, got.data());
    for (Index p = 0; p < kc; ++p)
      for (Index i = 0; i < kCount; ++i) want[p * kCount + i] = src[p * ld + i];
    CHECK(std::memcmp(got.data(), want.data(), got.size() * sizeof(S)) == 0);
  }
}

// One ISA's two copies for `count` rows, as the two callables check_panel_copies takes.
#define SYNATTN_PANEL_COPIES(ns, S, count)                                    \
  [](const S* src, Index ld, Index kc, S* dst) {                              \
    synattn::kernels::ns::copy_transposed<S, count>(src, ld, kc, dst, count); \
  },                                                                          \
      [](const S* src, Index ld, Index kc, S* dst) { synattn::kernels::ns::copy_rows<S, count>(src, ld, kc, dst); }

template <class S>
void check_isa_panel_copies(KernelIsa isa) {
  if (isa == KernelIsa::portable) {
    using P = synattn::kernels::portable::Packet<S>;
    check_panel_copies<S, P::MR>(SYNATTN_PANEL_COPIES(portable, S, P::MR), "portable");
    check_panel_copies<S, P::NR>(SYNATTN_PANEL_COPIES(portable, S, P::NR), "portable");
  }
#if defined(SYNATTN_HAVE_AVX2_KERNELS)
  if (isa == KernelIsa::avx2) {
    using P = synattn::kernels::avx2::Packet<S>;
    check_panel_copies<S, P::MR>(SYNATTN_PANEL_COPIES(avx2, S, P::MR), "avx2");
    check_panel_copies<S, P::NR>(SYNATTN_PANEL_COPIES(avx2, S, P::NR), "avx2");
  }
#endif
#if defined(SYNATTN_HAVE_AVX512_KERNELS)
  if (isa == KernelIsa::avx512) {
    using P = synattn::kernels::avx512::Packet<S>;
    check_panel_copies<S, P::MR>(SYNATTN_PANEL_COPIES(avx512, S, P::MR), "avx512");
    check_panel_copies<S, P::NR>(SYNATTN_PANEL_COPIES(avx512, S, P::NR), "avx512");
  }
#endif
}

TEMPLATE_TEST_CASE("the packs' vector copies give a scalar copy's bits on every ISA this CPU runs", "[kernels][gemm]",
                   float, double) {
  for (KernelIsa isa : available_isas()) check_isa_panel_copies<TestType>(isa);
}

TEST_CASE("gemm rejects negative sizes and short leading dimensions, naming the argument", "[kernels][gemm]") {
  using Catch::Matchers::Contains;
  std::vector<float> A(64), B(64), C(64);
  const auto call = [&](Transpose t, Index m, Index n, Index k, Index lda, Index ldb, Index ldc) {
    synattn::kernels::gemm<float>(t, m, n, k, 1.f, A.data(), lda, B.data(), ldb, 0.f, C.data(), ldc);
  };
  CHECK_THROWS_WITH(call(Transpose::none, -1, 2, 2, 2, 2, 2), Contains("gemm: m = -1"));
  CHECK_THROWS_WITH(call(Transpose::none, 2, 2, 3, 2, 2, 2), Contains("gemm: lda = 2, expected >= max(1, k)"));
  CHECK_THROWS_WITH(call(Transpose::lhs, 4, 2, 3, 3, 2, 2), Contains("lda = 3, expected >= max(1, m)"));
  CHECK_THROWS_WITH(call(Transpose::none, 2, 4, 2, 2, 3, 4), Contains("ldb = 3"));
  CHECK_THROWS_WITH(call(Transpose::none, 2, 4, 2, 2, 4, 3), Contains("ldc = 3"));
  CHECK_THROWS_AS(call(Transpose::none, 2, 4, 2, 2, 4, 3), synattn::Error);
  CHECK_NOTHROW(call(Transpose::none, 2, 4, 2, 2, 4, 4));
}

// ---- kernels::product ----

namespace {

// The kernel sets product() can run: portable (Eigen's product only) and,
// where this CPU runs it, avx2 (the default set with a GEMM).
std::vector<KernelIsa> product_sets() {
  std::vector<KernelIsa> out = {KernelIsa::portable};
  if (synattn::kernels::isa_supported(KernelIsa::avx2)) out.push_back(KernelIsa::avx2);
  return out;
}

}  // namespace

TEMPLATE_TEST_CASE("product gives Eigen's result on both paths, for every transpose, overwriting or adding",
                   "[kernels][product]", float, double) {
  using S = TestType;
  using M = synattn::RowMajorMatrix<S>;
  using synattn::kernels::Accumulate;
  // Below and above every rule's thresholds (gemm_rule: 32 and 64 x 64 x 32
  // at most, for builds that use the GEMM at all).
  for (const Index m : {Index(5), Index(37), Index(70)}) {
    const Index n = m == 70 ? 66 : 29, k = 45;
    std::srand(3);
    const M A = M::Random(m + 5, k + 4), At = M::Random(k + 3, m + 2);  // blocks of larger matrices
    const M B = M::Random(k + 1, n + 6), Bt = M::Random(n + 2, k + 7);
    const S alpha = S(0.375);
    const S tol = S(4 * k) * std::numeric_limits<S>::epsilon();  // entries of at most k terms of |a b| <= 1
    for (KernelIsa isa : product_sets()) {
      IsaGuard guard(isa);
      const synattn::kernels::GemmRule rule = synattn::kernels::gemm_rule(synattn::build_cpu_features());
      const bool gemm = isa != KernelIsa::portable && m >= rule.min_side && n >= rule.min_side &&
                        m * n * k >= rule.min_volume;
      CHECK(synattn::kernels::uses_dispatched_gemm(m, n, k) == gemm);
      for (Transpose t : synattn::kernels::kAllTransposes) {
        const bool ta = transposes_lhs(t), tb = transposes_rhs(t);
        const M a = ta ? M(At.block(1, 2, k, m)) : M(A.block(2, 1, m, k));
        const M b = tb ? M(Bt.block(1, 3, n, k)) : M(B.block(1, 2, k, n));
        const M opa = ta ? M(a.transpose()) : a, opb = tb ? M(b.transpose()) : b;
        const M expected = alpha * (opa.template cast<long double>() * opb.template cast<long double>())
                                       .template cast<S>();
        M big = M::Constant(m + 4, n + 4, S(2));
        INFO("set " << synattn::to_string(isa) << " m " << m << " GEMM " << gemm << " transpose " << int(t));
        synattn::kernels::product<S>(big.block(1, 2, m, n), ta ? At.block(1, 2, k, m) : A.block(2, 1, m, k),
                                     tb ? Bt.block(1, 3, n, k) : B.block(1, 2, k, n), t, Accumulate::overwrite,
                                     alpha);
        CHECK((big.block(1, 2, m, n) - expected).cwiseAbs().maxCoeff() <= tol);
        synattn::kernels::product<S>(big.block(1, 2, m, n), ta ? At.block(1, 2, k, m) : A.block(2, 1, m, k),
                                     tb ? Bt.block(1, 3, n, k) : B.block(1, 2, k, n), t, Accumulate::add, alpha);
        CHECK((big.block(1, 2, m, n) - S(2) * expected).cwiseAbs().maxCoeff() <= 2 * tol);
        // Outside the block C is untouched.
        M outside = big;
        outside.block(1, 2, m, n).setConstant(S(2));
        CHECK((outside.array() == S(2)).all());
      }
    }
  }
}

TEST_CASE("gemm_rule holds the measured thresholds per Eigen ISA", "[kernels][product]") {
  using synattn::CpuFeature;
  using synattn::kernels::gemm_rule;
  CHECK(gemm_rule(CpuFeature::none).min_side == 8);
  CHECK(gemm_rule(CpuFeature::none).min_volume == 16 * 16 * 16);
  CHECK(gemm_rule(CpuFeature::sse4_1 | CpuFeature::sse4_2 | CpuFeature::avx).min_side == 8);  // no FMA: as SSE2
  CHECK(gemm_rule(CpuFeature::avx2).min_side == 8);                                          // AVX2 without FMA
  const CpuFeature avx2 = CpuFeature::avx | CpuFeature::avx2 | CpuFeature::fma;
  CHECK(gemm_rule(avx2).min_side == 32);
  CHECK(gemm_rule(avx2).min_volume == 64 * 64 * 32);
  const CpuFeature avx512 =
      avx2 | CpuFeature::avx512f | CpuFeature::avx512bw | CpuFeature::avx512vl | CpuFeature::avx512dq;
  CHECK(gemm_rule(avx512).min_side == 32);  // measured on Zen 4: the AVX2 GEMM's wins start where they do for AVX2
  CHECK(gemm_rule(avx512).min_volume == 64 * 64 * 32);
  CHECK(synattn::kernels::gemm_rule_text(gemm_rule(CpuFeature::none)) == "m, n >= 8 and m n k >= 4096");
}

TEST_CASE("product takes the GEMM exactly inside the rule, with a GEMM in the kernel set", "[kernels][product]") {
  using synattn::kernels::uses_dispatched_gemm;
  const synattn::kernels::GemmRule rule = synattn::kernels::gemm_rule(synattn::build_cpu_features());
  {
    IsaGuard guard(KernelIsa::portable);
    CHECK_FALSE(uses_dispatched_gemm(512, 512, 512));  // portable: Eigen's product only
  }
  if (!synattn::kernels::isa_supported(KernelIsa::avx2)) {
    CHECK_FALSE(uses_dispatched_gemm(512, 512, 512));
    return;
  }
  IsaGuard guard(KernelIsa::avx2);
  const Index s = rule.min_side, k = (rule.min_volume + s * s - 1) / (s * s);  // the smallest k inside
  CHECK(uses_dispatched_gemm(s, s, k));
  CHECK_FALSE(uses_dispatched_gemm(s, s, k - 1));
  CHECK_FALSE(uses_dispatched_gemm(s - 1, 4 * s, 4 * k));
  CHECK_FALSE(uses_dispatched_gemm(4 * s, s - 1, 4 * k));
  CHECK_FALSE(uses_dispatched_gemm(4 * s, 4 * s, 0));
  CHECK(uses_dispatched_gemm(512, 512, 512));
}

TEST_CASE("product with k = 0 zeroes or keeps C, and rejects shapes that do not agree", "[kernels][product]") {
  using M = synattn::RowMajorMatrix<double>;
  using synattn::kernels::Accumulate;
  for (KernelIsa isa : product_sets()) {
    IsaGuard guard(isa);
    M C = M::Constant(40, 40, 1.5);
    const M A(40, 0), B(0, 40);
    synattn::kernels::product<double>(C, A, B, Transpose::none, Accumulate::add);
    CHECK((C.array() == 1.5).all());
    synattn::kernels::product<double>(C, A, B, Transpose::none, Accumulate::overwrite);
    CHECK((C.array() == 0.0).all());
    M C2 = M::Constant(3, 4, 1.5);
    const M A2 = M::Ones(3, 5), B2 = M::Ones(4, 4);
    CHECK_THROWS_WITH(synattn::kernels::product<double>(C2, A2, B2),
                      Catch::Matchers::Contains("product: C (3, 4) = op(A) (3, 5) op(B) (4, 4)"));
    CHECK_THROWS_AS(synattn::kernels::product<double>(C2, A2, B2, Transpose::rhs), synattn::Error);
  }
}
