// The parser's layers and the whole parser: double-precision finite-difference
// checks of CharCnn, ArcBiaffine, LabelBiaffine and of the full parser loss
// w.r.t. every parameter; the relative-position buckets; batching; training
// to 100 % UAS on a tiny treebank; save/load bit for bit; thread-count
// determinism of training and parsing.
#include <catch2/catch.hpp>

#include <synattn/parse/biaffine.hpp>
#include <synattn/parse/char_cnn.hpp>
#include <synattn/parse/parser.hpp>
#include <synattn/parse/parser_batch.hpp>
#include <synattn/parse/parser_model.hpp>
#include <synattn/parse/parser_vocabulary.hpp>
#include <synattn/train/optimizer.hpp>

#if defined(_OPENMP)
#include <omp.h>
#endif

#include <algorithm>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <sstream>
#include <random>
#include <string>
#include <type_traits>
#include <vector>

#include "../../examples/parse/train.hpp"
#include "support/gradcheck.hpp"
#include "support/temp_dir.hpp"
#include "support/test_data.hpp"

using namespace synattn;
using namespace synattn::parse;
using synattn_test::check_gradient;
using synattn_test::MatrixD;

namespace {

constexpr double kRel = 1e-6, kAbs = 1e-8;

MatrixD random_matrix(Index r, Index c, unsigned seed, double scale = 1.0) {
  std::mt19937 gen(seed);
  std::normal_distribution<double> dist(0.0, scale);
  MatrixD m(r, c);
  for (Index i = 0; i < m.size(); ++i) m.data()[i] = dist(gen);
  return m;
}

// A weighted sum of the outputs: L = sum(w .* y), so dL/dy = w.
double weighted(const MatrixD& y, const MatrixD& w) { return (y.array() * w.array()).sum(); }

}  // namespace

TEST_CASE("relative_position_bucket is exact near the diagonal, logarithmic further out, signed", "[parse]") {
  CHECK(relative_position_bucket(0) == 0);
  for (int d = 1; d < 8; ++d) {
    CHECK(relative_position_bucket(d) == d);
    CHECK(relative_position_bucket(-d) == 15 + d);
  }
  CHECK(relative_position_bucket(8) == 8);
  CHECK(relative_position_bucket(63) == 15);
  CHECK(relative_position_bucket(1000) == 15);
  CHECK(relative_position_bucket(-1000) == 30);
  int previous = 0;
  for (int d = 0; d < 200; ++d) {  // monotone in |d|, within [0, 31)
    const int b = relative_position_bucket(d);
    CHECK(b >= previous);
    CHECK(b < kRelativePositionBuckets);
    CHECK(relative_position_bucket(-d) < kRelativePositionBuckets);
    previous = b;
  }
}

TEST_CASE("CharCnn: gradient check of the embeddings, filters and bias", "[parse][gradcheck]") {
  CharCnnOptions o;
  o.num_chars = 9;
  o.char_dim = 3;
  o.filters = 4;
  o.width = 3;
  CharCnn<double> cnn(o, RandomStream(7));
  CharIdMatrix chars = CharIdMatrix::Zero(4, 6);
  const std::vector<int> lengths = {3, 6, 0, 1};
  std::mt19937 gen(3);
  for (Index t = 0; t < 4; ++t)
    for (int p = 0; p < lengths[static_cast<std::size_t>(t)]; ++p) chars(t, p) = 1 + static_cast<int>(gen() % 8);
  const MatrixD w = random_matrix(4, 4, 11);
  CharCnnCache<double> cache;
  MatrixD y(4, 4);
  const auto loss = [&] {
    cnn.forward({chars, lengths}, cache, y);
    return weighted(y, w);
  };
  loss();
  CHECK(y.row(2).isZero());  // a word of no characters
  cnn.zero_grad();
  cnn.backward(cache, w);
  auto& store_e = cnn.embedding().parameter_store();
  auto& store_c = cnn.conv().parameter_store();
  const MatrixD de = store_e.gradient(0), dw = store_c.gradient(0), db = store_c.gradient(1);
  for (const auto& r : {check_gradient("E", store_e.value(0), de, loss), check_gradient("W", store_c.value(0), dw, loss),
                        check_gradient("b", store_c.value(1), db, loss)}) {
    INFO(r.describe());
    CHECK(r.passes(kRel, kAbs));
  }
}

TEST_CASE("CharCnn refuses ids outside the alphabet and a cache of another layer", "[parse]") {
  CharCnnOptions o;
  o.num_chars = 5;
  CharCnn<float> cnn(o, RandomStream(1)), other(o, RandomStream(2));
  CharIdMatrix chars = CharIdMatrix::Zero(1, 3);
  chars(0, 0) = 5;
  CharCnnCache<float> cache;
  RowMajorMatrix<float> y(1, o.filters);
  CHECK_THROWS_WITH(cnn.forward({chars, std::vector<int>{1}}, cache, y), Catch::Contains("chars(0, 0) = 5 is outside [1, 5)"));
  chars(0, 0) = 2;
  CHECK_THROWS_WITH(cnn.forward({chars, std::vector<int>{4}}, cache, y), Catch::Contains("lengths[0] = 4 is outside [0, 3]"));
  cnn.forward({chars, std::vector<int>{1}}, cache, y);
  CHECK_THROWS_WITH(other.backward(cache, y), Catch::Contains("the cache was filled by another layer"));
  cnn.backward(cache, y);
  CHECK_THROWS_WITH(cnn.backward(cache, y), Catch::Contains("already run on this cache"));
}

