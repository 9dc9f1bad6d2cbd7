// synattn — what an encoder's attention layers read of a batch besides its
// rows: the sequences' lengths and either their dense (batch * n, n) bucket
// block or packed documents (bias/packed_buckets.hpp). A view: it points at
// the caller's objects, built in the call that uses it.
//
// The models pass it down unchanged, so one forward pass serves both forms;
// each attention layer gets the input that form makes
// (SelfAttentionInput or PackedSelfAttentionInput, attention/inputs.hpp).
#ifndef SYNATTN_NN_SEQUENCE_BUCKETS_HPP
#define SYNATTN_NN_SEQUENCE_BUCKETS_HPP

#include <Eigen/Core>

#include <vector>

#include "../attention/syntax_attention.hpp"
#include "../bias/packed_buckets.hpp"
#include "../matrix.hpp"

namespace synattn {
namespace nn {

class SequenceBuckets {
 public:
  // Dense: lengths one per sequence, buckets (views * batch * n, n), or 0 x 0 without a biased layer.
  SequenceBuckets(const std::vector<int>& lengths, const Eigen::Ref<const BucketBlock>& buckets) noexcept
      : lengths_(&lengths), dense_(&buckets) {}
  // Packed documents: the lengths are the packing's.
  explicit SequenceBuckets(const PackedBuckets& packed) noexcept : lengths_(&packed.lengths()), packed_(&packed) {}

  const std::vector<int>& lengths() const noexcept { return *lengths_; }
  bool is_packed() const noexcept { return packed_ != nullptr; }
  const PackedBuckets& packed() const noexcept { return *packed_; }
  const Eigen::Ref<const BucketBlock>& dense() const noexcept { return *dense_; }

  // out = layer's attention over x with these buckets.
  // (Scalar is deduced from the layer alone: the matrices convert to views.)
  template <class Scalar, class Layer = SyntaxBiasedAttention<Scalar>>
  void attend(const SyntaxBiasedAttention<Scalar>& layer, const Eigen::Ref<const typename Layer::Matrix>& x,
              typename Layer::Cache& cache, Eigen::Ref<typename Layer::Matrix> out,
              const RandomStream* dropout) const {
    if (packed_)
      layer.forward({x, *packed_}, cache, out, dropout);
    else
      layer.forward({x, *lengths_, *dense_}, cache, out, dropout);
  }

 private:
  const std::vector<int>* lengths_;
  const Eigen::Ref<const BucketBlock>* dense_ = nullptr;
  const PackedBuckets* packed_ = nullptr;
};

}  // namespace nn
}  // namespace synattn

#endif  // SYNATTN_NN_SEQUENCE_BUCKETS_HPP
