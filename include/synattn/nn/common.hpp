// synattn — shared pieces of the nn layers: the initialisers (util/init.hpp
// under the nn names), elementwise activations and inverted
// dropout whose mask is a pure function of (stream, sequence, position,
// feature).
#ifndef SYNATTN_NN_COMMON_HPP
#define SYNATTN_NN_COMMON_HPP

#include <Eigen/Core>

#include <cmath>
#include <cstdint>
#include <string>
#include <type_traits>

#include "../error.hpp"
#include "../kernels/dropout_rows.hpp"
#include "../matrix.hpp"
#include "../util/finite.hpp"
#include "../util/init.hpp"
#include "../util/layer_identity.hpp"
#include "../util/parallel.hpp"
#include "../util/parameters.hpp"
#include "../util/random.hpp"

namespace synattn {
namespace nn {

// The nn layers' names for util/init.hpp's initialisers (the one rule every
// layer draws its weights by).
template <class Derived>
void fill_uniform(Eigen::MatrixBase<Derived>&& m, double bound, const RandomStream& stream) {
  init_uniform(m, bound, stream);
}
template <class Derived>
void fill_normal(Eigen::MatrixBase<Derived>&& m, const RandomStream& stream) {
  init_normal(m, stream);
}

// A whole model that was moved from holds no layers; its members call this
// first, so that using one is a clear error, not undefined behaviour.
inline void require_not_moved_from(bool moved_from, const char* fn) {
  if (moved_from)
    throw Error(std::string(fn) + ": this model was moved from and holds no layers; assign it a model first");
}

// A whole model's non-finite checks (docs/errors.md, "Non-finite
// values"): with options.attention.check_finite on (the default), forward()
// names a non-finite parameter before using it, and a non-finite logit (an
// overflow inside the model) before loss() or backward() can spread it.
inline const char* const kModelFiniteHint = " (options.attention.check_finite is on)";
template <class Scalar>
void check_finite_logits(const char* fn, const Eigen::Ref<const RowMajorMatrix<Scalar>>& logits, Index n) {
  check_finite_rows<Scalar>(fn, "logits", logits, n, ": the model overflowed (options.attention.check_finite is on)");
}

// The input of a layer whose dropout masks are keyed by (sequence,
// position): token rows x (batch * n, width) and the padded length n
// (FeedForward). A view, like attention/inputs.hpp's structs: build it in
// the call, e.g. ffn.forward({x, n}, cache, y, &stream).
template <class Scalar>
struct SequenceRows {
  Eigen::Ref<const RowMajorMatrix<Scalar>> x;
  Index rows_per_sequence = 1;
};

enum class Activation { ReLU, GELU };

inline const char* activation_name(Activation a) { return a == Activation::ReLU ? "relu" : "gelu"; }

// GELU in PyTorch's default (exact) form: x * Phi(x) = x/2 (1 + erf(x/sqrt 2)).
template <class Scalar>
inline Scalar gelu(Scalar x) {
  return Scalar(0.5) * x * (Scalar(1) + std::erf(x * Scalar(0.70710678118654752440)));
}
// d gelu / dx = Phi(x) + x phi(x).
template <class Scalar>
inline Scalar gelu_derivative(Scalar x) {
  const Scalar cdf = Scalar(0.5) * (Scalar(1) + std::erf(x * Scalar(0.70710678118654752440)));
  const Scalar pdf = Scalar(0.39894228040143267794) * std::exp(Scalar(-0.5) * x * x);
  return cdf + x * pdf;
}

// What each layer that owns its parameters (Linear, Embedding, LayerNorm)
// holds and shows the same way: its parameter store, and the identity its
// caches are stamped with (util/layer_identity.hpp). The layers with parts
// (FeedForward, the encoder) hand out their parts' stores instead.
template <class Scalar>
class LeafLayer {
  static_assert(std::is_floating_point<Scalar>::value, "the nn layers are instantiated for float and double");

 public:
  ParameterStore<Scalar>& parameter_store() noexcept { return store_; }
  const ParameterStore<Scalar>& parameter_store() const noexcept { return store_; }
  void zero_grad() { store_.zero_grad(); }

