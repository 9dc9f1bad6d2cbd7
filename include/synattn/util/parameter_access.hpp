// synattn — the parameter API shared by the layer and the models.
//
// SyntaxBiasedAttention, SyntaxTransformerTagger and BiaffineParser each keep
// their parameters in one ParameterStore and answer the same questions about
// them (how many, which, by name, the flat buffers). They derive from
// ParameterAccess<Self, Scalar>, which answers them from Self's public
// parameter_store(), so the three spell the API once and alike.
#ifndef SYNATTN_UTIL_PARAMETER_ACCESS_HPP
#define SYNATTN_UTIL_PARAMETER_ACCESS_HPP

#include <Eigen/Core>

#include <string>
#include <utility>
#include <vector>

#include "../matrix.hpp"
#include "parameters.hpp"

namespace synattn {

template <class Self, class Scalar>
class ParameterAccess {
  using Matrix = RowMajorMatrix<Scalar>;
  using Vector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;

 public:
  Index parameter_count() const noexcept { return store().size(); }
  // The flat buffers, in the order of parameter_infos(). A layer bound into
  // a model's buffer throws here: ask the model.
  Eigen::Map<Vector> parameters() { return store().values(); }
  Eigen::Map<const Vector> parameters() const { return store().values(); }
  Eigen::Map<Vector> gradients() { return store().gradients(); }
  Eigen::Map<const Vector> gradients() const { return store().gradients(); }
  const std::vector<ParameterInfo>& parameter_infos() const noexcept { return store().infos(); }

  // One parameter by name; an unknown name throws, listing the known ones.
  bool has_parameter(const std::string& name) const noexcept { return store().find(name) >= 0; }
  Eigen::Map<Matrix> parameter(const std::string& name) { return store().value(store().id(name)); }
  Eigen::Map<const Matrix> parameter(const std::string& name) const { return store().value(store().id(name)); }
  Eigen::Map<Matrix> gradient(const std::string& name) { return store().gradient(store().id(name)); }
  Eigen::Map<const Matrix> gradient(const std::string& name) const { return store().gradient(store().id(name)); }
  // Copies `value` into `name` after checking the shape (a (k, 1) column is
  // accepted for a (1, k) row) and finiteness.
  void set_parameter(const std::string& name, const Eigen::Ref<const Matrix>& value) { store().set(name, value); }

  // f(const ParameterInfo&, Eigen::Map<Matrix> value, Eigen::Map<Matrix> gradient), in order.
  template <class F>
  void visit_parameters(F&& f) {
    store().visit(std::forward<F>(f));
  }
  template <class F>
  void visit_parameters(F&& f) const {
    store().visit(std::forward<F>(f));
  }
  void zero_grad() { store().zero_grad(); }

 protected:
  ParameterAccess() = default;
  ~ParameterAccess() = default;

 private:
  ParameterStore<Scalar>& store() noexcept { return static_cast<Self&>(*this).parameter_store(); }
  const ParameterStore<Scalar>& store() const noexcept { return static_cast<const Self&>(*this).parameter_store(); }
};

}  // namespace synattn

#endif  // SYNATTN_UTIL_PARAMETER_ACCESS_HPP
