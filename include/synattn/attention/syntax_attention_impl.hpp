// synattn — SyntaxBiasedAttention: construction, validation, forward and
// backward. Included by syntax_attention.hpp only.
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

#include "../util/parallel.hpp"
#include "../kernels/attention_rows.hpp"
#include "../kernels/dropout_rows.hpp"
#include "../kernels/linear_small.hpp"

namespace synattn {

namespace attention_detail {

// splitmix64: a small, portable generator, so a seed gives the same weights
// with every standard library.
inline std::uint64_t splitmix64(std::uint64_t& state) noexcept {
  std::uint64_t z = (state += 0x9e3779b97f4a7c15ull);
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

template <class Scalar>
void fill_uniform(Eigen::Map<RowMajorMatrix<Scalar>> m, double bound, std::uint64_t& state) {
  for (Index i = 0; i < m.size(); ++i) {
    const double u = static_cast<double>(splitmix64(state) >> 11) * 0x1.0p-53;  // [0, 1)
    m.data()[i] = static_cast<Scalar>((2.0 * u - 1.0) * bound);
  }
}

// Rough cost of a softmax (forward or backward) per score, in multiply-adds,
// for deciding whether a loop is worth a parallel region.
constexpr double kSoftmaxWork = 16.0;

inline std::string shape(Index r, Index c) { return std::to_string(r) + "x" + std::to_string(c); }

// Rows of a contiguous (rows, cols) block inside a buffer of such blocks.
// Largest forward score block a task works on: big enough that the products
// stay efficient, small enough to stay in L2 with the K and V panels.
constexpr Index kScoreBlockBytes = 512 * 1024;
// Probability buffers larger than this are written with streaming stores.
constexpr Index kStreamingBytes = 8 * 1024 * 1024;

// Query rows per forward task for an (n_q, n_kv) block: all of them while
// the block fits kScoreBlockBytes, else a multiple of 16 that fits.
template <class Scalar>
Index score_block_rows(Index nq, Index nkv) {
  const Index row_bytes = std::max<Index>(1, nkv) * Index(sizeof(Scalar));
  if (nq * row_bytes <= kScoreBlockBytes) return std::max<Index>(1, nq);
  return std::max<Index>(16, (kScoreBlockBytes / row_bytes) / 16 * 16);
}

template <class Scalar>
Eigen::Map<RowMajorMatrix<Scalar>> block_of(RowMajorMatrix<Scalar>& buffer, Index block, Index rows, Index cols) {
  return Eigen::Map<RowMajorMatrix<Scalar>>(buffer.data() + block * rows * cols, rows, cols);
}
template <class Scalar>
Eigen::Map<const RowMajorMatrix<Scalar>> block_of(const RowMajorMatrix<Scalar>& buffer, Index block, Index rows,
                                                  Index cols) {
  return Eigen::Map<const RowMajorMatrix<Scalar>>(buffer.data() + block * rows * cols, rows, cols);
}

// dst += sum of the rows of src (a fixed, sequential order: deterministic).
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
  std::uint64_t state = seed;
  const double in_q = 1.0 / std::sqrt(static_cast<double>(options_.d_model));
  const double in_kv = 1.0 / std::sqrt(static_cast<double>(dm_kv_));
  const double in_o = 1.0 / std::sqrt(static_cast<double>(options_.heads * dv_));
  attention_detail::fill_uniform<Scalar>(store_.value(id_.wq), in_q, state);
  attention_detail::fill_uniform<Scalar>(store_.value(id_.bq), in_q, state);
  attention_detail::fill_uniform<Scalar>(store_.value(id_.wk), in_kv, state);
  attention_detail::fill_uniform<Scalar>(store_.value(id_.bk), in_kv, state);
  attention_detail::fill_uniform<Scalar>(store_.value(id_.wv), in_kv, state);
  attention_detail::fill_uniform<Scalar>(store_.value(id_.bv), in_kv, state);
  attention_detail::fill_uniform<Scalar>(store_.value(id_.wo), in_o, state);
  attention_detail::fill_uniform<Scalar>(store_.value(id_.bo), in_o, state);
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
// Validation
// ---------------------------------------------------------------------------

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::check_tokens(const char* fn, const char* name, const Eigen::Ref<const Matrix>& x,
                                                 Index batch, Index width, Index& n) const {
  if (x.cols() != width)
    throw Error(std::string(fn) + ": " + name + " has " + std::to_string(x.cols()) + " columns, expected " +
                std::to_string(width));
  if (batch == 0) {
    if (x.rows() != 0)
      throw Error(std::string(fn) + ": " + name + " has " + std::to_string(x.rows()) +
                  " rows but the batch is empty (no lengths)");
    n = 0;
    return;
  }
  if (x.rows() % batch != 0)
    throw Error(std::string(fn) + ": " + name + " has " + std::to_string(x.rows()) +
                " rows, not a multiple of the batch size " + std::to_string(batch) + " (= number of lengths)");
  n = x.rows() / batch;
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::check_lengths(const char* fn, const char* name, const std::vector<int>& lengths,
                                                  Index n) const {
  for (std::size_t b = 0; b < lengths.size(); ++b)
    if (lengths[b] < 0 || lengths[b] > n)
      throw Error(std::string(fn) + ": " + name + "[" + std::to_string(b) + "] = " + std::to_string(lengths[b]) +
                  " is out of range [0, " + std::to_string(n) + "] (n = rows per sequence)");
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::check_buckets(const char* fn, const Eigen::Ref<const BucketBlock>& buckets,
                                                  Index batch, Index n_q, Index n_kv) const {
  if (buckets.rows() != batch * n_q || buckets.cols() != n_kv)
    throw Error(std::string(fn) + ": buckets is " + attention_detail::shape(buckets.rows(), buckets.cols()) +
                ", expected " + attention_detail::shape(batch * n_q, n_kv) + " (batch * n_q, n_kv)");
  const int nb = num_buckets();
  // Byte-wide minimum and maximum (vpminsb / vpmaxsb, 64 keys per
  // instruction); widening each key to int made this 1% of inference at n = 1024.
  std::int8_t lo = -1, hi = -1;
  for (Index r = 0; r < buckets.rows(); ++r) {
    const std::int8_t* row = buckets.row(r).data();
    for (Index j = 0; j < n_kv; ++j) {
      lo = std::min(lo, row[j]);
      hi = std::max(hi, row[j]);
    }
  }
  if (lo >= -1 && hi < nb) return;
  for (Index r = 0; r < buckets.rows(); ++r)
    for (Index j = 0; j < n_kv; ++j) {
      const int v = buckets(r, j);
      if (v < -1 || v >= nb)
        throw Error(std::string(fn) + ": buckets(" + std::to_string(r) + ", " + std::to_string(j) +
                    ") = " + std::to_string(v) + " (sequence " + std::to_string(r / n_q) + ", query " +
                    std::to_string(r % n_q) + ", key " + std::to_string(j) + ") is out of range [-1, " +
                    std::to_string(nb) + ") for " + options_.bias.bucketing.describe());
    }
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::check_finite(const char* fn, const char* name, const Eigen::Ref<const Matrix>& m,
                                                 Index n) const {
  // x * 0 is NaN exactly where x is NaN or infinite, and a sum with a NaN
  // term is NaN: one vectorised pass (Eigen's allFinite() is ~30x slower).
  if (!options_.check_finite || std::isfinite((m.array() * Scalar(0)).sum())) return;
  for (Index r = 0; r < m.rows(); ++r)
    for (Index c = 0; c < m.cols(); ++c)
      if (!std::isfinite(m(r, c)))
        throw Error(std::string(fn) + ": " + name + "(" + std::to_string(r) + ", " + std::to_string(c) +
                    ") = " + std::to_string(m(r, c)) + " is not finite (sequence " + std::to_string(n ? r / n : 0) +
                    ", position " + std::to_string(n ? r % n : r) + ")");
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::check_output(const char* fn, const char* name, Index rows, Index cols,
                                                 Index want_rows, Index want_cols) {
  if (rows != want_rows || cols != want_cols)
    throw Error(std::string(fn) + ": " + name + " is " + attention_detail::shape(rows, cols) + ", expected " +
                attention_detail::shape(want_rows, want_cols));
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::check_backward(const char* fn, const Cache& c, bool cross,
                                                   const Eigen::Ref<const Matrix>& dout, Index gradient_size) const {
  if (c.inference_)
    throw Error(std::string(fn) + ": the cache was last used by infer(), which keeps nothing to differentiate; "
                                  "call forward() before backward()");
  if (c.empty()) throw Error(std::string(fn) + ": the cache holds no forward pass");
  if (c.cross_ != cross)
    throw Error(std::string(fn) + ": the cache holds a " + (c.cross_ ? "cross" : "self") +
                "-attention forward pass; call " + (c.cross_ ? "backward_cross" : "backward"));
  const bool bias = options_.syntax_bias;
  const Index qkv_cols = cross ? Index(options_.heads) * dk_ : Index(options_.heads) * (2 * dk_ + dv_);
  if (c.heads_ != options_.heads || c.x_q_.cols() != options_.d_model || c.qkv_.cols() != qkv_cols ||
      (cross && c.x_kv_.cols() != dm_kv_) || (bias && c.buckets_.rows() != c.batch_ * c.n_q_) ||
      (options_.talking_heads_pre && c.raw_.rows() != c.probs_.rows()) ||
      (options_.talking_heads_post && c.mixed_.rows() != c.probs_.rows()))
    throw Error(std::string(fn) + ": the cache was filled by a layer of another shape or options");
  check_output(fn, "dout", dout.rows(), dout.cols(), c.batch_ * c.n_q_, options_.d_model);
  check_finite(fn, "dout", dout, c.n_q_);
  if (gradient_size != store_.size())
    throw Error(std::string(fn) + ": gradients has " + std::to_string(gradient_size) + " entries, expected " +
                std::to_string(store_.size()) + " (parameter_count())");
}

// ---------------------------------------------------------------------------
// Forward
// ---------------------------------------------------------------------------

template <class Scalar>
Index SyntaxBiasedAttention<Scalar>::check_self_inputs(const char* fn, const Eigen::Ref<const Matrix>& x,
                                                       const std::vector<int>& lengths,
                                                       const Eigen::Ref<const BucketBlock>& buckets, Index out_rows,
                                                       Index out_cols) const {
  if (dm_kv_ != options_.d_model)
    throw Error(std::string(fn) + ": self-attention needs memory_size == d_model (the layer has memory_size " +
                std::to_string(dm_kv_) + ", d_model " + std::to_string(options_.d_model) + ")");
  const Index batch = static_cast<Index>(lengths.size());
  Index n = 0;
  check_tokens(fn, "x", x, batch, options_.d_model, n);
  check_lengths(fn, "lengths", lengths, n);
  if (options_.syntax_bias) check_buckets(fn, buckets, batch, n, n);
  check_output(fn, "out", out_rows, out_cols, batch * n, options_.d_model);
  check_finite(fn, "x", x, n);
  return n;
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::check_cross_inputs(const char* fn, const Eigen::Ref<const Matrix>& x_q,
                                                       const std::vector<int>& lengths_q,
                                                       const Eigen::Ref<const Matrix>& memory,
                                                       const std::vector<int>& lengths_kv,
                                                       const Eigen::Ref<const BucketBlock>& buckets, Index out_rows,
                                                       Index out_cols, Index& n_q, Index& n_kv) const {
  if (options_.causal)
    throw Error(std::string(fn) + ": causal masking is defined for self-attention only (options.causal is set)");
  const Index batch = static_cast<Index>(lengths_q.size());
  if (static_cast<Index>(lengths_kv.size()) != batch)
    throw Error(std::string(fn) + ": lengths_q has " + std::to_string(batch) + " entries but lengths_kv has " +
                std::to_string(lengths_kv.size()) + "; both give one length per sequence");
  check_tokens(fn, "x_q", x_q, batch, options_.d_model, n_q);
  check_tokens(fn, "memory", memory, batch, dm_kv_, n_kv);
  check_lengths(fn, "lengths_q", lengths_q, n_q);
  check_lengths(fn, "lengths_kv", lengths_kv, n_kv);
  if (options_.syntax_bias) check_buckets(fn, buckets, batch, n_q, n_kv);
  check_output(fn, "out", out_rows, out_cols, batch * n_q, options_.d_model);
  check_finite(fn, "x_q", x_q, n_q);
  check_finite(fn, "memory", memory, n_kv);
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::prepare_cache(Cache& c, bool cross, bool training, Index batch, Index n_q,
                                                  Index n_kv, const std::vector<int>& lengths_q,
                                                  const std::vector<int>& lengths_kv) const {
  const Index h = options_.heads;
  const bool mixing = options_.talking_heads_pre || options_.talking_heads_post;
  c.filled_ = false;
  c.inference_ = !training;
  c.cross_ = cross;
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

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::forward_self(const Eigen::Ref<const Matrix>& x, const std::vector<int>& lengths,
                                                 const Eigen::Ref<const BucketBlock>& buckets, Cache& cache,
                                                 Eigen::Ref<Matrix> out, const RandomStream* dropout_stream) const {
  const char* fn = "SyntaxBiasedAttention::forward";
  const Index n = check_self_inputs(fn, x, lengths, buckets, out.rows(), out.cols());
  const Index batch = static_cast<Index>(lengths.size());
  prepare_cache(cache, false, true, batch, n, n, lengths, lengths);
  set_dropout(cache, dropout_stream);
  cache.x_q_ = x;  // dW{q,k,v} need x in backward()
  if (options_.syntax_bias) cache.buckets_ = buckets;
  forward_core(cache, x, nullptr, buckets, true, out);
  cache.filled_ = true;
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::forward(const Eigen::Ref<const Matrix>& x, const std::vector<int>& lengths,
                                            const Eigen::Ref<const BucketBlock>& buckets, Cache& cache,
                                            Eigen::Ref<Matrix> out) const {
  forward_self(x, lengths, buckets, cache, out, nullptr);
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::forward(const Eigen::Ref<const Matrix>& x, const std::vector<int>& lengths,
                                            const Eigen::Ref<const BucketBlock>& buckets, Cache& cache,
                                            Eigen::Ref<Matrix> out, const RandomStream& dropout_stream) const {
  forward_self(x, lengths, buckets, cache, out, &dropout_stream);
}

template <class Scalar>
typename SyntaxBiasedAttention<Scalar>::Matrix SyntaxBiasedAttention<Scalar>::forward(
    const Eigen::Ref<const Matrix>& x, const std::vector<int>& lengths, const Eigen::Ref<const BucketBlock>& buckets,
    Cache& cache, const RandomStream& dropout_stream) const {
  Matrix out(x.rows(), options_.d_model);
  forward_self(x, lengths, buckets, cache, out, &dropout_stream);
  return out;
}

template <class Scalar>
typename SyntaxBiasedAttention<Scalar>::Matrix SyntaxBiasedAttention<Scalar>::forward(
    const Eigen::Ref<const Matrix>& x, const std::vector<int>& lengths, Cache& cache,
    const RandomStream& dropout_stream) const {
  if (options_.syntax_bias)
    throw Error("SyntaxBiasedAttention::forward: the layer has a syntax bias; pass the bucket block");
  return forward(x, lengths, BucketBlock(), cache, dropout_stream);
}

template <class Scalar>
typename SyntaxBiasedAttention<Scalar>::Matrix SyntaxBiasedAttention<Scalar>::forward(
    const Eigen::Ref<const Matrix>& x, const std::vector<int>& lengths, const Eigen::Ref<const BucketBlock>& buckets,
    Cache& cache) const {
  Matrix out(x.rows(), options_.d_model);
  forward(x, lengths, buckets, cache, out);
  return out;
}

template <class Scalar>
typename SyntaxBiasedAttention<Scalar>::Matrix SyntaxBiasedAttention<Scalar>::forward(const Eigen::Ref<const Matrix>& x,
                                                                                      const std::vector<int>& lengths,
                                                                                      Cache& cache) const {
  if (options_.syntax_bias)
    throw Error("SyntaxBiasedAttention::forward: the layer has a syntax bias; pass the bucket block");
  return forward(x, lengths, BucketBlock(), cache);
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::infer(const Eigen::Ref<const Matrix>& x, const std::vector<int>& lengths,
                                          const Eigen::Ref<const BucketBlock>& buckets, Cache& workspace,
                                          Eigen::Ref<Matrix> out) const {
  const char* fn = "SyntaxBiasedAttention::infer";
  const Index n = check_self_inputs(fn, x, lengths, buckets, out.rows(), out.cols());
  prepare_cache(workspace, false, false, static_cast<Index>(lengths.size()), n, n, lengths, lengths);
  forward_core(workspace, x, nullptr, buckets, false, out);
}

template <class Scalar>
typename SyntaxBiasedAttention<Scalar>::Matrix SyntaxBiasedAttention<Scalar>::infer(
    const Eigen::Ref<const Matrix>& x, const std::vector<int>& lengths,
    const Eigen::Ref<const BucketBlock>& buckets) const {
  Cache workspace;
  Matrix out(x.rows(), options_.d_model);
  infer(x, lengths, buckets, workspace, out);
  return out;
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::forward_cross(const Eigen::Ref<const Matrix>& x_q,
                                                  const std::vector<int>& lengths_q,
                                                  const Eigen::Ref<const Matrix>& memory,
                                                  const std::vector<int>& lengths_kv,
                                                  const Eigen::Ref<const BucketBlock>& buckets, Cache& cache,
                                                  Eigen::Ref<Matrix> out) const {
  forward_cross_impl(x_q, lengths_q, memory, lengths_kv, buckets, cache, out, nullptr);
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::forward_cross(const Eigen::Ref<const Matrix>& x_q,
                                                  const std::vector<int>& lengths_q,
                                                  const Eigen::Ref<const Matrix>& memory,
                                                  const std::vector<int>& lengths_kv,
                                                  const Eigen::Ref<const BucketBlock>& buckets, Cache& cache,
                                                  Eigen::Ref<Matrix> out, const RandomStream& dropout_stream) const {
  forward_cross_impl(x_q, lengths_q, memory, lengths_kv, buckets, cache, out, &dropout_stream);
}

template <class Scalar>
typename SyntaxBiasedAttention<Scalar>::Matrix SyntaxBiasedAttention<Scalar>::forward_cross(
    const Eigen::Ref<const Matrix>& x_q, const std::vector<int>& lengths_q, const Eigen::Ref<const Matrix>& memory,
    const std::vector<int>& lengths_kv, const Eigen::Ref<const BucketBlock>& buckets, Cache& cache,
    const RandomStream& dropout_stream) const {
  Matrix out(x_q.rows(), options_.d_model);
  forward_cross_impl(x_q, lengths_q, memory, lengths_kv, buckets, cache, out, &dropout_stream);
  return out;
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::forward_cross_impl(const Eigen::Ref<const Matrix>& x_q,
                                                       const std::vector<int>& lengths_q,
                                                       const Eigen::Ref<const Matrix>& memory,
                                                       const std::vector<int>& lengths_kv,
                                                       const Eigen::Ref<const BucketBlock>& buckets, Cache& cache,
                                                       Eigen::Ref<Matrix> out,
                                                       const RandomStream* dropout_stream) const {
  const char* fn = "SyntaxBiasedAttention::forward_cross";
  Index n_q = 0, n_kv = 0;
  check_cross_inputs(fn, x_q, lengths_q, memory, lengths_kv, buckets, out.rows(), out.cols(), n_q, n_kv);
  prepare_cache(cache, true, true, static_cast<Index>(lengths_q.size()), n_q, n_kv, lengths_q, lengths_kv);
  set_dropout(cache, dropout_stream);
  cache.x_q_ = x_q;
  cache.x_kv_ = memory;
  if (options_.syntax_bias) cache.buckets_ = buckets;
  forward_core(cache, x_q, &memory, buckets, true, out);
  cache.filled_ = true;
}

template <class Scalar>
typename SyntaxBiasedAttention<Scalar>::Matrix SyntaxBiasedAttention<Scalar>::forward_cross(
    const Eigen::Ref<const Matrix>& x_q, const std::vector<int>& lengths_q, const Eigen::Ref<const Matrix>& memory,
    const std::vector<int>& lengths_kv, const Eigen::Ref<const BucketBlock>& buckets, Cache& cache) const {
  Matrix out(x_q.rows(), options_.d_model);
  forward_cross(x_q, lengths_q, memory, lengths_kv, buckets, cache, out);
  return out;
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::infer_cross(const Eigen::Ref<const Matrix>& x_q,
                                                const std::vector<int>& lengths_q,
                                                const Eigen::Ref<const Matrix>& memory,
                                                const std::vector<int>& lengths_kv,
                                                const Eigen::Ref<const BucketBlock>& buckets, Cache& workspace,
                                                Eigen::Ref<Matrix> out) const {
  const char* fn = "SyntaxBiasedAttention::infer_cross";
  Index n_q = 0, n_kv = 0;
  check_cross_inputs(fn, x_q, lengths_q, memory, lengths_kv, buckets, out.rows(), out.cols(), n_q, n_kv);
  prepare_cache(workspace, true, false, static_cast<Index>(lengths_q.size()), n_q, n_kv, lengths_q, lengths_kv);
  forward_core(workspace, x_q, &memory, buckets, false, out);
}

template <class Scalar>
typename SyntaxBiasedAttention<Scalar>::Matrix SyntaxBiasedAttention<Scalar>::infer_cross(
    const Eigen::Ref<const Matrix>& x_q, const std::vector<int>& lengths_q, const Eigen::Ref<const Matrix>& memory,
    const std::vector<int>& lengths_kv, const Eigen::Ref<const BucketBlock>& buckets) const {
  Cache workspace;
  Matrix out(x_q.rows(), options_.d_model);
  infer_cross(x_q, lengths_q, memory, lengths_kv, buckets, workspace, out);
  return out;
}

// The forward pass proper, on validated inputs. Phases:
//   1. projections over all tokens (fixed row blocks),
//   2. per (sequence, head): scores, [pre-mix per sequence], bias + mask +
//      softmax, [post-mix per sequence], [dropout], P V,
//   3. output projection.
// Without talking heads phase 2 is one task per (sequence, head, row block),
// so each score block is produced, normalised and consumed while in cache.
template <class Scalar>
void SyntaxBiasedAttention<Scalar>::forward_core(Cache& c, const Eigen::Ref<const Matrix>& x_q,
                                                 const Eigen::Ref<const Matrix>* x_kv,
                                                 const Eigen::Ref<const BucketBlock>& buckets, bool training,
                                                 Eigen::Ref<Matrix> out) const {
  using attention_detail::block_of;
  using attention_detail::kSoftmaxWork;
  const Index B = c.batch_, nq = c.n_q_, nkv = c.n_kv_, dk = dk_, dv = dv_;
  const int H = options_.heads;
  const Index hdk = H * dk;
  const bool cross = c.cross_;
  const bool bias = options_.syntax_bias, causal = options_.causal;
  const bool pre = options_.talking_heads_pre, post = options_.talking_heads_post;

  // ---- 1. Projections ----
  using ConstMap = Eigen::Map<const Matrix>;
  using ConstRow = Eigen::Map<const Eigen::Matrix<Scalar, 1, Eigen::Dynamic>>;
  if (!cross) {
    // qkv (B*n, 2h*dk + h*dv) = x (B*n, d) [Wq; Wk; Wv]^T + [bq, bk, bv]
    const ConstMap w(store_.value_data(id_.wq), c.qkv_.cols(), options_.d_model);
    const ConstRow b(store_.value_data(id_.bq), c.qkv_.cols());
    parallel_chunks(B * nq, double(w.size()), [&](Index r0, Index m) {
      kernels::linear_product<Scalar>(c.qkv_.middleRows(r0, m), x_q.middleRows(r0, m), w, b.data());
    });
  } else {
    // q (B*n_q, h*dk) = x_q Wq^T + bq;  kv (B*n_kv, h*dk + h*dv) = memory [Wk; Wv]^T + [bk, bv]
    const ConstMap w_q(store_.value_data(id_.wq), hdk, options_.d_model);
    const ConstRow b_q(store_.value_data(id_.bq), hdk);
    const ConstMap w_kv(store_.value_data(id_.wk), c.kv_.cols(), dm_kv_);
    const ConstRow b_kv(store_.value_data(id_.bk), c.kv_.cols());
    parallel_chunks(B * nq, double(w_q.size()), [&](Index r0, Index m) {
      kernels::linear_product<Scalar>(c.qkv_.middleRows(r0, m), x_q.middleRows(r0, m), w_q, b_q.data());
    });
    parallel_chunks(B * nkv, double(w_kv.size()), [&](Index r0, Index m) {
      kernels::linear_product<Scalar>(c.kv_.middleRows(r0, m), x_kv->middleRows(r0, m), w_kv, b_kv.data());
    });
  }
  Matrix& qsrc = c.qkv_;
  Matrix& kvsrc = cross ? c.kv_ : c.qkv_;
  const Index k_off = cross ? 0 : hdk;
  const Index v_off = cross ? hdk : 2 * hdk;

  // ---- 2. Attention per (sequence, head) ----
  const BiasTableRef<Scalar> table =
      bias ? table_ref(nullptr, false) : BiasTableRef<Scalar>(options_.bias, H, nullptr, nullptr, nullptr, nullptr);
  const int slots = bias ? num_buckets() + 1 : 0;
  const auto lq_of = [&](Index b) { return static_cast<Index>(c.lengths_q_[static_cast<std::size_t>(b)]); };
  const auto lk_of = [&](Index b) { return static_cast<Index>(c.lengths_kv_[static_cast<std::size_t>(b)]); };

  using BlockMap = Eigen::Map<Matrix>;
  // The lambdas below work on query rows [r0, r0 + m) of block (b, a); S is
  // those m rows (m = n_q, r0 = 0 for a whole block). v = the rows that are
  // real queries (the rest are padding).
  const auto valid_rows = [&](Index b, Index r0, Index m) {
    return std::max<Index>(0, std::min<Index>(m, lq_of(b) - r0));
  };
  // S (m, n_kv) = Q[r0:r0+m] K^T / sqrt(dk) on the valid rows (their keys
  // past the length are left to the softmax, which zeroes them).
  const auto scores = [&](BlockMap S, Index b, int a, Index r0) {
    const Index m = S.rows(), v = valid_rows(b, r0, m), lk = lk_of(b);
    const auto Q = qsrc.block(b * nq + r0, a * dk, v, dk);
    const auto K = kvsrc.block(b * nkv, k_off + a * dk, lk, dk);
    if (v > 0 && lk > 0) S.topLeftCorner(v, lk).noalias() = (Q * inv_sqrt_dk_) * K.transpose();
  };
  // Bias, mask and softmax numerators of the valid rows of S, in place;
  // inv[i] = 1 / row sum (0 on padding rows and rows with no visible key).
  const auto numerators = [&](BlockMap S, Index b, int a, Index r0, Scalar* inv) {
    const Index m = S.rows(), v = valid_rows(b, r0, m);
    Scalar shifted[kMaxTableBuckets + 1];
    if (bias) table.shifted_row(a, shifted);
    const std::int8_t* bk = bias ? buckets.data() + (b * nq + r0) * buckets.outerStride() : nullptr;
    kernels::softmax_numerators<Scalar>(S.data(), nkv, bk, bias ? buckets.outerStride() : 0,
                                        bias ? shifted : nullptr, slots, v, lk_of(b), causal ? r0 : -1, nkv, inv);
    std::fill(inv + v, inv + m, Scalar(0));
    S.bottomRows(m - v).setZero();
  };
  // ctx rows [r0, r0 + m) of head a (m, dv) = P V on the valid corner, 0 on
  // padding rows; with `inv`, P holds numerators and each row is scaled
  // afterwards (m x dv multiplies instead of m x n_kv).
  const auto context = [&](BlockMap P, Index b, int a, Index r0, const Scalar* inv) {
    const Index m = P.rows(), v = valid_rows(b, r0, m), lk = lk_of(b);
    auto C = c.ctx_.block(b * nq + r0, a * dv, m, dv);
    const auto V = kvsrc.block(b * nkv, v_off + a * dv, lk, dv);
    if (v > 0 && lk > 0) {
      C.topRows(v).noalias() = P.topLeftCorner(v, lk) * V;
      if (inv)
        for (Index i = 0; i < v; ++i) C.row(i) *= inv[i];
    } else {
      C.topRows(v).setZero();
    }
    C.bottomRows(m - v).setZero();
  };
  // Dropout of query rows [r0, r0 + m) of block `task` = (b, a): dst = src *
  // M / (1 - p) on the valid (v, lk) corner, the only part context() reads
  // (both (m, n_kv) with leading dimension n_kv; dst may be src). Element
  // (i, j) of head a of sequence b is drawn from the sequence's stream
  // (dropout_stream_.sequence(b): global sequence first_sequence() + b) at
  // counter (a * l_q + i) * l_kv + j with the sequence's own lengths, never
  // the padded n_q, n_kv: the mask does not depend on how the global batch
  // was split or padded.
  const bool drop = c.dropout_;
  const auto dropout = [&](Scalar* dst, const Scalar* src, Index task, Index r0, Index m) {
    const Index b = task / H, a = task % H;
    const std::uint64_t first = static_cast<std::uint64_t>((a * lq_of(b) + r0) * lk_of(b));
    kernels::dropout_rows<Scalar>(dst, nkv, src, nkv, valid_rows(b, r0, m), lk_of(b),
                                  c.dropout_stream_.sequence(static_cast<std::uint64_t>(b)), first,
                                  static_cast<std::uint64_t>(lk_of(b)), c.drop_threshold_, c.keep_scale_);
  };
  // dst_b (h, n_q*n_kv) = M (h, h) src_b (h, n_q*n_kv): every head's block of
  // sequence b mixed by M.
  const auto mix = [&](const Matrix& src, Matrix& dst, int id, Index b) {
    const ConstMap M(store_.value_data(id), H, H);
    const Index len = nq * nkv;
    Eigen::Map<const Matrix> s(src.data() + b * H * len, H, len);
    Eigen::Map<Matrix> d(dst.data() + b * H * len, H, len);
    d.noalias() = M * s;
  };

  const Index tasks = B * H;
  // Multiply-adds of one (n_q, n_kv) block per unit of inner size.
  const double block = double(tasks) * double(nq) * double(nkv);
  const auto at = [&](Matrix& buffer, Index t) { return block_of(buffer, t, nq, nkv); };
  if (!pre && !post) {
    // Scores, softmax and P V in a per-thread scratch block that stays in
    // cache (writing each block straight into the big probability buffer and
    // reading it back made these products ~35% slower). P V uses the softmax
    // numerators and scales the (m, dv) result; training copies P out
    // normalised, once, after P V. Long sequences are cut into row blocks of
    // at most kScoreBlockBytes so the block still fits in L2 (a 1024 x 1024
    // float block is 4 MB). The cut depends on the shape only, so results
    // stay the same for every thread count.
    const Index rows = attention_detail::score_block_rows<Scalar>(nq, nkv);
    const Index row_blocks = (nq + rows - 1) / rows;
    const double work = block * double(dk + dv);
    const int team = team_size(work);
    c.scratch_.resize(team * rows, nkv);
    c.inv_sum_.resize(static_cast<std::size_t>(team * rows));
    // Streaming stores for P once it clearly outgrows the caches (measured at
    // 16 MB, (1, 1024, 256, 4): forward + backward 1.15x -> 1.10x its GEMMs).
    const bool stream_probs = double(c.probs_.size()) * sizeof(Scalar) > double(attention_detail::kStreamingBytes);
    parallel_for_threads(tasks * row_blocks, work, [&](Index t, int thread) {
      const Index task = t / row_blocks, r0 = (t % row_blocks) * rows;
      const Index b = task / H;
      const int a = static_cast<int>(task % H);
      const Index m = std::min(rows, nq - r0);
      BlockMap S(c.scratch_.data() + Index(thread) * rows * nkv, m, nkv);
      Scalar* inv = c.inv_sum_.data() + Index(thread) * rows;
      scores(S, b, a, r0);
      numerators(S, b, a, r0, inv);
      if (!drop) {
        context(S, b, a, r0, inv);
        if (training) {
          kernels::scale_rows<Scalar>(at(c.probs_, task).middleRows(r0, m).data(), nkv, S.data(), nkv, m, nkv,
                                      inv, stream_probs);
        }
      } else {
        // P is kept before dropout (backward redraws the mask), so it is
        // copied out first; the mask then goes on the numerators in place and
        // ctx = (e * M / (1 - p)) V / rowsum(e) = P' V.
        if (training) {
          kernels::scale_rows<Scalar>(at(c.probs_, task).middleRows(r0, m).data(), nkv, S.data(), nkv, m, nkv,
                                      inv, stream_probs);
        }
        dropout(S.data(), S.data(), task, r0, m);
        context(S, b, a, r0, inv);
      }
    });
  } else {
    parallel_for(tasks, block * double(dk), [&](Index t) {
      BlockMap S = at(pre ? c.raw_ : c.probs_, t);
      S.setZero();  // the mixing reads every entry
      scores(S, t / H, static_cast<int>(t % H), 0);
    });
    if (pre) parallel_for(B, block * H, [&](Index b) { mix(c.raw_, c.probs_, id_.pre, b); });
    c.inv_sum_.resize(static_cast<std::size_t>(tasks * nq));
    parallel_for(tasks, block * kSoftmaxWork, [&](Index t) {
      BlockMap P = at(c.probs_, t);
      Scalar* inv = c.inv_sum_.data() + t * nq;
      numerators(P, t / H, static_cast<int>(t % H), 0, inv);
      for (Index i = 0; i < nq; ++i) P.row(i) *= inv[i];
    });
    if (post) parallel_for(B, block * H, [&](Index b) { mix(c.probs_, c.mixed_, id_.post, b); });
    Matrix& final_probs = post ? c.mixed_ : c.probs_;
    if (!drop) {
      parallel_for(tasks, block * double(dv), [&](Index t) {
        context(at(final_probs, t), t / H, static_cast<int>(t % H), 0, nullptr);
      });
    } else {
      // Dropout after the mixing (PyTorch drops the final attention weights),
      // into a per-thread block so the cache keeps the undropped P (and mixed P).
      const double work = block * double(dv);
      c.dropped_.resize(team_size(work) * nq, nkv);
      parallel_for_threads(tasks, work, [&](Index t, int thread) {
        BlockMap D(c.dropped_.data() + Index(thread) * nq * nkv, nq, nkv);
        dropout(D.data(), at(final_probs, t).data(), t, 0, nq);
        context(D, t / H, static_cast<int>(t % H), 0, nullptr);
      });
    }
  }

  // ---- 3. Output projection: out (B*n_q, d) = ctx (B*n_q, h*dv) Wo^T + bo ----
  const ConstMap wo(store_.value_data(id_.wo), options_.d_model, H * dv);
  const ConstRow bo(store_.value_data(id_.bo), options_.d_model);
  parallel_chunks(B * nq, double(wo.size()), [&](Index r0, Index m) {
    kernels::linear_product<Scalar>(out.middleRows(r0, m), c.ctx_.middleRows(r0, m), wo, bo.data());
  });
}

// ---------------------------------------------------------------------------
// Backward
// ---------------------------------------------------------------------------

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::backward(Cache& cache, const Eigen::Ref<const Matrix>& dout,
                                             Eigen::Ref<Matrix> dx) {
  const char* fn = "SyntaxBiasedAttention::backward";
  check_backward(fn, cache, false, dout, store_.size());
  check_output(fn, "dx", dx.rows(), dx.cols(), cache.batch_ * cache.n_q_, options_.d_model);
  backward_core(cache, dout, dx, nullptr, nullptr);  // the layer's own (possibly bound) gradients
}

template <class Scalar>
typename SyntaxBiasedAttention<Scalar>::Matrix SyntaxBiasedAttention<Scalar>::backward(
    Cache& cache, const Eigen::Ref<const Matrix>& dout) {
  Matrix dx(cache.batch_ * cache.n_q_, options_.d_model);
  backward(cache, dout, dx);
  return dx;
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::backward(Cache& cache, const Eigen::Ref<const Matrix>& dout, Eigen::Ref<Matrix> dx,
                                             Eigen::Ref<Vector> gradients) const {
  const char* fn = "SyntaxBiasedAttention::backward";
  check_backward(fn, cache, false, dout, gradients.size());
  check_output(fn, "dx", dx.rows(), dx.cols(), cache.batch_ * cache.n_q_, options_.d_model);
  backward_core(cache, dout, dx, nullptr, gradients.data());
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::backward_cross(Cache& cache, const Eigen::Ref<const Matrix>& dout,
                                                   Eigen::Ref<Matrix> dx_q, Eigen::Ref<Matrix> dmemory) {
  const char* fn = "SyntaxBiasedAttention::backward_cross";
  check_backward(fn, cache, true, dout, store_.size());
  check_output(fn, "dx_q", dx_q.rows(), dx_q.cols(), cache.batch_ * cache.n_q_, options_.d_model);
  check_output(fn, "dmemory", dmemory.rows(), dmemory.cols(), cache.batch_ * cache.n_kv_, dm_kv_);
  backward_core(cache, dout, dx_q, &dmemory, nullptr);
}

template <class Scalar>
void SyntaxBiasedAttention<Scalar>::backward_cross(Cache& cache, const Eigen::Ref<const Matrix>& dout,
                                                   Eigen::Ref<Matrix> dx_q, Eigen::Ref<Matrix> dmemory,
                                                   Eigen::Ref<Vector> gradients) const {
  const char* fn = "SyntaxBiasedAttention::backward_cross";
  check_backward(fn, cache, true, dout, gradients.size());
  check_output(fn, "dx_q", dx_q.rows(), dx_q.cols(), cache.batch_ * cache.n_q_, options_.d_model);
  check_output(fn, "dmemory", dmemory.rows(), dmemory.cols(), cache.batch_ * cache.n_kv_, dm_kv_);
  backward_core(cache, dout, dx_q, &dmemory, gradients.data());
}

// The backward pass proper. With G = dL/dout (B*n_q, d):
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
                                                  Eigen::Ref<Matrix> dx_q, Eigen::Ref<Matrix>* dmemory,
                                                  Scalar* grads) const {
  using attention_detail::add_row_sums;
  using attention_detail::block_of;
  using attention_detail::kSoftmaxWork;
  const Index B = c.batch_, nq = c.n_q_, nkv = c.n_kv_, dk = dk_, dv = dv_, d = options_.d_model;
  const int H = options_.heads;
  const Index hdk = H * dk, hdv = H * dv;
  const bool cross = c.cross_;
  const bool bias = options_.syntax_bias, causal = options_.causal;
  const bool pre = options_.talking_heads_pre, post = options_.talking_heads_post;
  const bool table_grads = bias && (options_.bias.table_learnable || options_.bias.scale_learnable);
  using ConstMap = Eigen::Map<const Matrix>;
  using Map = Eigen::Map<Matrix>;
  const auto lq_of = [&](Index b) { return static_cast<Index>(c.lengths_q_[static_cast<std::size_t>(b)]); };
  const auto lk_of = [&](Index b) { return static_cast<Index>(c.lengths_kv_[static_cast<std::size_t>(b)]); };

  // ---- 1. Output projection ----
  const ConstMap wo(store_.value_data(id_.wo), d, hdv);  // Wo: (d, h*dv)
  Map dwo(grad_at(grads, id_.wo), d, hdv);  // dWo: (d, h*dv)
  Scalar* dbo = grad_at(grads, id_.bo);     // dbo: (d)
  c.dctx_.resize(B * nq, hdv);
  // dctx (B*n_q, h*dv) = G (B*n_q, d) Wo (d, h*dv)
  parallel_chunks(B * nq, double(wo.size()),
                  [&](Index r0, Index m) { c.dctx_.middleRows(r0, m).noalias() = dout.middleRows(r0, m) * wo; });
  // dWo[r0:r0+m] (m, h*dv) += G[:, r0:r0+m]^T (m, B*n_q) ctx (B*n_q, h*dv); dbo[r0:r0+m] += colsum
  parallel_chunks(d, double(B * nq) * double(hdv), [&](Index r0, Index m) {
    dwo.middleRows(r0, m).noalias() += dout.middleCols(r0, m).transpose() * c.ctx_;
    add_row_sums(dout.middleCols(r0, m), dbo + r0);
  });

  // ---- 2. Attention per (sequence, head) ----
  c.dqkv_.resize(c.qkv_.rows(), c.qkv_.cols());
  c.dkv_.resize(c.kv_.rows(), c.kv_.cols());
  if (pre || post)
    c.dscore2_.resize(c.probs_.rows(), nkv);
  else
    c.dscore2_.resize(0, 0);
  Matrix& qsrc = c.qkv_;
  Matrix& kvsrc = cross ? c.kv_ : c.qkv_;
  Matrix& dqsrc = c.dqkv_;
  Matrix& dkvsrc = cross ? c.dkv_ : c.dqkv_;
  const Index k_off = cross ? 0 : hdk;
  const Index v_off = cross ? hdk : 2 * hdk;
  const Index nb1 = bias ? num_buckets() + 1 : 0;  // histogram slots per copy (slot 0: masked)
  const Index hist_stride = nb1;
  if (table_grads) c.hist_.resize(B * H, kernels::kHistogramCopies * nb1);

  using BlockMap = Eigen::Map<Matrix>;
  using ConstBlockMap = Eigen::Map<const Matrix>;
  // Sums task t's interleaved histogram copies into copy 0, in a fixed order.
  const auto fold_histogram = [&](Index t) {
    Scalar* hist = c.hist_.row(t).data();
    for (int k = 1; k < kernels::kHistogramCopies; ++k)
      for (Index s = 0; s < nb1; ++s) hist[s] += hist[k * hist_stride + s];
  };
  // dP~ rows [r0, r0 + m) (m, n_kv) = dctx V^T on the valid corner (0
  // elsewhere); dV (n_kv, dv) (+)= P~[r0:r0+m]^T dctx[r0:r0+m], added when
  // `accumulate` (a later row block).
  //
  // With dropout (`dropped`: an (m, n_kv) scratch block, else null) the
  // forward used P' = P~ * M / (1 - p), so dV uses P' (redrawn into
  // `dropped`) and dP' = dctx V^T goes back through the mask:
  // dP~ = dP' * M / (1 - p), in place.
  const bool drop = c.dropout_;
  const auto context_backward = [&](BlockMap dP, ConstBlockMap P, Index b, int a, Index r0, bool accumulate,
                                    Scalar* dropped) {
    const Index m = dP.rows(), v = std::max<Index>(0, std::min<Index>(m, lq_of(b) - r0)), lk = lk_of(b);
    const auto dC = c.dctx_.block(b * nq + r0, a * dv, v, dv);   // (v, dv)
    const auto V = kvsrc.block(b * nkv, v_off + a * dv, lk, dv);  // (lk, dv)
    auto dV = dkvsrc.block(b * nkv, v_off + a * dv, nkv, dv);     // (n_kv, dv)
    if (v > 0 && lk > 0) {
      dP.topLeftCorner(v, lk).noalias() = dC * V.transpose();  // (v, lk): dP', or dP~ without dropout
      if (dropped) {
        // Element (r0 + i, j) of head a of sequence b: the forward's stream and counters.
        const RandomStream seq = c.dropout_stream_.sequence(static_cast<std::uint64_t>(b));
        const std::uint64_t first = static_cast<std::uint64_t>((a * lq_of(b) + r0) * lk);
        kernels::dropout_rows<Scalar>(dropped, nkv, P.data(), nkv, v, lk, seq, first,
                                      static_cast<std::uint64_t>(lk), c.drop_threshold_, c.keep_scale_);  // P' (v, lk)
        kernels::dropout_rows<Scalar>(dP.data(), nkv, dP.data(), nkv, v, lk, seq, first,
                                      static_cast<std::uint64_t>(lk), c.drop_threshold_, c.keep_scale_);  // dP~ (v, lk)
      }
      const ConstBlockMap Pd(dropped ? dropped : P.data(), m, nkv);  // (m, n_kv): the P that multiplied V
      if (accumulate)
        dV.topRows(lk).noalias() += Pd.topLeftCorner(v, lk).transpose() * dC;  // (lk, dv)
      else
        dV.topRows(lk).noalias() = Pd.topLeftCorner(v, lk).transpose() * dC;
    } else if (!accumulate) {
      dV.topRows(lk).setZero();
    }
    dP.topRightCorner(v, nkv - lk).setZero();
    dP.bottomRows(m - v).setZero();
    if (!accumulate) dV.bottomRows(nkv - lk).setZero();
  };
  // dS = softmax backward of query rows [r0, r0 + m) of block (b, a), in
  // place of dP; the bucket sums of dS are added to the task's histogram.
  const auto softmax_backward = [&](BlockMap dS, Index b, int a, Index r0, const Scalar* dots) {  // dS: (m, n_kv)
    const Index m = dS.rows(), v = std::max<Index>(0, std::min<Index>(m, lq_of(b) - r0));
    const auto P = block_of(c.probs_, b * H + a, nq, nkv).middleRows(r0, m);  // (m, n_kv)
    Scalar* hist = table_grads ? c.hist_.row(b * H + a).data() : nullptr;     // copies x (nb + 1)
    const std::int8_t* bk = bias ? c.buckets_.row(b * nq + r0).data() : nullptr;
    kernels::softmax_backward<Scalar>(P.data(), nkv, dS.data(), nkv, bk, nkv, v, lk_of(b), causal ? r0 : -1, nkv,
                                      hist, hist_stride, static_cast<int>(nb1), dots);
    dS.bottomRows(m - v).setZero();
  };
  // dQ rows [r0, r0 + m) (m, dk) = dS K / sqrt(dk); dK (n_kv, dk) (+)= dS^T
  // Q[r0:r0+m] / sqrt(dk), added when `accumulate` (a later row block).
  const auto score_backward = [&](ConstBlockMap dR, Index b, int a, Index r0, bool accumulate) {  // dR: (m, n_kv)
    const Index m = dR.rows(), v = std::max<Index>(0, std::min<Index>(m, lq_of(b) - r0)), lk = lk_of(b);
    const auto Q = qsrc.block(b * nq + r0, a * dk, v, dk);        // (v, dk)
    const auto K = kvsrc.block(b * nkv, k_off + a * dk, lk, dk);  // (lk, dk)
    auto dQ = dqsrc.block(b * nq + r0, a * dk, m, dk);            // (m, dk)
    auto dK = dkvsrc.block(b * nkv, k_off + a * dk, nkv, dk);     // (n_kv, dk)
    if (v > 0 && lk > 0) {
      dQ.topRows(v).noalias() = (dR.topLeftCorner(v, lk) * inv_sqrt_dk_) * K;  // (v, dk)
      if (accumulate)
        dK.topRows(lk).noalias() += (dR.topLeftCorner(v, lk).transpose() * inv_sqrt_dk_) * Q;  // (lk, dk)
      else
        dK.topRows(lk).noalias() = (dR.topLeftCorner(v, lk).transpose() * inv_sqrt_dk_) * Q;
    } else {
      dQ.topRows(v).setZero();
      if (!accumulate) dK.topRows(lk).setZero();
    }
    dQ.bottomRows(m - v).setZero();
    if (!accumulate) dK.bottomRows(nkv - lk).setZero();
  };
  // Talking-heads adjoint for sequence b: partial dM (h, h) = dY_b Xin_b^T and
  // dX_b (h, n_q*n_kv) = M^T dY_b, for Y = M X.
  const Index len = nq * nkv;
  if (pre || post) c.mix_partial_.resize(B, 2 * H * H);
  const auto mix_backward = [&](const Matrix& dy, const Matrix& xin, Matrix& dx_out, int id, int slot, Index b) {
    const ConstMap M(store_.value_data(id), H, H);
    Eigen::Map<const Matrix> dY(dy.data() + b * H * len, H, len);              // (h, n_q*n_kv)
    Eigen::Map<const Matrix> X(xin.data() + b * H * len, H, len);              // (h, n_q*n_kv)
    Eigen::Map<Matrix> dX(dx_out.data() + b * H * len, H, len);                // (h, n_q*n_kv)
    Eigen::Map<Matrix> dM(c.mix_partial_.row(b).data() + slot * H * H, H, H);  // (h, h)
    dM.noalias() = dY * X.transpose();
    dX.noalias() = M.transpose() * dY;
  };

  const Index tasks = B * H;
  const double block = double(tasks) * double(nq) * double(nkv);
  const auto at = [&](Matrix& buffer, Index t) { return block_of(buffer, t, nq, nkv); };
  const auto cat = [&](const Matrix& buffer, Index t) { return block_of(buffer, t, nq, nkv); };
  if (!pre && !post) {
    // dP, then dS, live in a per-thread scratch block that stays in cache:
    // one task per (sequence, head) walks the query rows in blocks of at
    // most kScoreBlockBytes (like the forward), adding each block's share of
    // dK and dV, so even n = 1024 works in L2. The cut depends on the shape
    // only: the same sums in the same order for every thread count.
    const Index rows = attention_detail::score_block_rows<Scalar>(nq, nkv);
    const double work = block * double(2 * (dk + dv));
    const int team = team_size(work);
    c.scratch_.resize(team * rows, nkv);
    c.inv_sum_.resize(static_cast<std::size_t>(team * rows));
    c.dscore_.resize(0, 0);
    if (drop) c.dropped_.resize(team * rows, nkv);
    parallel_for_threads(tasks, work, [&](Index t, int thread) {
      const Index b = t / H;
      const int a = static_cast<int>(t % H);
      if (table_grads) std::fill(c.hist_.row(t).data(), c.hist_.row(t).data() + c.hist_.cols(), Scalar(0));
      const Index lq = lq_of(b);
      for (Index r0 = 0; r0 < std::max<Index>(lq, 1); r0 += rows) {
        const Index m = std::min(rows, nq - r0);
        BlockMap dS(c.scratch_.data() + Index(thread) * rows * nkv, m, nkv);
        const bool later = r0 > 0;
        context_backward(dS, ConstBlockMap(cat(c.probs_, t).middleRows(r0, m).data(), m, nkv), b, a, r0, later,
                         drop ? c.dropped_.data() + Index(thread) * rows * nkv : nullptr);
        // <p_i, dp_i> = <dctx_i, ctx_i> since ctx_i = sum_j p_ij v_j and
        // dp_ij = <dctx_i, v_j>: dv products per row instead of n_kv.
        // Dropout keeps it: with m_ij = M_ij / (1 - p), dp_ij = m_ij
        // <dctx_i, v_j> and sum_j p_ij m_ij v_j = ctx_i (= P' V), so
        // sum_j p_ij dp_ij = <dctx_i, ctx_i> still.
        Scalar* dots = c.inv_sum_.data() + Index(thread) * rows;
        const Index v = std::max<Index>(0, std::min<Index>(m, lq - r0));
        for (Index i = 0; i < v; ++i)
          dots[i] = c.dctx_.row(b * nq + r0 + i).segment(a * dv, dv).dot(c.ctx_.row(b * nq + r0 + i).segment(a * dv, dv));
        softmax_backward(dS, b, a, r0, dots);
        score_backward(ConstBlockMap(dS.data(), m, nkv), b, a, r0, later);
      }
      // Query rows past the last valid block are padding: dQ = 0 there.
      const Index done = std::min(nq, (std::max<Index>(lq, 1) + rows - 1) / rows * rows);
      dqsrc.block(b * nq + done, a * dk, nq - done, dk).setZero();
      if (table_grads) fold_histogram(t);
    });
  } else {
    // dscore_ <- dP~; [post] dscore2_ <- dP; dS in the buffer holding dP;
    // [pre] dR into the other buffer.
    c.dscore_.resize(c.probs_.rows(), nkv);
    const double context_work = block * double(2 * dv);
    if (drop) c.dropped_.resize(team_size(context_work) * nq, nkv);
    parallel_for_threads(tasks, context_work, [&](Index t, int thread) {
      context_backward(at(c.dscore_, t), cat(post ? c.mixed_ : c.probs_, t), t / H, static_cast<int>(t % H), 0,
                       false, drop ? c.dropped_.data() + Index(thread) * nq * nkv : nullptr);
    });
    Matrix* dP = &c.dscore_;
    if (post) {
      parallel_for(B, block * 2 * H, [&](Index b) { mix_backward(c.dscore_, c.probs_, c.dscore2_, id_.post, 1, b); });
      dP = &c.dscore2_;
    }
    parallel_for(tasks, block * kSoftmaxWork,
                 [&](Index t) {
                   if (table_grads)
                     std::fill(c.hist_.row(t).data(), c.hist_.row(t).data() + c.hist_.cols(), Scalar(0));
                   softmax_backward(at(*dP, t), t / H, static_cast<int>(t % H), 0, nullptr);
                   if (table_grads) fold_histogram(t);
                 });
    Matrix* dR = dP;
    if (pre) {
      dR = dP == &c.dscore_ ? &c.dscore2_ : &c.dscore_;
      parallel_for(B, block * 2 * H, [&](Index b) { mix_backward(*dP, c.raw_, *dR, id_.pre, 0, b); });
    }
    parallel_for(tasks, block * double(2 * dk),
                 [&](Index t) { score_backward(cat(*dR, t), t / H, static_cast<int>(t % H), 0, false); });
  }

  // ---- 3. Input projections ----
  if (!cross) {
    const Index rows = c.qkv_.cols();               // 2h*dk + h*dv
    const ConstMap w(store_.value_data(id_.wq), rows, d);  // [Wq; Wk; Wv]: (rows, d)
    Map dw(grad_at(grads, id_.wq), rows, d);
    Scalar* db = grad_at(grads, id_.bq);
    // dW[r0:r0+m] (m, d) += dqkv[:, r0:r0+m]^T (m, B*n) x (B*n, d); db += colsum
    parallel_chunks(rows, double(B * nq) * double(d), [&](Index r0, Index m) {
      dw.middleRows(r0, m).noalias() += c.dqkv_.middleCols(r0, m).transpose() * c.x_q_;
      add_row_sums(c.dqkv_.middleCols(r0, m), db + r0);
    });
    // dx (B*n, d) = dqkv (B*n, rows) [Wq; Wk; Wv] (rows, d)
    parallel_chunks(B * nq, double(w.size()),
                    [&](Index r0, Index m) { dx_q.middleRows(r0, m).noalias() = c.dqkv_.middleRows(r0, m) * w; });
  } else {
    const ConstMap w_q(store_.value_data(id_.wq), hdk, d);              // Wq: (h*dk, d)
    const ConstMap w_kv(store_.value_data(id_.wk), hdk + hdv, dm_kv_);  // [Wk; Wv]: (h*dk + h*dv, d_mem)
    Map dw_q(grad_at(grads, id_.wq), hdk, d);
    Map dw_kv(grad_at(grads, id_.wk), hdk + hdv, dm_kv_);
    Scalar* db_q = grad_at(grads, id_.bq);
    Scalar* db_kv = grad_at(grads, id_.bk);
    parallel_chunks(hdk, double(B * nq) * double(d), [&](Index r0, Index m) {
      dw_q.middleRows(r0, m).noalias() += c.dqkv_.middleCols(r0, m).transpose() * c.x_q_;  // (m, d)
      add_row_sums(c.dqkv_.middleCols(r0, m), db_q + r0);
    });
    parallel_chunks(hdk + hdv, double(B * nkv) * double(dm_kv_), [&](Index r0, Index m) {
      dw_kv.middleRows(r0, m).noalias() += c.dkv_.middleCols(r0, m).transpose() * c.x_kv_;  // (m, d_mem)
      add_row_sums(c.dkv_.middleCols(r0, m), db_kv + r0);
    });
    Eigen::Ref<Matrix>& dmem = *dmemory;
    parallel_chunks(B * nq, double(w_q.size()),
                    [&](Index r0, Index m) { dx_q.middleRows(r0, m).noalias() = c.dqkv_.middleRows(r0, m) * w_q; });
    parallel_chunks(B * nkv, double(w_kv.size()),
                    [&](Index r0, Index m) { dmem.middleRows(r0, m).noalias() = c.dkv_.middleRows(r0, m) * w_kv; });
  }

  // ---- 4. Reductions of per-task partials, in task order ----
  if (table_grads) {
    const BiasTableRef<Scalar> table = table_ref(grads, true);
    Scalar acc[kMaxTableBuckets + 1];
    const int rows = options_.bias.per_head ? H : 1;
    for (int r = 0; r < rows; ++r) {
      std::fill(acc, acc + nb1, Scalar(0));
      for (Index b = 0; b < B; ++b)
        for (int a = 0; a < H; ++a)
          if (table.row_of(a) == r) {
            const Scalar* h = c.hist_.row(b * H + a).data();
            for (Index s = 0; s < nb1; ++s) acc[s] += h[s];
          }
      table.apply_histogram(r, acc);  // head r reads row r (per head) or row 0 (shared)
    }
  }
  for (int which = 0; which < 2; ++which) {
    const int id = which == 0 ? id_.pre : id_.post;
    if (id < 0) continue;
    Map dM(grad_at(grads, id), H, H);
    for (Index b = 0; b < B; ++b) dM += Eigen::Map<const Matrix>(c.mix_partial_.row(b).data() + which * H * H, H, H);
  }
}

}  // namespace synattn

#endif  // SYNATTN_ATTENTION_SYNTAX_ATTENTION_IMPL_HPP
