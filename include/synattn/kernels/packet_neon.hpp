// synattn — the NEON (AArch64 Advanced SIMD) packet, float (4 lanes) and
// double (2 lanes), and the attention row kernels over it
// (kernels/attention_rows_algorithm.inc lists what they take from it; the
// GEMM and the few-rows projection have no NEON version: the neon set uses
// Eigen's products). Advanced SIMD is part of every AArch64 CPU, so no
// target region and no CPUID: kernels/registry.hpp runs this set by default
// on every AArch64 build.
//
// What NEON lacks, and what takes its place:
// - No masked loads or stores: a row tail is copied through a small buffer
//   (a mask carries its lane count for that), so no value past the row is
//   read or written.
// - Table lookups are byte shuffles: vqtbl1q / vqtbl2q with the byte indices
//   of each slot's entry (one or two registers, 4 / 8 floats, 2 / 4 doubles);
//   bigger tables read each slot from memory.
// - FMAX returns NaN when either operand is NaN, so max and the exp clamp
//   carry NaN by themselves.
// Cross-compiled and tested under qemu-user: tools/toolchains/aarch64-linux-gnu.cmake.
#ifndef SYNATTN_KERNELS_PACKET_NEON_HPP
#define SYNATTN_KERNELS_PACKET_NEON_HPP

#include "packet_portable.hpp"

#if !defined(SYNATTN_PORTABLE_KERNELS) && defined(__aarch64__) && defined(__ARM_NEON)
#define SYNATTN_HAVE_NEON_KERNELS 1

#include <arm_neon.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstring>
#include <iterator>
#include <limits>
#include <type_traits>
#include <utility>

