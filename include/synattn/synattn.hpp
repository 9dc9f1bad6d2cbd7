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
#include "io/conllu.hpp"

#include "io/npy.hpp"

#include "bias/bucketing.hpp"
#include "bias/bias_table.hpp"
#include "bias/bucket_batch.hpp"

#include "data/tagging_corpus.hpp"
#include "data/vocabulary.hpp"
#include "data/batching.hpp"
#include "data/token_batch.hpp"

#include "attention/options.hpp"
#include "attention/syntax_attention.hpp"

#include "util/parallel.hpp"
#include "util/parameters.hpp"
#include "util/random.hpp"
#include "util/cpu_features.hpp"
#include "util/simd_notice.hpp"
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

// Training machinery. Not here: io/safetensors.hpp and train/checkpoint.hpp,
// which need nlohmann-json (link synattn::checkpoint and include them).
#include "train/parameter_groups.hpp"
#include "train/optimizer.hpp"
#include "train/schedules.hpp"
#include "train/clipping.hpp"
#include "train/progressive.hpp"

#endif  // SYNATTN_SYNATTN_HPP
