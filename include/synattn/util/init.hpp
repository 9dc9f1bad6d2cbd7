// synattn — the one initialiser of random weights. Every layer that draws
// initial weights (nn::Linear and so nn::FeedForward, nn::TokenClassifier and
// parse::CharCnn's convolution; nn::Embedding; SyntaxBiasedAttention's four
// projections) draws them here, by one rule:
//
// * A tensor is drawn from its own RandomStream (util/random.hpp): element
//   (r, c) of a rows x cols tensor is element i = r * cols + c, a pure
//   function of (stream, i). The values depend on the stream and the shape
//   only, never on what else the layer holds or the order tensors are filled.
// * Uniform: m[i] = (2 u - 1) * bound with u = stream.uniform(i) in [0, 1),
//   so m[i] in [-bound, bound): mean 0, variance bound^2 / 3.
// * Normal: m[i] ~ N(0, 1) by Box-Muller, u1 = 1 - stream.uniform(2i) in
//   (0, 1] (the log is finite), u2 = stream.uniform(2i + 1), m[i] =
//   sqrt(-2 ln u1) cos(2 pi u2): mean 0, variance 1 (nn.Embedding's default).
// * A linear map (weight (out, in), bias (1, out), y = x W^T + b) is
//   PyTorch's nn.Linear default: both U(-1/sqrt(in), 1/sqrt(in)), the weight
//   from stream.derive(0), the bias from stream.derive(1).
// * Streams form a tree from one seed: a layer takes a stream (or a seed:
//   RandomStream(seed)) and gives each part a child derive(id) with a fixed
//   id, so adding a part never moves another part's draw.
//   SyntaxBiasedAttention: q 0, k 1, v 2, o 3 under RandomStream(options.seed);
//   nn::FeedForward: linear1 1, linear2 2; encoder layer l: the key of
//   derive(l) is its seed, its attention's seed the key of derive(1), its
//   feed-forward derive(2); the tagger: embedding 1, encoder 2, classifier 3
//   under RandomStream(options.seed); the parser: words 1, chars 2,
//   projection 3, encoder 4, MLP k derive(5).derive(k), tagging head 6.
//
// Before this rule the attention layer drew its eight tensors from one
// sequential splitmix64 state seeded with the raw seed (Wq, bq, Wk, ... in
// turn), so its weights depended on the sizes of the tensors before them;
// models trained before it (docs/experiment.md) started from other weights.
#ifndef SYNATTN_UTIL_INIT_HPP
#define SYNATTN_UTIL_INIT_HPP

#include <Eigen/Core>

#include <cmath>
#include <cstdint>
#include <string>

#include "../error.hpp"
#include "../matrix.hpp"
#include "random.hpp"

namespace synattn {

// m[i] ~ U(-bound, bound) from stream.uniform(i), i = r * cols + c. m is a
// matrix, a Map (a layer's parameter) or a block; the && overloads take the
// temporaries those expressions are.
template <class Derived>
void init_uniform(Eigen::MatrixBase<Derived>& m, double bound, const RandomStream& stream) {
  using Scalar = typename Derived::Scalar;
  for (Index r = 0; r < m.rows(); ++r)
    for (Index c = 0; c < m.cols(); ++c) {
      const auto i = static_cast<std::uint64_t>(r * m.cols() + c);
      m(r, c) = static_cast<Scalar>((2.0 * stream.uniform(i) - 1.0) * bound);
    }
}
template <class Derived>
void init_uniform(Eigen::MatrixBase<Derived>&& m, double bound, const RandomStream& stream) {
  init_uniform(m, bound, stream);
}

// m[i] ~ N(0, 1) by Box-Muller from stream.uniform(2i) and stream.uniform(2i + 1).
template <class Derived>
void init_normal(Eigen::MatrixBase<Derived>& m, const RandomStream& stream) {
  using Scalar = typename Derived::Scalar;
  const double two_pi = 6.283185307179586476925;
  for (Index r = 0; r < m.rows(); ++r)
    for (Index c = 0; c < m.cols(); ++c) {
      const auto i = static_cast<std::uint64_t>(r * m.cols() + c);
      const double u1 = 1.0 - stream.uniform(2 * i);  // (0, 1]: log is finite
      const double u2 = stream.uniform(2 * i + 1);
      m(r, c) = static_cast<Scalar>(std::sqrt(-2.0 * std::log(u1)) * std::cos(two_pi * u2));
    }
}
template <class Derived>
void init_normal(Eigen::MatrixBase<Derived>&& m, const RandomStream& stream) {
  init_normal(m, stream);
}

// nn.Linear's bound for a map with fan_in inputs: 1 / sqrt(fan_in).
inline double linear_init_bound(Index fan_in) {
  if (fan_in < 1) throw Error("linear_init_bound: fan_in must be >= 1, got " + std::to_string(fan_in));
  return 1.0 / std::sqrt(static_cast<double>(fan_in));
}

// weight (out, in) and bias (1, out) ~ U(-1/sqrt(in), 1/sqrt(in)), the
// weight from stream.derive(0), the bias from stream.derive(1). An empty bias
// (0 x 0: a map without one) is skipped; the weight's draw does not change.
// W and B: matrices, Maps or blocks (as init_uniform).
template <class W, class B>
void init_linear(W&& weight, B&& bias, const RandomStream& stream) {
  const double bound = linear_init_bound(weight.cols());
  if (bias.size() != 0 && bias.size() != weight.rows())
    throw Error("init_linear: bias has " + std::to_string(bias.size()) + " entries, expected " +
                std::to_string(weight.rows()) + " (one per output) or none");
  init_uniform(weight, bound, stream.derive(0));
  if (bias.size() != 0) init_uniform(bias, bound, stream.derive(1));
}
// Without a bias.
template <class W>
void init_linear(W&& weight, const RandomStream& stream) {
  init_uniform(weight, linear_init_bound(weight.cols()), stream.derive(0));
}

}  // namespace synattn

#endif  // SYNATTN_UTIL_INIT_HPP
