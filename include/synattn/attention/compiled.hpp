// synattn — opt-in compiled mode, like fmt's: with SYNATTN_COMPILED defined
// (linking the CMake target synattn::compiled defines it), every translation
// unit declares the layer's float and double instantiations extern, so it
// parses the templates but does not compile them; src/compiled.cpp, built
// once into the synattn_compiled library, holds the only copies. Without the
// macro (the default) synattn stays header-only and nothing changes.
//
// The library's copies run the code its own flags chose (-march, OpenMP,
// SYNATTN_PORTABLE_KERNELS): build it for the oldest CPU the program runs
// on. Library and program must agree on Eigen's allocation alignment, which
// follows -march unless pinned: the CMake target pins EIGEN_MAX_ALIGN_BYTES=64
// for both (docs/building.md, compiled mode).
#ifndef SYNATTN_ATTENTION_COMPILED_HPP
#define SYNATTN_ATTENTION_COMPILED_HPP

#if defined(SYNATTN_COMPILED)
#include "syntax_attention.hpp"

namespace synattn {
extern template class SyntaxBiasedAttention<float>;
extern template class SyntaxBiasedAttention<double>;
}  // namespace synattn
#endif

#endif  // SYNATTN_ATTENTION_COMPILED_HPP
