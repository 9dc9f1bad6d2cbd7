// Uses the installed package through the umbrella header and checks one
// distance, so a broken install fails loudly rather than merely compiling.
#include <synattn/synattn.hpp>

#include <cstdint>
#include <iostream>
#include <string>

int main() {
  // 0 <- 1 -> 2: word 1 is the root.
  const synattn::DependencyTree tree({1, -1, 1});
  const std::vector<int>& depth = tree.depth();
  if (depth[0] != 1 || depth[1] != 0 || depth[2] != 1) {
    std::cerr << "consumer: wrong depths\n";
    return 1;
  }
  std::cout << "consumer: synattn " << SYNATTN_VERSION_STRING << " ok\n";
  // The test that builds us checks this line says OpenMP is on when the
  // package was made with it: the exported target must carry -fopenmp.
  std::cout << "consumer: " << synattn::build_info() << "\n";
  // consumer_native (linked to synattn::native) must use everything this CPU
  // has; the default-flags consumer names what it lacks (the SIMD notice's list).
  const std::string missing =
      synattn::feature_names(synattn::without(synattn::cpu_features(), synattn::build_cpu_features()));
  std::cout << "consumer: SIMD this CPU has and this build lacks: " << (missing.empty() ? "none" : missing) << "\n";
  return 0;
}
