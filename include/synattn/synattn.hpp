// synattn — umbrella header: everything the library offers.
#ifndef SYNATTN_SYNATTN_HPP
#define SYNATTN_SYNATTN_HPP

#include "config.hpp"
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

#endif  // SYNATTN_SYNATTN_HPP
