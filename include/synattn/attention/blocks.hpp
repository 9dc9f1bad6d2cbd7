// synattn — how the attention layer cuts its buffers into (sequence, head)
// blocks: the shape of a pass (BlockGeometry), the one `valid_rows` rule, the
// row-block size of long sequences, and the enums its steps take instead of
// bare true/false. Shared by forward_steps.hpp and backward_steps.hpp.
//
// Layouts (B sequences, h heads, n_q query rows and n_kv keys per sequence):
//   tokens          (B * n_q, width): sequence b is rows [b * n_q, b * n_q + n_q)
//   qkv / kv        self: (B * n, h*dk | h*dk | h*dv); cross: Q (B * n_q, h*dk)
//                   and KV (B * n_kv, h*dk | h*dv). Head a of Q is columns
//                   [a * dk, a * dk + dk); of K k_off + a * dk; of V v_off + a * dv.
//   scores / P      (B * h * n_q, n_kv): block (b, a) is rows [(b * h + a) * n_q, ... + n_q)
//   buckets         (B * n_q, n_kv) int8, -1 masks the pair
#ifndef SYNATTN_ATTENTION_BLOCKS_HPP
#define SYNATTN_ATTENTION_BLOCKS_HPP

#include <Eigen/Core>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <vector>

#include "../kernels/operands.hpp"
#include "../matrix.hpp"

namespace synattn {

namespace detail {

// A training pass keeps what backward() needs; an inference pass keeps nothing.
enum class Pass { training, inference };
// The first row block of a (sequence, head) task overwrites dK and dV; later
// row blocks add their share: the products' own Accumulate.
using kernels::Accumulate;

// Rough cost of a softmax (forward or backward) per score, in multiply-adds,
// for deciding whether a loop is worth a parallel region.
constexpr double kSoftmaxWork = 16.0;

// Largest forward score block a task works on: big enough that the products
// stay efficient, small enough to stay in L2 with the K and V panels.
constexpr Index kScoreBlockBytes = 512 * 1024;
// Probability buffers larger than this are written with streaming stores.
constexpr Index kStreamingBytes = 8 * 1024 * 1024;

// Query rows per task for an (n_q, n_kv) block: all of them while the block
// fits kScoreBlockBytes, else a multiple of 16 that fits. Depends on the shape
// only, so the cut (and every sum) is the same for any thread count.
template <class Scalar>
Index score_block_rows(Index nq, Index nkv) {
  const Index row_bytes = std::max<Index>(1, nkv) * Index(sizeof(Scalar));
  if (nq * row_bytes <= kScoreBlockBytes) return std::max<Index>(1, nq);
  return std::max<Index>(16, (kScoreBlockBytes / row_bytes) / 16 * 16);
}

// Row r of a row-major int8 block as a pointer, valid also for the empty
// block (row() asserts on it in Debug builds: an empty sequence has none).
inline const std::int8_t* bucket_row(const std::int8_t* data, Index ld, Index r) noexcept {
  return data == nullptr ? nullptr : data + r * ld;
}

// The shape of one forward or backward pass, everything a step needs to find
// its block: sizes, the columns of K and V in their source, the sequence
// lengths (owned by the cache), causal masking.
struct BlockGeometry {
  Index batch = 0, n_q = 0, n_kv = 0, dk = 0, dv = 0;
  int heads = 0;
  Index k_off = 0, v_off = 0;  // first column of K / V in their source (self: h*dk / 2h*dk; cross: 0 / h*dk)
  bool causal = false;
  const std::vector<int>* lengths_q = nullptr;
  const std::vector<int>* lengths_kv = nullptr;

  // A row block of a packed sequence (attention/key_windows.hpp) sees keys
  // [key0, key0 + key_span) only, their buckets in `tile` (rows x
  // key_span); key_span < 0 (the dense input): every key.
  Index key0 = 0, key_span = -1;
  const std::int8_t* tile = nullptr;

  Index tasks() const noexcept { return batch * heads; }
  Index block_size() const noexcept { return n_q * n_kv; }  // one (sequence, head) score block
  Index lq(Index b) const noexcept { return static_cast<Index>((*lengths_q)[static_cast<std::size_t>(b)]); }
  Index lk(Index b) const noexcept { return static_cast<Index>((*lengths_kv)[static_cast<std::size_t>(b)]); }
  // Of query rows [r0, r0 + m) of sequence b, how many are real queries (the
  // first ones; the rest are padding).
  Index valid_rows(Index b, Index r0, Index m) const noexcept {
    return std::max<Index>(0, std::min<Index>(m, lq(b) - r0));
  }
  // The kernels' causal argument: the block's first query position relative
  // to its first key, or -1.
  Index causal_row0(Index r0) const noexcept { return causal ? r0 - key0 : -1; }
  // A row block's score columns (its leading dimension), and how many of them
  // are keys of sequence b (the rest: padding keys).
  Index ld() const noexcept { return key_span < 0 ? n_kv : key_span; }
  Index keys(Index b) const noexcept { return key_span < 0 ? lk(b) : key_span; }
  // The row of K and V (of their source) that is a row block's first key.
  Index key_row(Index b) const noexcept { return b * n_kv + key0; }
  // A row block's first bucket row (query rows r0.. of sequence b) in
  // `buckets` (leading dimension ldb), or its tile; and that leading dimension.
  const std::int8_t* bucket_rows(const std::int8_t* buckets, Index ldb, Index b, Index r0) const noexcept {
    return tile ? tile : bucket_row(buckets, ldb, b * n_q + r0);
  }
  Index bucket_ld(Index ldb) const noexcept { return tile ? ld() : ldb; }
};

// Block `block` of a buffer of contiguous (rows, cols) blocks.
template <class Scalar>
Eigen::Map<RowMajorMatrix<Scalar>> block_of(RowMajorMatrix<Scalar>& buffer, Index block, Index rows, Index cols) {
  return Eigen::Map<RowMajorMatrix<Scalar>>(buffer.data() + block * rows * cols, rows, cols);
}
template <class Scalar>
Eigen::Map<const RowMajorMatrix<Scalar>> block_of(const RowMajorMatrix<Scalar>& buffer, Index block, Index rows,
                                                  Index cols) {
  return Eigen::Map<const RowMajorMatrix<Scalar>>(buffer.data() + block * rows * cols, rows, cols);
}

}  // namespace detail
}  // namespace synattn

#endif  // SYNATTN_ATTENTION_BLOCKS_HPP