TEST_CASE("ArcBiaffine: gradient check of U, u and both inputs", "[parse][gradcheck]") {
  const int d = 3;
  const Index m = 4, B = 2;
  ArcBiaffine<double> arc(d);
  arc.parameter_store().value(0) = random_matrix(d, d, 1);
  arc.parameter_store().value(1) = random_matrix(1, d, 2);
  MatrixD dep = random_matrix(B * m, d, 3), head = random_matrix(B * m, d, 4);
  const MatrixD w = random_matrix(B * m, m, 5);
  ArcBiaffineCache<double> cache;
  MatrixD s(B * m, m);
  const auto loss = [&] {
    arc.forward({dep, head, m}, cache, s);
    return weighted(s, w);
  };
  loss();
  // The definition, entry by entry.
  for (Index b = 0; b < B; ++b)
    for (Index i = 0; i < m; ++i)
      for (Index j = 0; j < m; ++j) {
        const double want = (dep.row(b * m + i) * arc.parameter_store().value(0) * head.row(b * m + j).transpose())(0, 0) +
                            arc.parameter_store().value(1).row(0).dot(head.row(b * m + j));
        CHECK(s(b * m + i, j) == Approx(want).epsilon(1e-12));
      }
  arc.zero_grad();
  MatrixD ddep(B * m, d), dhead(B * m, d);
  arc.backward(cache, w, {ddep, dhead});
  const MatrixD dU = arc.parameter_store().gradient(0), du = arc.parameter_store().gradient(1);
  for (const auto& r : {check_gradient("U", arc.parameter_store().value(0), dU, loss),
                        check_gradient("u", arc.parameter_store().value(1), du, loss),
                        check_gradient("dep", dep, ddep, loss), check_gradient("head", head, dhead, loss)}) {
    INFO(r.describe());
    CHECK(r.passes(kRel, kAbs));
  }
}

TEST_CASE("LabelBiaffine: gradient check of W and both inputs", "[parse][gradcheck]") {
  const int d = 3, L = 4;
  const Index T = 5;
  LabelBiaffine<double> lab(d, L);
  lab.parameter_store().value(0) = random_matrix(d + 1, L * (d + 1), 1);
  MatrixD dep = random_matrix(T, d, 2), head = random_matrix(T, d, 3);
  const MatrixD w = random_matrix(T, L, 4);
  LabelBiaffineCache<double> cache;
  MatrixD y(T, L);
  const auto loss = [&] {
    lab.forward({dep, head}, cache, y);
    return weighted(y, w);
  };
  loss();
  const MatrixD W = lab.parameter_store().value(0);
  for (Index t = 0; t < T; ++t)
    for (int l = 0; l < L; ++l) {
      Eigen::RowVectorXd x1(d + 1), h1(d + 1);
      x1 << dep.row(t), 1.0;
      h1 << head.row(t), 1.0;
      const double want = (x1 * W.middleCols(Index(l) * (d + 1), d + 1) * h1.transpose())(0, 0);
      CHECK(y(t, l) == Approx(want).epsilon(1e-12));
    }
  lab.zero_grad();
  MatrixD ddep(T, d), dhead(T, d);
  lab.backward(cache, w, {ddep, dhead});
  const MatrixD dW = lab.parameter_store().gradient(0);
  for (const auto& r : {check_gradient("W", lab.parameter_store().value(0), dW, loss), check_gradient("dep", dep, ddep, loss),
                        check_gradient("head", head, dhead, loss)}) {
    INFO(r.describe());
    CHECK(r.passes(kRel, kAbs));
  }
}

namespace {

// A tiny treebank: sentences whose trees follow simple rules the parser can
// learn (a determiner attaches to the next noun, nouns to the verb, the verb
// to the root), so training reaches 100 % on it.
std::vector<ConlluSentence> tiny_treebank() {
  const std::vector<std::string> det = {"the", "a", "this", "every"};
  const std::vector<std::string> noun = {"cat", "dog", "bird", "man", "idea", "car"};
  const std::vector<std::string> verb = {"sees", "likes", "finds", "hears"};
  std::vector<ConlluSentence> out;
  std::mt19937 gen(5);
  for (int s = 0; s < 40; ++s) {
    ConlluSentence sent;
    sent.sent_id = "tiny-" + std::to_string(s);
    const auto add = [&](const std::string& form, const std::string& upos, int head, const std::string& rel) {
      ConlluWord w;
      w.id = static_cast<int>(sent.words.size()) + 1;
      w.form = form;
      w.upos = upos;
      w.head = head;
      w.deprel = rel;
      sent.words.push_back(w);
    };
    const bool two_dets = gen() % 2 == 0;
    // [det] noun verb det noun [.]
    int v = two_dets ? 3 : 2;
    if (two_dets) add(det[gen() % det.size()], "DET", 2, "det");
    add(noun[gen() % noun.size()], "NOUN", v, "nsubj");
    add(verb[gen() % verb.size()], "VERB", 0, "root");
    add(det[gen() % det.size()], "DET", v + 2, "det");
    add(noun[gen() % noun.size()], "NOUN", v, "obj");
    if (gen() % 3 == 0) add(".", "PUNCT", v, "punct");
    sent.index = static_cast<std::size_t>(s);
    out.push_back(sent);
  }
  return out;
}

ParserOptions tiny_options(const ParserVocabulary& v) {
  ParserOptions o;
  o.num_words = v.num_words();
  o.num_chars = v.num_chars();
  o.num_upos = v.num_upos();
  o.num_labels = v.num_labels();
  o.word_dim = 8;
  o.char_dim = 4;
  o.char_filters = 6;
  o.d_model = 8;
  o.heads = 2;
  o.d_ff = 12;
  o.layers = 1;
  o.arc_dim = 6;
  o.label_dim = 5;
  o.seed = 3;
  return o;
}

}  // namespace

