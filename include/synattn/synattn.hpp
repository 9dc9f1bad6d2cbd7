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
#include "tree/conllu.hpp"

#include "io/npy.hpp"

#include "bias/bucketing.hpp"
#include "bias/bias_table.hpp"

#include "attention/options.hpp"
#include "attention/syntax_attention.hpp"

#include "util/parallel.hpp"
#include "util/parameters.hpp"

#endif  // SYNATTN_SYNATTN_HPP
