// synattn — attention row kernels: bias gather + mask + softmax forward, the
// softmax backward, and the bucket histogram that is the table's adjoint.
//
// These are the scalar reference kernels (Eigen array ops, which Eigen
// vectorises, plus plain loops); ISA-specific versions will sit behind the
// same signatures. They assume validated input and never allocate.
//
// Masking. A row of n keys has a visible prefix [0, kend) (key padding and the
// causal limit, kend <= n); inside it a key whose bucket is -1 is masked too.
// The gather adds shifted[bucket + 1], where shifted[0] = -inf and
// shifted[b + 1] = s * T[b], so the bucket mask costs no branch.
//
// Numerics. The softmax subtracts the row maximum; a row whose maximum is -inf
// has no visible key and becomes all zeros (SPEC §4), never NaN. Eigen's
// vectorised exp does not return exact zeros for -inf or for arguments below
// log(min normal) (it clamps, and returns tiny or subnormal values), so every
// exp result below the smallest normal number is flushed to 0. That is exactly
// right for masked keys, moves a visible key's probability by less than 1.2e-38
// (float) / 2.3e-308 (double), and keeps subnormals out of the P V product.
// Row sums are accumulated in the scalar type, in Eigen's SIMD lanes (16-32
// independent partial sums for float), so a float sum of n <= 4096
// probabilities has a relative error of order (n / 16) * 6e-8 at worst and is
// far inside the 1e-4 float tolerance of SPEC §4. Accumulating float rows in
// double doubled the cost of the whole pass (measured: 1.2 -> 2.2 ns per score
// at n = 512, AVX-512) for no accuracy the tests can see, so it is not done.
#ifndef SYNATTN_ATTENTION_SOFTMAX_HPP
#define SYNATTN_ATTENTION_SOFTMAX_HPP

#include <Eigen/Core>

#include <algorithm>
#include <cstdint>
#include <limits>

#include "../config.hpp"
#include "../matrix.hpp"

namespace synattn {
namespace kernels {

template <class Scalar>
using ArrayMap = Eigen::Map<Eigen::Array<Scalar, Eigen::Dynamic, 1>>;
template <class Scalar>
using ConstArrayMap = Eigen::Map<const Eigen::Array<Scalar, Eigen::Dynamic, 1>>;

// Softmax forward, in place. On entry z[0, kend) holds the scores of one query
// row; if `shifted` is not null, shifted[buckets[j] + 1] is added to z[j]
// first (the syntax bias and the bucket mask). On exit z[0, n) holds the
// probabilities: zero on [kend, n), at masked keys, and on the whole row when
// no key is visible.
template <class Scalar>
inline void softmax_row(Scalar* z, const std::int8_t* buckets, const Scalar* shifted, Index kend, Index n) noexcept {
  SYNATTN_ASSERT(0 <= kend && kend <= n);
  std::fill(z + kend, z + n, Scalar(0));
  if (kend == 0) return;
  // Load-port bound (three loads and a store per key, ~1.4 cycles); an
  // AVX-512 permute from the <= 129-entry table would do 16 keys at a time.
  if (shifted != nullptr)
    for (Index j = 0; j < kend; ++j) z[j] += shifted[buckets[j] + 1];
  ArrayMap<Scalar> row(z, kend);
  const Scalar max = row.maxCoeff();
  if (max == -std::numeric_limits<Scalar>::infinity()) {
    row.setZero();
    return;
  }
  row = (row - max).exp();
  const Scalar sum = row.sum();  // >= 1: the maximum contributes exp(0)
  const Scalar inv = Scalar(1) / sum;
  const Scalar tiny = std::numeric_limits<Scalar>::min();
  // One pass scales and flushes; the loop vectorises (compare + blend).
  for (Index j = 0; j < kend; ++j) z[j] = z[j] < tiny ? Scalar(0) : z[j] * inv;
}

// Softmax backward, in place: on entry dz[0, n) holds dL/dp of one row, on
// exit dL/dscore = p * (dp - <p, dp>) on [0, kend) and 0 on [kend, n).
// Masked keys have p = 0, hence dscore = 0.
template <class Scalar>
inline void softmax_backward_row(const Scalar* p, Scalar* dz, Index kend, Index n) noexcept {
  SYNATTN_ASSERT(0 <= kend && kend <= n);
  std::fill(dz + kend, dz + n, Scalar(0));
  if (kend == 0) return;
  ConstArrayMap<Scalar> prob(p, kend);
  ArrayMap<Scalar> grad(dz, kend);
  const Scalar dot = (prob * grad).sum();
  grad = prob * (grad - dot);
}

// Number of interleaved histogram copies bucket_histogram_row writes. A run of
// equal buckets (far keys all clamp to the last bucket) would otherwise chain
// every add through the same memory cell, one store-to-load latency each
// (measured at n = 512: 2.6 ns per score with one copy on tree-like rows,
// 0.7 with four, 0.45 with eight; 0.4-0.55 on random buckets).
constexpr int kHistogramCopies = 8;

// hist[c * stride + buckets[j] + 1] += ds[j] for j in [0, kend), c = j % 8:
// the sum of the score gradients that fall in each bucket. Slot 0 of each
// copy collects masked keys (bucket -1, ds = 0) and is ignored.
template <class Scalar>
inline void bucket_histogram_row(const Scalar* ds, const std::int8_t* buckets, Index kend, Scalar* hist,
                                 Index stride) noexcept {
  Scalar* h = hist + 1;
  Index j = 0;
  for (; j + kHistogramCopies <= kend; j += kHistogramCopies)
    for (int c = 0; c < kHistogramCopies; ++c) h[c * stride + buckets[j + c]] += ds[j + c];
  const Index rest = kend - j;  // < kHistogramCopies
  for (Index c = 0; c < rest; ++c) h[c * stride + buckets[j + c]] += ds[j + c];
}

}  // namespace kernels
}  // namespace synattn

#endif  // SYNATTN_ATTENTION_SOFTMAX_HPP
