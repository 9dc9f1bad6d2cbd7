// BiaffineParser<float> and <double> for the synattn_compiled library
// (synattn::compiled): the parser's out-of-line members are compiled here
// once, and every user of that target sees them declared extern
// (parse/parser.hpp). A second file beside compiled.cpp so that the two
// compile in parallel.
#include <synattn/parse/parser.hpp>

namespace synattn {
namespace parse {
template class BiaffineParser<float>;
template class BiaffineParser<double>;
}  // namespace parse
}  // namespace synattn