TEST_CASE("BiaffineParser: gradient check of the whole loss w.r.t. every parameter, with dropout", "[parse][gradcheck]") {
  const std::vector<ConlluSentence> bank = tiny_treebank();
  const ParserVocabulary v = ParserVocabulary::build(bank, 1);
  std::vector<EncodedSentence> corpus;
  for (const auto& s : bank) corpus.push_back(encode_sentence(s, v));
  for (const bool chars : {true, false}) {
    ParserOptions o = tiny_options(v);
    o.use_chars = chars;
    o.upos_weight = 0.5;
    BiaffineParser<double> parser(o);
    // Non-zero biaffines, so that every path carries a gradient.
    parser.parameter("arc.weight") = random_matrix(o.arc_dim, o.arc_dim, 1, 0.3);
    parser.parameter("label.weight") = random_matrix(o.label_dim + 1, o.num_labels * (o.label_dim + 1), 2, 0.3);
    ParserBatch batch;
    make_parser_batch(corpus, {0, 1, 2}, v, WordDropoutRule{}, nullptr, batch);
    const RandomStream drop(9);
    ParserCache<double> cache;
    const auto loss = [&] {
      parser.forward(batch, cache, &drop);
      return parser.loss(batch, cache).loss;
    };
    parser.zero_grad();
    parser.loss_and_backward(batch, cache, &drop);
    const Eigen::VectorXd analytic = parser.gradients();
    Eigen::Map<Eigen::VectorXd> values = parser.parameters();
    for (const ParameterInfo& p : parser.parameter_infos()) {
      const MatrixD a = Eigen::Map<const MatrixD>(analytic.data() + p.offset, p.rows, p.cols);
      auto view = Eigen::Map<MatrixD>(values.data() + p.offset, p.rows, p.cols);
      const auto r = check_gradient(p.name, view, a, loss);
      INFO((chars ? "with chars: " : "without chars: ") << r.describe());
      CHECK(r.passes(1e-5, 1e-8));
    }
  }
}

namespace {

std::vector<EncodedSentence> encode_all(const std::vector<ConlluSentence>& bank, const ParserVocabulary& v) {
  std::vector<EncodedSentence> out;
  for (const auto& s : bank) out.push_back(encode_sentence(s, v));
  return out;
}

// Trains `model` on `corpus` for `epochs` epochs of batches of ~64 positions;
// returns the last epoch's mean loss.
double train_tiny(ParserModel& model, const std::vector<EncodedSentence>& corpus, int epochs, double lr = 1e-2) {
  AdamOptions ao;
  ao.lr = lr;
  Adam<float> adam(ao);
  ParserBatch batch;
  ParserCache<float> cache;
  auto& parser = model.parser();
  double last = 0;
  long long step = 0;
  for (int e = 0; e < epochs; ++e) {
    const RandomStream shuffle = RandomStream(4).derive(static_cast<std::uint64_t>(e));
    double sum = 0;
    int count = 0;
    for (const auto& idx : token_budget_batches(corpus, 64, &shuffle)) {
      make_parser_batch(corpus, idx, model.vocabulary(), WordDropoutRule{}, nullptr, batch);
      const RandomStream drop = RandomStream(5).derive(static_cast<std::uint64_t>(step++));
      parser.zero_grad();
      sum += parser.loss_and_backward(batch, cache, &drop).loss;
      ++count;
      adam.step(parser.parameter_store());
    }
    last = sum / count;
  }
  return last;
}

// (correct heads, words) of the model's parse of `bank`.
std::pair<long long, long long> attachment(const ParserModel& model, const std::vector<ConlluSentence>& bank) {
  std::vector<std::vector<std::string>> forms;
  for (const auto& s : bank) {
    forms.emplace_back();
    for (const auto& w : s.words) forms.back().push_back(w.form);
  }
  const std::vector<ParsedSentence> parsed = model.parse(forms);
  long long ok = 0, words = 0;
  for (std::size_t s = 0; s < bank.size(); ++s)
    for (std::size_t i = 0; i < bank[s].words.size(); ++i, ++words)
      if (parsed[s].heads[i] == bank[s].words[i].head) ++ok;
  return {ok, words};
}

}  // namespace

TEST_CASE("BiaffineParser learns a tiny treebank to 100 % UAS, and every parse is a valid single-rooted tree",
          "[parse][train]") {
  const std::vector<ConlluSentence> bank = tiny_treebank();
  const ParserVocabulary v = ParserVocabulary::build(bank, 1);
  ParserOptions o = tiny_options(v);
  o.d_model = 16;
  o.d_ff = 32;
  o.arc_dim = 16;
  o.label_dim = 8;
  o.embedding_dropout = o.encoder_dropout = o.attention_dropout = o.mlp_dropout = 0.0;
  ParserModel model(o, v);
  const auto corpus = encode_all(bank, v);
  const auto before = attachment(model, bank);
  const double loss = train_tiny(model, corpus, 60);
  const auto after = attachment(model, bank);
  INFO("loss " << loss << ", UAS before " << before.first << "/" << before.second << ", after " << after.first << "/"
               << after.second);
  CHECK(after.first == after.second);
  CHECK(before.first < before.second);
  // Every output is a tree with one word under the root.
  std::vector<std::vector<std::string>> forms;
  for (const auto& s : bank) {
    forms.emplace_back();
    for (const auto& w : s.words) forms.back().push_back(w.form);
  }
  for (const ParsedSentence& p : model.parse(forms)) {
    CHECK(std::count(p.heads.begin(), p.heads.end(), 0) == 1);
    CHECK_NOTHROW(p.tree());
  }
}

