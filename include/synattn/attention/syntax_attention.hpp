// synattn — syntax-biased multi-head attention (docs/math.md §4), float and double,
// forward and backward, self- and cross-attention, optional talking heads.
//
//   score[a,i,j] = <q[a,i], k[a,j]> / sqrt(dk) + s * T[a?, bucket(i,j)]   (masked: -inf)
//   p = softmax_j(score),  ctx[a,i] = sum_j p[a,i,j] v[a,j],  out = concat(ctx) Wo^T + bo
//
// Tokens are rows: a batch of `batch` sequences of n positions is a
// (batch * n, width) row-major matrix, so every projection is one product over
// all tokens. Sequence lengths mask padding keys and padding query rows; the
// (batch * n_q, n_kv) int8 bucket block (synattn::bucketize) gives each pair's
// bucket, -1 masking the pair. Parameters follow PyTorch's nn.Linear layout
// (y = x W^T + b), so weights exported from PyTorch load unchanged.
//
// Attention dropout (options.dropout = p > 0): forward() given a dropout
// RandomStream drops each probability of the softmax (after post-mixing with
// talking heads, like PyTorch drops its final attention weights) with
// probability p and scales the kept ones by 1/(1 - p): ctx = P' V with
// P' = P * M / (1 - p). Element (b, head, i, j) (i < l_q, j < l_kv: sequence
// b's own lengths) is kept iff
// stream.sequence(b).keep((head * l_q + i) * l_kv + j, drop_threshold(p)),
// independent of the padded n_q, n_kv; a stream set with sequences_from(first)
// draws global sequence first + b's mask (see util/random.hpp).
// The mask is never stored: backward() draws it again from the stream kept in
// the cache, so it does not depend on threads or scheduling. forward() without
// a stream and infer() are eval mode (no dropout); so is p = 0, bit for bit.
//
// forward() is const and writes everything backward() needs into a caller's
// AttentionCache, so one layer can serve concurrent batches. backward() adds
// the parameter gradients into the layer's gradient buffer (or a caller's, for
// concurrent backward passes) and overwrites the input gradients. A cache
// serves one backward(): backward() refuses a cache this layer did not fill
// (another layer's, even of the same shape, or one filled before this layer
// was copied or assigned) and one it has already used, whose gradients it
// would add twice (util/layer_identity.hpp); it checks everything before it
// writes anything.
//
// Non-finite values (docs/math.md 4.5): with options.check_finite (the
// default) forward passes refuse NaN/inf inputs and parameters and finite
// inputs outside the safe range, max|q_i| max|k_j| / sqrt(dk) + max|s T| <=
// max(Scalar) / 4 per (sequence, head) (float: about 8.5e37, so |x| up to
// ~1e18 with unit-scale weights), so a pass that returns has finite output.
// Without checking a NaN anywhere propagates to the rows that read it.
//
// Work is split over (sequence, head) and over fixed row blocks of the
// projections with OpenMP when available. Results are bit-identical for any
// thread count: no task's arithmetic depends on the split, and cross-task sums
// (table, scale and mixing gradients) are per-task partials added in task order.
#ifndef SYNATTN_ATTENTION_SYNTAX_ATTENTION_HPP
#define SYNATTN_ATTENTION_SYNTAX_ATTENTION_HPP

#include <Eigen/Core>

#include <cstdint>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../bias/bias_table.hpp"
#include "../error.hpp"
#include "../matrix.hpp"
#include "../util/parameter_access.hpp"
#include "../util/parameters.hpp"
#include "../util/random.hpp"
#include "../kernels/simd_notice.hpp"
#include "attention_cache.hpp"
#include "blocks.hpp"
#include "inputs.hpp"
#include "options.hpp"

namespace synattn {

template <class Scalar>
class SyntaxBiasedAttention : public ParameterAccess<SyntaxBiasedAttention<Scalar>, Scalar> {
  static_assert(std::is_same<Scalar, float>::value || std::is_same<Scalar, double>::value,
                "SyntaxBiasedAttention is instantiated for float and double");

 public:
  using Matrix = RowMajorMatrix<Scalar>;
  using Vector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;
  using Cache = AttentionCache<Scalar>;

  // Validates the options (throws synattn::Error) and initialises the
  // parameters: projections like nn.Linear from options.seed (util/init.hpp), the
  // table from options.bias.init (zero by default: plain attention), the scale
  // to options.bias.scale and the talking-heads matrices to the identity.
  explicit SyntaxBiasedAttention(const AttentionOptions& options);

