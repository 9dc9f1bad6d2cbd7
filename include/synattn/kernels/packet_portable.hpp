// synattn — the portable packet: one lane of plain C++, compiled for the
// build's own target (no target region), and the portable kernels of every
// family: the row kernels of kernels/attention_rows_portable.hpp (Eigen's
// array code, the reference every ISA is tested against) and the blocked
// GEMM (kernels/gemm_blocked.inc) over this packet with a 4 x 4 tile, the
// reference the vector GEMMs are tested against, exercising the packing and
// blocking logic on any machine. kernels::product never calls this GEMM:
// with no vector GEMM, Eigen's product (vectorised for the build's flags)
// runs instead.
#ifndef SYNATTN_KERNELS_PACKET_PORTABLE_HPP
#define SYNATTN_KERNELS_PACKET_PORTABLE_HPP

#include <algorithm>
#include <cmath>

#include "attention_rows_portable.hpp"
#include "gemm_support.hpp"
#include "kernel_table.hpp"

namespace synattn {
namespace kernels {
namespace portable {

using namespace kernels::detail;

template <class S>
struct Packet {
  using Scalar = S;
  using V = Scalar;
  using M = bool;  // the one lane
  static constexpr int lanes = 1;
  // The GEMM's register tile and cache blocks (gemm_blocked.inc): 16
  // accumulators, as many as x86-64's 16 SSE registers hold.
  static constexpr int MR = 4, NR = 4;
  static constexpr Index KC = 256, MC = 64, NC = 1024;
  static M prefix(Index r) noexcept { return r > 0; }
  static V zero() noexcept { return Scalar(0); }
  static V set1(Scalar x) noexcept { return x; }
  static V load(const Scalar* p) noexcept { return *p; }
  static V load(const Scalar* p, M m) noexcept { return m ? *p : Scalar(0); }
  static void store(Scalar* p, V v) noexcept { *p = v; }
  static void store(Scalar* p, V v, M m) noexcept {
    if (m) *p = v;
  }
  static V mul(V a, V b) noexcept { return a * b; }
  // Where the target has a fused multiply-add the compiler may contract
  // a * b + c into one, or not, differently in each instantiation of the
  // micro-kernel (measured: GCC -O3 -march=native fused in one and not in
  // another, so the one-block and blocked paths gave different bits); std::fma
  // there makes every multiply-add one rounding. Without the instruction
  // nothing can be contracted and std::fma would be a slow library call.
#if defined(__FMA__) || defined(__ARM_FEATURE_FMA) || defined(__FP_FAST_FMA)
  static V fma(V a, V b, V c) noexcept { return std::fma(a, b, c); }
#else
  static V fma(V a, V b, V c) noexcept { return a * b + c; }
#endif
  static void transpose(V (&)[1]) noexcept {}
};

#define SYNATTN_KERNELS_PACKET_REGION
#include "gemm_blocked.inc"
#undef SYNATTN_KERNELS_PACKET_REGION

// The portable set: the reference row kernels, the scalar GEMM, no
// few-rows kernel.
template <class Scalar>
inline constexpr KernelTable<Scalar> kernel_table{
    {&softmax_numerators<Scalar>, &probabilities<Scalar>, &softmax_backward<Scalar>, &scale_rows<Scalar>, nullptr},
    &gemm<Scalar>,
    nullptr};

}  // namespace portable
}  // namespace kernels
}  // namespace synattn

#endif  // SYNATTN_KERNELS_PACKET_PORTABLE_HPP
