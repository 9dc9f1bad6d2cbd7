// cmake --preset fuzz && cmake --build --preset fuzz --target fuzz_conllu && tools/make_fuzz_seeds.sh build/fuzz/seeds && build/fuzz/fuzz/fuzz_conllu -max_total_time=60 build/fuzz/seeds
//
// libFuzzer target for the CoNLL-U reader. Besides "never crash", it checks
// the reader's promises, and aborts (a finding) when one is broken:
// - Strict mode throws nothing but synattn::Error, and after each error it
//   goes on with the next sentence, having consumed at least one line;
// - Lenient mode throws nothing at all, and returns exactly the sentences
//   that Strict mode returns between its errors, with one issue per error
//   (the same "FILE:LINE: reason" text);
// - every sentence returned is a valid tree (tree() does not throw), with
//   consecutive IDs and heads that round-trip through the canonical form.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <synattn/io/conllu.hpp>

namespace {

void expect(bool ok, const char* promise) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_conllu: broken promise: %s\n", promise);
    std::abort();
  }
}

// Not caught: a TreeError from tree() would mean the reader let a bad tree through.
void check_sentence(const synattn::ConlluSentence& s, std::size_t index) {
  expect(!s.empty(), "a returned sentence has words");
  expect(s.index == index, "index counts the good sentences");
  expect(s.line >= 1, "a sentence has a line number");
  for (std::size_t i = 0; i < s.size(); ++i)
    expect(s.words[i].id == static_cast<int>(i) + 1, "IDs are consecutive from 1");
  const synattn::DependencyTree tree = s.tree();
  expect(tree.size() == static_cast<int>(s.size()) && tree.num_trees() == 1, "one tree of all words");
  const std::vector<int> back =
      synattn::from_canonical_heads(tree.heads(), synattn::HeadConvention::OneBasedRootZero);
  for (std::size_t i = 0; i < s.size(); ++i)
    expect(back[i] == s.words[i].head, "heads round-trip through the canonical form");
}

bool same(const synattn::ConlluSentence& a, const synattn::ConlluSentence& b) {
  if (a.sent_id != b.sent_id || a.text != b.text || a.line != b.line || a.index != b.index ||
      a.words.size() != b.words.size())
    return false;
  for (std::size_t i = 0; i < a.words.size(); ++i) {
    const synattn::ConlluWord &x = a.words[i], &y = b.words[i];
    if (x.id != y.id || x.head != y.head || x.form != y.form || x.upos != y.upos ||
        x.deprel != y.deprel)
      return false;
  }
  return true;
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::string file = "fuzz.conllu";

  std::vector<synattn::ConlluSentence> strict_good;
  std::vector<std::string> strict_errors;
  {
    std::istringstream in(input);
    synattn::ConlluReader reader(in, file, synattn::ConlluMode::Strict);
    synattn::ConlluSentence s;
    for (;;) {
      const std::size_t lines_before = reader.lines_read();
      bool got = false;
      try {
        got = reader.next(s);
      } catch (const synattn::Error& e) {
        expect(reader.lines_read() > lines_before, "an error consumes input");
        strict_errors.emplace_back(e.what());
        continue;
      }
      if (!got) break;
      check_sentence(s, strict_good.size());
      strict_good.push_back(s);
    }
    expect(reader.issues().empty(), "strict mode records no issues");
    expect(reader.sentences_read() == strict_good.size(), "sentences_read counts returns");
  }

  {
    std::istringstream in(input);
    synattn::ConlluReader reader(in, file, synattn::ConlluMode::Lenient);
    synattn::ConlluSentence s;
    std::size_t k = 0;
    while (reader.next(s)) {
      check_sentence(s, k);
      expect(k < strict_good.size() && same(s, strict_good[k]), "lenient returns what strict returns");
      ++k;
    }
    expect(k == strict_good.size(), "lenient returns every sentence strict returns");
    const auto& issues = reader.issues();
    expect(issues.size() == strict_errors.size(), "one issue per strict error");
    for (std::size_t i = 0; i < issues.size(); ++i) {
      expect(issues[i].line >= 1 && issues[i].line <= reader.lines_read(), "issue line in the input");
      expect(issues[i].to_string() == strict_errors[i], "issue text matches the strict error");
    }
  }
  return 0;
}