  const AttentionOptions& options() const noexcept { return options_; }
  int d_model() const noexcept { return options_.d_model; }
  int heads() const noexcept { return options_.heads; }
  int key_size() const noexcept { return dk_; }
  int value_size() const noexcept { return dv_; }
  int memory_size() const noexcept { return dm_kv_; }
  bool has_syntax_bias() const noexcept { return options_.syntax_bias; }
  // Size of the bias table's rows (0 without a syntax bias).
  int num_buckets() const noexcept { return options_.syntax_bias ? options_.bias.num_buckets() : 0; }
  // What a cache filled by this layer records (see AttentionFingerprint).
  AttentionFingerprint fingerprint(AttentionKind kind) const noexcept;

  using SelfInput = SelfAttentionInput<Scalar>;
  using CrossInput = CrossAttentionInput<Scalar>;
  using PackedInput = PackedSelfAttentionInput<Scalar>;
  using InputGradients = AttentionInputGradients<Scalar>;

  // ---- The three verbs (inputs.hpp: what the structs hold) -----------------
  //
  // forward: a training pass. Writes out (batch * n_q, d_model) and keeps in
  // `cache` what backward() needs. With `dropout` (and options().dropout > 0)
  // the probabilities are dropped as the file comment says; without, or with
  // p = 0, it is eval mode, bit for bit. Throws synattn::Error on bad input,
  // naming the argument, before it writes anything.
  void forward(const SelfInput& input, Cache& cache, Eigen::Ref<Matrix> out,
               const RandomStream* dropout = nullptr) const;
  // Cross-attention: queries from input.x_q, keys and values from
  // input.memory. Causal masking is not defined for it and throws.
  void forward(const CrossInput& input, Cache& cache, Eigen::Ref<Matrix> out,
               const RandomStream* dropout = nullptr) const;
  // Packed documents: the same result as the dense input that
  // input.buckets.dense(n) gives, computing only the keys the sentence window
  // leaves visible, on the fused path (nothing n x n is kept; an explicit
  // options().path = materialized is refused). Needs a syntax bias, one
  // tree view and no talking heads.
  void forward(const PackedInput& input, Cache& cache, Eigen::Ref<Matrix> out,
               const RandomStream* dropout = nullptr) const;

  // infer: the same output as forward() without dropout, keeping nothing for
  // a backward pass (no probabilities stored, no copies of the inputs), so it
  // is faster and needs less memory. `workspace` only lends its buffers (one
  // per concurrent call); backward() on it throws.
  void infer(const SelfInput& input, Cache& workspace, Eigen::Ref<Matrix> out) const;
  void infer(const CrossInput& input, Cache& workspace, Eigen::Ref<Matrix> out) const;
  void infer(const PackedInput& input, Cache& workspace, Eigen::Ref<Matrix> out) const;

  // backward: dout = dL/dout (batch * n_q, d_model). Overwrites the input
  // gradients (dmemory only for a cross-attention cache; padding query rows
  // get zeros) and adds every parameter gradient into gradients(); dbo sums
  // dout over all rows (out = bo on padding rows). A cache serves one
  // backward(), filled by this layer (see the file comment).
  void backward(Cache& cache, const Eigen::Ref<const Matrix>& dout, const InputGradients& dinput);
  // The same, adding the parameter gradients into `gradients` (laid out like
  // gradients(), size parameter_count()) instead of the layer's own: const,
  // for concurrent backward passes of one layer, each with its own vector.
  void backward(Cache& cache, const Eigen::Ref<const Matrix>& dout, const InputGradients& dinput,
                Eigen::Ref<Vector> gradients) const;

  // ---- Parameters ----------------------------------------------------------
  //
  // Names and shapes (one flat buffer, in this order):
  //   Wq (h*dk, d_model)  Wk (h*dk, memory_size)  Wv (h*dv, memory_size)
  //   bq (1, h*dk)        bk (1, h*dk)            bv (1, h*dv)
  //   Wo (d_model, h*dv)  bo (1, d_model)
  //   table (1 or h, num_buckets), scale (1, 1)    with a syntax bias
  //     (tree fusion, options.bias.fusion.views = V > 1: table (V or 1 views x
  //     1 or h rows, num_buckets), view-major, then view_logits (1 or h, V))
  //   mix_pre (h, h), mix_post (h, h)              with talking heads
  // A frozen table or scale is listed with trainable = false and keeps a zero
  // gradient.

