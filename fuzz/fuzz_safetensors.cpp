// libFuzzer target for synattn::parse_safetensors. Run from the checkout root:
//   cmake --preset fuzz && cmake --build --preset fuzz --target fuzz_safetensors && tools/make_safetensors_seeds.sh build/fuzz/safetensors-seeds && build/fuzz/fuzz/fuzz_safetensors -max_total_time=60 build/fuzz/safetensors-seeds
//
// Any input must either parse or raise synattn::Error; anything else escaping
// (another exception, a sanitizer report, a trap below) is a bug. An accepted
// file must be self-consistent and survive a write/read round trip.
#include <synattn/io/safetensors.hpp>

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

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    check_accepted(synattn::parse_safetensors(data, size, "fuzz"));
  } catch (const synattn::Error&) {
  }
  return 0;
}
