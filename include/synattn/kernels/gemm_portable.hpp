// synattn — the blocked GEMM for any CPU: scalar "packets" of one lane, a 4x4
// register tile, compiled for the build's own target: the reference the
// vector versions are tested against, exercising the packing and blocking
// logic (gemm_blocked.inc) on any machine. kernels::product never calls it:
// with no vector GEMM, Eigen's product (vectorised for the build's flags)
// runs instead.
#ifndef SYNATTN_KERNELS_GEMM_PORTABLE_HPP
#define SYNATTN_KERNELS_GEMM_PORTABLE_HPP

#include <cmath>

#include "gemm_support.hpp"

namespace synattn {
namespace kernels {
namespace gemm_portable {

using namespace gemm_detail;

template <class Scalar>
struct Packet {
  using V = Scalar;
  static constexpr int lanes = 1;
  static constexpr int MR = 4, NR = 4;  // 16 accumulators: as many as x86-64's 16 SSE registers hold
  static constexpr Index KC = 256, MC = 64, NC = 1024;
  static V zero() noexcept { return Scalar(0); }
  static V set1(Scalar x) noexcept { return x; }
  static V load(const Scalar* p) noexcept { return *p; }
  static void store(Scalar* p, V v) noexcept { *p = v; }
  static V mul(V a, V b) noexcept { return a * b; }
  // Where the target has a fused multiply-add the compiler may contract
  // a * b + c into one, or not, differently in each instantiation of the
  // micro-kernel (measured: GCC -O3 -march=native fused in one and not in
  // another, so the one-block and blocked paths gave different bits); std::fma
  // there makes every multiply-add one rounding. Without the instruction
  // nothing can be contracted and std::fma would be a slow library call.
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA) || defined(__FP_FAST_FMA)
  static V fmadd(V a, V b, V c) noexcept { return std::fma(a, b, c); }
#else
  static V fmadd(V a, V b, V c) noexcept { return a * b + c; }
#endif
  // One lane: the packs' vector copies are scalar ones.
  static V load_first(const Scalar* p, int) noexcept { return *p; }
  static void store_first(Scalar* p, V v, int) noexcept { *p = v; }
  static void transpose(V (&)[1]) noexcept {}
};

#define SYNATTN_KERNELS_GEMM_BLOCKED_INC_ALLOWED
#include "gemm_blocked.inc"
#undef SYNATTN_KERNELS_GEMM_BLOCKED_INC_ALLOWED

}  // namespace gemm_portable
}  // namespace kernels
}  // namespace synattn

#endif  // SYNATTN_KERNELS_GEMM_PORTABLE_HPP
