// synattn — the shape and options of a syntax-biased attention layer.
#ifndef SYNATTN_ATTENTION_OPTIONS_HPP
#define SYNATTN_ATTENTION_OPTIONS_HPP

#include <cstdint>
#include <string>

#include "../bias/bias_table.hpp"
#include "../error.hpp"
#include "path.hpp"

namespace synattn {

// Self-attention (keys and values from the queries' own tokens) or
// cross-attention (from a separate memory).
enum class AttentionKind { self, cross };

// Set the fields, then construct the layer (which validates them):
//
//   AttentionOptions o(512, 8);          // d_model, heads
//   o.bias.bucketing = Bucketing::log(16, 64);
//   o.bias.per_head = true;
//   o.talking_heads_pre = true;
struct AttentionOptions {
  AttentionOptions() = default;
  AttentionOptions(int d_model_, int heads_) : d_model(d_model_), heads(heads_) {}

  int d_model = 0;  // token feature width (input and output)
  int heads = 1;
  int key_size = 0;     // per-head query/key size dk; 0: d_model / heads
  int value_size = 0;   // per-head value size dv; 0: d_model / heads
  int memory_size = 0;  // width of the key/value source in cross-attention; 0: d_model

  // The syntax bias s * T[bucket]. When false the layer is plain scaled
  // dot-product attention: no table, no scale, no bucket block.
  bool syntax_bias = true;
  BiasTableOptions bias;

  bool causal = false;  // self-attention only: key j is masked for query i < j

  // Talking-heads attention (Shazeer et al. 2020): learnable heads x heads
  // matrices mixing the heads' scores before the softmax (pre) and the
  // probabilities after it (post). Both start as the identity.
  bool talking_heads_pre = false;
  bool talking_heads_post = false;

  // Dropout on the attention probabilities before they multiply V (PyTorch's
  // nn.MultiheadAttention `dropout`), in [0, 1). Applied only by a forward()
  // given a dropout RandomStream (training); forward() without one and
  // infer() never drop. Kept weights are scaled by 1 / (1 - dropout);
  // with post-mixing talking heads the mixed probabilities are dropped.
  double dropout = 0.0;

  // NaN/inf policy (docs/math.md 4.5). On: forward passes refuse non-finite
  // inputs and parameters (weights, biases, table, scale, talking-heads
  // matrices), backward refuses a non-finite dout, and finite inputs outside
  // the safe range (scores that could overflow: max|q| max|k| / sqrt(dk) +
  // max|s T| > max(Scalar) / 4) are refused too; each throws synattn::Error
  // naming the argument or parameter and the element. One read of each
  // (cheap next to the products). Off: nothing is checked and a NaN anywhere
  // propagates to the output rows that read it, as in PyTorch.
  bool check_finite = true;

  // Which training path keeps what backward() needs (attention/path.hpp):
  // automatic (the default) lets SYNATTN_ATTENTION_PATH, then the measured
  // rule, decide; fused keeps memory linear in the sequence length
  // (refused with talking heads); materialized keeps the probabilities,
  // which the cache's probabilities() then shows.
  AttentionPath path = AttentionPath::automatic;

  // Seed of the projection weights' initialisation (nn.Linear's default:
  // U(-1/sqrt(fan_in), 1/sqrt(fan_in)) for weights and biases).
  std::uint64_t seed = 0x5eedu;

  int resolved_key_size() const noexcept { return key_size > 0 ? key_size : (heads > 0 ? d_model / heads : 0); }
  int resolved_value_size() const noexcept { return value_size > 0 ? value_size : (heads > 0 ? d_model / heads : 0); }
  int resolved_memory_size() const noexcept { return memory_size > 0 ? memory_size : d_model; }

  void validate() const {
    const std::string w = "AttentionOptions: ";
    if (d_model < 1) throw Error(w + "d_model must be >= 1, got " + std::to_string(d_model));
    if (heads < 1) throw Error(w + "heads must be >= 1, got " + std::to_string(heads));
    if (key_size < 0) throw Error(w + "key_size must be >= 0 (0: d_model / heads), got " + std::to_string(key_size));
    if (value_size < 0)
      throw Error(w + "value_size must be >= 0 (0: d_model / heads), got " + std::to_string(value_size));
    if (memory_size < 0) throw Error(w + "memory_size must be >= 0 (0: d_model), got " + std::to_string(memory_size));
    if ((key_size == 0 || value_size == 0) && d_model % heads != 0)
      throw Error(w + "d_model " + std::to_string(d_model) + " is not divisible by heads " + std::to_string(heads) +
                  "; set key_size and value_size explicitly");
    if (resolved_key_size() < 1 || resolved_value_size() < 1)
      throw Error(w + "key_size and value_size must be >= 1 (d_model / heads is 0)");
    // Negated test: also rejects NaN.
    if (!(dropout >= 0.0 && dropout < 1.0))
      throw Error(w + "dropout must be a probability in [0, 1), got " + std::to_string(dropout));
    if (path != AttentionPath::automatic && path != AttentionPath::fused && path != AttentionPath::materialized)
      throw Error(w + "path is not an AttentionPath value (" + std::to_string(static_cast<int>(path)) + ")");
    if (path == AttentionPath::fused && (talking_heads_pre || talking_heads_post))
      throw Error(w +
                  "path fused cannot run talking heads (they mix every head's whole score block); use "
                  "materialized or automatic");
    if (syntax_bias) bias.validate("AttentionOptions.bias");
  }
};

}  // namespace synattn

#endif  // SYNATTN_ATTENTION_OPTIONS_HPP