TEST_CASE("ParserModel: save and load round-trip bit for bit, with options and vocabulary", "[parse][io]") {
  synattn_test::TempDir dir;
  const std::vector<ConlluSentence> bank = tiny_treebank();
  const ParserVocabulary v = ParserVocabulary::build(bank, 2);
  ParserModel model(tiny_options(v), v);
  train_tiny(model, encode_all(bank, v), 2);
  const std::string path = dir.file("tiny.parser.safetensors");
  model.save(path);
  const ParserModel back = ParserModel::load(path);
  CHECK(back.vocabulary() == model.vocabulary());
  CHECK(options_to_json(back.options()) == options_to_json(model.options()));
  REQUIRE(back.parser().parameter_count() == model.parser().parameter_count());
  CHECK(std::memcmp(back.parser().parameters().data(), model.parser().parameters().data(),
                    sizeof(float) * static_cast<std::size_t>(model.parser().parameter_count())) == 0);
  std::vector<std::vector<std::string>> forms = {{"the", "cat", "sees", "a", "dog"}, {"UNSEEN", "words", "here"}};
  const auto a = model.parse(forms), b = back.parse(forms);
  for (std::size_t s = 0; s < forms.size(); ++s) {
    CHECK(a[s].heads == b[s].heads);
    CHECK(a[s].deprels == b[s].deprels);
  }
  // No temporary file is left beside it.
  int files = 0;
  for (const auto& entry : std::filesystem::directory_iterator(dir.file(""))) {
    (void)entry;
    ++files;
  }
  CHECK(files == 1);
}

TEST_CASE("ParserModel::load names what is wrong with a file that is not a parser of this version", "[parse][io]") {
  synattn_test::TempDir dir;
  const std::vector<ConlluSentence> bank = tiny_treebank();
  const ParserVocabulary v = ParserVocabulary::build(bank, 1);
  ParserModel model(tiny_options(v), v);
  const std::string path = dir.file("m.safetensors");
  SECTION("a plain checkpoint without the parser's metadata") {
    save_checkpoint<float>(path, model.parser().parameter_store(), nullptr, 0);
    CHECK_THROWS_WITH(ParserModel::load(path), Catch::Contains("not a synattn parser model") &&
                                                   Catch::Contains("parser.format"));
  }
  SECTION("another format version") {
    auto extra = model.metadata();
    extra["parser.format"] = "synattn.parser.v0";
    save_checkpoint<float>(path, model.parser().parameter_store(), nullptr, 0, extra);
    CHECK_THROWS_WITH(ParserModel::load(path), Catch::Contains("parser.format is 'synattn.parser.v0'"));
  }
  SECTION("options of another shape than the tensors") {
    ParserOptions bigger = model.options();
    bigger.arc_dim += 1;
    auto extra = model.metadata();
    extra["parser.options"] = options_to_json(bigger);
    save_checkpoint<float>(path, model.parser().parameter_store(), nullptr, 0, extra);
    CHECK_THROWS_WITH(ParserModel::load(path), Catch::Contains("arc_dep.weight"));
  }
  SECTION("options missing a key") {
    auto extra = model.metadata();
    extra["parser.options"] = "{\"num_words\": 3}";
    save_checkpoint<float>(path, model.parser().parameter_store(), nullptr, 0, extra);
    CHECK_THROWS_WITH(ParserModel::load(path), Catch::Contains(path) && Catch::Contains("parser options"));
  }
  SECTION("a missing file") {
    CHECK_THROWS_WITH(ParserModel::load(dir.file("none.safetensors")), Catch::Contains("none.safetensors"));
  }
}

TEST_CASE("Training and parsing give the same bits at 1 and 2 threads", "[parse][threads]") {
#if defined(_OPENMP)
  const std::vector<ConlluSentence> bank = tiny_treebank();
  const ParserVocabulary v = ParserVocabulary::build(bank, 1);
  ParserOptions o = tiny_options(v);
  o.d_model = 32;
  o.heads = 4;
  o.d_ff = 64;
  o.arc_dim = 32;
  const auto corpus = encode_all(bank, v);
  std::vector<Eigen::VectorXf> weights;
  std::vector<std::vector<ParsedSentence>> parses;
  std::vector<std::vector<std::string>> forms;
  for (const auto& s : bank) {
    forms.emplace_back();
    for (const auto& w : s.words) forms.back().push_back(w.form);
  }
  const int saved = omp_get_max_threads();
  for (const int threads : {1, 2}) {
    omp_set_num_threads(threads);
    ParserModel model(o, v);
    train_tiny(model, corpus, 3);
    weights.push_back(model.parser().parameters());
    parses.push_back(model.parse(forms));
  }
  omp_set_num_threads(saved);
  CHECK(std::memcmp(weights[0].data(), weights[1].data(), sizeof(float) * static_cast<std::size_t>(weights[0].size())) == 0);
  for (std::size_t s = 0; s < forms.size(); ++s) CHECK(parses[0][s].heads == parses[1][s].heads);
#else
  SUCCEED("built without OpenMP: one thread only");
#endif
}

TEST_CASE("ParserModel::save_half stores F16 weights that load as their rounded values", "[parse][io]") {
  synattn_test::TempDir dir;
  const std::vector<ConlluSentence> bank = tiny_treebank();
  const ParserVocabulary v = ParserVocabulary::build(bank, 1);
  ParserModel model(tiny_options(v), v);
  train_tiny(model, encode_all(bank, v), 2);
  const std::string full = dir.file("full.safetensors"), half = dir.file("half.safetensors");
  model.save(full);
  model.save_half(half);
  std::size_t full_bytes = 0, half_bytes = 0;
  for (const auto& kv : load_safetensors(full).tensors) full_bytes += kv.second.bytes.size();
  for (const auto& kv : load_safetensors(half).tensors) half_bytes += kv.second.bytes.size();
  CHECK(half_bytes * 2 == full_bytes);
  const ParserModel back = ParserModel::load(half);
  const auto a = model.parser().parameters();
  const auto b = back.parser().parameters();
  REQUIRE(a.size() == b.size());
  Index differ = 0;
  for (Index i = 0; i < a.size(); ++i) {
    CHECK(b[i] == half_to_float(float_to_half(a[i])));
    if (b[i] != a[i]) ++differ;
  }
  CHECK(differ > 0);
  CHECK(load_safetensors(half).metadata.at("dtype") == "F16");
  // A value beyond F16's range is refused, naming the parameter.
  model.parser().parameter("arc.head_bias")(0, 0) = 1e6f;
  CHECK_THROWS_WITH(model.save_half(dir.file("big.safetensors")), Catch::Contains("'arc.head_bias'"));
}

