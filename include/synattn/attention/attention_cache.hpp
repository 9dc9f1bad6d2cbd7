// synattn — what one forward pass of SyntaxBiasedAttention keeps for its
// backward pass, plus the backward pass's workspace.
//
// The layer itself holds only parameters, so one layer can run several batches
// at once, each with its own cache. Buffers are reused from call to call and
// reallocated only when a shape changes.
#ifndef SYNATTN_ATTENTION_ATTENTION_CACHE_HPP
#define SYNATTN_ATTENTION_ATTENTION_CACHE_HPP

#include <Eigen/Core>

#include <cstdint>
#include <string>
#include <vector>

#include "../bias/packed_buckets.hpp"
#include "../matrix.hpp"
#include "../util/layer_identity.hpp"
#include "../util/random.hpp"
#include "key_windows.hpp"

namespace synattn {

// What filled a cache: the shape and options of the layer's forward pass that
// the backward pass relies on (buffer widths, bucket range, masking, the
// parameters that exist). backward() compares it with its own layer's and
// refuses a mismatch, so a cache handed to another layer cannot reach memory
// it does not own. (The scalar type is fixed by the cache's type.)
struct AttentionFingerprint {
  int d_model = 0, heads = 0, key_size = 0, value_size = 0, memory_size = 0;
  bool syntax_bias = false;
  int num_buckets = 0;  // 0 without a syntax bias
  bool per_head = false, causal = false, talking_heads_pre = false, talking_heads_post = false;
  bool cross = false;
  int views = 1;  // tree views of the bias (fusion)
  bool shared_view_table = false, per_head_view_weights = false;

  bool operator==(const AttentionFingerprint& o) const noexcept {
    return d_model == o.d_model && heads == o.heads && key_size == o.key_size && value_size == o.value_size &&
           memory_size == o.memory_size && syntax_bias == o.syntax_bias && num_buckets == o.num_buckets &&
           per_head == o.per_head && causal == o.causal && talking_heads_pre == o.talking_heads_pre &&
           talking_heads_post == o.talking_heads_post && cross == o.cross && views == o.views &&
           shared_view_table == o.shared_view_table && per_head_view_weights == o.per_head_view_weights;
  }
  bool operator!=(const AttentionFingerprint& o) const noexcept { return !(*this == o); }

  // "d_model 8, heads 2, key 4, value 4, memory 8, 5 buckets, shared table, causal, self-attention"
  std::string describe() const {
    std::string s = "d_model " + std::to_string(d_model) + ", heads " + std::to_string(heads) + ", key " +
                    std::to_string(key_size) + ", value " + std::to_string(value_size) + ", memory " +
                    std::to_string(memory_size);
    if (syntax_bias)
      s += ", " + std::to_string(num_buckets) + " buckets, " + (per_head ? "per-head" : "shared") + " table";
    else
      s += ", no syntax bias";
    if (views > 1)
      s += ", " + std::to_string(views) + " tree views (" + (shared_view_table ? "one table" : "a table each") + ", " +
           (per_head_view_weights ? "per-head" : "per-layer") + " weights)";
    if (causal) s += ", causal";
    if (talking_heads_pre) s += ", talking heads pre";
    if (talking_heads_post) s += ", talking heads post";
    s += cross ? ", cross-attention" : ", self-attention";
    return s;
  }
};

template <class Scalar>
class SyntaxBiasedAttention;

template <class Scalar>
class AttentionCache {
 public:
  using Matrix = RowMajorMatrix<Scalar>;

  // True until a forward pass has filled the cache.
  bool empty() const noexcept { return !filled_; }
  bool cross() const noexcept { return cross_; }
  Index batch() const noexcept { return batch_; }
  Index query_length() const noexcept { return n_q_; }  // n_q: rows per sequence
  Index key_length() const noexcept { return n_kv_; }   // n_kv: keys per sequence
  int heads() const noexcept { return heads_; }
  const std::vector<int>& query_lengths() const noexcept { return lengths_q_; }
  const std::vector<int>& key_lengths() const noexcept { return lengths_kv_; }
  // True when the pass read packed documents (PackedSelfAttentionInput).
  bool packed_input() const noexcept { return packed_input_; }

  // True when the last training forward pass took the fused path
  // (attention/path.hpp): it kept no probabilities, so probabilities() is
  // empty and backward() recomputes them.
  bool fused_path() const noexcept { return fused_; }

