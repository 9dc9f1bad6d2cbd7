// synattn — umbrella header: everything the library offers.
#ifndef SYNATTN_SYNATTN_HPP
#define SYNATTN_SYNATTN_HPP

#include "config.hpp"
#include "error.hpp"
#include "tree/heads.hpp"
#include "tree/dependency_tree.hpp"

#endif  // SYNATTN_SYNATTN_HPP