 protected:
  ParameterStore<Scalar> store_;
  LayerIdentity identity_;
};

// Dropout sites of an encoder layer (ids for RandomStream::derive).
enum DropoutSite : std::uint64_t {
  kSiteAttentionOutput = 1,
  kSiteFeedForwardHidden = 2,
  kSiteFeedForwardOutput = 3,
  kSiteAttentionProbabilities = 4,  // for the attention layer's own dropout
  kSiteEmbedding = 5,
};

// Row r of a (batch * n, cols) block of token rows through its dropout mask,
// in place: row r is position r % n of sequence r / n (n = rows_per_sequence),
// drawn from stream.sequence(r / n) at counters (r % n) * cols + c. The one
// definition of the nn layers' masks (apply_dropout, FeedForward's hidden
// site); one derive per row (two mixes), then one hash per element.
template <class Scalar>
inline void dropout_token_row(const RandomStream& stream, Index rows_per_sequence, Index r, Scalar* row, Index cols,
                              std::uint32_t threshold, Scalar scale) noexcept {
  kernels::dropout_row(row, row, cols, stream.sequence(static_cast<std::uint64_t>(r / rows_per_sequence)),
                       static_cast<std::uint64_t>((r % rows_per_sequence) * cols), threshold, scale);
}

// Inverted dropout in place on a (batch * n, cols) block of token rows (n =
// rows_per_sequence, the padded length): element (r, c) is kept with
// probability 1 - p and then scaled by 1 / (1 - p), dropped (set to 0)
// otherwise. Row r is position i = r % n of the batch's sequence b = r / n,
// and the mask is a function of (stream.sequence(b), i * cols + c) only: of
// the global sequence (stream.first_sequence() + b), the position and the
// column, never of n or of how the global batch was split, so P processes
// draw the one-process masks. The backward pass applies the same function to
// the upstream gradient instead of storing the mask, and no thread count
// changes it. p = 0 is the identity.
template <class Derived>
void apply_dropout(const RandomStream& stream, double p, Index rows_per_sequence, Eigen::MatrixBase<Derived>& x) {
  using Scalar = typename Derived::Scalar;
  const std::uint32_t threshold = drop_threshold(p);
  if (threshold == 0 || x.rows() == 0) return;
  if (rows_per_sequence <= 0 || x.rows() % rows_per_sequence != 0)
    throw Error("apply_dropout: rows_per_sequence is " + std::to_string(rows_per_sequence) +
                ", expected a positive divisor of the " + std::to_string(x.rows()) + " rows");
  const Scalar scale = static_cast<Scalar>(1.0 / (1.0 - p));
  const Index cols = x.cols();
  if constexpr (Derived::IsRowMajor && (int(Eigen::internal::traits<Derived>::Flags) & Eigen::DirectAccessBit) != 0 &&
                int(Derived::InnerStrideAtCompileTime) == 1) {
    // Rows are independent, so any thread may draw any row.
    parallel_for(x.rows(), 4.0 * double(cols) * double(x.rows()), [&](Index r) {
      dropout_token_row(stream, rows_per_sequence, r, &x.derived().coeffRef(r, 0), cols, threshold, scale);
    });
  } else {
    for (Index r = 0; r < x.rows(); ++r) {
      const RandomStream seq = stream.sequence(static_cast<std::uint64_t>(r / rows_per_sequence));
      const auto base = static_cast<std::uint64_t>((r % rows_per_sequence) * cols);
      for (Index c = 0; c < cols; ++c)
        x(r, c) = seq.keep(base + static_cast<std::uint64_t>(c), threshold) ? x(r, c) * scale : Scalar(0);
    }
  }
}
template <class Derived>
void apply_dropout(const RandomStream& stream, double p, Index rows_per_sequence, Eigen::MatrixBase<Derived>&& x) {
  apply_dropout(stream, p, rows_per_sequence, x);
}

// Throws unless p is a valid dropout probability; `what` names the option.
inline void check_probability(const std::string& what, double p) {
  if (!(p >= 0.0 && p < 1.0)) throw Error(what + ": dropout probability must be in [0, 1), got " + std::to_string(p));
}

}  // namespace nn
}  // namespace synattn

#endif  // SYNATTN_NN_COMMON_HPP
