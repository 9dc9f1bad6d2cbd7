// Uses the installed synattn::compiled target (find_package(synattn
// COMPONENTS compiled)): this file only declares the layer's float code
// extern, so it links and runs only if the installed library holds it and
// the exported target defines SYNATTN_COMPILED.
#include <synattn/synattn.hpp>

#include <cstdint>
#include <iostream>
#include <vector>

#if !defined(SYNATTN_COMPILED)
#error "linking synattn::compiled must define SYNATTN_COMPILED"
#endif

int main() {
  const synattn::AttentionOptions options(8, 2);  // model width 8, 2 heads
  const synattn::SyntaxBiasedAttention<float> layer(options);
  const std::vector<synattn::DependencyTree> trees{synattn::DependencyTree({1, -1, 1})};
  const synattn::BucketBatch batch = synattn::make_bucket_batch(trees, options.bias.bucketing);
  const synattn::RowMajorMatrix<float> x = synattn::RowMajorMatrix<float>::Ones(3, 8);
  synattn::AttentionCache<float> cache, workspace;
  synattn::RowMajorMatrix<float> trained(3, 8), inferred(3, 8);
  layer.forward({x, batch.lengths, batch.buckets}, cache, trained);
  layer.infer({x, batch.lengths, batch.buckets}, workspace, inferred);
  // Three equal tokens: every row attends to the same values, so the rows are
  // equal, and inference gives the training forward's output.
  if (trained != inferred || trained.row(0) != trained.row(1) || trained.row(1) != trained.row(2) ||
      !trained.allFinite()) {
    std::cerr << "consumer_compiled: wrong output\n" << trained << "\n";
    return 1;
  }
  std::cout << "consumer_compiled: ok\n";
  return 0;
}
