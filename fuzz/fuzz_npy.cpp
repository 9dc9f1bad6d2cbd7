// libFuzzer target for synattn::read_npy. Run from the checkout root:
//   cmake --preset fuzz && cmake --build --preset fuzz --target fuzz_npy && tools/make_npy_seeds.sh build/fuzz/npy-seeds && build/fuzz/fuzz/fuzz_npy -max_total_time=60 build/fuzz/npy-seeds
//
// Any input must either parse or raise synattn::Error; anything else escaping
// (another exception, a sanitizer report, a trap below) is a bug. An accepted
// array must also be self-consistent and survive a write/read round trip.
#include <synattn/io/npy.hpp>

#include <cstddef>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>

namespace {

void require(bool ok) {
  if (!ok) __builtin_trap();
}

void check_accepted(const synattn::NpyArray& a) {
  require(a.nbytes() == a.size() * a.itemsize());

  const auto m = a.to_matrix<double>();
  require(static_cast<std::size_t>(m.size()) == a.size());
  require(a.to_vector<float>().size() == a.size());

  std::ostringstream out(std::ios::binary);
  synattn::write_npy(out, a);
  std::istringstream in(out.str(), std::ios::binary);
  const synattn::NpyArray b = synattn::read_npy(in, "round trip");
  require(b.dtype() == a.dtype());
  require(b.shape() == a.shape());
  require(b.nbytes() == a.nbytes());
  require(a.nbytes() == 0 || std::memcmp(a.bytes(), b.bytes(), a.nbytes()) == 0);

  // May throw synattn::Error for floats out of int16's range; that is fine.
  (void)a.to_vector<std::int16_t>();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size), std::ios::binary);
  try {
    check_accepted(synattn::read_npy(in, "fuzz"));
  } catch (const synattn::Error&) {
  }
  return 0;
}
