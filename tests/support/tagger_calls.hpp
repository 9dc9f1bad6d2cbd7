// Test support: the tagger's forward() as an expression that returns its
// logits, for tests that compare outputs as values. The library's forward()
// writes a caller's matrix; this one writes the cache's lent logits buffer
// (TaggerCache::logits), which loss(cache, cache.logits, labels) then reads.
// Not part of the library.
#ifndef SYNATTN_TESTS_SUPPORT_TAGGER_CALLS_HPP
#define SYNATTN_TESTS_SUPPORT_TAGGER_CALLS_HPP

#include <synattn/nn/tagger.hpp>

namespace synattn_test {

template <class Scalar>
const synattn::RowMajorMatrix<Scalar>& forward_logits(const synattn::nn::SyntaxTransformerTagger<Scalar>& model,
                                                      const synattn::nn::TokenInput& input,
                                                      synattn::nn::TaggerCache<Scalar>& cache,
                                                      const synattn::RandomStream* dropout = nullptr) {
  cache.logits.resize(input.ids.size(), model.options().num_classes);
  model.forward(input, cache, cache.logits, dropout);
  return cache.logits;
}
template <class Scalar>
const synattn::RowMajorMatrix<Scalar>& forward_logits(const synattn::nn::SyntaxTransformerTagger<Scalar>& model,
                                                      const synattn::nn::PackedTokenInput& input,
                                                      synattn::nn::TaggerCache<Scalar>& cache,
                                                      const synattn::RandomStream* dropout = nullptr) {
  cache.logits.resize(input.ids.size(), model.options().num_classes);
  model.forward(input, cache, cache.logits, dropout);
  return cache.logits;
}

}  // namespace synattn_test

#endif  // SYNATTN_TESTS_SUPPORT_TAGGER_CALLS_HPP