TEST_CASE("LabelBiaffine::infer gives forward's logits in row blocks, across a block edge", "[parse]") {
  const int d = 5, L = 7;
  const Index T = LabelBiaffine<float>::kInferRows + 44;
  LabelBiaffine<float> lab(d, L);
  std::mt19937 gen(2);
  std::normal_distribution<float> dist;
  auto W = lab.parameter_store().value(0);
  for (Index i = 0; i < W.size(); ++i) W.data()[i] = dist(gen);
  RowMajorMatrix<float> dep(T, d), head(T, d);
  for (Index i = 0; i < dep.size(); ++i) dep.data()[i] = dist(gen);
  for (Index i = 0; i < head.size(); ++i) head.data()[i] = dist(gen);
  LabelBiaffineCache<float> a, b;
  RowMajorMatrix<float> ya(T, L), yb(T, L);
  lab.forward({dep, head}, a, ya);
  lab.infer({dep, head}, b, yb);
  CHECK(b.projected.rows() == LabelBiaffine<float>::kInferRows);
  for (Index t = 0; t < T; ++t)
    for (int l = 0; l < L; ++l) CHECK(yb(t, l) == Approx(ya(t, l)).epsilon(1e-6).margin(1e-6));
  RowMajorMatrix<float> dd(T, d), dh(T, d);
  CHECK_THROWS_WITH(lab.backward(b, ya, {dd, dh}), Catch::Contains("holds no forward pass"));
}

// The tagger's rule for moved-from models, applied to the parser: using one
// was undefined behaviour (its encoder holds no layers).
TEST_CASE("BiaffineParser: a self-move keeps the parser; a moved-from parser is refused by name", "[parse][errors]") {
  const std::vector<ConlluSentence> bank = tiny_treebank();
  const ParserVocabulary v = ParserVocabulary::build(bank, 1);
  std::vector<EncodedSentence> corpus;
  for (const auto& s : bank) corpus.push_back(encode_sentence(s, v));
  ParserBatch batch;
  make_parser_batch(corpus, {0, 1}, v, WordDropoutRule{}, nullptr, batch);
  BiaffineParser<float> parser(tiny_options(v));
  ParserCache<float> cache;
  ParseWorkspace ws;
  ParsedBatch want, got;
  parser.parse(batch, cache, ws, want);
  BiaffineParser<float>& alias = parser;
  parser = std::move(alias);
  parser.parse(batch, cache, ws, got);
  CHECK(got.heads == want.heads);

  BiaffineParser<float> taken = std::move(parser);
  taken.parse(batch, cache, ws, got);
  CHECK(got.heads == want.heads);
  const auto moved_from = Catch::Contains("this model was moved from and holds no layers");
  CHECK_THROWS_WITH(parser.parse(batch, cache, ws, got), Catch::StartsWith("BiaffineParser::infer") && moved_from);
  CHECK_THROWS_WITH(parser.loss(batch, cache), moved_from);
  CHECK_THROWS_WITH(parser.backward(cache), moved_from);
  CHECK_THROWS_WITH(BiaffineParser<float>(parser), moved_from);
  parser = taken;
  parser.parse(batch, cache, ws, got);
  CHECK(got.heads == want.heads);
}

TEST_CASE("BiaffineParser has the layer's parameter API, over its one flat buffer", "[parse]") {
  static_assert(std::is_base_of<ParameterAccess<BiaffineParser<double>, double>, BiaffineParser<double>>::value,
                "the parser's parameter API is ParameterAccess's");
  const std::vector<ConlluSentence> bank = tiny_treebank();
  const ParserVocabulary v = ParserVocabulary::build(bank, 1);
  BiaffineParser<double> parser(tiny_options(v));
  const auto& infos = parser.parameter_infos();
  REQUIRE(infos.size() > 2);
  Index total = 0;
  int visited = 0;
  parser.visit_parameters([&](const ParameterInfo& p, Eigen::Map<RowMajorMatrix<double>> value,
                              Eigen::Map<RowMajorMatrix<double>> gradient) {
    CHECK(p.name == infos[static_cast<std::size_t>(visited)].name);
    CHECK(value.data() == parser.parameters().data() + p.offset);  // views into the one buffer
    CHECK(gradient.data() == parser.gradients().data() + p.offset);
    total += p.size();
    ++visited;
  });
  CHECK(visited == static_cast<int>(infos.size()));
  CHECK(total == parser.parameter_count());

  const ParameterInfo& p = infos[1];
  CHECK(parser.has_parameter(p.name));
  CHECK_FALSE(parser.has_parameter("no such parameter"));
  CHECK_THROWS_WITH(parser.parameter("no such parameter"), Catch::Contains(infos[0].name));
  const RowMajorMatrix<double> value = RowMajorMatrix<double>::Constant(p.rows, p.cols, 0.25);
  parser.set_parameter(p.name, value);
  const BiaffineParser<double>& view = parser;
  CHECK(view.parameter(p.name) == value);
  CHECK((view.parameters().segment(p.offset, p.size()).array() == 0.25).all());
  CHECK_THROWS_WITH(parser.set_parameter(p.name, RowMajorMatrix<double>::Zero(p.rows + 1, p.cols)),
                    Catch::Contains(p.name));
  parser.gradients().setOnes();
  parser.zero_grad();
  CHECK(view.gradient(p.name).isZero(0));
  CHECK(view.gradients().isZero(0));
}

