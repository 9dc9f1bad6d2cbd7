#include <catch2/catch.hpp>

#include <synattn/tree/dependency_tree.hpp>

using synattn::DependencyTree;
using synattn::HeadConvention;
using synattn::Structure;

TEST_CASE("placeholder tree builds", "[tree]") {
  DependencyTree t({1, -1, 1});
  CHECK(t.depth()[0] == 1);
}
