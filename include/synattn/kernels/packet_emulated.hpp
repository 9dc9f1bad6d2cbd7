// synattn — the emulated packet: plain C++ packets of 16 floats / 8 doubles
// with bit masks, shaped like AVX-512's, and the row kernels over it.
// kernels/attention_rows_algorithm.inc compiled over them runs the
// wide-vector control flow (16-lane packets, masked tails, two-register and
// gathered table lookups, a 16-bucket register histogram, the streamed copy's
// 64-byte head) on any CPU, so tests exercise those paths on machines without
// AVX-512. Never dispatched to (it is slow); tests call
// kernels::emulated::softmax_numerators etc. directly.
//
// Each primitive mimics its AVX-512 instruction where that matters: max
// returns its second operand when either is NaN (maxps), a table lookup reads
// only the low index bits (vpermps / vpermt2ps), masked loads and stores
// touch only their lanes.
#ifndef SYNATTN_KERNELS_PACKET_EMULATED_HPP
#define SYNATTN_KERNELS_PACKET_EMULATED_HPP

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <type_traits>
#include <utility>

#include "packet_portable.hpp"

namespace synattn {
namespace kernels {
namespace emulated {

template <class Scalar, int N>
struct WidePacket {
  struct V {
    Scalar v[N];
  };
  struct I {
    int v[N];
  };
  using K = I;
  using M = std::uint32_t;  // bit l: lane l
  static constexpr int lanes = N;
  static constexpr int register_buckets = 16;
  static constexpr std::uintptr_t stream_alignment = 64;

  template <class F>
  static V map(F f) noexcept {
    V r;
    for (int l = 0; l < N; ++l) r.v[l] = f(l);
    return r;
  }
  static bool in(M m, int l) noexcept { return (m >> l) & 1u; }
  static M prefix(Index r) noexcept {
    return r >= N ? static_cast<M>((std::uint64_t(1) << N) - 1) : r <= 0 ? M(0) : static_cast<M>((1u << r) - 1u);
  }
  static V zero() noexcept { return set1(Scalar(0)); }
  static V set1(Scalar s) noexcept {
    return map([&](int) { return s; });
  }
  static V load(const Scalar* p) noexcept {
    return map([&](int l) { return p[l]; });
  }
  static V load(const Scalar* p, M m) noexcept {
    return map([&](int l) { return in(m, l) ? p[l] : Scalar(0); });
  }
  static void store(Scalar* p, V v) noexcept {
    for (int l = 0; l < N; ++l) p[l] = v.v[l];
  }
  static void store(Scalar* p, V v, M m) noexcept {
    for (int l = 0; l < N; ++l)
      if (in(m, l)) p[l] = v.v[l];
  }
  static void stream(Scalar* p, V v) noexcept {
    SYNATTN_ASSERT(reinterpret_cast<std::uintptr_t>(p) % stream_alignment == 0);  // as movntps requires
    store(p, v);
  }
  static void stream_fence() noexcept {}
  static V add(V a, V b) noexcept {
    return map([&](int l) { return a.v[l] + b.v[l]; });
  }
  static V sub(V a, V b) noexcept {
    return map([&](int l) { return a.v[l] - b.v[l]; });
  }
  static V mul(V a, V b) noexcept {
    return map([&](int l) { return a.v[l] * b.v[l]; });
  }
  static V fma(V a, V b, V c) noexcept {
    return map([&](int l) { return std::fma(a.v[l], b.v[l], c.v[l]); });
  }
  static Scalar max1(Scalar a, Scalar b) noexcept { return a > b ? a : b; }  // b on NaN, as maxps
  static V max(V a, V b) noexcept {
    return map([&](int l) { return max1(a.v[l], b.v[l]); });
  }
  static V masked_max(V acc, M m, V v) noexcept {
    return map([&](int l) { return in(m, l) ? max1(acc.v[l], v.v[l]) : acc.v[l]; });
  }
  static V keep(M m, V a) noexcept {
    return map([&](int l) { return in(m, l) ? a.v[l] : Scalar(0); });
  }
  static Scalar flushed(Scalar x) noexcept { return x < std::numeric_limits<Scalar>::min() ? Scalar(0) : x; }
  static V exp2_flushed(V d) noexcept {
    return map([&](int l) { return flushed(std::exp2(d.v[l])); });
  }
  static V exp_flushed(V a) noexcept {
    return map([&](int l) { return flushed(std::exp(a.v[l])); });
  }
  // Butterfly order, as the AVX-512 reductions.
  template <class Op>
  static Scalar reduce(V a, Op op) noexcept {
    for (int half = N / 2; half >= 1; half /= 2)
      for (int l = 0; l < half; ++l) a.v[l] = op(a.v[l], a.v[l + half]);
    return a.v[0];
  }
  static Scalar reduce_max(V a) noexcept { return reduce(a, max1); }
  static Scalar reduce_add(V a) noexcept {
    return reduce(a, [](Scalar x, Scalar y) { return x + y; });
  }
  static K keys(const std::int8_t* b) noexcept { return keys(b, N); }
  static K keys(const std::int8_t* b, Index r) noexcept {
    K k;
    for (int l = 0; l < N; ++l) k.v[l] = l < r ? b[l] : -1;
    return k;
  }
  static I slots(const std::int8_t* b) noexcept { return slots(b, N); }
  static I slots(const std::int8_t* b, Index r) noexcept {
    I s = keys(b, r);
    for (int l = 0; l < N; ++l) s.v[l] += 1;
    return s;
  }
  static V lookup1(I s, V t0) noexcept {
    return map([&](int l) { return t0.v[s.v[l] & (N - 1)]; });
  }
  static V lookup2(I s, V t0, V t1) noexcept {
    return map([&](int l) {
      const int x = s.v[l] & (2 * N - 1);
      return x < N ? t0.v[x] : t1.v[x - N];
    });
  }
  static V gather(I s, const Scalar* shifted) noexcept {
    return map([&](int l) { return shifted[s.v[l]]; });
  }
  static V add_if(V acc, K keys, int k, V g) noexcept {
    return map([&](int l) { return keys.v[l] == k ? acc.v[l] + g.v[l] : acc.v[l]; });
  }
};

// 512-bit packets: 16 floats, 8 doubles.
template <class T>
struct Packet : WidePacket<T, 64 / int(sizeof(T))> {
  using Scalar = T;
};

#define SYNATTN_KERNELS_PACKET_REGION
#include "attention_rows_algorithm.inc"
#undef SYNATTN_KERNELS_PACKET_REGION

// The row kernels over the emulated packet; the portable GEMM (tests only).
template <class Scalar>
inline constexpr KernelTable<Scalar> kernel_table{row_kernels<Scalar>, &portable::gemm<Scalar>, nullptr};

}  // namespace emulated
}  // namespace kernels
}  // namespace synattn

#endif  // SYNATTN_KERNELS_PACKET_EMULATED_HPP
