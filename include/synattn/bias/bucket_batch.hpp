// synattn — from trees to the attention layer's inputs in one call: a batch
// of sentences' trees and a bucketing give the bucket block and the lengths
// that SyntaxBiasedAttention::forward takes, with padding -1 and cross-tree
// pairs of packed forests in the last bucket (docs/math.md §2).
#ifndef SYNATTN_BIAS_BUCKET_BATCH_HPP
#define SYNATTN_BIAS_BUCKET_BATCH_HPP

#include <cstdint>
#include <vector>

#include "../matrix.hpp"
#include "../tree/batch.hpp"
#include "../tree/dependency_tree.hpp"
#include "bucketing.hpp"

namespace synattn {

// The attention layer's tree inputs for one batch.
struct BucketBatch {
  BucketBlock buckets;       // (batch * n_max, n_max); -1 on padding pairs
  std::vector<int> lengths;  // words per sentence
  int n_max = 0;             // positions per sequence
};

// Distances (up and down for a directed bucketing) in int16, so sentences
// far longer than int8's 127 words work, then bucketed. n_max = -1: the
// longest sentence of the batch; a sentence longer than n_max is refused,
// naming it.
BucketBatch make_bucket_batch(const std::vector<DependencyTree>& trees, const Bucketing& bucketing, int n_max = -1);

// Compiled once in synattn::compiled in compiled mode (tree/dependency_tree.hpp).
#if !defined(SYNATTN_COMPILED) || defined(SYNATTN_TREES_SOURCE)
SYNATTN_TREES_INLINE BucketBatch make_bucket_batch(const std::vector<DependencyTree>& trees, const Bucketing& bucketing,
                                                   int n_max) {
  BucketBatch out;
  const long long cross = bucketing.cross_distance();
  if (bucketing.kind() == BucketKind::Directed) {
    const DirectedDistanceBatch<std::int16_t> d = make_directed_distance_batch<std::int16_t>(trees, n_max, cross);
    out.buckets.resize(d.up.rows(), d.up.cols());
    bucketize_directed<std::int16_t, std::int8_t>(bucketing, d.up, d.down, out.buckets);
    out.lengths = d.lengths;
    out.n_max = d.n_max;
  } else {
    const DistanceBatch<std::int16_t> d = make_distance_batch<std::int16_t>(trees, n_max, cross);
    out.buckets.resize(d.distances.rows(), d.distances.cols());
    bucketize<std::int16_t, std::int8_t>(bucketing, d.distances, out.buckets);
    out.lengths = d.lengths;
    out.n_max = d.n_max;
  }
  return out;
}
#endif

}  // namespace synattn

#endif  // SYNATTN_BIAS_BUCKET_BATCH_HPP
