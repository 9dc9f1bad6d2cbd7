// libFuzzer target for the parser's model loader (parse::ParserModel::load),
// what `parse --model FILE` reads. Run from the checkout root:
//   cmake --preset fuzz && cmake --build --preset fuzz --target fuzz_parser_model &&
//   tools/make_parser_model_seeds.sh build/fuzz/parser-model-seeds &&
//   build/fuzz/fuzz/fuzz_parser_model -max_total_time=60 -timeout=10 build/fuzz/parser-model-seeds
//
// Any input must load or be refused with an exception of synattn's own
// (synattn::Error, RuntimeError, FormatError); a std::bad_alloc, another
// exception, a sanitizer report or a hang is a finding: the options of a
// model file are checked against its tensors before anything is built
// (layers, d_ff, label_dim, max_length against the tensors' shapes), so what
// loading allocates is bounded by the input's size. A model that loads parses
// a short sentence into a valid tree, or refuses with synattn::Error when its
// weights make a score non-finite (huge label weights overflow float).
//
// The seeds are written by this program (SYNATTN_FUZZ_WRITE_SEEDS=DIR): a
// tiny model, with and without characters and tagger, in F32 and F16, and
// copies whose metadata alone was edited (huge layers, d_ff, label_dim,
// max_length; missing keys) or whose label weights are huge.
#include <synattn/parse/parser_model.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdlib>
#include <new>
#include <string>
#include <vector>

namespace {

void require(bool ok) {
  if (!ok) __builtin_trap();
}

synattn::ConlluSentence sentence(const std::vector<std::string>& forms, const std::vector<int>& heads) {
  synattn::ConlluSentence s;
  for (std::size_t i = 0; i < forms.size(); ++i) {
    synattn::ConlluWord w;
    w.id = static_cast<int>(i) + 1;
    w.form = forms[i];
    w.upos = i == 0 ? "DET" : i == 1 ? "NOUN" : "VERB";
    w.head = heads[i];
    w.deprel = heads[i] == 0 ? "root" : i == 0 ? "det" : "nsubj";
    s.words.push_back(w);
  }
  return s;
}

synattn::parse::ParserModel tiny_model(bool chars, bool tagger) {
  using namespace synattn::parse;
  const std::vector<synattn::ConlluSentence> bank = {sentence({"the", "cat", "sleeps"}, {2, 3, 0}),
                                                     sentence({"a", "dog", "barks"}, {2, 3, 0})};
  ParserVocabulary v = ParserVocabulary::build(bank, 1);
  ParserOptions o;
  o.num_words = v.num_words();
  o.num_chars = v.num_chars();
  o.num_labels = v.num_labels();
  o.num_upos = tagger ? v.num_upos() : 0;
  o.use_chars = chars;
  o.word_dim = 4;
  o.char_dim = 3;
  o.char_filters = 4;
  o.d_model = 8;
  o.heads = 2;
  o.d_ff = 8;
  o.layers = 2;
  o.arc_dim = 4;
  o.label_dim = 3;
  o.max_length = 16;
  return ParserModel(o, std::move(v));
}

void write_seeds(const std::string& dir) {
  using namespace synattn::parse;
  int k = 0;
  const auto name = [&](const char* what) { return dir + "/" + std::to_string(k++) + "_" + what + ".safetensors"; };
  for (const bool chars : {true, false})
    for (const bool tagger : {true, false}) {
      const ParserModel m = tiny_model(chars, tagger);
      m.save(name("model"));
      m.save_half(name("half"));
    }
  const ParserModel m = tiny_model(true, true);
  const std::string options = synattn::options_to_json(m.options());
  const auto edited = [&](const char* what, const std::string& key, const std::string& value) {
    nlohmann::json j = nlohmann::json::parse(options);
    j[key] = nlohmann::json::parse(value);
    auto extra = m.metadata();
    extra["parser.options"] = j.dump();
    synattn::save_checkpoint<float>(name(what), m.parser().parameter_store(), nullptr, 0, extra);
  };
  edited("layers", "layers", "1000000");
  edited("d_ff", "d_ff", "2000000000");
  edited("label_dim", "label_dim", "100000");
  edited("max_length", "max_length", "2147483647");
  edited("heads", "heads", "3");
  edited("fraction", "d_model", "8.5");
  ParserModel huge = tiny_model(true, true);
  auto& store = huge.parser().parameter_store();
  for (int i = 0; i < store.count(); ++i)
    if (store.info(i).name == "label.weight") {
      auto w = store.value(i);
      for (synattn::Index e = 0; e < w.size(); ++e) w.data()[e] = e % 2 ? -3e38f : 3e38f;
    }
  huge.save(name("huge_labels"));
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("SYNATTN_FUZZ_WRITE_SEEDS")) {
    write_seeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  using namespace synattn::parse;
  try {
    const synattn::SafetensorsFile file = synattn::parse_safetensors(data, size, "fuzz.safetensors");
    const ParserModel model = ParserModel::load(file, "fuzz.safetensors");
    try {
      const std::vector<ParsedSentence> parsed = model.parse({{"the", "cat", "sleeps"}});
      require(parsed.size() == 1 && parsed[0].heads.size() == 3);
      (void)parsed[0].tree();  // a valid tree, or this throws (a finding: not caught below as ours)
    } catch (const synattn::TreeError&) {
      require(false);
    } catch (const synattn::Error&) {
      // refused, e.g. non-finite scores from huge weights
    }
  } catch (const std::bad_alloc&) {
    require(false);  // loading must check before it allocates
  } catch (const synattn::Error&) {
  } catch (const synattn::RuntimeError&) {
  }
  return 0;
}
