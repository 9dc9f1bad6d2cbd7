// CoNLL-U word lines for hand-made test files (test support).
#ifndef SYNATTN_TESTS_CONLLU_ROWS_HPP
#define SYNATTN_TESTS_CONLLU_ROWS_HPP

#include <string>

namespace synattn_test {

// One word line with the columns the readers look at; LEMMA copies FORM, the
// other columns are '_', as in real files.
inline std::string row(const std::string& id, const std::string& form, const std::string& head,
                       const std::string& deprel = "dep", const std::string& upos = "X") {
  return id + "\t" + form + "\t" + form + "\t" + upos + "\t_\t_\t" + head + "\t" + deprel + "\t_\t_\n";
}
inline std::string row(int id, const std::string& form, int head, const std::string& deprel = "dep") {
  return row(std::to_string(id), form, std::to_string(head), deprel);
}

}  // namespace synattn_test

#endif  // SYNATTN_TESTS_CONLLU_ROWS_HPP
