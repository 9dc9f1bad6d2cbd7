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
// The same bytes then go to the parser's two readers, which may throw
// nothing but synattn::Error:
// - parse::ConlluDocument::read: a document it accepts writes back byte for
//   byte; set_heads with a valid tree on every sentence (word 1 the root,
//   every other word attached to it, DEPREL "dep") does not throw, and the
//   result re-reads as a document with those trees; setting every sentence
//   that had a tree back to its own heads and relations gives the input back
//   (unless set_heads refuses a relation the reader kept, e.g. one with a
//   space: an Error, and then that check is skipped);
// - parse::read_token_text: what it accepts writes CoNLL-U that
//   ConlluDocument reads back with the same sentences and forms, and that
//   takes trees as above.
// And the sentences read go to the tree sources (data/tree_source.hpp) as a
// corpus and as a tree file: replace_trees throws nothing but synattn::Error
// and leaves the corpus unchanged when it throws, gives each sentence its own
// tree back when the file is the corpus itself (add_tree_view the same, as a
// second tree view, and adds no view when it throws), and corrupt_trees keeps
// every tree one tree with its root.
#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <sstream>
#include <string>
#include <vector>

#include <synattn/data/tree_source.hpp>
#include <synattn/io/conllu.hpp>
#include <synattn/io/conllu_document.hpp>
#include <synattn/parse/token_text.hpp>

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

// Gives every sentence of `doc` the tree "word 1 the root, every other word
// attached to it" (a valid tree for any length) and checks that the result
// re-reads with those trees and writes back unchanged. Returns the text.
std::string check_set_heads(synattn::parse::ConlluDocument& doc) {
  for (std::size_t s = 0; s < doc.size(); ++s) {
    const std::size_t n = doc.word_count(s);
    expect(n >= 1, "a document sentence has words");
    std::vector<int> heads(n, 1);
    heads[0] = 0;
    doc.set_heads(s, heads, std::vector<std::string>(n, "dep"));  // a throw is a finding
    expect(doc.has_tree(s), "set_heads gives a tree");
  }
  const std::string text = doc.to_string();
  std::istringstream in(text);
  // Not caught: what set_heads wrote must read back.
  const synattn::parse::ConlluDocument back = synattn::parse::ConlluDocument::read(in, "fuzz.rewritten.conllu");
  expect(back.size() == doc.size(), "a rewritten document has the same sentences");
  for (std::size_t s = 0; s < back.size(); ++s) {
    expect(back.has_input_tree(s), "a rewritten sentence has a tree");
    const synattn::ConlluSentence& got = back.input(s);
    expect(got.words.size() == doc.word_count(s), "a rewritten sentence has the same words");
    for (std::size_t i = 0; i < got.words.size(); ++i) {
      expect(got.words[i].head == (i == 0 ? 0 : 1), "the heads set are read back");
      expect(got.words[i].deprel == "dep", "the relations set are read back");
    }
    expect(back.forms(s) == doc.forms(s), "a rewritten sentence has the same forms");
  }
  expect(back.to_string() == text, "a rewritten document writes back byte for byte");
  return text;
}

// `strict_good` and `strict_clean` (no error) are what the strict reader
// made of the same input: a document accepts and refuses what it does,
// except for sentences with HEAD '_' on every word, which only it accepts.
void check_document(const std::string& input, const std::vector<synattn::ConlluSentence>& strict_good,
                    bool strict_clean) {
  synattn::parse::ConlluDocument doc;
  try {
    std::istringstream in(input);
    doc = synattn::parse::ConlluDocument::read(in, "fuzz.conllu");
  } catch (const synattn::Error&) {
    expect(!strict_clean, "a document reads what the strict reader reads");
    return;
  } catch (const synattn::FormatError&) {
    expect(!strict_clean, "a document reads what the strict reader reads");
    return;
  }
  expect(doc.to_string() == input, "an unchanged document writes back byte for byte");
  bool all_trees = true;
  for (std::size_t s = 0; s < doc.size(); ++s) {
    expect(doc.has_tree(s) == doc.has_input_tree(s), "a read sentence has a tree iff its input had one");
    if (doc.has_input_tree(s)) (void)doc.input(s).tree();  // a TreeError here is a finding
    all_trees = all_trees && doc.has_input_tree(s);
  }
  if (all_trees) {
    expect(strict_clean, "the strict reader reads what a document with trees reads");
    expect(doc.size() == strict_good.size(), "a document has the strict reader's sentences");
    for (std::size_t s = 0; s < doc.size(); ++s) {
      const synattn::ConlluSentence& a = doc.input(s);
      const synattn::ConlluSentence& b = strict_good[s];
      expect(a.sent_id == b.sent_id && a.text == b.text && a.line == b.line && a.words.size() == b.words.size(),
             "a document's sentence is the strict reader's");
      for (std::size_t i = 0; i < a.words.size(); ++i)
        expect(a.words[i].form == b.words[i].form && a.words[i].head == b.words[i].head &&
                   a.words[i].deprel == b.words[i].deprel && a.words[i].upos == b.words[i].upos,
               "a document's words are the strict reader's");
    }
  }

  // Each tree put back as it was read gives the input back.
  synattn::parse::ConlluDocument same = doc;
  bool refused = false;
  for (std::size_t s = 0; s < same.size() && !refused; ++s) {
    if (!same.has_input_tree(s)) continue;
    std::vector<int> heads;
    std::vector<std::string> deprels;
    for (const synattn::ConlluWord& w : same.input(s).words) {
      heads.push_back(w.head);
      deprels.push_back(w.deprel);
    }
    try {
      same.set_heads(s, heads, deprels);
    } catch (const synattn::Error&) {
      refused = true;  // a relation set_heads does not write (space, control character)
    }
  }
  if (!refused) expect(same.to_string() == input, "set_heads with the input's own trees changes nothing");

  check_set_heads(doc);
}

