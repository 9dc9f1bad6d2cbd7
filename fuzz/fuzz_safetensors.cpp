// libFuzzer target for synattn::parse_safetensors. Run from the checkout root:
//   cmake --preset fuzz && cmake --build --preset fuzz --target fuzz_safetensors && tools/make_safetensors_seeds.sh build/fuzz/safetensors-seeds && build/fuzz/fuzz/fuzz_safetensors -max_total_time=60 build/fuzz/safetensors-seeds
//
// Any input must either parse or raise synattn::Error; anything else escaping
// (another exception, a sanitizer report, a trap below) is a bug. An accepted
// file must be self-consistent and survive a write/read round trip. When its
// metadata has a parser model's "parser.options" or "parser.vocabulary"
// (parse/parser_model.hpp), those are read as ParserModel::load reads them:
// again nothing but synattn::Error may come out, and what is accepted must
// survive its own to_json/from_json round trip.
#include <synattn/io/safetensors.hpp>
#include <synattn/parse/parser_model.hpp>
#include <synattn/parse/parser_vocabulary.hpp>

#include <cstddef>
#include <cstdint>
#include <string>

namespace {

void require(bool ok) {
  if (!ok) __builtin_trap();
}

void check_accepted(const synattn::SafetensorsFile& f) {
  for (const auto& kv : f.tensors) {
    const synattn::SafeTensor& t = kv.second;
    require(t.bytes.size() == t.elements() * synattn::safetensors_dtype_size(t.dtype));
    if (t.is_floating() && !t.bytes.empty()) (void)t.get<double>(t.elements() - 1);
  }
  std::string bytes;
  try {
    bytes = synattn::serialize_safetensors(f);
  } catch (const synattn::Error&) {
    // Only a tensor called "__metadata__" cannot be written; parsing never yields one.
    require(false);
  }
  const synattn::SafetensorsFile g = synattn::parse_safetensors(bytes.data(), bytes.size(), "round trip");
  require(g.metadata == f.metadata);
  require(g.tensors.size() == f.tensors.size());
  for (const auto& kv : f.tensors) {
    const auto it = g.tensors.find(kv.first);
    require(it != g.tensors.end());
    require(it->second.dtype == kv.second.dtype && it->second.shape == kv.second.shape &&
            it->second.bytes == kv.second.bytes);
  }
}

// The parser model's metadata, read as ParserModel::load reads it.
void check_parser_metadata(const synattn::SafetensorsFile& f) {
  const auto options = f.metadata.find("parser.options");
  if (options != f.metadata.end()) {
    try {
      const synattn::parse::ParserOptions o = synattn::options_from_json<synattn::parse::ParserOptions>(options->second);
      // Accepted options are valid, and their JSON reads back as the same JSON.
      const std::string again = synattn::options_to_json(o);
      require(synattn::options_to_json(synattn::options_from_json<synattn::parse::ParserOptions>(again)) == again);
    } catch (const synattn::Error&) {
    }
  }
  const auto vocabulary = f.metadata.find("parser.vocabulary");
  if (vocabulary != f.metadata.end()) {
    try {
      const synattn::parse::ParserVocabulary v = synattn::parse::ParserVocabulary::from_json(vocabulary->second);
      require(synattn::parse::ParserVocabulary::from_json(v.to_json()) == v);
    } catch (const synattn::Error&) {
    }
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  synattn::SafetensorsFile f;
  try {
    f = synattn::parse_safetensors(data, size, "fuzz");
  } catch (const synattn::Error&) {
    return 0;
  } catch (const synattn::FormatError&) {
    return 0;
  }
  check_accepted(f);
  check_parser_metadata(f);
  return 0;
}
