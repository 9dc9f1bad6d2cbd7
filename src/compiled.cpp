// The one translation unit that compiles SyntaxBiasedAttention<float> and
// <double> and the kernel registry's float and double tables (every ISA's
// kernels) for the synattn_compiled library (synattn::compiled); every user
// of that target sees them declared extern (attention/compiled.hpp,
// kernels/registry.hpp).
#include <synattn/attention/compiled.hpp>
#include <synattn/attention/syntax_attention.hpp>

namespace synattn {
template class SyntaxBiasedAttention<float>;
template class SyntaxBiasedAttention<double>;
namespace kernels {
namespace detail {
template const KernelTable<float>& table_of<float>(KernelIsa) noexcept;
template const KernelTable<double>& table_of<double>(KernelIsa) noexcept;
}  // namespace detail
}  // namespace kernels
}  // namespace synattn
