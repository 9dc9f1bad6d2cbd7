// synattn — what the attention layer's three verbs take: a self-attention
// input (x, its lengths and its buckets together), a cross-attention input
// (queries, memory, both lengths and the buckets), and the input gradients a
// backward pass writes. They are views: they point at the caller's matrices
// and vectors and copy nothing (an expression that is not a row-major matrix,
// such as x.cast<float>(), is evaluated once into the view), so build them in
// the call, or keep them no longer than what they view.
//
//   layer.forward({x, lengths, buckets}, cache, out);                 // self
//   layer.forward({x_q, lengths_q, memory, lengths_kv, buckets}, cache, out);
//   layer.backward(cache, dout, {dx});                                // self
//   layer.backward(cache, dout, {dx_q, dmemory});                     // cross
//   layer.forward({x, packed}, cache, out);            // packed documents
//
// A layer without a syntax bias takes no buckets: {x, lengths}.
#ifndef SYNATTN_ATTENTION_INPUTS_HPP
#define SYNATTN_ATTENTION_INPUTS_HPP

#include <Eigen/Core>

#include <cstdint>
#include <vector>

#include "../bias/packed_buckets.hpp"
#include "../matrix.hpp"

namespace synattn {

namespace detail {
// The bucket block of a layer without a syntax bias: 0 x 0, never read.
inline const BucketBlock& no_buckets() {
  static const BucketBlock empty;
  return empty;
}
// The memory gradient of a self-attention backward pass: 0 x 0, never written.
template <class Scalar>
RowMajorMatrix<Scalar>& no_memory_gradient() {
  static RowMajorMatrix<Scalar> empty;
  return empty;
}
}  // namespace detail

// x: (batch * n, d_model), batch = lengths.size(); lengths[b] in [0, n];
// buckets: (batch * n, n) int8 in [-1, num_buckets()) (synattn::bucketize or
// make_bucket_batch), -1 masking the pair; 0 x 0 without a syntax bias.
template <class Scalar>
struct SelfAttentionInput {
  Eigen::Ref<const RowMajorMatrix<Scalar>> x;
  const std::vector<int>& lengths;
  Eigen::Ref<const BucketBlock> buckets = detail::no_buckets();
};

// Queries from x_q (batch * n_q, d_model), keys and values from memory
// (batch * n_kv, memory_size); one length per sequence in each of lengths_q
// and lengths_kv; buckets (batch * n_q, n_kv), or 0 x 0 without a syntax bias.
template <class Scalar>
struct CrossAttentionInput {
  Eigen::Ref<const RowMajorMatrix<Scalar>> x_q;
  const std::vector<int>& lengths_q;
  Eigen::Ref<const RowMajorMatrix<Scalar>> memory;
  const std::vector<int>& lengths_kv;
  Eigen::Ref<const BucketBlock> buckets = detail::no_buckets();
};

// Packed documents (bias/packed_buckets.hpp): x (batch * n, d_model), batch
// = buckets.sequences(), each sequence's length its sentences' words.
// Only the keys each row's sentence window sees are computed, and no n x n
// block is formed (the fused path: no probabilities are kept).
template <class Scalar>
struct PackedSelfAttentionInput {
  Eigen::Ref<const RowMajorMatrix<Scalar>> x;
  const PackedBuckets& buckets;
};

// What backward() overwrites: dL/dx (self) or dL/dx_q (cross), each
// (batch * n_q, d_model), and for cross-attention dL/dmemory
// (batch * n_kv, memory_size). Leave dmemory out for self-attention.
template <class Scalar>
struct AttentionInputGradients {
  Eigen::Ref<RowMajorMatrix<Scalar>> dx;
  Eigen::Ref<RowMajorMatrix<Scalar>> dmemory = detail::no_memory_gradient<Scalar>();
};

}  // namespace synattn

#endif  // SYNATTN_ATTENTION_INPUTS_HPP