// The parser's caches named their layer by address (const void* owner): a
// copy made after the forward pass at a reused address, or a move, were
// judged wrongly, and the parts' backward passes could run twice.
TEST_CASE("BiaffineParser: backward refuses another parser's cache and a used one, before writing any gradient",
          "[parse][cache][errors]") {
  using Catch::Contains;
  const std::vector<ConlluSentence> bank = tiny_treebank();
  const ParserVocabulary v = ParserVocabulary::build(bank, 1);
  std::vector<EncodedSentence> corpus;
  for (const auto& s : bank) corpus.push_back(encode_sentence(s, v));
  ParserBatch batch;
  make_parser_batch(corpus, {0, 1}, v, WordDropoutRule{}, nullptr, batch);
  BiaffineParser<double> parser(tiny_options(v)), twin(tiny_options(v));
  ParserCache<double> cache;
  parser.forward(batch, cache, nullptr);
  parser.loss(batch, cache);
  parser.zero_grad();
  twin.zero_grad();
  CHECK_THROWS_WITH(twin.backward(cache), Contains("the cache was filled by another layer or model"));
  CHECK_THROWS_WITH(twin.loss(batch, cache), Contains("the cache was filled by another layer or model"));
  CHECK(twin.gradients().isZero(0));
  BiaffineParser<double> copy = parser;
  CHECK_THROWS_WITH(copy.backward(cache), Contains("filled by another layer or model"));
  parser.backward(cache);
  const Eigen::VectorXd once = parser.gradients();
  CHECK_THROWS_WITH(parser.backward(cache), Contains("backward() has already run on this cache"));
  CHECK(parser.gradients() == once);
  // A NaN weight is named by forward, before anything is written.
  parser.zero_grad();
  parser.parameter("arc.weight")(0, 1) = std::nan("");
  CHECK_THROWS_WITH(parser.forward(batch, cache, nullptr),
                    Contains("BiaffineParser::forward: parameter arc.weight(0, 1) = nan is not finite"));
  CHECK_THROWS_WITH(parser.backward(cache), Contains("holds no forward pass"));
  CHECK(parser.gradients().isZero(0));
}

// Issue 44 §3: a model file whose metadata alone was edited built the parser
// from it first and failed with a bare std::bad_alloc (layers = 10^6 built
// layer after layer until memory ran out). Now every option is checked
// against the file's tensors, and max_length against an explicit bound,
// before anything is allocated; the error names the file and the option.
TEST_CASE("ParserModel::load checks every option against the file's tensors before building anything",
          "[parse][io][errors]") {
  synattn_test::TempDir dir;
  const std::vector<ConlluSentence> bank = tiny_treebank();
  const ParserVocabulary v = ParserVocabulary::build(bank, 1);
  ParserModel model(tiny_options(v), v);
  const std::string path = dir.file("edited.safetensors");
  const auto edited = [&](const char* key, long long value) {
    nlohmann::json j = nlohmann::json::parse(options_to_json(model.options()));
    j[key] = value;
    auto extra = model.metadata();
    extra["parser.options"] = j.dump();
    save_checkpoint<float>(path, model.parser().parameter_store(), nullptr, 0, extra);
  };
  struct Case {
    const char* key;
    long long value;
  };
  for (const Case c : {Case{"d_ff", 2000000000}, Case{"label_dim", 100000}, Case{"max_length", 2147483647},
                       Case{"word_dim", 1 << 30}, Case{"arc_dim", 1 << 30}, Case{"num_upos", 100000},
                       Case{"char_filters", 1 << 30}, Case{"char_width", 1 << 20}, Case{"d_model", 1 << 20},
                       Case{"heads", 8}}) {
    INFO(c.key << " = " << c.value);
    edited(c.key, c.value);
    try {
      (void)ParserModel::load(path);
      FAIL("loaded");
    } catch (const FormatError& e) {
      CHECK_THAT(e.what(), Catch::Contains(path));
      CHECK_THAT(e.what(), Catch::Contains(c.key));
    } catch (const std::exception& e) {
      FAIL("not a FormatError naming the file: " << e.what());
    }
  }
}

TEST_CASE("ParserModel::load refuses a layer count the file's tensors do not hold, without building it",
          "[parse][io][errors]") {
  synattn_test::TempDir dir;
  const std::vector<ConlluSentence> bank = tiny_treebank();
  const ParserVocabulary v = ParserVocabulary::build(bank, 1);
  ParserModel model(tiny_options(v), v);
  const std::string path = dir.file("layers.safetensors");
  nlohmann::json j = nlohmann::json::parse(options_to_json(model.options()));
  j["layers"] = 1000000;
  auto extra = model.metadata();
  extra["parser.options"] = j.dump();
  save_checkpoint<float>(path, model.parser().parameter_store(), nullptr, 0, extra);
  CHECK_THROWS_WITH(ParserModel::load(path), Catch::Contains(path) && Catch::Contains("'layers' = 1000000") &&
                                                 Catch::Contains("holds 1 encoder layers"));
}

// Issue 44 §4: finite but huge label weights (3e38) overflowed the label
// logits to inf and NaN, and the argmax silently chose relation 0 for every
// word; the arc path already refused non-finite scores. Now every choice
// (arcs, relations, tags) refuses non-finite scores, naming the word.
TEST_CASE("BiaffineParser::parse refuses non-finite relation and tag scores instead of choosing one",
          "[parse][errors]") {
  const std::vector<ConlluSentence> bank = tiny_treebank();
  const ParserVocabulary v = ParserVocabulary::build(bank, 1);
  for (const char* part : {"label.weight", "upos.weight"}) {
    INFO(part);
    ParserModel model(tiny_options(v), v);
    auto& store = model.parser().parameter_store();
    for (int i = 0; i < store.count(); ++i)
      if (store.info(i).name == part) {
        auto w = store.value(i);
        for (Index k = 0; k < w.size(); ++k) w.data()[k] = (k % 2 ? -3e38f : 3e38f);
      }
    // The MLPs' outputs must not be zero for the overflow to show: give
    // every weight a sizeable value.
    for (int i = 0; i < store.count(); ++i)
      if (starts_with(store.info(i).name, "label_dep.") || starts_with(store.info(i).name, "label_head.") ||
          store.info(i).name == "upos.bias") {
        auto w = store.value(i);
        for (Index k = 0; k < w.size(); ++k) w.data()[k] = 1.0f;
      }
    CHECK_THROWS_WITH(model.parse({{"the", "cat", "sees", "a", "dog"}}),
                      Catch::Contains("BiaffineParser::parse") && Catch::Contains("not finite") &&
                          Catch::Contains("word"));
  }
}

