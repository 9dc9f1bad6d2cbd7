// synattn — how a matrix product takes its operands and treats its output:
// the one Transpose and the one Accumulate that kernels::gemm,
// kernels::product and the attention layer's steps all use.
#ifndef SYNATTN_KERNELS_OPERANDS_HPP
#define SYNATTN_KERNELS_OPERANDS_HPP

namespace synattn {
namespace kernels {

// Which operands of C = op(A) op(B) are transposed.
enum class Transpose { none, lhs, rhs, both };

// Every Transpose, for loops over all four products.
constexpr Transpose kAllTransposes[] = {Transpose::none, Transpose::lhs, Transpose::rhs, Transpose::both};

// Whether `t` transposes A (the left operand) or B (the right one).
constexpr bool transposes_lhs(Transpose t) noexcept { return t == Transpose::lhs || t == Transpose::both; }
constexpr bool transposes_rhs(Transpose t) noexcept { return t == Transpose::rhs || t == Transpose::both; }

// Whether a product overwrites C or adds to it.
enum class Accumulate { overwrite, add };

}  // namespace kernels
}  // namespace synattn

#endif  // SYNATTN_KERNELS_OPERANDS_HPP
