// Raw text to subword distances, end to end: the shipped tokenizer and parser
// turn text into trees with character spans, a SentencePiece model trained
// here on EWT train cuts the same text into pieces, and piece_to_word +
// token_distances + bucketize give the piece-level bucket block the attention
// layer takes. Also piece_to_word on hand-made pieces in both units.
#include <synattn/bias/bucketing.hpp>
#include <synattn/parse/pipeline.hpp>
#include <synattn/io/conllu_text.hpp>
#include <synattn/text/subword_alignment.hpp>
#include <synattn/tree/distance.hpp>
#include <synattn/tree/subword.hpp>

#include <catch2/catch.hpp>

#if defined(SYNATTN_TEST_SENTENCEPIECE)
#include <sentencepiece_processor.h>
#include <sentencepiece_trainer.h>
#endif

#include <fstream>
#include <string>
#include <vector>

#include "support/temp_dir.hpp"
#include "support/test_data.hpp"

using namespace synattn;
using namespace synattn::text;

namespace {

// "I didn't go." by hand: tokens I | didn't (did + n't) | go | .
Document hand_document() {
  Document d;
  d.text = "I didn't go.";
  Sentence s;
  s.sent_id = "1";
  const auto token = [&](int b, int e, int first, int count) {
    Token t;
    t.form = d.text.substr(static_cast<std::size_t>(b), static_cast<std::size_t>(e - b));
    t.span = {{b, e}, {b, e}};
    t.first_word = first;
    t.word_count = count;
    s.tokens.push_back(t);
  };
  token(0, 1, 0, 1);
  token(2, 8, 1, 2);
  token(9, 11, 3, 1);
  token(11, 12, 4, 1);
  const auto word = [&](const char* f, int b, int e) {
    Word w;
    w.form = f;
    w.span = {{b, e}, {b, e}};
    s.words.push_back(w);
  };
  word("I", 0, 1);
  word("did", 2, 5);
  word("n't", 5, 8);
  word("go", 9, 11);
  word(".", 11, 12);
  d.sentences.push_back(s);
  return d;
}

}  // namespace

TEST_CASE("piece_to_word: trimmed spans, multiword tokens, whitespace and special pieces") {
  const Document d = hand_document();
  const Sentence& s = d.sentences[0];
  // [CLS] | "▁I" (with the space before it: none here) | "▁didn" (space included) | "'t" | "▁" | "go" | "." | </s>
  const std::vector<CharSpan> pieces{{0, 0}, {0, 1}, {1, 6}, {6, 8}, {8, 9}, {9, 11}, {11, 12}, {12, 12}};
  const std::vector<int> want{-1, 0, 1, 2, -1, 3, 4, -1};
  CHECK(piece_to_word(d, s, pieces, SpanUnit::Bytes) == want);
  CHECK(piece_to_word(d, s, pieces, SpanUnit::CodePoints) == want);
  // "go." as one piece crosses two tokens: refused, naming the piece.
  CHECK_THROWS_WITH(piece_to_word(d, s, {{9, 12}}, SpanUnit::Bytes), Catch::Contains("token 0"));
  CHECK_THROWS_WITH(piece_to_word(d, s, {{9, 13}}, SpanUnit::Bytes), Catch::Contains("outside the text"));
}

