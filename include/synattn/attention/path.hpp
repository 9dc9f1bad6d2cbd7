// synattn — which of the attention layer's two training paths a forward pass
// takes, and the one rule that picks it.
//
//   materialized  keeps the probabilities P (batch x heads x n_q x n_kv) for
//                 backward(): memory quadratic in the sequence length.
//   fused         keeps nothing per pair: backward() recomputes each
//                 row block's scores from Q and K on the forward's row
//                 blocks, and P from them, the buckets and each row's
//                 maximum and 1 / row sum, which the forward kept (its
//                 log-sum-exp in two factors: 2 scalars per query row), so
//                 P, and every gradient, are bit-identical to the
//                 materialized path's. Memory is linear in n (those row
//                 scalars, and a row block of at most kScoreBlockBytes per
//                 thread); the price is one more Q K^T and one exp per score
//                 per backward pass.
//
// Talking heads mix the scores of every head of a sequence before the
// softmax (and the probabilities after it), so they need whole (n_q, n_kv)
// blocks: they always take the materialized path, and asking for the fused
// path with them is refused. infer() keeps nothing either way.
//
// The choice, first match wins:
//   1. AttentionOptions::path, when not `automatic`;
//   2. the environment variable SYNATTN_ATTENTION_PATH=fused|materialized|auto
//      (read once, at the first forward pass; another value throws there);
//   3. the rule: fused when the probabilities would take more than
//      kFusedPathBytes (path_rule_text() states it; build_info() prints it).
#ifndef SYNATTN_ATTENTION_PATH_HPP
#define SYNATTN_ATTENTION_PATH_HPP

#include <cstdlib>
#include <cstring>
#include <string>

#include "../error.hpp"

namespace synattn {

enum class AttentionPath { automatic, fused, materialized };

inline const char* to_string(AttentionPath p) noexcept {
  switch (p) {
    case AttentionPath::fused:
      return "fused";
    case AttentionPath::materialized:
      return "materialized";
    default:
      return "auto";
  }
}

namespace detail {

// Above this many bytes of probabilities the automatic rule takes the fused
// path: a memory rule. Measured (bench_attention path/, forward + backward
// at one thread, float, each path with its own cache, docs/guide.md "Two
// training paths"): fused / materialized was 1.01x at 1 MB of P, 1.01x at
// 8 MB, 1.06x at 16 MB (1 x 1024, d_model 256, 4 heads) and 1.03x at
// 32 MB (4 x 512, d_model 512, 8 heads) with the avx512 kernels (1.00, 1.02,
// 1.10 and 1.05x with avx2): keeping P is never slower, so the threshold is
// where its memory starts to matter more than those few percent.
constexpr double kFusedPathBytes = 16.0 * 1024 * 1024;

// SYNATTN_ATTENTION_PATH as a path (automatic when unset or empty); throws
// synattn::Error on any other value.
inline AttentionPath path_from_environment() {
  const char* env = std::getenv("SYNATTN_ATTENTION_PATH");
  if (env == nullptr || *env == '\0' || std::strcmp(env, "auto") == 0) return AttentionPath::automatic;
  if (std::strcmp(env, "fused") == 0) return AttentionPath::fused;
  if (std::strcmp(env, "materialized") == 0) return AttentionPath::materialized;
  throw Error(std::string("SYNATTN_ATTENTION_PATH is '") + env + "'; expected fused, materialized or auto");
}

// The environment's path, read at the first call (a bad value throws at
// that and every later call).
inline AttentionPath environment_path() {
  static const struct Read {
    AttentionPath path = AttentionPath::automatic;
    std::string error;
    Read() {
      try {
        path = path_from_environment();
      } catch (const Error& e) {
        error = e.what();
      }
    }
  } read;
  if (!read.error.empty()) throw Error(read.error);
  return read.path;
}

// Whether a training pass takes the fused path: `requested` is the layer's
// option, `mixing` whether it has talking heads, `probability_bytes` the size
// the materialized path's P would have.
inline bool takes_fused_path(AttentionPath requested, bool mixing, double probability_bytes) {
  if (mixing) return false;
  const AttentionPath p = requested != AttentionPath::automatic ? requested : environment_path();
  if (p == AttentionPath::automatic) return probability_bytes > kFusedPathBytes;
  return p == AttentionPath::fused;
}

}  // namespace detail

// The rule in words, for build_info(): "auto: fused above 16 MB of
// probabilities, else materialized; talking heads always materialized", or
// the path SYNATTN_ATTENTION_PATH forces.
inline std::string path_rule_text() {
  try {
    const AttentionPath env = detail::environment_path();
    if (env != AttentionPath::automatic)
      return std::string(to_string(env)) + " (SYNATTN_ATTENTION_PATH; layers that set AttentionOptions::path keep it)";
  } catch (const Error&) {
    return "unknown (SYNATTN_ATTENTION_PATH holds a value other than fused, materialized or auto)";
  }
  return "auto: fused above " + std::to_string(int(detail::kFusedPathBytes / (1024 * 1024))) +
         " MB of probabilities, else materialized; talking heads always materialized";
}

}  // namespace synattn

#endif  // SYNATTN_ATTENTION_PATH_HPP
