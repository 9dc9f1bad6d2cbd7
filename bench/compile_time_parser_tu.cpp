// A translation unit that parses raw text with the shipped models
// (synattn/parse/pipeline.hpp, the header docs/parser.md gives) and runs
// SyntaxBiasedAttention<float> over the trees' distance buckets (forward,
// backward, infer): the "layer + parser user" of the compile-time table
// (tools/compile_time_table.py), compiled header-only and in compiled mode
// (-DSYNATTN_COMPILED -DSYNATTN_COMPILED_PIPELINE). Not built by CMake.
#include <synattn/synattn.hpp>
#include <synattn/parse/pipeline.hpp>

#include <vector>

int main(int argc, char** argv) {
  using namespace synattn;
  const auto pipeline = parse::Pipeline::load_default();
  const text::Document doc = pipeline.parse_text(argc > 1 ? argv[1] : "The cat ate fish. It slept.");
  std::vector<DependencyTree> trees;
  for (const auto& s : doc.sentences) trees.push_back(parse::sentence_tree(s));
  AttentionOptions options(16, 2);
  options.bias.bucketing = Bucketing::linear(10);
  const BucketBatch batch = make_bucket_batch(trees, options.bias.bucketing);
  SyntaxBiasedAttention<float> layer(options);
  const RowMajorMatrix<float> x = RowMajorMatrix<float>::Ones(batch.buckets.rows(), 16);
  AttentionCache<float> cache, workspace;
  RowMajorMatrix<float> y(x.rows(), 16), dx(x.rows(), 16), z(x.rows(), 16);
  layer.forward({x, batch.lengths, batch.buckets}, cache, y);
  layer.backward(cache, y, {dx});
  layer.infer({x, batch.lengths, batch.buckets}, workspace, z);
  return y.sum() + dx.sum() + z.sum() > 0 ? 0 : 1;
}
