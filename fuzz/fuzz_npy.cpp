// libFuzzer target for synattn::read_npy. Run from the checkout root:
//   cmake --preset fuzz && cmake --build --preset fuzz --target fuzz_npy && tools/make_npy_seeds.sh build/fuzz/npy-seeds && build/fuzz/fuzz/fuzz_npy -max_total_time=60 build/fuzz/npy-seeds
//
// Any input must either parse or raise synattn::Error; anything else escaping
// (another exception, a sanitizer report, a trap below) is a bug. An accepted
// array must also be self-consistent and survive a write/read round trip.
#include <synattn/io/npy.hpp>

#include <cmath>
#include <cstddef>
#include <cstdint>
#include <cstring>
#include <sstream>
#include <string>
#include <vector>

namespace {

void require(bool ok) {
  if (!ok) __builtin_trap();
}

// Conversions refuse values outside the target's range with synattn::Error;
// when one succeeds, every element must equal the (exact) double value,
// truncated toward zero: nothing wrapped around.
void check_int8(const synattn::NpyArray& a, const std::vector<double>& exact) {
  std::vector<std::int8_t> v;
  try {
    v = a.to_vector<std::int8_t>();
  } catch (const synattn::Error&) {
    return;
  }
  for (std::size_t i = 0; i < v.size(); ++i) require(static_cast<double>(v[i]) == std::trunc(exact[i]));
}

void check_accepted(const synattn::NpyArray& a) {
  require(a.nbytes() == a.size() * a.itemsize());

  std::ostringstream out(std::ios::binary);
  synattn::write_npy(out, a);
  std::istringstream in(out.str(), std::ios::binary);
  const synattn::NpyArray b = synattn::read_npy(in, "round trip");
  require(b.dtype() == a.dtype());
  require(b.shape() == a.shape());
  require(b.nbytes() == a.nbytes());
  require(a.nbytes() == 0 || std::memcmp(a.bytes(), b.bytes(), a.nbytes()) == 0);

  // Every dtype converts to double (int64 may round, but never overflows).
  const auto m = a.to_matrix<double>();
  require(static_cast<std::size_t>(m.size()) == a.size());
  const std::vector<double> exact = a.to_vector<double>();
  if (a.dtype() != synattn::NpyDType::Int64) check_int8(a, exact);

  // May throw synattn::Error for float64 values beyond float32's range.
  try {
    require(a.to_vector<float>().size() == a.size());
  } catch (const synattn::Error&) {
    require(a.dtype() == synattn::NpyDType::Float64);
  }
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  std::istringstream in(std::string(reinterpret_cast<const char*>(data), size), std::ios::binary);
  try {
    check_accepted(synattn::read_npy(in, "fuzz"));
  } catch (const synattn::Error&) {
  } catch (const synattn::FormatError&) {
  }
  return 0;
}