// Issue 44 §2: `parse train --resume` trusted its checkpoint's training
// state. std::stoi/std::stod read it: "abc" or 99999999999 gave only "stoi",
// "-5x" was read as -5, and "nan" trained on and exited 0 naming a model it
// never wrote; a finished run resumed with a new --model did the same; and
// another --train file was accepted (the run's signature left the data out).
namespace {

parse_cli::TrainConfig tiny_train_config(synattn_test::TempDir& dir) {
  parse_cli::TrainConfig c;
  c.train_path = c.dev_path = synattn_test::source_path("examples/data/en_ewt-dev-sample.conllu");
  c.model_path = dir.file("m.safetensors");
  c.checkpoint_path = dir.file("c.ckpt");
  c.epochs = 1;
  c.batch_tokens = 500;
  c.model.d_model = 16;
  c.model.heads = 2;
  c.model.layers = 1;
  c.model.d_ff = 32;
  c.model.word_dim = 8;
  c.model.char_filters = 8;
  c.model.arc_dim = 16;
  c.model.label_dim = 8;
  return c;
}

// The checkpoint at `path` with metadata `key` set to `value`.
void edit_metadata(const std::string& path, const std::string& key, const std::string& value) {
  SafetensorsFile f = load_safetensors(path);
  f.metadata[key] = value;
  save_safetensors(path, f);
}

}  // namespace

TEST_CASE("parse train --resume reads its training state whole and in range, naming the file and field",
          "[parse][resume][errors]") {
  synattn_test::TempDir dir;
  parse_cli::TrainConfig first = tiny_train_config(dir);
  std::ostringstream log;
  REQUIRE(parse_cli::run_train(first, log) == 0);
  const std::string saved = dir.file("saved.ckpt");
  std::filesystem::copy_file(first.checkpoint_path, saved);
  parse_cli::TrainConfig again = first;
  again.resume_path = first.checkpoint_path;
  again.epochs = 3;
  again.model_path = dir.file("new-model.safetensors");
  struct Case {
    const char* key;
    const char* value;
  };
  for (const Case c : {Case{"train.epoch", "abc"}, Case{"train.epoch", "99999999999"}, Case{"train.epoch", "1x"},
                       Case{"train.since_best", "-5x"}, Case{"train.since_best", "-5"}, Case{"train.best_las", "nan"},
                       Case{"train.best_las", "1e400"}, Case{"train.best_epoch", "7"}}) {
    INFO(c.key << " = " << c.value);
    std::filesystem::copy_file(saved, again.resume_path, std::filesystem::copy_options::overwrite_existing);
    edit_metadata(again.resume_path, c.key, c.value);
    try {
      parse_cli::run_train(again, log);
      FAIL("resumed");
    } catch (const synattn::FormatError& e) {
      CHECK_THAT(e.what(), Catch::Contains(again.resume_path) && Catch::Contains(c.key) &&
                               Catch::Contains(std::string("'") + c.value + "'"));
    } catch (const std::exception& e) {
      FAIL("not a FormatError naming the file and field: " << e.what());
    }
    CHECK_FALSE(std::filesystem::exists(again.model_path));
  }
}

TEST_CASE("parse train --resume refuses a finished run and other data, and never names a model it did not write",
          "[parse][resume][errors]") {
  synattn_test::TempDir dir;
  parse_cli::TrainConfig first = tiny_train_config(dir);
  std::ostringstream log;
  REQUIRE(parse_cli::run_train(first, log) == 0);
  parse_cli::TrainConfig again = first;
  again.resume_path = first.checkpoint_path;
  again.checkpoint_path = dir.file("c2.ckpt");
  again.model_path = dir.file("new-model.safetensors");
  SECTION("a finished run (--epochs reached) with a new --model") {
    CHECK_THROWS_WITH(parse_cli::run_train(again, log), Catch::Contains(again.resume_path) &&
                                                           Catch::Contains("nothing to train"));
    CHECK_FALSE(std::filesystem::exists(again.model_path));
  }
  SECTION("another --train file, same size, one byte changed") {
    std::ifstream in(first.train_path, std::ios::binary);
    std::string bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    const std::size_t at = bytes.find("\t_\t");
    REQUIRE(at != std::string::npos);
    bytes[at + 1] = '-';
    again.train_path = dir.file("other-train.conllu");
    std::ofstream(again.train_path, std::ios::binary) << bytes;
    again.epochs = 2;
    CHECK_THROWS_WITH(parse_cli::run_train(again, log),
                      Catch::Contains("--train " + again.train_path) && Catch::Contains("not the file"));
    CHECK_FALSE(std::filesystem::exists(again.model_path));
  }
  SECTION("a resumed run that does not beat the best says it wrote no model") {
    // The best LAS set to 100: no epoch can beat it.
    edit_metadata(again.resume_path, "train.best_las", "100");
    again.epochs = 2;
    std::ostringstream resumed;
    REQUIRE(parse_cli::run_train(again, resumed) == 0);
    CHECK_FALSE(std::filesystem::exists(again.model_path));
    CHECK_THAT(resumed.str(), Catch::Contains("did not write --model " + again.model_path));
    CHECK_THAT(resumed.str(), !Catch::Contains("; model " + again.model_path));
  }
}

