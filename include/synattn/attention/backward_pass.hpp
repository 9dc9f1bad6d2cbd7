// synattn — SyntaxBiasedAttention's backward pass on a checked cache: the
// phases of the forward reversed, then the reductions of the per-task
// partials. The per-block steps are in backward_steps.hpp. Included by
// syntax_attention_impl.hpp only.
#ifndef SYNATTN_ATTENTION_BACKWARD_PASS_HPP
#define SYNATTN_ATTENTION_BACKWARD_PASS_HPP

#ifndef SYNATTN_ATTENTION_SYNTAX_ATTENTION_IMPL_HPP
#error "include <synattn/attention/syntax_attention.hpp> instead of this file"
#endif

namespace synattn {

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
                                                  const InputGradients& dinput, const GradientTarget& grads) const {
  const detail::BlockGeometry g = geometry(c);
  c.stamp_.mark_used();  // check_backward() passed: nothing is written before this
  output_projection_backward(c, dout, grads);
  c.dqkv_.resize(c.qkv_.rows(), c.qkv_.cols());
  c.dkv_.resize(c.kv_.rows(), c.kv_.cols());
  const bool mixing = options_.talking_heads_pre || options_.talking_heads_post;
  if (mixing)
    c.dscore2_.resize(c.probs_.rows(), g.n_kv);
  else
    c.dscore2_.resize(0, 0);
  if (table_gradients()) c.hist_.resize(g.tasks(), histogram_width());
  if (mixing) c.mix_partial_.resize(g.batch, 2 * g.heads * g.heads);
  if (!mixing)
    attend_backward_row_blocks(c, g);
  else
    attend_backward_mixed(c, g);
  input_projection_backward(c, dinput, grads);
  reduce_partials(c, g, grads);
}