  // The attention probabilities P = softmax(scores), (batch * heads * n_q,
  // n_kv), kept by a materialized training pass (empty after a fused one):
  // block (b, head) is rows [(b * heads + head) * n_q, ... + n_q). Zero at
  // masked keys and on rows with no visible key. With post-mixing talking
  // heads this is the softmax output before the mixing. Always the
  // probabilities before dropout: the dropped ones are never stored.
  const Matrix& probabilities() const noexcept { return probs_; }
  Eigen::Map<const Matrix> probabilities(Index b, int head) const {
    return Eigen::Map<const Matrix>(probs_.data() + ((b * heads_ + head) * n_q_) * n_kv_, n_q_, n_kv_);
  }
  // The probabilities after post-mixing (talking heads), same layout; empty
  // when the layer does not post-mix. Before dropout, like probabilities().
  const Matrix& mixed_probabilities() const noexcept { return mixed_; }
  // Per-token concatenation of the heads' outputs, (batch * n_q, heads * dv).
  // With dropout this is P' V, the context of the dropped probabilities.
  const Matrix& context() const noexcept { return ctx_; }
  // True when the last forward pass dropped probabilities (a forward with a
  // RandomStream on a layer with options.dropout > 0); backward() then draws
  // the same mask again from the stream kept here.
  bool dropout_applied() const noexcept { return dropout_; }
  // The shape and options of the layer whose forward pass filled the cache.
  const AttentionFingerprint& fingerprint() const noexcept { return fingerprint_; }

 private:
  friend class SyntaxBiasedAttention<Scalar>;

  bool filled_ = false;
  bool inference_ = false;  // last used as infer()'s workspace: nothing to differentiate
  bool cross_ = false;
  bool fused_ = false;  // the fused path: no probs_, backward() recomputes P per row block from row_stats_
  AttentionFingerprint fingerprint_;
  CacheStamp stamp_;  // which layer filled it, and whether backward() has used it (util/layer_identity.hpp)
  Index batch_ = 0, n_q_ = 0, n_kv_ = 0;
  int heads_ = 0;
  std::vector<int> lengths_q_, lengths_kv_;

  // Dropout of the last forward pass: the mask is redrawn, never stored.
  bool dropout_ = false;
  RandomStream dropout_stream_;
  std::uint32_t drop_threshold_ = 0;  // drop_threshold(options.dropout)
  Scalar keep_scale_ = 1;             // 1 / (1 - options.dropout)

  // Forward state.
  Matrix x_q_;                           // (batch * n_q, d_model)
  Matrix x_kv_;                          // (batch * n_kv, memory_size); cross-attention only
  Matrix qkv_;                           // self: (batch * n, h*dk | h*dk | h*dv); cross: Q (batch * n_q, h*dk)
  Matrix kv_;                            // cross: (batch * n_kv, h*dk | h*dv)
  Matrix raw_;                           // pre-mixing talking heads: unmixed scores, probs_ layout
  Matrix probs_;                         // softmax output P
  Matrix mixed_;                         // post-mixing talking heads: mixed P
  Matrix ctx_;                           // (batch * n_q, h*dv)
  BucketBlock buckets_;                  // (views * batch * n_q, n_kv) when the layer has a syntax bias
  bool packed_input_ = false;            // packed documents: packed_ and windows_ instead of buckets_
  PackedBuckets packed_;                 // a training pass's packing
  detail::KeyWindows windows_;  // its row blocks and their key ranges
  std::vector<std::int8_t> tiles_;        // (threads * rows, widest range): per-thread bucket tiles
  Matrix scratch_;                       // (threads * rows, n_kv): one cache-resident score block per thread
                                         // (fused backward: two, P and dS)
  Matrix dropped_;                       // (threads * rows, n_kv): per-thread P' = P * M / (1 - p), dropout only
  std::vector<Scalar> inv_sum_;          // (threads * rows): per-row scalars of the scratch blocks:
                                         // 1 / softmax row sums (forward), <p, dp> (backward)
  Matrix row_stats_;                     // fused training pass: (2, batch * h * n_q), each query row's
                                         // softmax maximum, then 1 / its row sum (its log-sum-exp in two
                                         // factors), from which backward() recomputes P in one pass

  // Backward workspace.
  Matrix dctx_;         // (batch * n_q, h*dv)
  Matrix dscore_;       // probs_ layout: dL/dP, then dL/dscore
  Matrix dscore2_;      // probs_ layout: second buffer for the talking-heads mixing adjoints
  Matrix dqkv_;         // layout of qkv_
  Matrix dkv_;          // layout of kv_
  Matrix hist_;         // (batch * heads, histogram_width()) per-task bucket sums (per view with fusion)
  Matrix mix_partial_;  // (batch, 2 * heads * heads) per-sequence talking-heads gradients
};

}  // namespace synattn

#endif  // SYNATTN_ATTENTION_ATTENTION_CACHE_HPP
