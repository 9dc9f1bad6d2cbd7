// synattn — how the attention layer walks a packed sequence
// (bias/packed_buckets.hpp): row blocks of whole sentences, each with the
// one key range [key0, key0 + span) its sentence window leaves visible, and
// the int8 bucket tile of that block, assembled from the sentences' blocks.
// Keys outside a block's range are masked for all its rows, so they are
// never computed: the map of live tiles comes from the sentence boundaries,
// O(sentences + blocks), never from the n x n pairs. With root links each
// root row is a block of its own whose range is the whole sequence (it sees
// every root): n keys per sentence, so they cost O(sentences x n).
#ifndef SYNATTN_ATTENTION_KEY_WINDOWS_HPP
#define SYNATTN_ATTENTION_KEY_WINDOWS_HPP

#include <algorithm>
#include <cstdint>
#include <cstdlib>
#include <vector>

#include "../bias/packed_buckets.hpp"
#include "../matrix.hpp"

namespace synattn {
namespace detail {

// Query rows per row block of a packed sequence: whole sentences are grouped
// while they fit (a longer sentence is cut). Small enough that a block's key
// range stays close to the rows' own windows, large enough for the products.
constexpr Index kPackedBlockRows = 64;

// Query rows [r0, r0 + m) of sequence b see keys [key0, key0 + span) only.
struct KeyWindow {
  Index b = 0, r0 = 0, m = 0, key0 = 0, span = 0;
};

struct KeyWindows {
  std::vector<KeyWindow> blocks;  // sequence by sequence, rows in order; together they cover every row
  std::vector<Index> first;       // per sequence, then the end: its first block
  Index rows = 0;                 // the most rows of a block
  Index max_tile = 0;             // the largest rows x span of a block: a score block's size
};

// The row blocks of `packed` padded to n positions per sequence. Padding
// rows [length, n) get blocks with no keys. Causal masking cuts each range
// at the block's last row. Depends on the layout only: the same blocks, and
// so the same sums, for every thread count.
inline KeyWindows key_windows(const PackedBuckets& packed, Index n, bool causal) {
  KeyWindows out;
  const Index w = packed.window();
  out.first.reserve(static_cast<std::size_t>(packed.sequences()) + 1);
  for (Index b = 0; b < packed.sequences(); ++b) {
    out.first.push_back(static_cast<Index>(out.blocks.size()));
    const Index sentences = packed.sentences(b), length = packed.lengths()[static_cast<std::size_t>(b)];
    const auto end_of = [&](Index s) { return packed.sentence_start(b, s) + packed.sentence_length(b, s); };
    const auto block = [&](Index r0, Index m, Index key0, Index key_end) {
      KeyWindow k;
      k.b = b;
      k.r0 = r0;
      k.m = m;
      k.key0 = key0;
      k.span = (causal ? std::min(key_end, r0 + m) : key_end) - key0;
      out.blocks.push_back(k);
    };
    const auto add = [&](Index r0, Index m, Index s0, Index s1) {  // rows of sentences s0..s1
      const Index key0 = packed.sentence_start(b, std::max<Index>(0, s0 - w));
      const Index key_end = end_of(std::min(sentences - 1, s1 + w));
      Index from = r0;
      if (packed.root_links())  // each root row alone, on the whole sequence
        for (Index s = s0; s <= s1; ++s) {
          const Index root = packed.sentence_root(b, s);
          if (root < r0 || root >= r0 + m) continue;
          if (root > from) block(from, root - from, key0, key_end);
          block(root, 1, 0, length);
          from = root + 1;
        }
      if (from < r0 + m) block(from, r0 + m - from, key0, key_end);
    };
    Index s = 0;
    while (s < sentences) {
      const Index start = packed.sentence_start(b, s), len = packed.sentence_length(b, s);
      if (len >= kPackedBlockRows) {  // a long sentence alone, in pieces
        for (Index r0 = start; r0 < start + len; r0 += kPackedBlockRows)
          add(r0, std::min(kPackedBlockRows, start + len - r0), s, s);
        ++s;
        continue;
      }
      Index last = s;  // sentences s..last, while they fit
      while (last + 1 < sentences && end_of(last + 1) - start <= kPackedBlockRows) ++last;
      add(start, end_of(last) - start, s, last);
      s = last + 1;
    }
    for (Index r0 = length; r0 < n; r0 += kPackedBlockRows) {  // padding rows: no keys
      KeyWindow k;
      k.b = b;
      k.r0 = r0;
      k.m = std::min(kPackedBlockRows, n - r0);
      out.blocks.push_back(k);
    }
  }
  out.first.push_back(static_cast<Index>(out.blocks.size()));
  for (const KeyWindow& k : out.blocks) {
    out.rows = std::max(out.rows, k.m);
    out.max_tile = std::max(out.max_tile, k.m * k.span);
  }
  return out;
}

// tile (k.m, k.span), row-major: the bucket of pair (k.r0 + i, k.key0 + j)
// (bias/packed_buckets.hpp's rule), -1 for padding rows. O(k.m x k.span).
inline void fill_bucket_tile(std::int8_t* tile, const PackedBuckets& packed, const KeyWindow& k) {
  const Index length = packed.lengths()[static_cast<std::size_t>(k.b)];
  const Index valid = std::max<Index>(0, std::min(k.m, length - k.r0));
  std::fill(tile + valid * k.span, tile + k.m * k.span, std::int8_t(-1));
  if (valid == 0 || k.span == 0) return;
  const Index first_key_sentence = packed.sentence_of(k.b, k.key0);
  const Index last_key_sentence = packed.sentence_of(k.b, k.key0 + k.span - 1);
  Index s = packed.sentence_of(k.b, k.r0);
  for (Index i = 0; i < valid; ++i) {
    const Index p = k.r0 + i;
    while (p >= packed.sentence_start(k.b, s) + packed.sentence_length(k.b, s)) ++s;
    std::int8_t* row = tile + i * k.span;
    for (Index t = first_key_sentence; t <= last_key_sentence; ++t) {
      const Index start = packed.sentence_start(k.b, t), len = packed.sentence_length(k.b, t);
      const Index lo = std::max(start, k.key0), hi = std::min(start + len, k.key0 + k.span);
      std::int8_t* dst = row + (lo - k.key0);
      if (t == s) {
        const std::int8_t* src = packed.sentence_row(k.b, s, p - start) + (lo - start);
        std::copy(src, src + (hi - lo), dst);
      } else if (std::abs(s - t) <= packed.window()) {
        std::fill(dst, dst + (hi - lo), std::int8_t(packed.cross_bucket()));
      } else {
        std::fill(dst, dst + (hi - lo), std::int8_t(-1));
        const Index root = packed.sentence_root(k.b, t);  // a root sees the other roots
        if (packed.root_links() && packed.sentence_root(k.b, s) == p && root >= lo && root < hi)
          row[root - k.key0] = std::int8_t(packed.cross_bucket());
      }
    }
  }
}

}  // namespace detail
}  // namespace synattn

#endif  // SYNATTN_ATTENTION_KEY_WINDOWS_HPP
