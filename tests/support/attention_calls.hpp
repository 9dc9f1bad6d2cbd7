// Test support: the attention layer's verbs as expressions that return their
// result, for tests that compare outputs and gradients as values. The
// library's verbs write into caller-allocated matrices (views at interfaces);
// these allocate them. Not part of the library.
#ifndef SYNATTN_TESTS_SUPPORT_ATTENTION_CALLS_HPP
#define SYNATTN_TESTS_SUPPORT_ATTENTION_CALLS_HPP

#include <synattn/attention/syntax_attention.hpp>

namespace synattn_test {

namespace attention_calls_detail {
template <class Scalar>
Eigen::Index query_rows(const synattn::SelfAttentionInput<Scalar>& input) {
  return input.x.rows();
}
template <class Scalar>
Eigen::Index query_rows(const synattn::CrossAttentionInput<Scalar>& input) {
  return input.x_q.rows();
}
template <class Layer, class Input>
typename Layer::Matrix forward(const Layer& layer, const Input& input, typename Layer::Cache& cache,
                               const synattn::RandomStream* dropout) {
  typename Layer::Matrix out(query_rows(input), layer.d_model());
  layer.forward(input, cache, out, dropout);
  return out;
}
template <class Layer, class Input>
typename Layer::Matrix infer(const Layer& layer, const Input& input) {
  typename Layer::Cache workspace;
  typename Layer::Matrix out(query_rows(input), layer.d_model());
  layer.infer(input, workspace, out);
  return out;
}
}  // namespace attention_calls_detail

// forward() into a new (rows of x or x_q, d_model) matrix. (The input types
// are spelled out so that a braced {x, lengths, buckets} converts.)
template <class Layer>
typename Layer::Matrix forward_value(const Layer& layer, const typename Layer::SelfInput& input,
                                     typename Layer::Cache& cache, const synattn::RandomStream* dropout = nullptr) {
  return attention_calls_detail::forward(layer, input, cache, dropout);
}
template <class Layer>
typename Layer::Matrix forward_value(const Layer& layer, const typename Layer::CrossInput& input,
                                     typename Layer::Cache& cache, const synattn::RandomStream* dropout = nullptr) {
  return attention_calls_detail::forward(layer, input, cache, dropout);
}

// infer() with a workspace of its own.
template <class Layer>
typename Layer::Matrix infer_value(const Layer& layer, const typename Layer::SelfInput& input) {
  return attention_calls_detail::infer(layer, input);
}
template <class Layer>
typename Layer::Matrix infer_value(const Layer& layer, const typename Layer::CrossInput& input) {
  return attention_calls_detail::infer(layer, input);
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