namespace synattn {
namespace kernels {
namespace neon {

template <class Scalar>
struct Packet;

template <>
struct Packet<float> {
  using Scalar = float;
  using V = float32x4_t;
  using I = uint32x4_t;  // 4 x slot
  using K = int32x4_t;   // 4 x bucket
  struct M {
    uint32x4_t bits;  // all ones in lanes [0, count)
    int count;
  };
  static constexpr int lanes = 4;
  static constexpr int register_buckets = 8;
  static constexpr std::uintptr_t stream_alignment = 16;
  static M prefix(Index r) noexcept {
    const int c = static_cast<int>(std::min<Index>(std::max<Index>(r, 0), lanes));
    const uint32_t iota[4] = {0, 1, 2, 3};
    return {vcltq_u32(vld1q_u32(iota), vdupq_n_u32(static_cast<uint32_t>(c))), c};
  }
  static V zero() noexcept { return vdupq_n_f32(0.0f); }
  static V set1(float v) noexcept { return vdupq_n_f32(v); }
  static V load(const float* p) noexcept { return vld1q_f32(p); }
  static V load(const float* p, M m) noexcept {
    float t[4] = {0.0f, 0.0f, 0.0f, 0.0f};
    std::memcpy(t, p, sizeof(float) * static_cast<std::size_t>(m.count));
    return vld1q_f32(t);
  }
  static void store(float* p, V v) noexcept { vst1q_f32(p, v); }
  static void store(float* p, V v, M m) noexcept {
    float t[4];
    vst1q_f32(t, v);
    std::memcpy(p, t, sizeof(float) * static_cast<std::size_t>(m.count));
  }
  static void stream(float* p, V v) noexcept { vst1q_f32(p, v); }
  static void stream_fence() noexcept {}
  static V add(V a, V b) noexcept { return vaddq_f32(a, b); }
  static V sub(V a, V b) noexcept { return vsubq_f32(a, b); }
  static V mul(V a, V b) noexcept { return vmulq_f32(a, b); }
  static V fma(V a, V b, V c) noexcept { return vfmaq_f32(c, a, b); }
  static V max(V a, V b) noexcept { return vmaxq_f32(a, b); }
  static V masked_max(V acc, M m, V v) noexcept { return vbslq_f32(m.bits, vmaxq_f32(acc, v), acc); }
  static V keep(M m, V a) noexcept { return vreinterpretq_f32_u32(vandq_u32(m.bits, vreinterpretq_u32_f32(a))); }
  // 2^d for d <= 0: the AVX2 file's algorithm (k = round(d), 2^(d - k) by a
  // degree-6 polynomial, 2^k in the exponent bits, clamp at -127, flush
  // below the smallest normal; NaN stays NaN).
  static V exp2_flushed(V d) noexcept {
    const V x = vmaxq_f32(vdupq_n_f32(-127.0f), d);
    const V k = vrndnq_f32(x);
    const V f = vsubq_f32(x, k);
    V p = vdupq_n_f32(1.5353361960e-4f);
    p = vfmaq_f32(vdupq_n_f32(1.3398875017e-3f), p, f);
    p = vfmaq_f32(vdupq_n_f32(9.6184369177e-3f), p, f);
    p = vfmaq_f32(vdupq_n_f32(5.5503323674e-2f), p, f);
    p = vfmaq_f32(vdupq_n_f32(2.4022647738e-1f), p, f);
    p = vfmaq_f32(vdupq_n_f32(6.9314718246e-1f), p, f);
    p = vfmaq_f32(vdupq_n_f32(1.0f), p, f);
    const int32x4_t e = vshlq_n_s32(vaddq_s32(vcvtq_s32_f32(k), vdupq_n_s32(127)), 23);
    const V r = vmulq_f32(p, vreinterpretq_f32_s32(e));
    const uint32x4_t small = vcltq_f32(r, vdupq_n_f32(std::numeric_limits<float>::min()));
    return vreinterpretq_f32_u32(vbicq_u32(vreinterpretq_u32_f32(r), small));
  }
  static float reduce_max(V a) noexcept { return vmaxvq_f32(a); }
  static float reduce_add(V a) noexcept { return vaddvq_f32(a); }
  static K keys(const std::int8_t* b) noexcept { return keys(b, lanes); }
  static K keys(const std::int8_t* b, Index r) noexcept {
    const std::int32_t k[4] = {b[0], r > 1 ? b[1] : -1, r > 2 ? b[2] : -1, r > 3 ? b[3] : -1};
    return vld1q_s32(k);
  }
  static I slots(const std::int8_t* b) noexcept { return slots(b, lanes); }
  static I slots(const std::int8_t* b, Index r) noexcept {
    return vreinterpretq_u32_s32(vaddq_s32(keys(b, r), vdupq_n_s32(1)));
  }
  // Byte indices of each slot's 4 bytes: 4 s + (0, 1, 2, 3).
  static uint8x16_t byte_index(I s) noexcept {
    return vreinterpretq_u8_u32(vaddq_u32(vmulq_n_u32(vshlq_n_u32(s, 2), 0x01010101u), vdupq_n_u32(0x03020100u)));
  }
  static V lookup1(I s, V t0) noexcept {
    return vreinterpretq_f32_u8(vqtbl1q_u8(vreinterpretq_u8_f32(t0), byte_index(s)));
  }
  static V lookup2(I s, V t0, V t1) noexcept {
    const uint8x16x2_t t = {{vreinterpretq_u8_f32(t0), vreinterpretq_u8_f32(t1)}};
    return vreinterpretq_f32_u8(vqtbl2q_u8(t, byte_index(s)));
  }
  static V gather(I s, const float* shifted) noexcept {
    const float g[4] = {shifted[vgetq_lane_u32(s, 0)], shifted[vgetq_lane_u32(s, 1)], shifted[vgetq_lane_u32(s, 2)],
                        shifted[vgetq_lane_u32(s, 3)]};
    return vld1q_f32(g);
  }
  static V add_if(V acc, K keys, int k, V g) noexcept {
    const uint32x4_t eq = vceqq_s32(keys, vdupq_n_s32(k));
    return vaddq_f32(acc, vreinterpretq_f32_u32(vandq_u32(eq, vreinterpretq_u32_f32(g))));
  }
};

template <>
struct Packet<double> {
  using Scalar = double;
  using V = float64x2_t;
  using I = uint64x2_t;  // 2 x slot
  using K = int64x2_t;   // 2 x bucket
  struct M {
    uint64x2_t bits;
    int count;
  };
  static constexpr int lanes = 2;
  static constexpr int register_buckets = 4;
  static constexpr std::uintptr_t stream_alignment = 16;
  static M prefix(Index r) noexcept {
    const int c = static_cast<int>(std::min<Index>(std::max<Index>(r, 0), lanes));
    const uint64_t iota[2] = {0, 1};
    return {vcltq_u64(vld1q_u64(iota), vdupq_n_u64(static_cast<uint64_t>(c))), c};
  }
  static V zero() noexcept { return vdupq_n_f64(0.0); }
  static V set1(double v) noexcept { return vdupq_n_f64(v); }
  static V load(const double* p) noexcept { return vld1q_f64(p); }
  static V load(const double* p, M m) noexcept {
    double t[2] = {0.0, 0.0};
    std::memcpy(t, p, sizeof(double) * static_cast<std::size_t>(m.count));
    return vld1q_f64(t);
  }
  static void store(double* p, V v) noexcept { vst1q_f64(p, v); }
  static void store(double* p, V v, M m) noexcept {
    double t[2];
    vst1q_f64(t, v);
    std::memcpy(p, t, sizeof(double) * static_cast<std::size_t>(m.count));
  }
  static void stream(double* p, V v) noexcept { vst1q_f64(p, v); }
  static void stream_fence() noexcept {}
  static V add(V a, V b) noexcept { return vaddq_f64(a, b); }
  static V sub(V a, V b) noexcept { return vsubq_f64(a, b); }
  static V mul(V a, V b) noexcept { return vmulq_f64(a, b); }
  static V fma(V a, V b, V c) noexcept { return vfmaq_f64(c, a, b); }
  static V max(V a, V b) noexcept { return vmaxq_f64(a, b); }
  static V masked_max(V acc, M m, V v) noexcept { return vbslq_f64(m.bits, vmaxq_f64(acc, v), acc); }
  static V keep(M m, V a) noexcept { return vreinterpretq_f64_u64(vandq_u64(m.bits, vreinterpretq_u64_f64(a))); }
  // exp(a) for a <= 0: the AVX2 file's algorithm (Cody-Waite reduction, the
  // degree-12 Taylor polynomial, 2^k in the exponent bits, clamp at -709,
  // flush below the smallest normal; NaN stays NaN).
  static V exp_flushed(V a) noexcept {
    const V x = vmaxq_f64(vdupq_n_f64(-709.0), a);
    const V k = vrndnq_f64(vmulq_f64(x, vdupq_n_f64(1.4426950408889634)));
    V r = vfmaq_f64(x, k, vdupq_n_f64(-6.93147180559945286227e-01));
    r = vfmaq_f64(r, k, vdupq_n_f64(-2.31904681384629955842e-17));
    V p = vdupq_n_f64(kExpTaylor[0]);
    for (std::size_t i = 1; i < std::size(kExpTaylor); ++i) p = vfmaq_f64(vdupq_n_f64(kExpTaylor[i]), p, r);
    const int64x2_t e = vshlq_n_s64(vaddq_s64(vcvtq_s64_f64(k), vdupq_n_s64(1023)), 52);
    const V y = vmulq_f64(p, vreinterpretq_f64_s64(e));
    const uint64x2_t small = vcltq_f64(y, vdupq_n_f64(std::numeric_limits<double>::min()));
    return vreinterpretq_f64_u64(vbicq_u64(vreinterpretq_u64_f64(y), small));
  }
  static double reduce_max(V a) noexcept { return vmaxvq_f64(a); }
  static double reduce_add(V a) noexcept { return vaddvq_f64(a); }
  static K keys(const std::int8_t* b) noexcept { return keys(b, lanes); }
  static K keys(const std::int8_t* b, Index r) noexcept {
    const std::int64_t k[2] = {b[0], r > 1 ? b[1] : -1};
    return vld1q_s64(k);
  }
  static I slots(const std::int8_t* b) noexcept { return slots(b, lanes); }
  static I slots(const std::int8_t* b, Index r) noexcept {
    return vreinterpretq_u64_s64(vaddq_s64(keys(b, r), vdupq_n_s64(1)));
  }
  // Byte indices of each slot's 8 bytes: 8 s + (0, ..., 7).
  static uint8x16_t byte_index(I s) noexcept {
    const uint64x2_t base = vshlq_n_u64(s, 3);
    const uint8x16_t spread = vqtbl1q_u8(vreinterpretq_u8_u64(base), vcombine_u8(vdup_n_u8(0), vdup_n_u8(8)));
    const uint8_t offsets[16] = {0, 1, 2, 3, 4, 5, 6, 7, 0, 1, 2, 3, 4, 5, 6, 7};
    return vaddq_u8(spread, vld1q_u8(offsets));
  }
  static V lookup1(I s, V t0) noexcept {
    return vreinterpretq_f64_u8(vqtbl1q_u8(vreinterpretq_u8_f64(t0), byte_index(s)));
  }
  static V lookup2(I s, V t0, V t1) noexcept {
    const uint8x16x2_t t = {{vreinterpretq_u8_f64(t0), vreinterpretq_u8_f64(t1)}};
    return vreinterpretq_f64_u8(vqtbl2q_u8(t, byte_index(s)));
  }
  static V gather(I s, const double* shifted) noexcept {
    const double g[2] = {shifted[vgetq_lane_u64(s, 0)], shifted[vgetq_lane_u64(s, 1)]};
    return vld1q_f64(g);
  }
  static V add_if(V acc, K keys, int k, V g) noexcept {
    const uint64x2_t eq = vceqq_s64(keys, vdupq_n_s64(k));
    return vaddq_f64(acc, vreinterpretq_f64_u64(vandq_u64(eq, vreinterpretq_u64_f64(g))));
  }
};

#define SYNATTN_KERNELS_PACKET_REGION
#include "attention_rows_algorithm.inc"
#undef SYNATTN_KERNELS_PACKET_REGION

// The neon set: rows here, the portable GEMM (kernels::product uses Eigen's
// products), no few-rows kernel.
template <class Scalar>
inline constexpr KernelTable<Scalar> kernel_table{row_kernels<Scalar>, &portable::gemm<Scalar>, nullptr};

}  // namespace neon
}  // namespace kernels
}  // namespace synattn

#endif  // AArch64 NEON, not SYNATTN_PORTABLE_KERNELS
#endif  // SYNATTN_KERNELS_PACKET_NEON_HPP
