// Test support: the attention layer's verbs as expressions that return their
// result, for tests that compare outputs and gradients as values. The
// library's verbs write into caller-allocated matrices (views at interfaces);
// these allocate them. Not part of the library.
#ifndef SYNATTN_TESTS_SUPPORT_ATTENTION_CALLS_HPP
#define SYNATTN_TESTS_SUPPORT_ATTENTION_CALLS_HPP

#include <synattn/attention/syntax_attention.hpp>

namespace synattn_test {

// forward() into a new (rows of x or x_q, d_model) matrix.
template <class Layer>
typename Layer::Matrix forward_value(const Layer& layer, const typename Layer::SelfInput& input,
                                     typename Layer::Cache& cache, const synattn::RandomStream* dropout = nullptr) {
  typename Layer::Matrix out(input.x.rows(), layer.d_model());
  layer.forward(input, cache, out, dropout);
  return out;
}
template <class Layer>
typename Layer::Matrix forward_value(const Layer& layer, const typename Layer::CrossInput& input,
                                     typename Layer::Cache& cache, const synattn::RandomStream* dropout = nullptr) {
  typename Layer::Matrix out(input.x_q.rows(), layer.d_model());
  layer.forward(input, cache, out, dropout);
  return out;
}

// infer() with a workspace of its own.
template <class Layer>
typename Layer::Matrix infer_value(const Layer& layer, const typename Layer::SelfInput& input) {
  typename Layer::Cache workspace;
  typename Layer::Matrix out(input.x.rows(), layer.d_model());
  layer.infer(input, workspace, out);
  return out;
}
template <class Layer>
typename Layer::Matrix infer_value(const Layer& layer, const typename Layer::CrossInput& input) {
  typename Layer::Cache workspace;
  typename Layer::Matrix out(input.x_q.rows(), layer.d_model());
  layer.infer(input, workspace, out);
  return out;
}

// Self-attention backward(): returns dL/dx, adds into the layer's gradients.
template <class Layer>
typename Layer::Matrix backward_value(Layer& layer, typename Layer::Cache& cache,
                                      const Eigen::Ref<const typename Layer::Matrix>& dout) {
  typename Layer::Matrix dx(dout.rows(), layer.d_model());
  layer.backward(cache, dout, {dx});
  return dx;
}

}  // namespace synattn_test

#endif  // SYNATTN_TESTS_SUPPORT_ATTENTION_CALLS_HPP
