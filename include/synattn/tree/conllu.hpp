// synattn — moved: the CoNLL-U reader now lives beside the other file formats.
#include "../io/conllu.hpp"  // IWYU pragma: export