// The layer contract (docs/guide.md): every parse/ layer's infer() gives
// forward()'s output bit for bit, keeping nothing, and backward() refuses
// its workspace; parse() runs the parser's infer().
TEST_CASE("CharCnn, ArcBiaffine, LabelBiaffine: infer equals forward bit for bit; backward refuses an infer() "
          "workspace",
          "[parse][inference]") {
  using Catch::Contains;
  SECTION("CharCnn") {
    CharCnnOptions o;
    o.num_chars = 9;
    o.char_dim = 3;
    o.filters = 4;
    CharCnn<double> cnn(o, RandomStream(7));
    CharIdMatrix chars = CharIdMatrix::Zero(4, 6);
    const std::vector<int> lengths = {3, 6, 0, 1};
    std::mt19937 gen(3);
    for (Index t = 0; t < 4; ++t)
      for (int p = 0; p < lengths[static_cast<std::size_t>(t)]; ++p) chars(t, p) = 1 + static_cast<int>(gen() % 8);
    CharCnnCache<double> cache, workspace;
    MatrixD a(4, 4), b(4, 4);
    cnn.forward({chars, lengths}, cache, a);
    cnn.infer({chars, lengths}, workspace, b);
    CHECK(a == b);
    CHECK_THROWS_WITH(cnn.backward(workspace, a), Contains("holds no forward pass"));
  }
  SECTION("ArcBiaffine") {
    ArcBiaffine<double> arc(3);
    arc.parameter_store().value(0) = random_matrix(3, 3, 1);
    arc.parameter_store().value(1) = random_matrix(1, 3, 2);
    const MatrixD dep = random_matrix(8, 3, 3), head = random_matrix(8, 3, 4);
    ArcBiaffineCache<double> cache, workspace;
    MatrixD a(8, 4), b(8, 4), dd(8, 3), dh(8, 3);
    arc.forward({dep, head, 4}, cache, a);
    arc.infer({dep, head, 4}, workspace, b);
    CHECK(a == b);
    CHECK(workspace.dep.size() == 0);  // keeps nothing
    CHECK_THROWS_WITH(arc.backward(workspace, a, {dd, dh}), Contains("holds no forward pass"));
  }
  SECTION("LabelBiaffine") {
    LabelBiaffine<double> lab(3, 4);
    lab.parameter_store().value(0) = random_matrix(4, 16, 1);
    const MatrixD dep = random_matrix(5, 3, 2), head = random_matrix(5, 3, 3);
    LabelBiaffineCache<double> cache, workspace;
    MatrixD a(5, 4), b(5, 4), dd(5, 3), dh(5, 3);
    lab.forward({dep, head}, cache, a);
    lab.infer({dep, head}, workspace, b);
    CHECK(a == b);  // below kInferRows rows: one block, the same products
    CHECK_THROWS_WITH(lab.backward(workspace, a, {dd, dh}), Contains("holds no forward pass"));
  }
}

TEST_CASE("BiaffineParser: infer gives forward's scores and tag logits bit for bit; backward refuses its workspace",
          "[parse][inference]") {
  using Catch::Contains;
  const std::vector<ConlluSentence> bank = tiny_treebank();
  const ParserVocabulary v = ParserVocabulary::build(bank, 1);
  std::vector<EncodedSentence> corpus;
  for (const auto& s : bank) corpus.push_back(encode_sentence(s, v));
  ParserBatch batch;
  make_parser_batch(corpus, {0, 1, 2}, v, WordDropoutRule{}, nullptr, batch);
  for (const bool chars : {true, false}) {
    INFO((chars ? "with chars" : "without chars"));
    ParserOptions o = tiny_options(v);
    o.use_chars = chars;
    BiaffineParser<float> parser(o);
    parser.parameter("arc.weight") = random_matrix(o.arc_dim, o.arc_dim, 1, 0.3).cast<float>();
    ParserCache<float> cache, workspace;
    parser.forward(batch, cache, nullptr);
    parser.infer(batch, workspace);
    CHECK(cache.scores == workspace.scores);
    CHECK(cache.upos_logits == workspace.upos_logits);
    CHECK(workspace.mlp[1].input.size() == 0);  // no Linear kept its input
    CHECK_THROWS_WITH(parser.loss(batch, workspace), Contains("holds no forward pass"));
    CHECK_THROWS_WITH(parser.backward(workspace), Contains("holds no forward pass"));
    // parse() on the training pass's cache leaves it unusable for backward.
    parser.loss(batch, cache);
    ParseWorkspace ws;
    ParsedBatch parsed;
    parser.parse(batch, cache, ws, parsed);
    CHECK_THROWS_WITH(parser.backward(cache), Contains("holds no forward pass"));
  }
}

TEST_CASE("CharCnn refuses a non-finite convolution, which its max-pooling turned into 0 in silence", "[parse]") {
  // Finite but huge weights: each feature sums +inf and -inf, NaN; every
  // comparison of the max-pooling is false on NaN, so the word's features
  // came out 0 and the parser's scores after them finite.
  CharCnnOptions o;
  o.num_chars = 5;
  o.char_dim = 2;
  o.filters = 3;
  CharCnn<float> cnn(o, RandomStream(1));
  cnn.embedding().parameter_store().value(0).setConstant(3e38f);
  auto w = cnn.conv().parameter_store().value(0);
  w.setConstant(3e38f);
  w.rightCols(w.cols() / 2).setConstant(-3e38f);
  CharIdMatrix chars = CharIdMatrix::Zero(2, 3);
  chars(1, 0) = 1;
  chars(1, 1) = 2;
  CharCnnCache<float> cache;
  RowMajorMatrix<float> y(2, o.filters);
  CHECK_THROWS_WITH(cnn.forward({chars, std::vector<int>{0, 2}}, cache, y),
                    Catch::Contains("CharCnn::forward: the character convolution of word 1 is not finite"));
}
