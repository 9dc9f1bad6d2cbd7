// The one translation unit that compiles SyntaxBiasedAttention<float> and
// <double> for the synattn_compiled library (synattn::compiled); every user
// of that target sees them declared extern (attention/compiled.hpp).
#include <synattn/attention/compiled.hpp>
#include <synattn/attention/syntax_attention.hpp>

namespace synattn {
template class SyntaxBiasedAttention<float>;
template class SyntaxBiasedAttention<double>;
}  // namespace synattn
