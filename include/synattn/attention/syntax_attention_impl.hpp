// synattn — SyntaxBiasedAttention: construction, the three verbs, and
// the forward and backward passes as named phases (each phase's per-block
// steps are in forward_steps.hpp and backward_steps.hpp, the checks in
// validation.hpp). Included by syntax_attention.hpp only.
#ifndef SYNATTN_ATTENTION_SYNTAX_ATTENTION_HPP
#error "include <synattn/attention/syntax_attention.hpp> instead of this file"
#endif

#ifndef SYNATTN_ATTENTION_SYNTAX_ATTENTION_IMPL_HPP
#define SYNATTN_ATTENTION_SYNTAX_ATTENTION_IMPL_HPP

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "../kernels/attention_rows.hpp"
#include "../kernels/dropout_rows.hpp"
#include "../kernels/linear_small.hpp"
#include "../util/init.hpp"
#include "../util/parallel.hpp"
#include "backward_steps.hpp"
#include "forward_steps.hpp"
#include "validation.hpp"

namespace synattn {

// ---------------------------------------------------------------------------
// Construction and parameters
// ---------------------------------------------------------------------------

template <class Scalar>
SyntaxBiasedAttention<Scalar>::SyntaxBiasedAttention(const AttentionOptions& options) : options_(options) {
  options_.validate();
  detail::validate_options_for<Scalar>(options_, detail::scalar_name<Scalar>());
  simd_notice();  // once per process: when this build leaves the CPU unused (kernels/simd_notice.hpp)
  const Index h = options_.heads, d = options_.d_model;
  dk_ = options_.resolved_key_size();
  dv_ = options_.resolved_value_size();
  dm_kv_ = options_.resolved_memory_size();
  inv_sqrt_dk_ = Scalar(1) / std::sqrt(static_cast<Scalar>(dk_));
  // Wq, Wk, Wv are adjacent (and so are bq, bk, bv): self-attention projects
  // all three with one product against the stacked (2h*dk + h*dv, d) matrix.
  id_.wq = store_.add("Wq", h * dk_, d);
  id_.wk = store_.add("Wk", h * dk_, dm_kv_);
  id_.wv = store_.add("Wv", h * dv_, dm_kv_);
  id_.bq = store_.add("bq", 1, h * dk_);
  id_.bk = store_.add("bk", 1, h * dk_);
  id_.bv = store_.add("bv", 1, h * dv_);
  id_.wo = store_.add("Wo", d, h * dv_);
  id_.bo = store_.add("bo", 1, d);
  if (options_.syntax_bias) {
    const BiasTableOptions& bias = options_.bias;
    id_.table = store_.add("table", bias.table_rows(options_.heads), bias.num_buckets(), bias.table_learnable);
    id_.scale = store_.add("scale", 1, 1, bias.scale_learnable);
    if (bias.fusion.views > 1)
      id_.logits =
          store_.add("view_logits", bias.weight_rows(options_.heads), bias.fusion.views, bias.fusion.weights_learnable);
  }
  if (options_.talking_heads_pre) id_.pre = store_.add("mix_pre", h, h);
  if (options_.talking_heads_post) id_.post = store_.add("mix_post", h, h);
  store_.keep_adjacent(id_.wq, id_.wv);  // the stacked products below rely on it when bound
  store_.keep_adjacent(id_.bq, id_.bv);
  reset_parameters(options_.seed);
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::reset_parameters(std::uint64_t seed) {
  // util/init.hpp's rule: projection k (q 0, k 1, v 2, o 3) like nn.Linear
  // from RandomStream(seed).derive(k), so a seed gives the same weights with
  // every standard library and each projection's draw is its own.
  const RandomStream init(seed);
  init_linear(store_.value(id_.wq), store_.value(id_.bq), init.derive(0));
  init_linear(store_.value(id_.wk), store_.value(id_.bk), init.derive(1));
  init_linear(store_.value(id_.wv), store_.value(id_.bv), init.derive(2));
  init_linear(store_.value(id_.wo), store_.value(id_.bo), init.derive(3));
  if (options_.syntax_bias) bias_table().initialise();
  if (id_.pre >= 0) store_.value(id_.pre).setIdentity();
  if (id_.post >= 0) store_.value(id_.post).setIdentity();
  store_.zero_grad();
}

template <class Scalar>
BiasTableRef<Scalar> SyntaxBiasedAttention<Scalar>::bias_table() {
  if (!options_.syntax_bias) throw Error("SyntaxBiasedAttention: the layer has no syntax bias (syntax_bias = false)");
  const bool fused = id_.logits >= 0;
  return BiasTableRef<Scalar>(options_.bias, options_.heads, store_.value_data(id_.table), store_.value_data(id_.scale),
                              store_.gradient_data(id_.table), store_.gradient_data(id_.scale),
                              fused ? store_.value_data(id_.logits) : nullptr,
                              fused ? store_.gradient_data(id_.logits) : nullptr);
}

template <class Scalar>
typename SyntaxBiasedAttention<Scalar>::Matrix SyntaxBiasedAttention<Scalar>::view_weights() const {
  require(id_.logits, "view_logits (fusion.views is 1)");
  return view_weight_matrix(bias_terms(nullptr));
}

template <class Scalar>
BiasTerms<Scalar> SyntaxBiasedAttention<Scalar>::bias_terms(const GradientTarget* target) const {
  const bool fused = id_.logits >= 0;
  return BiasTerms<Scalar>(
      options_.bias, options_.heads, store_.value_data(id_.table), store_.value_data(id_.scale),
      target ? grad_at(*target, id_.table) : nullptr, target ? grad_at(*target, id_.scale) : nullptr,
      fused ? store_.value_data(id_.logits) : nullptr, fused && target ? grad_at(*target, id_.logits) : nullptr);
}

template <class Scalar>
Index SyntaxBiasedAttention<Scalar>::histogram_width() const noexcept {
  return (kernels::kHistogramCopies + tree_views() - 1) * histogram_slots();
}

template <class Scalar>
Scalar* SyntaxBiasedAttention<Scalar>::grad_at(const GradientTarget& target, int id) const {
  return target.buffer ? target.buffer + store_.info(id).offset : target.store->gradient_data(id);
}

// ---------------------------------------------------------------------------
// Validation (the checks themselves: validation.hpp)
// ---------------------------------------------------------------------------

template <class Scalar>
AttentionFingerprint SyntaxBiasedAttention<Scalar>::fingerprint(AttentionKind kind) const noexcept {
  AttentionFingerprint f;
  f.d_model = options_.d_model;
  f.heads = options_.heads;
  f.key_size = dk_;
  f.value_size = dv_;
  f.memory_size = dm_kv_;
  f.syntax_bias = options_.syntax_bias;
  f.num_buckets = num_buckets();
  f.per_head = options_.syntax_bias && options_.bias.per_head;
  f.views = tree_views();
  f.shared_view_table = f.views > 1 && options_.bias.fusion.shared_table;
  f.per_head_view_weights = f.views > 1 && options_.bias.fusion.per_head_weights;
  f.causal = options_.causal;
  f.talking_heads_pre = options_.talking_heads_pre;
  f.talking_heads_post = options_.talking_heads_post;
  f.cross = kind == AttentionKind::cross;
  return f;
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::check_backward(const char* fn, const Cache& c, const Eigen::Ref<const Matrix>& dout,
                                                   const InputGradients& dinput, Index gradient_size) const {
  using detail::error_prefix;
  if (c.inference_)
    throw Error(error_prefix(fn) + "the cache was last used by infer(), which keeps nothing to differentiate; "
                                   "call forward() before backward()");
  if (c.empty()) throw Error(error_prefix(fn) + "the cache holds no forward pass");
  // Every buffer width, the bucket range and the masking the backward pass
  // reads follow from the fingerprint: equal fingerprints, safe cache.
  const AttentionFingerprint mine = fingerprint(c.cross_ ? AttentionKind::cross : AttentionKind::self);
  if (c.fingerprint_ != mine)
    throw Error(error_prefix(fn) + "the cache was filled by a layer with " + c.fingerprint_.describe() +
                "; this layer has " + mine.describe());
  // Same shape is not enough: another layer's cache holds its Q, K and V, and
  // a used one would add its gradients a second time.
  c.stamp_.check(fn, identity_);
  detail::check_shape(fn, "dout", dout.rows(), dout.cols(), c.batch_ * c.n_q_, options_.d_model);
  if (options_.check_finite) detail::check_finite_tokens<Scalar>(fn, "dout", dout, c.n_q_);
  detail::check_shape(fn, c.cross_ ? "dx (dL/dx_q)" : "dx", dinput.dx.rows(), dinput.dx.cols(),
                                c.batch_ * c.n_q_, options_.d_model);
  if (c.cross_)
    detail::check_shape(fn, "dmemory", dinput.dmemory.rows(), dinput.dmemory.cols(), c.batch_ * c.n_kv_,
                                  dm_kv_);
  else if (dinput.dmemory.size() != 0)
    throw Error(error_prefix(fn) + "the cache holds a self-attention pass, which has no memory; leave dmemory out");
  if (gradient_size != store_.size())
    throw Error(error_prefix(fn) + "gradients has " + std::to_string(gradient_size) + " entries, expected " +
                std::to_string(store_.size()) + " (parameter_count())");
}

// An input built without buckets ({x, lengths}) for a layer that has a
// syntax bias: say so, instead of a shape error about a 0 x 0 block.
template <class Scalar>
void SyntaxBiasedAttention<Scalar>::check_buckets_given(const char* fn, const Eigen::Ref<const BucketBlock>& buckets,
                                                        Index query_rows) const {
  if (options_.syntax_bias && query_rows > 0 && buckets.rows() == 0 && buckets.cols() == 0)
    throw Error(detail::error_prefix(fn) +
                "the layer has a syntax bias; pass the bucket block ({x, lengths, buckets}, from make_bucket_batch or "
                "bucketize)");
}

template <class Scalar>
Index SyntaxBiasedAttention<Scalar>::check_inputs(const char* fn, const SelfInput& in, Index out_rows,
                                                  Index out_cols) const {
  using namespace detail;
  check_self_memory(fn);
  check_buckets_given(fn, in.buckets, in.x.rows());
  if (options_.syntax_bias) check_length_count(fn, "lengths", in.lengths.size(), "x", in.x.rows(), in.buckets.cols());
  const Index batch = static_cast<Index>(in.lengths.size());
  const Index n = check_self_tokens(fn, in.x, "lengths", in.lengths, batch);
  if (options_.syntax_bias) check_bucket_views(fn, in.buckets, in.lengths, in.lengths, n, n, options_.bias);
  check_self_output(fn, in.x, n, batch, out_rows, out_cols);
  return n;
}

template <class Scalar>
std::pair<Index, Index> SyntaxBiasedAttention<Scalar>::check_inputs(const char* fn, const CrossInput& in,
                                                                    Index out_rows, Index out_cols) const {
  using namespace detail;
  if (options_.causal)
    throw Error(error_prefix(fn) + "causal masking is defined for self-attention only (options.causal is set)");
  check_buckets_given(fn, in.buckets, in.x_q.rows());
  if (options_.syntax_bias)
    check_length_count(fn, "lengths_kv", in.lengths_kv.size(), "memory", in.memory.rows(), in.buckets.cols());
  const Index batch = static_cast<Index>(in.lengths_q.size());
  if (static_cast<Index>(in.lengths_kv.size()) != batch)
    throw Error(error_prefix(fn) + "lengths_q has " + std::to_string(batch) + " entries but lengths_kv has " +
                std::to_string(in.lengths_kv.size()) + "; both give one length per sequence");
  const Index n_q = check_tokens(fn, "x_q", in.x_q.rows(), in.x_q.cols(), batch, options_.d_model);
  const Index n_kv = check_tokens(fn, "memory", in.memory.rows(), in.memory.cols(), batch, dm_kv_);
  check_lengths(fn, "lengths_q", in.lengths_q, n_q);
  check_lengths(fn, "lengths_kv", in.lengths_kv, n_kv);
  if (options_.syntax_bias) check_bucket_views(fn, in.buckets, in.lengths_q, in.lengths_kv, n_q, n_kv, options_.bias);
  check_shape(fn, "out", out_rows, out_cols, batch * n_q, options_.d_model);
  if (options_.check_finite) {
    check_finite_tokens<Scalar>(fn, "x_q", in.x_q, n_q);
    check_finite_tokens<Scalar>(fn, "memory", in.memory, n_kv);
    check_finite_parameters<Scalar>(fn, store_);
  }
  return {n_q, n_kv};
}

template <class Scalar>
Index SyntaxBiasedAttention<Scalar>::check_inputs(const char* fn, const PackedInput& in, Index out_rows,
                                                  Index out_cols) const {
  using namespace detail;
  const std::string where = error_prefix(fn) + "packed documents ";
  check_self_memory(fn);
  // The sentence window masks through the bias's -inf slot, one view's.
  if (!options_.syntax_bias) throw Error(where + "need a layer with a syntax bias (syntax_bias is false)");
  if (options_.bias.fusion.views > 1)
    throw Error(where + "take one tree view (bias.fusion.views is " + std::to_string(options_.bias.fusion.views) + ")");
  if (options_.talking_heads_pre || options_.talking_heads_post)
    throw Error(where + "cannot run talking heads, which mix whole n x n score blocks");
  if (options_.path == AttentionPath::materialized)
    throw Error(where + "keep no probabilities: they take the fused path, and options.path is materialized");
  const PackedBuckets& p = in.buckets;
  if (p.max_bucket() >= num_buckets())
    throw Error(where + "have bucket " + std::to_string(p.max_bucket()) + " (" +
                (p.cross_bucket() == p.max_bucket() ? "the cross-sentence bucket" : "in a sentence's block") +
                "), but the layer's table has " + std::to_string(num_buckets()) + " buckets");
  const Index batch = p.sequences();
  const Index n = check_self_tokens(fn, in.x, "the packing's lengths", p.lengths(), batch);
  check_self_output(fn, in.x, n, batch, out_rows, out_cols);
  return n;
}

// The steps the self-attention checks (one sequence list, plain or packed)
// share, so that both name a fault in the same words.
template <class Scalar>
void SyntaxBiasedAttention<Scalar>::check_self_memory(const char* fn) const {
  if (dm_kv_ != options_.d_model)
    throw Error(detail::error_prefix(fn) +
                "self-attention needs memory_size == d_model (the layer has memory_size " + std::to_string(dm_kv_) +
                ", d_model " + std::to_string(options_.d_model) + ")");
}

template <class Scalar>
Index SyntaxBiasedAttention<Scalar>::check_self_tokens(const char* fn, const Eigen::Ref<const Matrix>& x,
                                                       const char* lengths_name, const std::vector<int>& lengths,
                                                       Index batch) const {
  const Index n = detail::check_tokens(fn, "x", x.rows(), x.cols(), batch, options_.d_model);
  detail::check_lengths(fn, lengths_name, lengths, n);
  return n;
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::check_self_output(const char* fn, const Eigen::Ref<const Matrix>& x, Index n,
                                                      Index batch, Index out_rows, Index out_cols) const {
  detail::check_shape(fn, "out", out_rows, out_cols, batch * n, options_.d_model);
  if (options_.check_finite) {
    detail::check_finite_tokens<Scalar>(fn, "x", x, n);
    detail::check_finite_parameters<Scalar>(fn, store_);
  }
}

// ---------------------------------------------------------------------------
// The verbs (the passes: forward_pass.hpp, backward_pass.hpp)
// ---------------------------------------------------------------------------

// A training pass copies x (and memory) and the buckets into the cache: the
// weight gradients and the bias's histogram need them in backward().
template <class Scalar>
void SyntaxBiasedAttention<Scalar>::forward(const SelfInput& in, Cache& cache, Eigen::Ref<Matrix> out,
                                            const RandomStream* dropout) const {
  const char* fn = "SyntaxBiasedAttention::forward";
  const Index n = check_inputs(fn, in, out.rows(), out.cols());
  prepare_cache(cache, AttentionKind::self, detail::Pass::training, static_cast<Index>(in.lengths.size()),
                n, n, in.lengths, in.lengths);
  set_dropout(cache, dropout);
  cache.x_q_ = in.x;
  if (options_.syntax_bias) cache.buckets_ = in.buckets;
  training_forward(fn, cache, in.x, nullptr, in.buckets, out);
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::forward(const CrossInput& in, Cache& cache, Eigen::Ref<Matrix> out,
                                            const RandomStream* dropout) const {
  const char* fn = "SyntaxBiasedAttention::forward";
  const auto [n_q, n_kv] = check_inputs(fn, in, out.rows(), out.cols());
  prepare_cache(cache, AttentionKind::cross, detail::Pass::training,
                static_cast<Index>(in.lengths_q.size()), n_q, n_kv, in.lengths_q, in.lengths_kv);
  set_dropout(cache, dropout);
  cache.x_q_ = in.x_q;
  cache.x_kv_ = in.memory;
  if (options_.syntax_bias) cache.buckets_ = in.buckets;
  training_forward(fn, cache, in.x_q, &in.memory, in.buckets, out);
}

// A training pass keeps a copy of the packing (sum of n_i^2 bytes), not of
// an n x n block.
template <class Scalar>
void SyntaxBiasedAttention<Scalar>::forward(const PackedInput& in, Cache& cache, Eigen::Ref<Matrix> out,
                                            const RandomStream* dropout) const {
  const char* fn = "SyntaxBiasedAttention::forward";
  const Index n = check_inputs(fn, in, out.rows(), out.cols());
  const std::vector<int> lengths = in.buckets.lengths();  // prepare_cache copies them; `in` may alias the cache's
  prepare_cache(cache, AttentionKind::self, detail::Pass::training, in.buckets.sequences(), n, n, lengths,
                lengths, &in.buckets);
  set_dropout(cache, dropout);
  cache.x_q_ = in.x;
  if (&cache.packed_ != &in.buckets) cache.packed_ = in.buckets;
  training_forward(fn, cache, in.x, nullptr, detail::no_buckets(), out, &cache.packed_);
}

// The last step of every forward(): the pass, then the cache marked as
// filled by this layer (what backward() checks first).
template <class Scalar>
void SyntaxBiasedAttention<Scalar>::training_forward(const char* fn, Cache& cache, const Eigen::Ref<const Matrix>& x_q,
                                                     const Eigen::Ref<const Matrix>* x_kv,
                                                     const Eigen::Ref<const BucketBlock>& buckets,
                                                     Eigen::Ref<Matrix> out, const PackedBuckets* packed) const {
  forward_core(fn, cache, x_q, x_kv, buckets, detail::Pass::training, out, packed);
  cache.filled_ = true;
  cache.stamp_.stamp(identity_);
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::infer(const PackedInput& in, Cache& workspace, Eigen::Ref<Matrix> out) const {
  const char* fn = "SyntaxBiasedAttention::infer";
  const Index n = check_inputs(fn, in, out.rows(), out.cols());
  const std::vector<int> lengths = in.buckets.lengths();
  prepare_cache(workspace, AttentionKind::self, detail::Pass::inference, in.buckets.sequences(), n, n,
                lengths, lengths, &in.buckets);
  forward_core(fn, workspace, in.x, nullptr, detail::no_buckets(), detail::Pass::inference, out,
               &in.buckets);
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::infer(const SelfInput& in, Cache& workspace, Eigen::Ref<Matrix> out) const {
  const char* fn = "SyntaxBiasedAttention::infer";
  const Index n = check_inputs(fn, in, out.rows(), out.cols());
  prepare_cache(workspace, AttentionKind::self, detail::Pass::inference,
                static_cast<Index>(in.lengths.size()), n, n, in.lengths, in.lengths);
  forward_core(fn, workspace, in.x, nullptr, in.buckets, detail::Pass::inference, out);
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::infer(const CrossInput& in, Cache& workspace, Eigen::Ref<Matrix> out) const {
  const char* fn = "SyntaxBiasedAttention::infer";
  const auto [n_q, n_kv] = check_inputs(fn, in, out.rows(), out.cols());
  prepare_cache(workspace, AttentionKind::cross, detail::Pass::inference,
                static_cast<Index>(in.lengths_q.size()), n_q, n_kv, in.lengths_q, in.lengths_kv);
  forward_core(fn, workspace, in.x_q, &in.memory, in.buckets, detail::Pass::inference, out);
}



template <class Scalar>
void SyntaxBiasedAttention<Scalar>::backward(Cache& cache, const Eigen::Ref<const Matrix>& dout,
                                             const InputGradients& dinput) {
  check_backward("SyntaxBiasedAttention::backward", cache, dout, dinput, store_.size());
  backward_core(cache, dout, dinput, GradientTarget{nullptr, &store_});  // own (possibly bound) gradients
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::backward(Cache& cache, const Eigen::Ref<const Matrix>& dout,
                                             const InputGradients& dinput, Eigen::Ref<Vector> gradients) const {
  check_backward("SyntaxBiasedAttention::backward", cache, dout, dinput, gradients.size());
  backward_core(cache, dout, dinput, GradientTarget{gradients.data(), nullptr});
}

}  // namespace synattn

#include "forward_pass.hpp"
#include "backward_pass.hpp"

#endif  // SYNATTN_ATTENTION_SYNTAX_ATTENTION_IMPL_HPP
