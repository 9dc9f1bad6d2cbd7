// kernels/operands.hpp: the one Transpose and Accumulate of every product.
#include <synattn/kernels/operands.hpp>

#include <catch2/catch.hpp>

#include <set>

namespace k = synattn::kernels;
using k::Transpose;

TEST_CASE("transposes_lhs and transposes_rhs read each Transpose as its name says", "[kernels][operands]") {
  CHECK_FALSE(k::transposes_lhs(Transpose::none));
  CHECK_FALSE(k::transposes_rhs(Transpose::none));
  CHECK(k::transposes_lhs(Transpose::lhs));
  CHECK_FALSE(k::transposes_rhs(Transpose::lhs));
  CHECK_FALSE(k::transposes_lhs(Transpose::rhs));
  CHECK(k::transposes_rhs(Transpose::rhs));
  CHECK(k::transposes_lhs(Transpose::both));
  CHECK(k::transposes_rhs(Transpose::both));
}

TEST_CASE("kAllTransposes holds each of the four products once", "[kernels][operands]") {
  std::set<int> seen;
  for (Transpose t : k::kAllTransposes) seen.insert(int(k::transposes_lhs(t)) * 2 + int(k::transposes_rhs(t)));
  CHECK(seen == std::set<int>{0, 1, 2, 3});
  CHECK(k::Accumulate::overwrite != k::Accumulate::add);
}
