// Uses the installed synattn::checkpoint target: saves a tiny checkpoint and
// loads it back, so a broken export of nlohmann_json fails loudly; then loads
// the installed tokenizer from the package's models folder, and parses text
// with both installed models (in compiled mode through the library's
// parse::Pipeline, SYNATTN_COMPILED_PIPELINE).
#include <synattn/synattn.hpp>
#include <synattn/parse.hpp>  // the module header: the tokenizer, the parser, their model files
#include <synattn/train/checkpoint.hpp>

#include <iostream>
#include <string>

int main(int argc, char** argv) {
  const std::string path = argc > 1 ? argv[1] : "consumer.safetensors";
  synattn::ParameterStore<double> a, b;
  a.add("w", 1, 3);
  b.add("w", 1, 3);
  a.values() << 1.5, -2.0, 0.25;
  synattn::save_checkpoint<double>(path, a, nullptr, 7);
  const synattn::CheckpointInfo info = synattn::load_checkpoint<double>(path, b, nullptr);
  if (info.step != 7 || b.values() != a.values()) {
    std::cerr << "consumer_checkpoint: round trip failed\n";
    return 1;
  }
  // The installed package finds its shipped tokenizer without any setting.
  const synattn::text::TokenizerModel tok = synattn::text::TokenizerModel::load(synattn::text::default_tokenizer_path());
  if (tok.tokenize("It works. Does it?").sentences.size() != 2) {
    std::cerr << "consumer_checkpoint: the installed tokenizer did not split two sentences\n";
    return 1;
  }
  const synattn::text::Document doc = synattn::parse::Pipeline::load_default().parse_text("It works. Does it?");
  if (doc.sentences.size() != 2 || synattn::parse::sentence_tree(doc.sentences[0]).size() != 3) {
    std::cerr << "consumer_checkpoint: the installed models did not parse two sentences\n";
    return 1;
  }
  std::cout << "consumer_checkpoint: ok (" << synattn::text::default_tokenizer_path() << ")\n";
  return 0;
}
