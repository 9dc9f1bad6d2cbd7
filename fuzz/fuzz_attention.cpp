// libFuzzer target for SyntaxBiasedAttention: a differential fuzzer (the
// layer against the naive reference of docs/math.md §4). Run from the checkout root:
//   cmake --preset fuzz && cmake --build --preset fuzz --target fuzz_attention &&
//   tools/make_attention_seeds.sh build/fuzz/attention-seeds &&
//   build/fuzz/fuzz/fuzz_attention -max_total_time=60 build/fuzz/attention-seeds
//
// The bytes choose a small layer (n <= 24, widths <= 32) and its inputs:
// options (some invalid or beyond the scalar type), lengths and buckets
// (including -1, out-of-range values and buckets where the lengths say
// padding), causal masking, talking heads,
// dropout, cross-attention, values from tame to NaN and 1e30, and a second
// layer the cache is handed to. Checked:
//   - nothing crashes (ASan/UBSan), and every refusal is synattn::Error
//     (anything else escapes and libFuzzer reports it);
//   - "tame" inputs (valid options, lengths and buckets, |values| <= 2) are
//     never refused, and give finite outputs and gradients;
//   - with check_finite on, a forward pass that returns has finite output;
//   - the layer agrees with the naive loop reference of the tests
//     (tests/attention/naive_attention.hpp) within the documented tolerance
//     (docs/math.md 4.4: 1e-10 double, 1e-4 float, relative to max |want|),
//     with every row-kernel version the CPU runs (kernels::supported_isas():
//     portable and the run-time-dispatched vector ones), so they agree too;
//   - backward with another layer's cache either works (same fingerprint) or
//     throws synattn::Error.
#include <fuzzer/FuzzedDataProvider.h>

#include <synattn/attention/syntax_attention.hpp>
#include <synattn/bias/packed_buckets.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <limits>
#include <memory>
#include <vector>

#include "../tests/attention/naive_attention.hpp"

namespace {

// Puts back the row-kernel version that was active before a run.
struct IsaRestore {
  synattn::KernelIsa saved = synattn::kernels::active_isa();
  ~IsaRestore() { synattn::kernels::set_isa(saved); }
};

using synattn::AttentionOptions;
using synattn::Bucketing;
using synattn::Index;
using synattn::RowMajorMatrix;

void require(bool ok) {
  if (!ok) __builtin_trap();
}

struct Draw {
  FuzzedDataProvider& in;
  bool tame = true;  // every choice so far is valid and in the safe range

