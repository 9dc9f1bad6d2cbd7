// synattn — counter-based random numbers for dropout and initialisation.
//
// A RandomStream is a 64-bit key; the random bits of element `counter` are a
// pure function of (key, counter). Nothing is consumed or advanced, so a
// dropout mask can be drawn by any thread in any order and drawn again in the
// backward pass instead of being stored: results never depend on the number
// of threads or on the order work is scheduled in.
//
// Streams form a tree: derive(id) gives an independent child stream, so a
// model derives one stream per training step, then per layer, then per
// dropout site, from one user seed:
//
//   RandomStream step = RandomStream(seed).derive(step_index);
//   RandomStream attn = step.derive(layer).derive(kSiteAttention);
//   bool kept = attn.keep(element_index, threshold);
//
// Dropout masks are keyed by sequence, not by a row of the padded batch: a
// stream carries the index of its batch's first sequence within the global
// batch (sequences_from(first), kept by derive()), and sequence(b) gives the
// stream of the batch's sequence b, i.e. of global sequence first + b. A
// dropout site counts within that sequence with strides that depend on the
// sequence alone (position * features + feature), so a mask does not change
// when the global batch is split across processes or padded differently:
//
//   RandomStream step = RandomStream(seed).derive(step_index).sequences_from(16);
//   bool kept = step.derive(site).sequence(b).keep(i * cols + c, threshold);
//
// bits() and uniform() (initialisation, data shuffling) mix with splitmix64's
// finaliser (Steele, Lea, Flood 2014), which passes BigCrush as a
// counter-based generator. keep() (dropout, the hot use: one call per element
// of every dropped activation, forward and backward) uses a 32-bit hash
// instead: two rounds of Wellons' lowbias32, keyed by the two halves of the
// key. Loops over elements vectorise it with 32-bit multiplies, 8 lanes on
// AVX2, where splitmix's 64-bit multiplies take 4 lanes and three
// instructions each: 0.55 vs 1.2 ns per float element (AMD Zen 3), about 5%
// of a training step of the train_deprel model. For a given key and high
// counter half, the kept/dropped decision is a bijection of the low half
// thresholded, so no two elements of a row share a draw.
#ifndef SYNATTN_UTIL_RANDOM_HPP
#define SYNATTN_UTIL_RANDOM_HPP

#include <cmath>
#include <cstdint>

#include "../error.hpp"

namespace synattn {

// splitmix64's output function: a bijection of 64-bit words with full avalanche.
constexpr std::uint64_t mix64(std::uint64_t z) noexcept {
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

// Wellons' lowbias32 (hash-prospector; bias 0.17): a bijection of 32-bit
// words with good avalanche, from 32-bit multiplies only.
constexpr std::uint32_t lowbias32(std::uint32_t x) noexcept {
  x ^= x >> 16;
  x *= 0x7feb352du;
  x ^= x >> 15;
  x *= 0x846ca68bu;
  return x ^ (x >> 16);
}

class RandomStream {
 public:
  constexpr RandomStream() noexcept = default;
  explicit constexpr RandomStream(std::uint64_t seed) noexcept : key_(mix64(seed + 0x9e3779b97f4a7c15ull)) {}

  constexpr std::uint64_t key() const noexcept { return key_; }

  // An independent stream for sub-task `id` (a step, a layer, a site). The
  // child keeps this stream's first sequence (sites derive from a step's
  // stream that the caller set with sequences_from()).
  constexpr RandomStream derive(std::uint64_t id) const noexcept {
    RandomStream child;
    child.key_ = mix64(key_ ^ mix64(id + 0x632be59bd9b4e019ull));
    child.first_sequence_ = first_sequence_;
    return child;
  }

  // This stream for a batch whose sequence 0 is sequence `first` of the
  // global batch (a process's shard starting there); the key is unchanged.
  constexpr RandomStream sequences_from(std::uint64_t first) const noexcept {
    RandomStream s = *this;
    s.first_sequence_ = first;
    return s;
  }
  constexpr std::uint64_t first_sequence() const noexcept { return first_sequence_; }

  // The independent stream of the batch's sequence b (global sequence
  // first_sequence() + b). Its own domain: the id is offset by a constant
  // other than derive()'s, so sequence(k) and derive(k) are unrelated
  // streams. The child counts from sequence 0 again.
  constexpr RandomStream sequence(std::uint64_t b) const noexcept {
    RandomStream child;
    child.key_ = mix64(key_ ^ mix64(first_sequence_ + b + 0xd1b54a32d192ed03ull));
    return child;
  }

  // 64 random bits of element `counter`.
  constexpr std::uint64_t bits(std::uint64_t counter) const noexcept {
    return mix64(key_ + (counter + 1) * 0x9e3779b97f4a7c15ull);
  }

  // Uniform in [0, 1), 53 random bits.
  double uniform(std::uint64_t counter) const noexcept {
    return static_cast<double>(bits(counter) >> 11) * 0x1.0p-53;
  }

  // 32 random bits of element `counter` for dropout (see the top of this
  // file): two keyed rounds of lowbias32.
  constexpr std::uint32_t drop_bits(std::uint64_t counter) const noexcept {
    const std::uint32_t x = lowbias32(static_cast<std::uint32_t>(counter) ^ static_cast<std::uint32_t>(key_));
    return lowbias32(x ^ static_cast<std::uint32_t>(key_ >> 32) ^ static_cast<std::uint32_t>(counter >> 32));
  }

  // Element `counter` is kept by dropout with threshold drop_threshold(p):
  // kept with probability 1 - p (to within 2^-32).
  constexpr bool keep(std::uint64_t counter, std::uint32_t threshold) const noexcept {
    return drop_bits(counter) >= threshold;
  }

 private:
  std::uint64_t key_ = 0;
  std::uint64_t first_sequence_ = 0;
};

// The 32-bit threshold below which an element is dropped, for a drop
// probability p in [0, 1). p = 0 gives 0: nothing is dropped.
inline std::uint32_t drop_threshold(double p) {
  if (!(p >= 0.0 && p < 1.0))
    throw Error("drop_threshold: dropout probability must be in [0, 1), got " + std::to_string(p));
  return static_cast<std::uint32_t>(std::ldexp(p, 32));
}

}  // namespace synattn

#endif  // SYNATTN_UTIL_RANDOM_HPP