  // parameter_count(), parameters(), gradients(), parameter(name), set_parameter(),
  // visit_parameters() and zero_grad() come from ParameterAccess
  // (util/parameter_access.hpp).
  // The layer's store, for a model that binds it into one flat buffer (see
  // util/parameters.hpp). parameters() / gradients() throw while bound.
  ParameterStore<Scalar>& parameter_store() noexcept { return store_; }
  const ParameterStore<Scalar>& parameter_store() const noexcept { return store_; }
  // Re-draws the projections from `seed` (projection k = q, k, v, o from
  // RandomStream(seed).derive(k), util/init.hpp) and resets table, scale and mixing.
  void reset_parameters(std::uint64_t seed);

  Eigen::Map<Matrix> Wq() { return store_.value(id_.wq); }
  Eigen::Map<Matrix> Wk() { return store_.value(id_.wk); }
  Eigen::Map<Matrix> Wv() { return store_.value(id_.wv); }
  Eigen::Map<Matrix> bq() { return store_.value(id_.bq); }
  Eigen::Map<Matrix> bk() { return store_.value(id_.bk); }
  Eigen::Map<Matrix> bv() { return store_.value(id_.bv); }
  Eigen::Map<Matrix> Wo() { return store_.value(id_.wo); }
  Eigen::Map<Matrix> bo() { return store_.value(id_.bo); }
  // The bias table view (throws without a syntax bias).
  BiasTableRef<Scalar> bias_table();
  Eigen::Map<Matrix> table() { return bias_table().table(); }
  Scalar& scale() { return bias_table().scale(); }
  // Tree fusion: the logits of the view weights (weight rows x views) and
  // the weights w = softmax(logits) row by row; throws without fusion.
  Eigen::Map<Matrix> view_logits() { return store_.value(require(id_.logits, "view_logits (fusion.views is 1)")); }
  Matrix view_weights() const;
  Eigen::Map<Matrix> mix_pre() { return store_.value(require(id_.pre, "mix_pre (talking_heads_pre is off)")); }
  Eigen::Map<Matrix> mix_post() { return store_.value(require(id_.post, "mix_post (talking_heads_post is off)")); }

 private:
  struct Ids {
    int wq = -1, wk = -1, wv = -1, bq = -1, bk = -1, bv = -1, wo = -1, bo = -1;
    int table = -1, scale = -1, logits = -1, pre = -1, post = -1;
  };

  static constexpr int kMaxHeadsOnStack = 64;  // forward's per-head scratch beyond this is on the heap

  static int require(int id, const char* what) {
    if (id < 0) throw Error(std::string("SyntaxBiasedAttention: no parameter ") + what);
    return id;
  }

  // Validation (implementation file; the checks: validation.hpp). Each
  // returns the padded sequence length(s).
  void check_backward(const char* fn, const Cache& cache, const Eigen::Ref<const Matrix>& dout,
                      const InputGradients& dinput, Index gradient_size) const;
  void check_buckets_given(const char* fn, const Eigen::Ref<const BucketBlock>& buckets, Index query_rows) const;
  Index check_inputs(const char* fn, const SelfInput& in, Index out_rows, Index out_cols) const;
  std::pair<Index, Index> check_inputs(const char* fn, const CrossInput& in, Index out_rows, Index out_cols) const;
  Index check_inputs(const char* fn, const PackedInput& in, Index out_rows, Index out_cols) const;
  void check_self_memory(const char* fn) const;
  Index check_self_tokens(const char* fn, const Eigen::Ref<const Matrix>& x, const char* lengths_name,
                          const std::vector<int>& lengths, Index batch) const;
  void check_self_output(const char* fn, const Eigen::Ref<const Matrix>& x, Index n, Index batch, Index out_rows,
                         Index out_cols) const;