void check_token_text(const std::string& input) {
  synattn::parse::ConlluDocument doc;
  try {
    std::istringstream in(input);
    doc = synattn::parse::read_token_text(in, "fuzz.txt");
  } catch (const synattn::Error&) {
    return;
  } catch (const synattn::FormatError&) {
    return;
  }
  const std::string text = doc.to_string();
  std::istringstream in(text);
  // Not caught: the CoNLL-U written for token text must read back.
  const synattn::parse::ConlluDocument back = synattn::parse::ConlluDocument::read(in, "fuzz.tokens.conllu");
  expect(back.size() == doc.size(), "token text re-reads with the same sentences");
  for (std::size_t s = 0; s < back.size(); ++s) {
    expect(!back.has_input_tree(s), "token text has no trees");
    expect(back.forms(s) == doc.forms(s), "token text re-reads with the same forms");
    expect(back.sent_id(s) == std::to_string(s + 1), "token text sentences are numbered");
  }
  expect(back.to_string() == text, "token text's CoNLL-U writes back byte for byte");
  check_set_heads(doc);
}

}  // namespace

// The tree-source promises above, on the sentences the strict reader returned.
void check_tree_source(const std::vector<synattn::ConlluSentence>& sentences) {
  synattn::TaggingOptions options;
  options.label_of = [](const synattn::ConlluSentence&, const synattn::ConlluWord&) { return std::string("x"); };
  options.forms = synattn::FormCase::AsWritten;
  std::vector<synattn::TaggedSentence> corpus;
  for (const auto& s : sentences) corpus.push_back(synattn::to_tagged_sentence(s, "corpus", options));
  const std::vector<synattn::TaggedSentence> before = corpus;
  const auto unchanged = [&] {
    for (std::size_t k = 0; k < corpus.size(); ++k)
      expect(corpus[k].heads == before[k].heads && corpus[k].tree.heads() == before[k].heads,
             "a refused tree file changes nothing");
  };
  bool unique = true;  // every sentence has its own sent_id: the file is then the corpus's own trees
  for (std::size_t a = 0; a < sentences.size() && unique; ++a) {
    unique = !sentences[a].sent_id.empty();
    for (std::size_t b = 0; b < a && unique; ++b) unique = sentences[a].sent_id != sentences[b].sent_id;
  }
  try {
    synattn::replace_trees(corpus, sentences, "corpus", "trees", synattn::FormCase::AsWritten);
    expect(unique, "replace_trees accepts only sentences it can match");
    for (std::size_t k = 0; k < corpus.size(); ++k) expect(corpus[k].heads == before[k].heads, "own trees back");
  } catch (const synattn::Error&) {
    unchanged();
  } catch (const synattn::FormatError&) {
    unchanged();
  }
  std::vector<synattn::TaggedSentence> viewed = before;  // the same file as a second tree view
  try {
    synattn::add_tree_view(viewed, sentences, "corpus", "trees", synattn::FormCase::AsWritten);
    expect(unique, "add_tree_view accepts only sentences it can match");
    for (std::size_t k = 0; k < viewed.size(); ++k)
      expect(viewed[k].views() == 2 && viewed[k].view_tree(1).heads() == before[k].heads, "own trees back as a view");
  } catch (const synattn::Error&) {
    for (const synattn::TaggedSentence& s : viewed) expect(s.views() == 1, "a refused tree view adds nothing");
  } catch (const synattn::FormatError&) {
    for (const synattn::TaggedSentence& s : viewed) expect(s.views() == 1, "a refused tree view adds nothing");
  }
  if (corpus.size() >= 2) {  // the first half against the second: matches only where ids and forms agree
    const std::vector<synattn::ConlluSentence> second(sentences.begin() + static_cast<long>(sentences.size() / 2),
                                                      sentences.end());
    try {
      synattn::replace_trees(corpus, second, "corpus", "trees", synattn::FormCase::AsWritten);
    } catch (const synattn::Error&) {
      unchanged();
    } catch (const synattn::FormatError&) {
      unchanged();
    }
  }
  std::vector<synattn::TaggedSentence> noisy = before;
  synattn::corrupt_trees(noisy, 0.5, synattn::RandomStream(sentences.size()));
  for (std::size_t k = 0; k < noisy.size(); ++k) {
    synattn::validate_heads(noisy[k].heads, synattn::Structure::Tree);  // a TreeError would be a finding
    for (std::size_t i = 0; i < noisy[k].heads.size(); ++i)
      expect((noisy[k].heads[i] < 0) == (before[k].heads[i] < 0), "corruption keeps the root");
  }
}

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
      } catch (const synattn::FormatError& e) {
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

  check_document(input, strict_good, strict_errors.empty());
  check_token_text(input);
  check_tree_source(strict_good);
  return 0;
}
