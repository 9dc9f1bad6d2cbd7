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
#include <string>
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

namespace attention_detail {

// dst (cols) += sum of the rows of src (rows, cols), in row order: deterministic.
template <class Src, class Scalar>
void add_row_sums(const Src& src, Scalar* dst) {
  Eigen::Map<Eigen::Matrix<Scalar, 1, Eigen::Dynamic>> acc(dst, src.cols());
  for (Index r = 0; r < src.rows(); ++r) acc += src.row(r);
}

}  // namespace attention_detail

// ---------------------------------------------------------------------------
// Construction and parameters
// ---------------------------------------------------------------------------

template <class Scalar>
SyntaxBiasedAttention<Scalar>::SyntaxBiasedAttention(const AttentionOptions& options) : options_(options) {
  options_.validate();
  attention_detail::validate_options_for<Scalar>(options_, attention_detail::scalar_name<Scalar>());
  simd_notice();  // once per process: names the -march flags this build lacks (util/simd_notice.hpp)
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
    id_.table =
        store_.add("table", options_.bias.per_head ? h : 1, options_.bias.num_buckets(), options_.bias.table_learnable);
    id_.scale = store_.add("scale", 1, 1, options_.bias.scale_learnable);
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
  return table_ref(nullptr, true);
}

// A view whose values are the layer's and whose gradients live in `gradients`
// (a caller's buffer laid out like the layer's, or with own_gradients the
// layer's own, possibly bound, gradients). Forward only reads through it.
template <class Scalar>
BiasTableRef<Scalar> SyntaxBiasedAttention<Scalar>::table_ref(Scalar* gradients, bool own_gradients) const {
  Scalar* values_t = const_cast<Scalar*>(store_.value_data(id_.table));
  Scalar* values_s = const_cast<Scalar*>(store_.value_data(id_.scale));
  const bool g = gradients || own_gradients;
  return BiasTableRef<Scalar>(options_.bias, options_.heads, values_t, values_s,
                              g ? grad_at(gradients, id_.table) : nullptr, g ? grad_at(gradients, id_.scale) : nullptr);
}