// 1. Output projection.
template <class Scalar>
void SyntaxBiasedAttention<Scalar>::output_projection_backward(Cache& c, const Eigen::Ref<const Matrix>& dout,
                                                               const GradientTarget& grads) const {
  using detail::add_row_sums;
  const Index d = options_.d_model, hdv = Index(options_.heads) * dv_, rows = c.batch_ * c.n_q_;
  const Eigen::Map<const Matrix> wo(store_.value_data(id_.wo), d, hdv);  // Wo: (d, h*dv)
  Eigen::Map<Matrix> dwo(grad_at(grads, id_.wo), d, hdv);                // dWo: (d, h*dv)
  Scalar* dbo = grad_at(grads, id_.bo);                                  // dbo: (d)
  c.dctx_.resize(rows, hdv);
  if (rows == 0) return;  // no rows: nothing to add (and no column blocks of empty matrices)
  // dctx (B*n_q, h*dv) = G (B*n_q, d) Wo (d, h*dv)
  parallel_chunks(rows, double(wo.size()), [&](Index r0, Index m) {
    kernels::product<Scalar>(c.dctx_.middleRows(r0, m), dout.middleRows(r0, m), wo);
  });
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
// shape only: the same sums in the same order for every thread count. On
// the fused path each block's P is recomputed beside it (attention/path.hpp).
template <class Scalar>
void SyntaxBiasedAttention<Scalar>::attend_backward_row_blocks(Cache& c,
                                                               const detail::BlockGeometry& g) const {
  using namespace detail;
  const Index nq = g.n_q, nkv = g.n_kv;
  const bool drop = c.dropout_, fused = c.fused_;
  const DropoutMask<Scalar> mask{&c.dropout_stream_, c.drop_threshold_, c.keep_scale_};
  // Packed documents: the forward's row blocks, each on its key range.
  const KeyWindows* windows = c.packed_input_ ? &c.windows_ : nullptr;
  const Index rows = windows ? windows->rows : score_block_rows<Scalar>(nq, nkv);
  // Per thread one score block (two on the fused path): (rows, n_kv), or the largest tile.
  const Index block_rows = windows ? 1 : rows, cols = windows ? windows->max_tile : nkv;
  // The fused path adds the forward's Q K^T (dk) and softmax per score.
  double scores = double(g.tasks()) * double(nq) * double(nkv);
  if (windows) {
    scores = 0;
    for (const KeyWindow& k : windows->blocks) scores += double(k.m) * double(k.span);
    scores *= double(g.heads);
  }
  const double work = scores * (double(2 * (g.dk + g.dv)) + (fused ? double(g.dk) + kSoftmaxWork : 0.0));
  const int team = team_size(work);
  c.scratch_.resize(team * (fused ? 2 : 1) * block_rows, cols);
  c.inv_sum_.resize(static_cast<std::size_t>(team * rows));
  c.dscore_.resize(0, 0);
  if (drop) c.dropped_.resize(team * block_rows, cols);
  if (windows) c.tiles_.resize(static_cast<std::size_t>(team * cols));
  const std::optional<BiasTerms<Scalar>> terms =
      fused && options_.syntax_bias ? std::optional<BiasTerms<Scalar>>(bias_terms(nullptr)) : std::nullopt;
  const RowBlockBackwardTask<Scalar> task{g,
                                          rows,
                                          fused ? nullptr : &c.probs_,
                                          c.ctx_,
                                          c.dctx_,
                                          c.qkv_,
                                          c.cross_ ? c.kv_ : c.qkv_,
                                          c.dqkv_,
                                          c.cross_ ? c.dkv_ : c.dqkv_,
                                          options_.syntax_bias ? c.buckets_.data() : nullptr,
                                          terms ? &*terms : nullptr,
                                          table_gradients() ? &c.hist_ : nullptr,
                                          histogram_slots(),
                                          tree_views(),
                                          drop ? &mask : nullptr,
                                          inv_sqrt_dk_,
                                          c.scratch_.data(),
                                          drop ? c.dropped_.data() : nullptr,
                                          c.inv_sum_.data(),
                                          fused ? c.row_stats_.row(0).data() : nullptr,
                                          fused ? c.row_stats_.row(1).data() : nullptr,
                                          windows,
                                          windows ? &c.packed_ : nullptr,
                                          windows ? c.tiles_.data() : nullptr};
  parallel_for_threads(g.tasks(), work, task);
}

// 2. With talking heads, on whole blocks: dscore_ <- dP~; [post] dscore2_ <-
// dP; dS in the buffer holding dP; [pre] dR into the other buffer.
template <class Scalar>
void SyntaxBiasedAttention<Scalar>::attend_backward_mixed(Cache& c, const detail::BlockGeometry& g) const {
  using namespace detail;
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
                             block_of(static_cast<const Matrix&>(post ? c.mixed_ : c.probs_), t, nq, nkv), c.dctx_,
                             kvsrc, dkvsrc, g, t / H, static_cast<int>(t % H), 0, Accumulate::overwrite,
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
    softmax_backward_block<Scalar>(block_of(*dP, t, nq, nkv), block_of(c.probs_, t, nq, nkv).data(), buckets, task_hist,
                                   static_cast<int>(slots), tree_views(), g, t / H, 0, nullptr);
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
void SyntaxBiasedAttention<Scalar>::input_projection_backward(Cache& c, const InputGradients& dinput,
                                                              const GradientTarget& grads) const {
  using detail::add_row_sums;
  using ConstMap = Eigen::Map<const Matrix>;
  using Map = Eigen::Map<Matrix>;
  const Index d = options_.d_model, hdk = Index(options_.heads) * dk_, hdv = Index(options_.heads) * dv_;
  const Index nq_rows = c.batch_ * c.n_q_, nkv_rows = c.batch_ * c.n_kv_;
  Eigen::Ref<Matrix> dx = dinput.dx;  // writable views of the caller's matrices (dinput is const)
  Eigen::Ref<Matrix> dmemory = dinput.dmemory;
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
    parallel_chunks(nq_rows, double(w.size()), [&](Index r0, Index m) {
      kernels::product<Scalar>(dx.middleRows(r0, m), c.dqkv_.middleRows(r0, m), w);
    });
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
    // dx_q (B*n_q, d) = dq (B*n_q, h*dk) Wq (h*dk, d)
    parallel_chunks(nq_rows, double(w_q.size()), [&](Index r0, Index m) {
      kernels::product<Scalar>(dx.middleRows(r0, m), c.dqkv_.middleRows(r0, m), w_q);
    });
    // dmemory (B*n_kv, d_mem) = dkv (B*n_kv, h*dk + h*dv) [Wk; Wv] (h*dk + h*dv, d_mem)
    parallel_chunks(c.batch_ * c.n_kv_, double(w_kv.size()), [&](Index r0, Index m) {
      kernels::product<Scalar>(dmemory.middleRows(r0, m), c.dkv_.middleRows(r0, m), w_kv);
    });
  }
}

// 4. Reductions of the per-task partials, in task order.
template <class Scalar>
void SyntaxBiasedAttention<Scalar>::reduce_partials(const Cache& c, const detail::BlockGeometry& g,
                                                    const GradientTarget& grads) const {
  if (table_gradients())
    detail::reduce_table_gradient<Scalar>(bias_terms(&grads), c.hist_, g, histogram_slots());
  if (id_.pre >= 0)
    detail::reduce_mix_gradient<Scalar>(Eigen::Map<Matrix>(grad_at(grads, id_.pre), g.heads, g.heads),
                                                  c.mix_partial_, 0, g);
  if (id_.post >= 0)
    detail::reduce_mix_gradient<Scalar>(Eigen::Map<Matrix>(grad_at(grads, id_.post), g.heads, g.heads),
                                                  c.mix_partial_, 1, g);
}

}  // namespace synattn

#endif  // SYNATTN_ATTENTION_BACKWARD_PASS_HPP
