// synattn — umbrella header: everything the library offers.
#ifndef SYNATTN_SYNATTN_HPP
#define SYNATTN_SYNATTN_HPP

#include "config.hpp"
#include "build_info.hpp"
#include "error.hpp"
#include "matrix.hpp"
#include "special_values.hpp"

#include "tree/heads.hpp"
#include "tree/dependency_tree.hpp"
#include "tree/lca.hpp"
#include "tree/distance.hpp"
#include "tree/batch.hpp"
#include "tree/subword.hpp"
#include "tree/stats.hpp"
#include "tree/corruption.hpp"
#include "io/conllu.hpp"

#include "io/npy.hpp"

#include "bias/bias_table.hpp"
#include "bias/bucket_batch.hpp"
#include "bias/bucketing.hpp"
#include "bias/packed_buckets.hpp"

#include "data/tagging_corpus.hpp"
#include "data/vocabulary.hpp"
#include "data/batching.hpp"
#include "data/token_batch.hpp"
#include "data/tree_source.hpp"

#include "attention/options.hpp"
#include "attention/syntax_attention.hpp"

#include "util/parallel.hpp"
#include "util/parameters.hpp"
#include "util/random.hpp"
#include "util/cpu_features.hpp"
#include "kernels/simd_notice.hpp"
#include "util/memory.hpp"

#include "nn/common.hpp"
#include "nn/linear.hpp"
#include "nn/embedding.hpp"
#include "nn/layer_norm.hpp"
#include "nn/feed_forward.hpp"
#include "nn/encoder_layer.hpp"
#include "nn/encoder.hpp"
#include "nn/token_classifier.hpp"
#include "nn/parameter_binding.hpp"
#include "nn/tagger.hpp"

// Training machinery.
#include "train/parameter_groups.hpp"
#include "train/optimizer.hpp"
#include "train/schedules.hpp"
#include "train/clipping.hpp"
#include "train/progressive.hpp"

// Safetensors files and checkpoints (save_checkpoint, save_weights, ...)
// parse JSON with nlohmann-json, whose header costs every file that includes
// it a few seconds: they are here for programs that link synattn::checkpoint
// (it defines SYNATTN_WITH_CHECKPOINT). Without nlohmann-json on the include
// path their names are declared deleted, so that a call fails pointing here
// rather than at an undeclared name. Otherwise include
// <synattn/train/checkpoint.hpp> yourself.
#if defined(SYNATTN_WITH_CHECKPOINT)
#include "io/safetensors.hpp"
#include "train/checkpoint.hpp"
#elif !__has_include(<nlohmann/json.hpp>)
namespace synattn {
// Needs nlohmann-json: link synattn::checkpoint (or add nlohmann-json's include path; Debian: nlohmann-json3-dev).
template <class... Args> void save_checkpoint(Args&&...) = delete;
template <class... Args> void load_checkpoint(Args&&...) = delete;
template <class... Args> void save_weights(Args&&...) = delete;
template <class... Args> void load_weights(Args&&...) = delete;
template <class... Args> void save_weights_half(Args&&...) = delete;
template <class... Args> void save_safetensors(Args&&...) = delete;
template <class... Args> void load_safetensors(Args&&...) = delete;
}  // namespace synattn
#endif

#endif  // SYNATTN_SYNATTN_HPP