  // Forward (implementation file).
  // `packed`: the pass reads packed documents (their row blocks are laid out here).
  void prepare_cache(Cache& cache, AttentionKind kind, detail::Pass pass, Index batch, Index n_q, Index n_kv,
                     const std::vector<int>& lengths_q, const std::vector<int>& lengths_kv,
                     const PackedBuckets* packed = nullptr) const;
  // Arms (or disarms) the cache's dropout for the next forward_core().
  void set_dropout(Cache& cache, const RandomStream* dropout_stream) const;
  detail::BlockGeometry geometry(const Cache& cache) const;
  // x_kv is null for self-attention; a training pass keeps P for backward().
  // `packed` (then buckets is 0 x 0): packed documents.
  void forward_core(const char* fn, Cache& cache, const Eigen::Ref<const Matrix>& x_q,
                    const Eigen::Ref<const Matrix>* x_kv, const Eigen::Ref<const BucketBlock>& buckets,
                    detail::Pass pass, Eigen::Ref<Matrix> out, const PackedBuckets* packed = nullptr) const;
  // forward_core() of a training pass, then the cache stamped as filled.
  void training_forward(const char* fn, Cache& cache, const Eigen::Ref<const Matrix>& x_q,
                        const Eigen::Ref<const Matrix>* x_kv, const Eigen::Ref<const BucketBlock>& buckets,
                        Eigen::Ref<Matrix> out, const PackedBuckets* packed = nullptr) const;
  void project_inputs(Cache& cache, const Eigen::Ref<const Matrix>& x_q, const Eigen::Ref<const Matrix>* x_kv) const;
  void attend_row_blocks(Cache& cache, const detail::BlockGeometry& g,
                         const Eigen::Ref<const BucketBlock>& buckets, const BiasTerms<Scalar>* table,
                         detail::Pass pass, const PackedBuckets* packed) const;
  void attend_mixed(Cache& cache, const detail::BlockGeometry& g,
                    const Eigen::Ref<const BucketBlock>& buckets, const BiasTerms<Scalar>* table) const;
  void project_output(const Cache& cache, Eigen::Ref<Matrix> out) const;

  // Backward (implementation file).
  // Where a backward pass adds the parameter gradients: a caller's buffer
  // laid out like the layer's, or (buffer null) the layer's own store,
  // possibly bound into a model's buffer.
  struct GradientTarget {
    Scalar* buffer;
    ParameterStore<Scalar>* store;
  };
  Scalar* grad_at(const GradientTarget& target, int id) const;
  void backward_core(Cache& cache, const Eigen::Ref<const Matrix>& dout, const InputGradients& dinput,
                     const GradientTarget& gradients) const;
  void output_projection_backward(Cache& cache, const Eigen::Ref<const Matrix>& dout,
                                  const GradientTarget& gradients) const;
  void attend_backward_row_blocks(Cache& cache, const detail::BlockGeometry& g) const;
  void attend_backward_mixed(Cache& cache, const detail::BlockGeometry& g) const;
  // Writes dinput.dx, and dinput.dmemory for a cross-attention cache.
  void input_projection_backward(Cache& cache, const InputGradients& dinput, const GradientTarget& gradients) const;
  void reduce_partials(const Cache& cache, const detail::BlockGeometry& g,
                       const GradientTarget& gradients) const;
  // True when backward() accumulates bucket histograms (a learnable table,
  // scale or view weights).
  bool table_gradients() const noexcept {
    const BiasTableOptions& b = options_.bias;
    return options_.syntax_bias &&
           (b.table_learnable || b.scale_learnable || (b.fusion.views > 1 && b.fusion.weights_learnable));
  }
  // Histogram slots per copy: num_buckets() + 1 (slot 0: masked pairs), 0 without a bias.
  Index histogram_slots() const noexcept { return options_.syntax_bias ? num_buckets() + 1 : 0; }
  // Tree views of the bias (1 without fusion or without a bias).
  int tree_views() const noexcept { return options_.syntax_bias ? options_.bias.fusion.views : 1; }
  // Histogram values per task: kHistogramCopies copies of view 0's slots
  // (the kernel's), then one copy per further view.
  Index histogram_width() const noexcept;

  // The table as the kernels read it; with a target, with its gradient storage.
  BiasTerms<Scalar> bias_terms(const GradientTarget* target) const;

  AttentionOptions options_;
  int dk_ = 0, dv_ = 0, dm_kv_ = 0;
  Scalar inv_sqrt_dk_ = 1;
  ParameterStore<Scalar> store_;
  Ids id_;
  LayerIdentity identity_;  // stamped on every cache this layer fills
};

}  // namespace synattn

#include "syntax_attention_impl.hpp"
#include "compiled.hpp"  // SYNATTN_COMPILED: the float/double layers come from synattn::compiled

#endif  // SYNATTN_ATTENTION_SYNTAX_ATTENTION_HPP
