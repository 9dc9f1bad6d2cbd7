// The one translation unit that compiles SyntaxBiasedAttention<float> and
// <double> and the kernel registry's float and double tables (every ISA's
// kernels) for the synattn_compiled library (synattn::compiled); every user
// of that target sees them declared extern (attention/compiled.hpp,
// kernels/registry.hpp). It also holds the one copy of DependencyTree's
// validation and indexes and of make_bucket_batch (SYNATTN_TREES_SOURCE:
// tree/dependency_tree.hpp).
#define SYNATTN_TREES_SOURCE
#include <synattn/attention/compiled.hpp>
#include <synattn/attention/syntax_attention.hpp>
#include <synattn/bias/bucket_batch.hpp>
#include <synattn/tree/dependency_tree.hpp>

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
