// A translation unit that uses SyntaxBiasedAttention<float> and <double>
// (construct, forward, backward, infer): what README's compile-time numbers
// compile, header-only and in compiled mode (-DSYNATTN_COMPILED). Not built by
// CMake; the README gives the commands.
#include <synattn/synattn.hpp>

#include <cstdint>
#include <vector>

template <class Scalar>
double run() {
  synattn::AttentionOptions options(16, 2);
  synattn::SyntaxBiasedAttention<Scalar> layer(options);
  const std::vector<int> lengths{3};
  synattn::RowMajorMatrix<Scalar> x = synattn::RowMajorMatrix<Scalar>::Ones(3, 16);
  synattn::RowMajorMatrix<std::int8_t> buckets = synattn::RowMajorMatrix<std::int8_t>::Zero(3, 3);
  synattn::AttentionCache<Scalar> cache, workspace;
  synattn::RowMajorMatrix<Scalar> out(3, 16), dx(3, 16), y(3, 16);
  layer.forward({x, lengths, buckets}, cache, out);
  layer.backward(cache, out, {dx});
  layer.infer({x, lengths, buckets}, workspace, y);
  return double(out.sum() + dx.sum() + y.sum());
}

int main() { return run<float>() + run<double>() > 0 ? 0 : 1; }