#if defined(SYNATTN_TEST_SENTENCEPIECE)
TEST_CASE("raw text -> pipeline -> SentencePiece pieces -> subword bucket block", "[text][slow]") {
  synattn_test::TempDir dir;
  // A small unigram model on the first 3,000 sentences of EWT train.
  const Document train = read_conllu_text_file(synattn_test::ewt("train"));
  {
    std::ofstream out(dir.file("train.txt"));
    for (std::size_t k = 0; k < 3000 && k < train.sentences.size(); ++k) {
      const TextSpan sp = train.sentences[k].span();
      out << train.text.substr(static_cast<std::size_t>(sp.bytes.begin),
                               static_cast<std::size_t>(sp.bytes.end - sp.bytes.begin))
          << "\n";
    }
  }
  const auto status = sentencepiece::SentencePieceTrainer::Train(
      "--input=" + dir.file("train.txt") + " --model_prefix=" + dir.file("spm") +
      " --vocab_size=1000 --model_type=unigram --character_coverage=1.0 --minloglevel=2 --num_threads=1");
  REQUIRE(status.ok());
  sentencepiece::SentencePieceProcessor spm;
  REQUIRE(spm.Load(dir.file("spm.model")).ok());

  const parse::Pipeline pipeline = parse::Pipeline::load(synattn_test::data_path("models/en_ewt.tokenizer.safetensors"),
                                                         synattn_test::data_path("models/en_ewt.parser.safetensors"));
  const Document doc =
      pipeline.parse_text("Dr. Smith's team didn't finish the report on time. They had been working since Monday!");
  REQUIRE(doc.sentences.size() == 2);
  const Bucketing bucketing = Bucketing::linear(8, /*special_bucket=*/true);
  std::size_t pieces_seen = 0;
  for (const Sentence& s : doc.sentences) {
    // SentencePiece's offsets are bytes of what it was given: the sentence's
    // slice of the text, shifted back into the document.
    const TextSpan sp = s.span();
    const std::string slice = doc.text.substr(static_cast<std::size_t>(sp.bytes.begin),
                                              static_cast<std::size_t>(sp.bytes.end - sp.bytes.begin));
    const sentencepiece::ImmutableSentencePieceText spt = spm.EncodeAsImmutableProto(slice);
    std::vector<CharSpan> pieces;
    for (std::size_t k = 0; k < spt.pieces_size(); ++k) {
      const auto piece = spt.pieces(static_cast<int>(k));
      pieces.push_back(CharSpan{sp.bytes.begin + static_cast<int>(piece.begin()), sp.bytes.begin + static_cast<int>(piece.end())});
    }
    const std::vector<int> map = piece_to_word(doc, s, pieces, SpanUnit::Bytes);
    const DependencyTree tree = parse::sentence_tree(s);
    const auto n = static_cast<Index>(map.size());
    RowMajorMatrix<std::int8_t> piece_d(n, n), word_d(tree.size(), tree.size());
    token_distances<std::int8_t>(tree, map, piece_d);
    pairwise_distances<std::int8_t>(tree, word_d);
    RowMajorMatrix<std::int8_t> buckets(n, n);
    bucketize<std::int8_t, std::int8_t>(bucketing, piece_d, buckets);
    // Every word is reached by some piece, and each piece pair has its words' distance.
    std::vector<bool> covered(s.words.size(), false);
    for (Index i = 0; i < n; ++i) {
      const int wi = map[static_cast<std::size_t>(i)];
      if (wi >= 0) covered[static_cast<std::size_t>(wi)] = true;
      for (Index j = 0; j < n; ++j) {
        const int wj = map[static_cast<std::size_t>(j)];
        if (wi < 0 || wj < 0) {
          CHECK(buckets(i, j) == bucketing.special_index());
        } else {
          const int d = wi == wj ? 0 : word_d(wi, wj);
          CHECK(piece_d(i, j) == d);
          CHECK(buckets(i, j) == bucketing.bucket_nonnegative(d));
        }
      }
    }
    // A word may lie inside another word's piece only within a multiword token.
    for (std::size_t w = 0; w < covered.size(); ++w)
      if (!covered[w]) {
        bool in_multiword = false;
        for (const Token& t : s.tokens)
          in_multiword = in_multiword || (t.multiword() && static_cast<int>(w) > t.first_word &&
                                          static_cast<int>(w) < t.first_word + t.word_count);
        CHECK(in_multiword);
      }
    pieces_seen += map.size();
  }
  CHECK(pieces_seen > 20);
}
#endif