  // A value: mostly in [-2, 2]; sometimes NaN, inf, or huge (no longer tame).
  double value() {
    const std::uint8_t kind = in.ConsumeIntegral<std::uint8_t>();
    if (kind < 240) return (static_cast<double>(kind) - 120.0) / 60.0;
    tame = false;
    switch (kind % 6) {
      case 0: return std::numeric_limits<double>::quiet_NaN();
      case 1: return std::numeric_limits<double>::infinity();
      case 2: return 1e20;
      case 3: return -1e30;
      case 4: return 3e38;
      default: return 1e-40;
    }
  }
  int small(int lo, int hi) { return in.ConsumeIntegralInRange<int>(lo, hi); }
  bool flag() { return in.ConsumeBool(); }
};

AttentionOptions draw_options(Draw& d, bool cross) {
  AttentionOptions o;
  o.heads = d.small(1, 4);
  o.key_size = d.small(1, 8);
  o.value_size = d.small(1, 8);
  o.d_model = d.small(1, 32);
  if (cross) o.memory_size = d.small(1, 32);
  o.syntax_bias = d.flag();
  switch (d.small(0, 3)) {
    case 0: o.bias.bucketing = Bucketing::linear(d.small(0, 12), d.flag()); break;
    case 1: o.bias.bucketing = Bucketing::directed(d.small(0, 4)); break;
    case 2: o.bias.bucketing = Bucketing::log(d.small(2, 16), d.small(20, 64)); break;
    default: o.bias.bucketing = Bucketing::linear(d.small(0, 3)); break;
  }
  o.bias.per_head = d.flag();
  o.bias.init = static_cast<synattn::TableInit>(d.small(0, 2));
  o.bias.table_learnable = d.flag();
  o.bias.scale_learnable = d.flag();
  switch (d.small(0, 7)) {
    case 0: o.bias.scale = 1e300; d.tame = false; break;
    case 1: o.bias.decay = 1e39; d.tame = false; break;
    case 2: o.bias.decay = -1; d.tame = false; break;
    case 3: o.dropout = 1.0; d.tame = false; break;
    default: o.bias.scale = d.small(-4, 4) * 0.5; o.bias.decay = d.small(0, 4) * 0.25; break;
  }
  if (d.flag()) o.dropout = d.small(0, 8) * 0.1;
  o.causal = d.flag();
  if (cross && o.causal) d.tame = false;  // refused: causal is self-attention only
  o.talking_heads_pre = d.flag();
  o.talking_heads_post = d.flag();
  o.check_finite = d.small(0, 7) != 0;
  if (!o.check_finite) d.tame = false;
  o.seed = d.in.ConsumeIntegral<std::uint8_t>();
  // Tree fusion, drawn last so earlier inputs keep their meaning: 2-3 views
  // mostly, sometimes a count the options refuse.
  switch (d.small(0, 7)) {
    case 0:
    case 1:
      o.bias.fusion.views = d.small(2, 3);
      o.bias.fusion.shared_table = d.flag();
      o.bias.fusion.per_head_weights = d.flag();
      o.bias.fusion.weights_learnable = d.flag();
      break;
    case 2:
      o.bias.fusion.views = d.flag() ? 0 : synattn::kMaxTreeViews + 1;
      if (o.syntax_bias) d.tame = false;
      break;
    default:
      break;
  }
  // The training path, drawn after fusion for the same reason: the fused
  // path recomputes P in backward(); with talking heads it is refused.
  o.path = static_cast<synattn::AttentionPath>(d.small(0, 2));
  if (o.path == synattn::AttentionPath::fused && (o.talking_heads_pre || o.talking_heads_post)) d.tame = false;
  return o;
}

template <class Scalar>
RowMajorMatrix<Scalar> draw_matrix(Draw& d, Index rows, Index cols) {
  RowMajorMatrix<Scalar> m(rows, cols);
  for (Index i = 0; i < m.size(); ++i) m.data()[i] = static_cast<Scalar>(d.value());
  return m;
}

template <class Scalar>
double max_abs(const RowMajorMatrix<Scalar>& m) {
  return m.size() ? static_cast<double>(m.cwiseAbs().maxCoeff()) : 0.0;
}

// max over heads of max_i |q_i| max_j |k_j| / sqrt(dk) (Cauchy-Schwarz: a
// bound on every score), in double from the layer's parameters.
template <class Layer>
double score_bound(const Layer& layer, const synattn_test::MatrixD& xq, const synattn_test::MatrixD& xkv) {
  using synattn_test::MatrixD;
  const MatrixD wq = layer.parameter("Wq").template cast<double>(), wk = layer.parameter("Wk").template cast<double>();
  const MatrixD bq = layer.parameter("bq").template cast<double>(), bk = layer.parameter("bk").template cast<double>();
  const MatrixD q = (xq * wq.transpose()).rowwise() + bq.row(0), k = (xkv * wk.transpose()).rowwise() + bk.row(0);
  const int dk = layer.key_size();
  double bound = 0;
  for (int a = 0; a < layer.heads(); ++a) {
    double mq = 0, mk = 0;
    for (Index i = 0; i < q.rows(); ++i) mq = std::max(mq, q.row(i).segment(a * dk, dk).norm());
    for (Index j = 0; j < k.rows(); ++j) mk = std::max(mk, k.row(j).segment(a * dk, dk).norm());
    bound = std::max(bound, mq * mk / std::sqrt(double(dk)));
  }
  return bound;
}

// Packed documents (bias/packed_buckets.hpp): the self-attention input cut
// into sentences of drawn lengths, each keeping its diagonal block of view
// 0's buckets, with a drawn window, cross-sentence bucket and root links.
// The packed forward must give the dense forward on packed.dense(n) (or both
// refuse, or the packed one refuse what it cannot run), and its backward
// must run. Drawn after everything else, so older inputs keep their meaning.
template <class Scalar, class Layer>
void check_packed(Draw& d, Layer& layer, const AttentionOptions& o, const RowMajorMatrix<Scalar>& x,
                  const std::vector<int>& lq, const synattn_test::BucketBlock& buckets, int nq, int nb,
                  const synattn::RandomStream* stream) {
  using Matrix = RowMajorMatrix<Scalar>;
  for (int l : lq)
    if (l < 0 || l > nq) return;  // a length out of range: refused by the dense forward already
  const int window = d.small(0, 2), cross_bucket = d.small(-1, nb - 1);
  const synattn::RootLinks links = d.flag() ? synattn::RootLinks::all_roots : synattn::RootLinks::none;
  std::unique_ptr<synattn::PackedBuckets> packed;
  try {
    packed = std::make_unique<synattn::PackedBuckets>(window, cross_bucket, links);
    for (std::size_t b = 0; b < lq.size(); ++b) {
      packed->begin_sequence();
      for (int start = 0; start < lq[b];) {
        const int len = std::min(lq[b] - start, d.small(1, 8));
        const Index row = Index(b) * nq + start;
        packed->add_sentence(buckets.block(row, start, len, len), d.small(0, len - 1));
        start += len;
      }
    }
  } catch (const synattn::Error&) {  // a bucket below -1 (tame when the layer has no bias to read it)
    require(!d.tame || !o.syntax_bias);
    return;
  }
  const synattn_test::BucketBlock dense = packed->dense(nq);
  typename Layer::Cache dense_cache, packed_cache;
  Matrix want(x.rows(), o.d_model), got(x.rows(), o.d_model);
  bool dense_ok = true;
  try {
    layer.forward({x, packed->lengths(), dense}, dense_cache, want, stream);
  } catch (const synattn::Error&) {
    dense_ok = false;
  }
  const bool packable = o.syntax_bias && o.bias.fusion.views == 1 && !o.talking_heads_pre && !o.talking_heads_post &&
                        o.path != synattn::AttentionPath::materialized;
  try {
    layer.forward({x, *packed}, packed_cache, got, stream);
  } catch (const synattn::Error&) {
    require(!packable || !dense_ok || !d.tame);
    return;
  }
  require(packable);
  if (!d.tame || !dense_ok) return;
  const synattn_test::MatrixD xd = x.template cast<double>();
  const double tol = sizeof(Scalar) == sizeof(double) ? 1e-10 : 1e-4 * std::max(1.0, score_bound(layer, xd, xd) / 16);
  const double err = got.size() ? (got - want).template cast<double>().cwiseAbs().maxCoeff() : 0.0;
  require(err <= tol * std::max(1.0, max_abs<double>(want.template cast<double>())));
  const Matrix dout = Matrix::Constant(got.rows(), got.cols(), Scalar(0.5));
  Matrix dx(x.rows(), x.cols());
  layer.backward(packed_cache, dout, {dx});
  require(dx.allFinite() && layer.gradients().allFinite());
}

template <class Scalar>
void run(FuzzedDataProvider& in) {
  using Layer = synattn::SyntaxBiasedAttention<Scalar>;
  using Matrix = RowMajorMatrix<Scalar>;
  using Vector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;
  Draw d{in};
  const bool cross = d.flag();
  AttentionOptions o;
  try {
    o = draw_options(d, cross);
  } catch (const synattn::Error&) {  // a Bucketing factory refusing its arguments
    return;
  }
  const int batch = d.small(0, 3);
  // Rows per sequence; with no sequence there are no rows at all.
  const int nq = batch ? d.small(0, 24 / batch) : 0;
  const int nkv = cross ? (batch ? d.small(0, 24 / batch) : 0) : nq;
  std::vector<int> lq(static_cast<std::size_t>(batch)), lkv(static_cast<std::size_t>(batch));
  for (int b = 0; b < batch; ++b) {
    lq[static_cast<std::size_t>(b)] = d.small(0, nq);
    lkv[static_cast<std::size_t>(b)] = cross ? d.small(0, nkv) : lq[static_cast<std::size_t>(b)];
    if (d.small(0, 31) == 0) {  // out of range
      lq[static_cast<std::size_t>(b)] = d.flag() ? -1 : nq + 1;
      d.tame = false;
    }
  }
  const int nb = o.syntax_bias ? std::max(1, o.bias.num_buckets()) : 1;
  synattn_test::BucketBlock buckets(Index(batch) * nq, nkv);
  for (Index i = 0; i < buckets.size(); ++i) {
    int v = d.small(-1, nb - 1);
    if (d.small(0, 63) == 0) {  // out of range: -2 or num_buckets
      v = d.flag() ? -2 : nb;
      if (o.syntax_bias) d.tame = false;
    }
    buckets.data()[i] = static_cast<std::int8_t>(v);
  }
  // Pairs beyond the lengths are padding (-1), as make_distance_batch writes
  // them; now and then the drawn values stay there, and a bucket left there
  // must be refused. (One byte decides, so the draws after it keep theirs;
  // an exhausted input gives 0: padding.)
  const bool keep_padding = d.small(0, 15) == 15;
  for (int b = 0; b < batch; ++b)
    for (int i = 0; i < nq; ++i)
      for (int j = 0; j < nkv; ++j) {
        if (i < lq[static_cast<std::size_t>(b)] && j < lkv[static_cast<std::size_t>(b)]) continue;
        std::int8_t& v = buckets(Index(b) * nq + i, j);
        if (!keep_padding)
          v = -1;
        else if (o.syntax_bias && v != -1)
          d.tame = false;
      }

  // Tree fusion: views 1.. stacked under view 0 with its mask and their own
  // buckets; now and then a view masks a pair view 0 keeps (refused), or
  // the block holds one view too few (refused).
  const int views = o.syntax_bias ? o.bias.fusion.views : 1;
  if (views > 1 && views <= synattn::kMaxTreeViews) {
    const Index rows = buckets.rows();
    int stacked = views;
    if (d.small(0, 31) == 0) {
      stacked = views - 1;
      d.tame = false;
    }
    synattn_test::BucketBlock all(stacked * rows, nkv);
    all.topRows(rows) = buckets;
    for (Index r = rows; r < all.rows(); ++r)
      for (Index j = 0; j < nkv; ++j) {
        const std::int8_t first = buckets(r % rows, j);
        all(r, j) = first == -1 ? first : static_cast<std::int8_t>(d.small(0, nb - 1));
        if (d.small(0, 255) == 0) {  // a mask of its own
          all(r, j) = first == -1 ? std::int8_t(0) : std::int8_t(-1);
          d.tame = false;
        }
      }
    buckets = all;
  }

  // Construction: invalid options or options beyond Scalar are refused.
  std::unique_ptr<Layer> owner;
  try {
    owner.reset(new Layer(o));
  } catch (const synattn::Error&) {
    require(!d.tame);
    return;
  }
  Layer& layer = *owner;
  // Parameters: the layer's own, sometimes one entry replaced by a fuzz value.
  if (d.small(0, 7) == 0 && layer.parameter_count() > 0) {
    const Index at = in.ConsumeIntegralInRange<Index>(0, layer.parameter_count() - 1);
    layer.parameters()[at] = static_cast<Scalar>(d.value());
  }
  const Matrix x = draw_matrix<Scalar>(d, Index(batch) * nq, o.d_model);
  const Matrix mem = draw_matrix<Scalar>(d, Index(batch) * nkv, layer.memory_size());
  if (!cross && layer.memory_size() != o.d_model) d.tame = false;  // self-attention needs memory_size == d_model
  const synattn::RandomStream stream(in.ConsumeIntegral<std::uint32_t>());
  const bool training_dropout = d.flag();

  // Every row-kernel version this CPU runs (portable first), each held to the
  // same reference and tolerance, so the vector kernels agree with the
  // portable one (docs/math.md 4.4). The fuzzer is built without -march, so
  // the vector versions are the run-time-dispatched ones a consumer gets.
  const std::vector<synattn::KernelIsa> isas = synattn::kernels::supported_isas();
  const IsaRestore restore_isa;
  for (const synattn::KernelIsa isa : isas) {
    synattn::kernels::set_isa(isa);
    typename Layer::Cache cache;
    Matrix out(Index(batch) * nq, o.d_model);
    try {
      if (cross) {
        if (training_dropout)
          layer.forward({x, lq, mem, lkv, buckets}, cache, out, &stream);
        else
          layer.forward({x, lq, mem, lkv, buckets}, cache, out);
      } else if (training_dropout) {
        layer.forward({x, lq, buckets}, cache, out, &stream);
      } else {
        layer.forward({x, lq, buckets}, cache, out);
      }
    } catch (const synattn::Error&) {
      require(!d.tame);
      return;
    }
    if (o.check_finite) require(out.allFinite());
    if (d.tame) require(out.allFinite());

    // The naive reference (double, plain loops), on tame inputs (huge ones
    // make near-ties whose winner depends on rounding).
    const synattn_test::MatrixD xd = x.template cast<double>(), md = mem.template cast<double>();
    const synattn_test::NaiveResult want = synattn_test::naive_attention(
        layer, xd, lq, cross ? md : xd, lkv, buckets, training_dropout ? &stream : nullptr);
    if (d.tame) {
      // docs/math.md 4.4's tolerance, for float scaled by the largest score
      // the inputs allow (a score's rounding error grows with its size;
      // the golden cases' scores are O(10)).
      const double scores = score_bound(layer, xd, cross ? md : xd);
      const double tol = sizeof(Scalar) == sizeof(double) ? 1e-10 : 1e-4 * std::max(1.0, scores / 16);
      const double err = out.size() ? (out.template cast<double>() - want.out).cwiseAbs().maxCoeff() : 0.0;
      require(err <= tol * std::max(1.0, max_abs<double>(want.out)));
    }

    // Backward through this layer's cache.
    const Matrix dout = Matrix::Constant(out.rows(), out.cols(), Scalar(0.5));
    Matrix dx(x.rows(), x.cols()), dmem(mem.rows(), mem.cols());
    // True when `l`'s backward refuses this cache with a synattn::Error.
    const auto refuses = [&](Layer& l, Matrix& gx, Matrix& gmem) {
      try {
        if (cross)
          l.backward(cache, dout, {gx, gmem});
        else
          l.backward(cache, dout, {gx});
      } catch (const synattn::Error&) {
        return true;
      }
      return false;
    };
    if (refuses(layer, dx, dmem)) {
      require(!d.tame);
      return;
    }
    if (d.tame) require(dx.allFinite() && layer.gradients().allFinite() && (!cross || dmem.allFinite()));

    // A second backward on the used cache is refused (it would add the
    // gradients again), and leaves them as they were.
    const Vector before = layer.gradients();
    // Bits, not values: an untame run's gradients may hold NaN.
    require(refuses(layer, dx, dmem) && std::memcmp(before.data(), layer.gradients().data(),
                                                    static_cast<std::size_t>(before.size()) * sizeof(Scalar)) == 0);

    // The same cache handed to another layer, even one of the very same
    // options (so the same shapes): always refused, never a memory error.
    try {
      Draw d2{in};  // its own tameness: the second layer's options may be anything
      AttentionOptions o2 = draw_options(d2, cross);
      if (d.flag()) o2 = o;  // sometimes the very same options
      Layer other(o2);
      Matrix dx2(x.rows(), o2.d_model), dmem2(mem.rows(), other.memory_size());
      require(refuses(other, dx2, dmem2));
    } catch (const synattn::Error&) {
    }
  }
  if (!cross && d.flag())
    check_packed<Scalar>(d, layer, o, x, lq, buckets.topRows(Index(batch) * nq), nq, nb,
                         training_dropout ? &stream : nullptr);
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  FuzzedDataProvider in(data, size);
  if (in.ConsumeBool())
    run<double>(in);
  else
    run<float>(in);
  return 0;
}
