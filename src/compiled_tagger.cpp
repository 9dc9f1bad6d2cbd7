// nn::SyntaxTransformerTagger<float> and <double> for the synattn_compiled
// library (synattn::compiled): the tagger's out-of-line members are compiled
// here once, and every user of that target sees them declared extern
// (nn/tagger.hpp).
#include <synattn/nn/tagger.hpp>

namespace synattn {
namespace nn {
template class SyntaxTransformerTagger<float>;
template class SyntaxTransformerTagger<double>;
}  // namespace nn
}  // namespace synattn
