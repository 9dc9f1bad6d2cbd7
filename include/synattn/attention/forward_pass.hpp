// synattn — SyntaxBiasedAttention's forward pass on validated inputs: the
// cache's buffers for a pass, then the phases (projections, attention per
// (sequence, head), output projection). The per-block steps are in
// forward_steps.hpp. Included by syntax_attention_impl.hpp only.
#ifndef SYNATTN_ATTENTION_FORWARD_PASS_HPP
#define SYNATTN_ATTENTION_FORWARD_PASS_HPP

#ifndef SYNATTN_ATTENTION_SYNTAX_ATTENTION_IMPL_HPP
#error "include <synattn/attention/syntax_attention.hpp> instead of this file"
#endif

namespace synattn {

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::prepare_cache(Cache& c, AttentionKind kind, detail::Pass pass,
                                                  Index batch, Index n_q, Index n_kv, const std::vector<int>& lengths_q,
                                                  const std::vector<int>& lengths_kv,
                                                  const PackedBuckets* packed) const {
  const bool cross = kind == AttentionKind::cross;
  const bool training = pass == detail::Pass::training;
  const Index h = options_.heads;
  const bool mixing = options_.talking_heads_pre || options_.talking_heads_post;
  // Decided before the cache is touched: a bad SYNATTN_ATTENTION_PATH throws
  // here. Packed documents have no n x n probabilities to keep.
  const bool fused = training && (packed != nullptr ||
                                  detail::takes_fused_path(
                                      options_.path, mixing, double(batch * h * n_q) * double(n_kv) * sizeof(Scalar)));
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
  // Inference without talking heads never leaves the per-thread score
  // blocks, and neither does a training pass on the fused path
  // (attention/path.hpp).
  c.fused_ = fused;
  if ((training && !fused) || mixing)
    c.probs_.resize(batch * h * n_q, n_kv);
  else
    c.probs_.resize(0, 0);
  if (fused)
    c.row_stats_.resize(2, batch * h * n_q);
  else
    c.row_stats_.resize(0, 0);
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
  if (!training || !options_.syntax_bias || packed) c.buckets_.resize(0, 0);
  c.packed_input_ = packed != nullptr;
  if (packed) {
    c.windows_ = detail::key_windows(*packed, n_q, options_.causal);
  } else {
    c.windows_ = {};
    if (!c.packed_.lengths().empty()) c.packed_ = PackedBuckets();
  }
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

template <class Scalar>
detail::BlockGeometry SyntaxBiasedAttention<Scalar>::geometry(const Cache& c) const {
  detail::BlockGeometry g;
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
                                                 detail::Pass pass, Eigen::Ref<Matrix> out,
                                                 const PackedBuckets* packed) const {
  const detail::BlockGeometry g = geometry(c);
  project_inputs(c, x_q, x_kv);
  // The table as the kernels read it (null without a syntax bias).
  const std::optional<BiasTerms<Scalar>> terms =
      options_.syntax_bias ? std::optional<BiasTerms<Scalar>>(bias_terms(nullptr)) : std::nullopt;
  const BiasTerms<Scalar>* table = terms ? &*terms : nullptr;
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
    if (table) detail::check_bias_products<Scalar>(fn, *table, mb);
    // Pre-mixing talking heads mix the raw scores: |mixed| <= max row sum of |M_pre| x the largest.
    const double mix_gain =
        options_.talking_heads_pre
            ? double(Eigen::Map<const Matrix>(store_.value_data(id_.pre), options_.heads, options_.heads)
                         .cwiseAbs()
                         .rowwise()
                         .sum()
                         .maxCoeff())
            : 0.0;
    detail::check_score_range<Scalar>(fn, c.qkv_, c.cross_ ? c.kv_ : c.qkv_, g, inv_sqrt_dk_,
                                                table ? mb : nullptr, mix_gain);
  }
  if (!options_.talking_heads_pre && !options_.talking_heads_post)
    attend_row_blocks(c, g, buckets, table, pass, packed);
  else
    attend_mixed(c, g, buckets, table);
  project_output(c, out);
  if (options_.check_finite) detail::check_finite_output<Scalar>(fn, out);
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
void SyntaxBiasedAttention<Scalar>::attend_row_blocks(Cache& c, const detail::BlockGeometry& g,
                                                      const Eigen::Ref<const BucketBlock>& buckets,
                                                      const BiasTerms<Scalar>* table, detail::Pass pass,
                                                      const PackedBuckets* packed) const {
  using namespace detail;
  const Index nq = g.n_q, nkv = g.n_kv;
  const DropoutMask<Scalar> mask{&c.dropout_stream_, c.drop_threshold_, c.keep_scale_};
  // Packed documents: their own row blocks, each on its key range.
  const KeyWindows* windows = packed ? &c.windows_ : nullptr;
  const Index rows = windows ? windows->rows : score_block_rows<Scalar>(nq, nkv);
  // Per thread one score block: (rows, n_kv), or the largest tile.
  const Index block_rows = windows ? 1 : rows, cols = windows ? windows->max_tile : nkv;
  const Index row_blocks = windows ? 0 : (nq + rows - 1) / rows;
  const Index task_count = windows ? Index(windows->blocks.size()) * g.heads : g.tasks() * row_blocks;
  double work = double(g.tasks()) * double(nq) * double(nkv) * double(g.dk + g.dv);
  if (windows) {
    work = 0;
    for (const KeyWindow& k : windows->blocks) work += double(k.m) * double(k.span);
    work *= double(g.heads) * double(g.dk + g.dv);
  }
  const int team = team_size(work);
  c.scratch_.resize(team * block_rows, cols);
  c.inv_sum_.resize(static_cast<std::size_t>(team * rows));
  if (windows) c.tiles_.resize(static_cast<std::size_t>(team * cols));
  // Streaming stores for P once it clearly outgrows the caches (measured at
  // 16 MB, (1, 1024, 256, 4): forward + backward 1.15x -> 1.10x its GEMMs).
  const bool stream_probs = double(c.probs_.size()) * sizeof(Scalar) > double(kStreamingBytes);
  const RowBlockForwardTask<Scalar> task{g,
                                         rows,
                                         row_blocks,
                                         c.qkv_,
                                         c.cross_ ? c.kv_ : c.qkv_,
                                         buckets.data(),
                                         buckets.outerStride(),
                                         table,
                                         inv_sqrt_dk_,
                                         c.dropout_ ? &mask : nullptr,
                                         pass == Pass::training && !c.fused_ ? &c.probs_ : nullptr,
                                         stream_probs,
                                         c.fused_ ? c.row_stats_.row(0).data() : nullptr,
                                         c.fused_ ? c.row_stats_.row(1).data() : nullptr,
                                         c.scratch_.data(),
                                         c.inv_sum_.data(),
                                         c.ctx_,
                                         windows,
                                         packed,
                                         windows ? c.tiles_.data() : nullptr};
  parallel_for_threads(task_count, work, task);
}

// 2. Attention with talking heads: whole (n_q, n_kv) blocks in the cache's
// buffers, since the mixing reads every head's block of a sequence.
template <class Scalar>
void SyntaxBiasedAttention<Scalar>::attend_mixed(Cache& c, const detail::BlockGeometry& g,
                                                 const Eigen::Ref<const BucketBlock>& buckets,
                                                 const BiasTerms<Scalar>* table) const {
  using namespace detail;
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
    S.setZero();                                                 // the mixing reads every entry
    attention_scores<Scalar>(S, c.qkv_, kvsrc, g, t / H, static_cast<int>(t % H), 0, inv_sqrt_dk_);
  });
  const Eigen::Map<const Matrix> m_pre(pre ? store_.value_data(id_.pre) : nullptr, H, H);
  const Eigen::Map<const Matrix> m_post(post ? store_.value_data(id_.post) : nullptr, H, H);
  if (pre) parallel_for(g.batch, block * H, [&](Index b) { mix_heads<Scalar>(m_pre, c.raw_, c.probs_, g, b); });
  c.inv_sum_.resize(static_cast<std::size_t>(tasks * nq));
  parallel_for(tasks, block * kSoftmaxWork, [&](Index t) {
    BlockMap P = block_of(c.probs_, t, nq, nkv);  // (n_q, n_kv)
    Scalar* inv = c.inv_sum_.data() + t * nq;     // (n_q)
    softmax_numerators_block<Scalar>(P, buckets.data(), buckets.outerStride(), table, g, t / H, static_cast<int>(t % H),
                                     0, inv);
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

}  // namespace synattn

#endif  // SYNATTN_ATTENTION_FORWARD_PASS_HPP