// Gradient storage of parameter `id`: inside a caller's buffer laid out like
// the layer's, or (gradients == null) the layer's own, possibly bound to a
// model's buffer.
template <class Scalar>
Scalar* SyntaxBiasedAttention<Scalar>::grad_at(Scalar* gradients, int id) const {
  return gradients ? gradients + store_.info(id).offset : const_cast<Scalar*>(store_.gradient_data(id));
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
  f.causal = options_.causal;
  f.talking_heads_pre = options_.talking_heads_pre;
  f.talking_heads_post = options_.talking_heads_post;
  f.cross = kind == AttentionKind::cross;
  return f;
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::check_backward(const char* fn, const Cache& c, const Eigen::Ref<const Matrix>& dout,
                                                   const InputGradients& dinput, Index gradient_size) const {
  using attention_detail::error_prefix;
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
  attention_detail::check_shape(fn, "dout", dout.rows(), dout.cols(), c.batch_ * c.n_q_, options_.d_model);
  if (options_.check_finite) attention_detail::check_finite_tokens<Scalar>(fn, "dout", dout, c.n_q_);
  attention_detail::check_shape(fn, c.cross_ ? "dx (dL/dx_q)" : "dx", dinput.dx.rows(), dinput.dx.cols(),
                                c.batch_ * c.n_q_, options_.d_model);
  if (c.cross_)
    attention_detail::check_shape(fn, "dmemory", dinput.dmemory.rows(), dinput.dmemory.cols(), c.batch_ * c.n_kv_,
                                  dm_kv_);
  else if (dinput.dmemory.size() != 0)
    throw Error(error_prefix(fn) + "the cache holds a self-attention pass, which has no memory; leave dmemory out");
  if (gradient_size != store_.size())
    throw Error(error_prefix(fn) + "gradients has " + std::to_string(gradient_size) + " entries, expected " +
                std::to_string(store_.size()) + " (parameter_count())");
}

template <class Scalar>
Index SyntaxBiasedAttention<Scalar>::check_inputs(const char* fn, const SelfInput& in, Index out_rows,
                                                  Index out_cols) const {
  using namespace attention_detail;
  if (dm_kv_ != options_.d_model)
    throw Error(error_prefix(fn) + "self-attention needs memory_size == d_model (the layer has memory_size " +
                std::to_string(dm_kv_) + ", d_model " + std::to_string(options_.d_model) + ")");
  if (options_.syntax_bias) check_length_count(fn, "lengths", in.lengths.size(), "x", in.x.rows(), in.buckets.cols());
  const Index batch = static_cast<Index>(in.lengths.size());
  const Index n = check_tokens(fn, "x", in.x.rows(), in.x.cols(), batch, options_.d_model);
  check_lengths(fn, "lengths", in.lengths, n);
  if (options_.syntax_bias) check_buckets(fn, in.buckets, in.lengths, in.lengths, n, n, options_.bias);
  check_shape(fn, "out", out_rows, out_cols, batch * n, options_.d_model);
  if (options_.check_finite) {
    check_finite_tokens<Scalar>(fn, "x", in.x, n);
    check_finite_parameters<Scalar>(fn, store_);
  }
  return n;
}

template <class Scalar>
std::pair<Index, Index> SyntaxBiasedAttention<Scalar>::check_inputs(const char* fn, const CrossInput& in,
                                                                    Index out_rows, Index out_cols) const {
  using namespace attention_detail;
  if (options_.causal)
    throw Error(error_prefix(fn) + "causal masking is defined for self-attention only (options.causal is set)");
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
  if (options_.syntax_bias) check_buckets(fn, in.buckets, in.lengths_q, in.lengths_kv, n_q, n_kv, options_.bias);
  check_shape(fn, "out", out_rows, out_cols, batch * n_q, options_.d_model);
  if (options_.check_finite) {
    check_finite_tokens<Scalar>(fn, "x_q", in.x_q, n_q);
    check_finite_tokens<Scalar>(fn, "memory", in.memory, n_kv);
    check_finite_parameters<Scalar>(fn, store_);
  }
  return {n_q, n_kv};
}

// ---------------------------------------------------------------------------
// Forward and inference: the verbs
// ---------------------------------------------------------------------------

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::prepare_cache(Cache& c, AttentionKind kind, attention_detail::Pass pass,
                                                  Index batch, Index n_q, Index n_kv,
                                                  const std::vector<int>& lengths_q,
                                                  const std::vector<int>& lengths_kv) const {
  const bool cross = kind == AttentionKind::cross;
  const bool training = pass == attention_detail::Pass::training;
  const Index h = options_.heads;
  const bool mixing = options_.talking_heads_pre || options_.talking_heads_post;
  c.filled_ = false;
  c.stamp_.clear();
  c.inference_ = !training;
  c.cross_ = cross;
  c.fingerprint_ = fingerprint(kind);
  c.batch_ = batch;
  c.n_q_ = n_q;
  c.n_kv_ = n_kv;
  c.heads_ = options_.heads;
  c.lengths_q_ = lengths_q;
  c.lengths_kv_ = lengths_kv;
  c.dropout_ = false;  // armed by set_dropout() for a training forward with a stream
  c.qkv_.resize(batch * n_q, cross ? h * dk_ : h * (2 * dk_ + dv_));
  if (cross)
    c.kv_.resize(batch * n_kv, h * (dk_ + dv_));
  else
    c.kv_.resize(0, 0);
  // Inference without talking heads never leaves the per-thread score blocks.
  if (training || mixing)
    c.probs_.resize(batch * h * n_q, n_kv);
  else
    c.probs_.resize(0, 0);
  if (options_.talking_heads_pre)
    c.raw_.resize(c.probs_.rows(), n_kv);
  else
    c.raw_.resize(0, 0);
  if (options_.talking_heads_post)
    c.mixed_.resize(c.probs_.rows(), n_kv);
  else
    c.mixed_.resize(0, 0);
  c.ctx_.resize(batch * n_q, h * dv_);
  if (!training || !cross) c.x_kv_.resize(0, 0);
  if (!training) c.x_q_.resize(0, 0);
  if (!training || !options_.syntax_bias) c.buckets_.resize(0, 0);
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::set_dropout(Cache& c, const RandomStream* dropout_stream) const {
  c.dropout_ = dropout_stream != nullptr && options_.dropout > 0.0;
  if (!c.dropout_) return;
  c.dropout_stream_ = *dropout_stream;
  c.drop_threshold_ = drop_threshold(options_.dropout);
  // One division here, so the mask passes only multiply.
  c.keep_scale_ = static_cast<Scalar>(1.0 / (1.0 - options_.dropout));
}

// A training pass copies x (and memory) and the buckets into the cache: the
// weight gradients and the bias's histogram need them in backward().
template <class Scalar>
void SyntaxBiasedAttention<Scalar>::forward(const SelfInput& in, Cache& cache, Eigen::Ref<Matrix> out,
                                            const RandomStream* dropout) const {
  const char* fn = "SyntaxBiasedAttention::forward";
  const Index n = check_inputs(fn, in, out.rows(), out.cols());
  prepare_cache(cache, AttentionKind::self, attention_detail::Pass::training, static_cast<Index>(in.lengths.size()),
                n, n, in.lengths, in.lengths);
  set_dropout(cache, dropout);
  cache.x_q_ = in.x;
  if (options_.syntax_bias) cache.buckets_ = in.buckets;
  forward_core(fn, cache, in.x, nullptr, in.buckets, attention_detail::Pass::training, out);
  cache.filled_ = true;
  cache.stamp_.stamp(identity_);
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::forward(const CrossInput& in, Cache& cache, Eigen::Ref<Matrix> out,
                                            const RandomStream* dropout) const {
  const char* fn = "SyntaxBiasedAttention::forward";
  const auto [n_q, n_kv] = check_inputs(fn, in, out.rows(), out.cols());
  prepare_cache(cache, AttentionKind::cross, attention_detail::Pass::training,
                static_cast<Index>(in.lengths_q.size()), n_q, n_kv, in.lengths_q, in.lengths_kv);
  set_dropout(cache, dropout);
  cache.x_q_ = in.x_q;
  cache.x_kv_ = in.memory;
  if (options_.syntax_bias) cache.buckets_ = in.buckets;
  forward_core(fn, cache, in.x_q, &in.memory, in.buckets, attention_detail::Pass::training, out);
  cache.filled_ = true;
  cache.stamp_.stamp(identity_);
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::infer(const SelfInput& in, Cache& workspace, Eigen::Ref<Matrix> out) const {
  const char* fn = "SyntaxBiasedAttention::infer";
  const Index n = check_inputs(fn, in, out.rows(), out.cols());
  prepare_cache(workspace, AttentionKind::self, attention_detail::Pass::inference,
                static_cast<Index>(in.lengths.size()), n, n, in.lengths, in.lengths);
  forward_core(fn, workspace, in.x, nullptr, in.buckets, attention_detail::Pass::inference, out);
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::infer(const CrossInput& in, Cache& workspace, Eigen::Ref<Matrix> out) const {
  const char* fn = "SyntaxBiasedAttention::infer";
  const auto [n_q, n_kv] = check_inputs(fn, in, out.rows(), out.cols());
  prepare_cache(workspace, AttentionKind::cross, attention_detail::Pass::inference,
                static_cast<Index>(in.lengths_q.size()), n_q, n_kv, in.lengths_q, in.lengths_kv);
  forward_core(fn, workspace, in.x_q, &in.memory, in.buckets, attention_detail::Pass::inference, out);
}

// ---------------------------------------------------------------------------
// Forward: the pass proper, on validated inputs (steps: forward_steps.hpp)
// ---------------------------------------------------------------------------

template <class Scalar>
attention_detail::BlockGeometry SyntaxBiasedAttention<Scalar>::geometry(const Cache& c) const {
  attention_detail::BlockGeometry g;
  g.batch = c.batch_;
  g.n_q = c.n_q_;
  g.n_kv = c.n_kv_;
  g.dk = dk_;
  g.dv = dv_;
  g.heads = options_.heads;
  const Index hdk = Index(options_.heads) * dk_;
  g.k_off = c.cross_ ? 0 : hdk;
  g.v_off = c.cross_ ? hdk : 2 * hdk;
  g.causal = options_.causal;
  g.lengths_q = &c.lengths_q_;
  g.lengths_kv = &c.lengths_kv_;
  return g;
}

// Phases:
//   1. projections over all tokens (fixed row blocks),
//   2. per (sequence, head): scores, [pre-mix per sequence], bias + mask +
//      softmax, [post-mix per sequence], [dropout], P V,
//   3. output projection.
// Without talking heads phase 2 is one task per (sequence, head, row block),
// so each score block is produced, normalised and consumed while in cache.
template <class Scalar>
void SyntaxBiasedAttention<Scalar>::forward_core(const char* fn, Cache& c, const Eigen::Ref<const Matrix>& x_q,
                                                 const Eigen::Ref<const Matrix>* x_kv,
                                                 const Eigen::Ref<const BucketBlock>& buckets,
                                                 attention_detail::Pass pass, Eigen::Ref<Matrix> out) const {
  const attention_detail::BlockGeometry g = geometry(c);
  project_inputs(c, x_q, x_kv);
  // The table as the kernels read it (null without a syntax bias).
  const BiasTableRef<Scalar> table_view =
      options_.syntax_bias ? table_ref(nullptr, false)
                           : BiasTableRef<Scalar>(options_.bias, options_.heads, nullptr, nullptr, nullptr, nullptr);
  const BiasTableRef<Scalar>* table = options_.syntax_bias ? &table_view : nullptr;
  if (options_.check_finite) {
    // The safe input range (docs/math.md 4.5): refuse what would overflow
    // instead of returning NaN or silently masked rows.
    double max_bias[kMaxHeadsOnStack];
    std::vector<double> max_bias_heap;
    double* mb = max_bias;
    if (options_.heads > kMaxHeadsOnStack) {
      max_bias_heap.resize(static_cast<std::size_t>(options_.heads));
      mb = max_bias_heap.data();
    }
    if (table) attention_detail::check_bias_products<Scalar>(fn, *table, mb);
    // Pre-mixing talking heads mix the raw scores: |mixed| <= max row sum of |M_pre| x the largest.
    const double mix_gain =
        options_.talking_heads_pre
            ? double(Eigen::Map<const Matrix>(store_.value_data(id_.pre), options_.heads, options_.heads)
                         .cwiseAbs()
                         .rowwise()
                         .sum()
                         .maxCoeff())
            : 0.0;
    attention_detail::check_score_range<Scalar>(fn, c.qkv_, c.cross_ ? c.kv_ : c.qkv_, g, inv_sqrt_dk_,
                                                table ? mb : nullptr, mix_gain);
  }
  if (!options_.talking_heads_pre && !options_.talking_heads_post)
    attend_fused(c, g, buckets, table, pass);
  else
    attend_mixed(c, g, buckets, table);
  project_output(c, out);
  if (options_.check_finite) attention_detail::check_finite_output<Scalar>(fn, out);
}

// 1. Projections.
//   self:  qkv (B*n, 2h*dk + h*dv) = x (B*n, d) [Wq; Wk; Wv]^T (d, 2h*dk + h*dv) + [bq, bk, bv]
//   cross: q (B*n_q, h*dk) = x_q (B*n_q, d) Wq^T + bq;
//          kv (B*n_kv, h*dk + h*dv) = memory (B*n_kv, d_mem) [Wk; Wv]^T + [bk, bv]
template <class Scalar>
void SyntaxBiasedAttention<Scalar>::project_inputs(Cache& c, const Eigen::Ref<const Matrix>& x_q,
                                                   const Eigen::Ref<const Matrix>* x_kv) const {
  using ConstMap = Eigen::Map<const Matrix>;
  using ConstRow = Eigen::Map<const Eigen::Matrix<Scalar, 1, Eigen::Dynamic>>;
  const Index nq_rows = c.batch_ * c.n_q_, hdk = Index(options_.heads) * dk_;
  if (!c.cross_) {
    const ConstMap w(store_.value_data(id_.wq), c.qkv_.cols(), options_.d_model);  // [Wq; Wk; Wv]
    const ConstRow b(store_.value_data(id_.bq), c.qkv_.cols());                    // [bq, bk, bv]
    parallel_chunks(nq_rows, double(w.size()), [&](Index r0, Index m) {
      kernels::linear_product<Scalar>(c.qkv_.middleRows(r0, m), x_q.middleRows(r0, m), w, b.data());
    });
  } else {
    const ConstMap w_q(store_.value_data(id_.wq), hdk, options_.d_model);  // Wq (h*dk, d)
    const ConstRow b_q(store_.value_data(id_.bq), hdk);
    const ConstMap w_kv(store_.value_data(id_.wk), c.kv_.cols(), dm_kv_);  // [Wk; Wv] (h*dk + h*dv, d_mem)
    const ConstRow b_kv(store_.value_data(id_.bk), c.kv_.cols());
    parallel_chunks(nq_rows, double(w_q.size()), [&](Index r0, Index m) {
      kernels::linear_product<Scalar>(c.qkv_.middleRows(r0, m), x_q.middleRows(r0, m), w_q, b_q.data());
    });
    parallel_chunks(c.batch_ * c.n_kv_, double(w_kv.size()), [&](Index r0, Index m) {
      kernels::linear_product<Scalar>(c.kv_.middleRows(r0, m), x_kv->middleRows(r0, m), w_kv, b_kv.data());
    });
  }
}

// 2. Attention without talking heads: scores, softmax and P V in a per-thread
// scratch block that stays in cache (writing each block straight into the
// big probability buffer and reading it back made these products ~35%
// slower). P V uses the softmax numerators and scales the (m, dv) result; a
// training pass copies P out normalised, once, after P V. Long sequences are
// cut into row blocks of at most kScoreBlockBytes so the block still fits in
// L2 (a 1024 x 1024 float block is 4 MB). The cut depends on the shape only,
// so results stay the same for every thread count.
template <class Scalar>
void SyntaxBiasedAttention<Scalar>::attend_fused(Cache& c, const attention_detail::BlockGeometry& g,
                                                 const Eigen::Ref<const BucketBlock>& buckets,
                                                 const BiasTableRef<Scalar>* table, attention_detail::Pass pass) const {
  using namespace attention_detail;
  using BlockMap = Eigen::Map<Matrix>;
  using ConstBlockMap = Eigen::Map<const Matrix>;
  const Index nq = g.n_q, nkv = g.n_kv, H = g.heads;
  const bool training = pass == Pass::training;
  const Matrix& kvsrc = c.cross_ ? c.kv_ : c.qkv_;
  const DropoutMask<Scalar> mask{&c.dropout_stream_, c.drop_threshold_, c.keep_scale_};
  const bool drop = c.dropout_;
  const Index rows = score_block_rows<Scalar>(nq, nkv);
  const Index row_blocks = (nq + rows - 1) / rows;
  const double work = double(g.tasks()) * double(nq) * double(nkv) * double(g.dk + g.dv);
  const int team = team_size(work);
  c.scratch_.resize(team * rows, nkv);
  c.inv_sum_.resize(static_cast<std::size_t>(team * rows));
  // Streaming stores for P once it clearly outgrows the caches (measured at
  // 16 MB, (1, 1024, 256, 4): forward + backward 1.15x -> 1.10x its GEMMs).
  const bool stream_probs = double(c.probs_.size()) * sizeof(Scalar) > double(kStreamingBytes);
  parallel_for_threads(g.tasks() * row_blocks, work, [&](Index t, int thread) {
    const Index task = t / row_blocks, r0 = (t % row_blocks) * rows;
    const Index b = task / H;
    const int a = static_cast<int>(task % H);
    const Index m = std::min(rows, nq - r0);
    BlockMap S(c.scratch_.data() + Index(thread) * rows * nkv, m, nkv);  // (m, n_kv)
    Scalar* inv = c.inv_sum_.data() + Index(thread) * rows;              // (m)
    attention_scores<Scalar>(S, c.qkv_, kvsrc, g, b, a, r0, inv_sqrt_dk_);
    softmax_numerators_block<Scalar>(S, buckets.data(), buckets.outerStride(), table, g, b, a, r0, inv);
    // P rows [r0, r0 + m) of block `task` in the cache: (m, n_kv).
    Scalar* probs = training ? block_of(c.probs_, task, nq, nkv).middleRows(r0, m).data() : nullptr;
    if (!drop) {
      context_forward<Scalar>(c.ctx_, ConstBlockMap(S.data(), m, nkv), kvsrc, g, b, a, r0, inv);
      if (training) kernels::scale_rows<Scalar>(probs, nkv, S.data(), nkv, m, nkv, inv, stream_probs);
    } else {
      // P is kept before dropout (backward redraws the mask), so it is
      // copied out first; the mask then goes on the numerators in place and
      // ctx = (e * M / (1 - p)) V / rowsum(e) = P' V.
      if (training) kernels::scale_rows<Scalar>(probs, nkv, S.data(), nkv, m, nkv, inv, stream_probs);
      dropout_block<Scalar>(S.data(), S.data(), mask, g, task, r0, m);
      context_forward<Scalar>(c.ctx_, ConstBlockMap(S.data(), m, nkv), kvsrc, g, b, a, r0, inv);
    }
  });
}

// 2. Attention with talking heads: whole (n_q, n_kv) blocks in the cache's
// buffers, since the mixing reads every head's block of a sequence.
template <class Scalar>
void SyntaxBiasedAttention<Scalar>::attend_mixed(Cache& c, const attention_detail::BlockGeometry& g,
                                                 const Eigen::Ref<const BucketBlock>& buckets,
                                                 const BiasTableRef<Scalar>* table) const {
  using namespace attention_detail;
  using BlockMap = Eigen::Map<Matrix>;
  using ConstBlockMap = Eigen::Map<const Matrix>;
  const Index nq = g.n_q, nkv = g.n_kv, H = g.heads, tasks = g.tasks();
  const bool pre = options_.talking_heads_pre, post = options_.talking_heads_post;
  const Matrix& kvsrc = c.cross_ ? c.kv_ : c.qkv_;
  const DropoutMask<Scalar> mask{&c.dropout_stream_, c.drop_threshold_, c.keep_scale_};
  // Multiply-adds of one (n_q, n_kv) block per unit of inner size.
  const double block = double(tasks) * double(nq) * double(nkv);
  parallel_for(tasks, block * double(g.dk), [&](Index t) {
    BlockMap S = block_of(pre ? c.raw_ : c.probs_, t, nq, nkv);  // (n_q, n_kv)
    S.setZero();  // the mixing reads every entry
    attention_scores<Scalar>(S, c.qkv_, kvsrc, g, t / H, static_cast<int>(t % H), 0, inv_sqrt_dk_);
  });
  const Eigen::Map<const Matrix> m_pre(pre ? store_.value_data(id_.pre) : nullptr, H, H);
  const Eigen::Map<const Matrix> m_post(post ? store_.value_data(id_.post) : nullptr, H, H);
  if (pre) parallel_for(g.batch, block * H, [&](Index b) { mix_heads<Scalar>(m_pre, c.raw_, c.probs_, g, b); });
  c.inv_sum_.resize(static_cast<std::size_t>(tasks * nq));
  parallel_for(tasks, block * kSoftmaxWork, [&](Index t) {
    BlockMap P = block_of(c.probs_, t, nq, nkv);  // (n_q, n_kv)
    Scalar* inv = c.inv_sum_.data() + t * nq;     // (n_q)
    softmax_numerators_block<Scalar>(P, buckets.data(), buckets.outerStride(), table, g, t / H,
                                     static_cast<int>(t % H), 0, inv);
    for (Index i = 0; i < nq; ++i) P.row(i) *= inv[i];
  });
  if (post) parallel_for(g.batch, block * H, [&](Index b) { mix_heads<Scalar>(m_post, c.probs_, c.mixed_, g, b); });
  const Matrix& final_probs = post ? c.mixed_ : c.probs_;
  if (!c.dropout_) {
    parallel_for(tasks, block * double(g.dv), [&](Index t) {
      context_forward<Scalar>(c.ctx_, block_of(final_probs, t, nq, nkv), kvsrc, g, t / H, static_cast<int>(t % H), 0,
                              nullptr);
    });
  } else {
    // Dropout after the mixing (PyTorch drops the final attention weights),
    // into a per-thread block so the cache keeps the undropped P (and mixed P).
    const double work = block * double(g.dv);
    c.dropped_.resize(team_size(work) * nq, nkv);
    parallel_for_threads(tasks, work, [&](Index t, int thread) {
      Scalar* D = c.dropped_.data() + Index(thread) * nq * nkv;  // (n_q, n_kv)
      dropout_block<Scalar>(D, block_of(final_probs, t, nq, nkv).data(), mask, g, t, 0, nq);
      context_forward<Scalar>(c.ctx_, ConstBlockMap(D, nq, nkv), kvsrc, g, t / H, static_cast<int>(t % H), 0, nullptr);
    });
  }
}

// 3. Output projection: out (B*n_q, d) = ctx (B*n_q, h*dv) Wo^T (h*dv, d) + bo.
template <class Scalar>
void SyntaxBiasedAttention<Scalar>::project_output(const Cache& c, Eigen::Ref<Matrix> out) const {
  const Eigen::Map<const Matrix> wo(store_.value_data(id_.wo), options_.d_model, Index(options_.heads) * dv_);
  const Eigen::Map<const Eigen::Matrix<Scalar, 1, Eigen::Dynamic>> bo(store_.value_data(id_.bo), options_.d_model);
  parallel_chunks(c.batch_ * c.n_q_, double(wo.size()), [&](Index r0, Index m) {
    kernels::linear_product<Scalar>(out.middleRows(r0, m), c.ctx_.middleRows(r0, m), wo, bo.data());
  });
}

// ---------------------------------------------------------------------------
// Backward: the verb
// ---------------------------------------------------------------------------


template <class Scalar>
void SyntaxBiasedAttention<Scalar>::backward(Cache& cache, const Eigen::Ref<const Matrix>& dout,
                                             const InputGradients& dinput) {
  check_backward("SyntaxBiasedAttention::backward", cache, dout, dinput, store_.size());
  backward_core(cache, dout, dinput, nullptr);  // the layer's own (possibly bound) gradients
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::backward(Cache& cache, const Eigen::Ref<const Matrix>& dout,
                                             const InputGradients& dinput, Eigen::Ref<Vector> gradients) const {
  check_backward("SyntaxBiasedAttention::backward", cache, dout, dinput, gradients.size());
  backward_core(cache, dout, dinput, gradients.data());
}

// ---------------------------------------------------------------------------
// Backward: the pass proper (steps: backward_steps.hpp)
// ---------------------------------------------------------------------------

// With G = dL/dout (B*n_q, d):
//   1. dctx = G Wo, dWo += G^T ctx, dbo += colsum G
//   2. per (sequence, head), reversing phase 2 of the forward:
//        dP~ = dctx V^T, dV = P~^T dctx          (P~: post-mixed P, or P)
//        [dropout] P' = P~ * M/(1-p) redrawn: dV = P'^T dctx, dP~ = (dctx V^T) * M/(1-p)
//        [post] dMpost += dP~ P^T, dP = Mpost^T dP~    (per sequence)
//        dS = P * (dP - rowsum(dP * P)), bucket histogram of dS
//        [pre]  dMpre += dS R^T, dR = Mpre^T dS          (per sequence)
//        dQ = dR K / sqrt(dk), dK = dR^T Q / sqrt(dk)
//   3. dW{q,k,v} += d{q,k,v}^T x, db += colsum, dx = d{q,k,v} W
//   4. table, scale and mixing gradients from the per-task partials, in order.
template <class Scalar>
void SyntaxBiasedAttention<Scalar>::backward_core(Cache& c, const Eigen::Ref<const Matrix>& dout,
                                                  const InputGradients& dinput, Scalar* grads) const {
  const attention_detail::BlockGeometry g = geometry(c);
  c.stamp_.mark_used();  // check_backward() passed: nothing is written before this
  output_projection_backward(c, dout, grads);
  c.dqkv_.resize(c.qkv_.rows(), c.qkv_.cols());
  c.dkv_.resize(c.kv_.rows(), c.kv_.cols());
  const bool mixing = options_.talking_heads_pre || options_.talking_heads_post;
  if (mixing)
    c.dscore2_.resize(c.probs_.rows(), g.n_kv);
  else
    c.dscore2_.resize(0, 0);
  if (table_gradients()) c.hist_.resize(g.tasks(), kernels::kHistogramCopies * histogram_slots());
  if (mixing) c.mix_partial_.resize(g.batch, 2 * g.heads * g.heads);
  if (!mixing)
    attend_backward_fused(c, g);
  else
    attend_backward_mixed(c, g);
  Eigen::Ref<Matrix> dmemory = dinput.dmemory;  // a view of the caller's matrix
  input_projection_backward(c, dinput.dx, c.cross_ ? &dmemory : nullptr, grads);
  reduce_partials(c, g, grads);
}

// 1. Output projection.
template <class Scalar>
void SyntaxBiasedAttention<Scalar>::output_projection_backward(Cache& c, const Eigen::Ref<const Matrix>& dout,
                                                               Scalar* grads) const {
  using attention_detail::add_row_sums;
  const Index d = options_.d_model, hdv = Index(options_.heads) * dv_, rows = c.batch_ * c.n_q_;
  const Eigen::Map<const Matrix> wo(store_.value_data(id_.wo), d, hdv);  // Wo: (d, h*dv)
  Eigen::Map<Matrix> dwo(grad_at(grads, id_.wo), d, hdv);                 // dWo: (d, h*dv)
  Scalar* dbo = grad_at(grads, id_.bo);                                   // dbo: (d)
  c.dctx_.resize(rows, hdv);
  if (rows == 0) return;  // no rows: nothing to add (and no column blocks of empty matrices)
  // dctx (B*n_q, h*dv) = G (B*n_q, d) Wo (d, h*dv)
  parallel_chunks(rows, double(wo.size()),
                  [&](Index r0, Index m) { kernels::product<Scalar>(c.dctx_.middleRows(r0, m), dout.middleRows(r0, m), wo); });
  // dWo[r0:r0+m] (m, h*dv) += G[:, r0:r0+m]^T (m, B*n_q) ctx (B*n_q, h*dv); dbo[r0:r0+m] (m) += colsum G[:, r0:r0+m]
  parallel_chunks(d, double(rows) * double(hdv), [&](Index r0, Index m) {
    kernels::product<Scalar>(dwo.middleRows(r0, m), dout.middleCols(r0, m), c.ctx_, kernels::Transpose::lhs,
                             kernels::Accumulate::add);
    add_row_sums(dout.middleCols(r0, m), dbo + r0);
  });
}

// 2. Without talking heads: dP, then dS, live in a per-thread scratch block
// that stays in cache: one task per (sequence, head) walks the query rows in
// blocks of at most kScoreBlockBytes (like the forward), adding each block's
// share of dK and dV, so even n = 1024 works in L2. The cut depends on the
// shape only: the same sums in the same order for every thread count.
template <class Scalar>
void SyntaxBiasedAttention<Scalar>::attend_backward_fused(Cache& c, const attention_detail::BlockGeometry& g) const {
  using namespace attention_detail;
  using BlockMap = Eigen::Map<Matrix>;
  using ConstBlockMap = Eigen::Map<const Matrix>;
  const Index nq = g.n_q, nkv = g.n_kv, H = g.heads;
  const bool hist = table_gradients(), drop = c.dropout_;
  const Index slots = histogram_slots();
  const Matrix& kvsrc = c.cross_ ? c.kv_ : c.qkv_;
  Matrix& dkvsrc = c.cross_ ? c.dkv_ : c.dqkv_;
  const DropoutMask<Scalar> mask{&c.dropout_stream_, c.drop_threshold_, c.keep_scale_};
  const std::int8_t* buckets = options_.syntax_bias ? c.buckets_.data() : nullptr;
  const Index rows = score_block_rows<Scalar>(nq, nkv);
  const double work = double(g.tasks()) * double(nq) * double(nkv) * double(2 * (g.dk + g.dv));
  const int team = team_size(work);
  c.scratch_.resize(team * rows, nkv);
  c.inv_sum_.resize(static_cast<std::size_t>(team * rows));
  c.dscore_.resize(0, 0);
  if (drop) c.dropped_.resize(team * rows, nkv);
  parallel_for_threads(g.tasks(), work, [&](Index t, int thread) {
    const Index b = t / H;
    const int a = static_cast<int>(t % H);
    Scalar* task_hist = hist ? c.hist_.data() + t * c.hist_.cols() : nullptr;  // kHistogramCopies x slots
    if (hist) std::fill(task_hist, task_hist + c.hist_.cols(), Scalar(0));
    const Index lq = g.lq(b);
    for (Index r0 = 0; r0 < std::max<Index>(lq, 1); r0 += rows) {
      const Index m = std::min(rows, nq - r0);
      BlockMap dS(c.scratch_.data() + Index(thread) * rows * nkv, m, nkv);  // (m, n_kv): dP, then dS
      const Accumulate acc = r0 > 0 ? Accumulate::add : Accumulate::overwrite;
      const ConstBlockMap P(c.probs_.data() + (t * nq + r0) * nkv, m, nkv);  // (m, n_kv)
      context_backward<Scalar>(dS, P, c.dctx_, kvsrc, dkvsrc, g, b, a, r0, acc,
                               drop ? c.dropped_.data() + Index(thread) * rows * nkv : nullptr, drop ? &mask : nullptr);
      Scalar* dots = c.inv_sum_.data() + Index(thread) * rows;  // (m)
      row_dots<Scalar>(dots, c.dctx_, c.ctx_, g, b, a, r0, m);
      softmax_backward_block<Scalar>(dS, c.probs_, buckets, task_hist, static_cast<int>(slots), g, b, a, r0, dots);
      score_backward<Scalar>(ConstBlockMap(dS.data(), m, nkv), c.qkv_, kvsrc, c.dqkv_, dkvsrc, g, b, a, r0,
                             inv_sqrt_dk_, acc);
    }
    // Query rows past the last valid block are padding: dQ = 0 there.
    const Index done = std::min(nq, (std::max<Index>(lq, 1) + rows - 1) / rows * rows);
    if (nq > done) c.dqkv_.block(b * nq + done, a * g.dk, nq - done, g.dk).setZero();
    if (hist) fold_histogram(task_hist, slots);
  });
}

// 2. With talking heads, on whole blocks: dscore_ <- dP~; [post] dscore2_ <-
// dP; dS in the buffer holding dP; [pre] dR into the other buffer.
template <class Scalar>
void SyntaxBiasedAttention<Scalar>::attend_backward_mixed(Cache& c, const attention_detail::BlockGeometry& g) const {
  using namespace attention_detail;
  const Index nq = g.n_q, nkv = g.n_kv, H = g.heads, tasks = g.tasks();
  const bool pre = options_.talking_heads_pre, post = options_.talking_heads_post;
  const bool hist = table_gradients(), drop = c.dropout_;
  const Index slots = histogram_slots();
  const Matrix& kvsrc = c.cross_ ? c.kv_ : c.qkv_;
  Matrix& dkvsrc = c.cross_ ? c.dkv_ : c.dqkv_;
  const DropoutMask<Scalar> mask{&c.dropout_stream_, c.drop_threshold_, c.keep_scale_};
  const std::int8_t* buckets = options_.syntax_bias ? c.buckets_.data() : nullptr;
  const Eigen::Map<const Matrix> m_pre(pre ? store_.value_data(id_.pre) : nullptr, H, H);
  const Eigen::Map<const Matrix> m_post(post ? store_.value_data(id_.post) : nullptr, H, H);
  const double block = double(tasks) * double(nq) * double(nkv);
  c.dscore_.resize(c.probs_.rows(), nkv);
  const double context_work = block * double(2 * g.dv);
  if (drop) c.dropped_.resize(team_size(context_work) * nq, nkv);
  parallel_for_threads(tasks, context_work, [&](Index t, int thread) {
    context_backward<Scalar>(block_of(c.dscore_, t, nq, nkv),
                             block_of(static_cast<const Matrix&>(post ? c.mixed_ : c.probs_), t, nq, nkv),
                             c.dctx_, kvsrc, dkvsrc, g, t / H, static_cast<int>(t % H), 0, Accumulate::overwrite,
                             drop ? c.dropped_.data() + Index(thread) * nq * nkv : nullptr, drop ? &mask : nullptr);
  });
  Matrix* dP = &c.dscore_;
  if (post) {
    parallel_for(g.batch, block * 2 * H, [&](Index b) {
      Scalar* dM = c.mix_partial_.data() + b * c.mix_partial_.cols() + H * H;  // slot 1: (h, h)
      mix_backward<Scalar>(m_post, c.dscore_, c.probs_, c.dscore2_, dM, g, b);
    });
    dP = &c.dscore2_;
  }
  parallel_for(tasks, block * kSoftmaxWork, [&](Index t) {
    Scalar* task_hist = hist ? c.hist_.data() + t * c.hist_.cols() : nullptr;  // kHistogramCopies x slots
    if (hist) std::fill(task_hist, task_hist + c.hist_.cols(), Scalar(0));
    softmax_backward_block<Scalar>(block_of(*dP, t, nq, nkv), c.probs_, buckets, task_hist, static_cast<int>(slots), g,
                                   t / H, static_cast<int>(t % H), 0, nullptr);
    if (hist) fold_histogram(task_hist, slots);
  });
  Matrix* dR = dP;
  if (pre) {
    dR = dP == &c.dscore_ ? &c.dscore2_ : &c.dscore_;
    parallel_for(g.batch, block * 2 * H, [&](Index b) {
      Scalar* dM = c.mix_partial_.data() + b * c.mix_partial_.cols();  // slot 0: (h, h)
      mix_backward<Scalar>(m_pre, *dP, c.raw_, *dR, dM, g, b);
    });
  }
  parallel_for(tasks, block * double(2 * g.dk), [&](Index t) {
    score_backward<Scalar>(block_of(static_cast<const Matrix&>(*dR), t, nq, nkv), c.qkv_, kvsrc, c.dqkv_, dkvsrc, g,
                           t / H, static_cast<int>(t % H), 0, inv_sqrt_dk_, Accumulate::overwrite);
  });
}

// 3. Input projections.
template <class Scalar>
void SyntaxBiasedAttention<Scalar>::input_projection_backward(Cache& c, Eigen::Ref<Matrix> dx_q,
                                                              Eigen::Ref<Matrix>* dmemory, Scalar* grads) const {
  using attention_detail::add_row_sums;
  using ConstMap = Eigen::Map<const Matrix>;
  using Map = Eigen::Map<Matrix>;
  const Index d = options_.d_model, hdk = Index(options_.heads) * dk_, hdv = Index(options_.heads) * dv_;
  const Index nq_rows = c.batch_ * c.n_q_, nkv_rows = c.batch_ * c.n_kv_;
  // With no rows a gradient term is zero: skipped, which also keeps column
  // blocks of empty matrices (null data) out of the products.
  if (!c.cross_) {
    if (nq_rows == 0) return;
    const Index rows = c.qkv_.cols();                      // 2h*dk + h*dv
    const ConstMap w(store_.value_data(id_.wq), rows, d);  // [Wq; Wk; Wv]: (rows, d)
    Map dw(grad_at(grads, id_.wq), rows, d);               // (rows, d)
    Scalar* db = grad_at(grads, id_.bq);                   // (rows)
    // dW[r0:r0+m] (m, d) += dqkv[:, r0:r0+m]^T (m, B*n) x (B*n, d); db[r0:r0+m] (m) += colsum dqkv[:, r0:r0+m]
    parallel_chunks(rows, double(nq_rows) * double(d), [&](Index r0, Index m) {
      kernels::product<Scalar>(dw.middleRows(r0, m), c.dqkv_.middleCols(r0, m), c.x_q_, kernels::Transpose::lhs,
                               kernels::Accumulate::add);
      add_row_sums(c.dqkv_.middleCols(r0, m), db + r0);
    });
    // dx (B*n, d) = dqkv (B*n, rows) [Wq; Wk; Wv] (rows, d)
    parallel_chunks(nq_rows, double(w.size()),
                    [&](Index r0, Index m) { kernels::product<Scalar>(dx_q.middleRows(r0, m), c.dqkv_.middleRows(r0, m), w); });
  } else {
    const ConstMap w_q(store_.value_data(id_.wq), hdk, d);              // Wq: (h*dk, d)
    const ConstMap w_kv(store_.value_data(id_.wk), hdk + hdv, dm_kv_);  // [Wk; Wv]: (h*dk + h*dv, d_mem)
    Map dw_q(grad_at(grads, id_.wq), hdk, d);
    Map dw_kv(grad_at(grads, id_.wk), hdk + hdv, dm_kv_);
    Scalar* db_q = grad_at(grads, id_.bq);
    Scalar* db_kv = grad_at(grads, id_.bk);
    // dWq[r0:r0+m] (m, d) += dq[:, r0:r0+m]^T (m, B*n_q) x_q (B*n_q, d); dbq += colsum
    if (nq_rows > 0) {
      parallel_chunks(hdk, double(nq_rows) * double(d), [&](Index r0, Index m) {
        kernels::product<Scalar>(dw_q.middleRows(r0, m), c.dqkv_.middleCols(r0, m), c.x_q_, kernels::Transpose::lhs,
                                 kernels::Accumulate::add);  // (m, d)
        add_row_sums(c.dqkv_.middleCols(r0, m), db_q + r0);
      });
    }
    // d[Wk; Wv][r0:r0+m] (m, d_mem) += dkv[:, r0:r0+m]^T (m, B*n_kv) memory (B*n_kv, d_mem); d[bk, bv] += colsum
    if (nkv_rows > 0) {
      parallel_chunks(hdk + hdv, double(nkv_rows) * double(dm_kv_), [&](Index r0, Index m) {
        kernels::product<Scalar>(dw_kv.middleRows(r0, m), c.dkv_.middleCols(r0, m), c.x_kv_, kernels::Transpose::lhs,
                                 kernels::Accumulate::add);  // (m, d_mem)
        add_row_sums(c.dkv_.middleCols(r0, m), db_kv + r0);
      });
    }
    Eigen::Ref<Matrix>& dmem = *dmemory;
    // dx_q (B*n_q, d) = dq (B*n_q, h*dk) Wq (h*dk, d)
    parallel_chunks(nq_rows, double(w_q.size()),
                    [&](Index r0, Index m) { kernels::product<Scalar>(dx_q.middleRows(r0, m), c.dqkv_.middleRows(r0, m), w_q); });
    // dmemory (B*n_kv, d_mem) = dkv (B*n_kv, h*dk + h*dv) [Wk; Wv] (h*dk + h*dv, d_mem)
    parallel_chunks(c.batch_ * c.n_kv_, double(w_kv.size()),
                    [&](Index r0, Index m) { kernels::product<Scalar>(dmem.middleRows(r0, m), c.dkv_.middleRows(r0, m), w_kv); });
  }
}

// 4. Reductions of the per-task partials, in task order.
template <class Scalar>
void SyntaxBiasedAttention<Scalar>::reduce_partials(const Cache& c, const attention_detail::BlockGeometry& g,
                                                    Scalar* grads) const {
  if (table_gradients())
    attention_detail::reduce_table_gradient<Scalar>(table_ref(grads, true), c.hist_, g, histogram_slots());
  if (id_.pre >= 0)
    attention_detail::reduce_mix_gradient<Scalar>(Eigen::Map<Matrix>(grad_at(grads, id_.pre), g.heads, g.heads),
                                                  c.mix_partial_, 0, g);
  if (id_.post >= 0)
    attention_detail::reduce_mix_gradient<Scalar>(Eigen::Map<Matrix>(grad_at(grads, id_.post), g.heads, g.heads),
                                                  c.mix_partial_, 1, g);
}

}  // namespace synattn

#endif  // SYNATTN_ATTENTION_SYNTAX_ATTENTION_IMPL_HPP
