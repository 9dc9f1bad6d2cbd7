// synattn — learnable parameters as named views into one flat buffer.
//
// A layer registers its parameters once; values and gradients then live in two
// contiguous vectors, so an optimiser or a serialiser sees one vector each, and
// a layer copies, moves and assigns by value. Views are made on demand from
// offsets (nothing stores a pointer into the buffers), so copies never alias.
#ifndef SYNATTN_UTIL_PARAMETERS_HPP
#define SYNATTN_UTIL_PARAMETERS_HPP

#include <Eigen/Core>

#include <cmath>
#include <cstddef>
#include <string>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "../matrix.hpp"

namespace synattn {

// One parameter: its name, shape and place in the flat buffers. A frozen
// (non-trainable) parameter is still visited (serialisation needs it) but its
// gradient stays zero.
struct ParameterInfo {
  std::string name;
  Index offset = 0;
  Index rows = 0;
  Index cols = 0;
  bool trainable = true;
  Index size() const noexcept { return rows * cols; }
};

template <class Scalar>
class ParameterStore {
 public:
  using Matrix = RowMajorMatrix<Scalar>;
  using Vector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;
  using MatrixMap = Eigen::Map<Matrix>;
  using ConstMatrixMap = Eigen::Map<const Matrix>;

  // Registers a zero-initialised rows x cols parameter and returns its id.
  int add(std::string name, Index rows, Index cols, bool trainable = true) {
    if (rows < 0 || cols < 0)
      throw Error("ParameterStore::add: parameter '" + name + "' has negative shape " + std::to_string(rows) + "x" +
                  std::to_string(cols));
    if (find(name) >= 0) throw Error("ParameterStore::add: parameter '" + name + "' already exists");
    ParameterInfo info;
    info.name = std::move(name);
    info.offset = values_.size();
    info.rows = rows;
    info.cols = cols;
    info.trainable = trainable;
    values_.conservativeResize(info.offset + info.size());
    gradients_.conservativeResize(info.offset + info.size());
    values_.tail(info.size()).setZero();
    gradients_.tail(info.size()).setZero();
    infos_.push_back(std::move(info));
    return static_cast<int>(infos_.size()) - 1;
  }

  int count() const noexcept { return static_cast<int>(infos_.size()); }
  Index size() const noexcept { return values_.size(); }
  const ParameterInfo& info(int id) const { return infos_[static_cast<std::size_t>(id)]; }
  const std::vector<ParameterInfo>& infos() const noexcept { return infos_; }

  // Id of `name`, or -1.
  int find(const std::string& name) const noexcept {
    for (std::size_t i = 0; i < infos_.size(); ++i)
      if (infos_[i].name == name) return static_cast<int>(i);
    return -1;
  }
  // Id of `name`; throws naming the known parameters when absent.
  int id(const std::string& name) const {
    const int i = find(name);
    if (i < 0) {
      std::string known;
      for (const auto& p : infos_) known += (known.empty() ? "" : ", ") + p.name;
      throw Error("no parameter named '" + name + "' (this layer has: " + known + ")");
    }
    return i;
  }

  MatrixMap value(int id) { return map(values_.data(), info(id)); }
  ConstMatrixMap value(int id) const { return cmap(values_.data(), info(id)); }
  MatrixMap gradient(int id) { return map(gradients_.data(), info(id)); }
  ConstMatrixMap gradient(int id) const { return cmap(gradients_.data(), info(id)); }

  // The flat buffers, in registration order.
  Eigen::Map<Vector> values() { return Eigen::Map<Vector>(values_.data(), values_.size()); }
  Eigen::Map<const Vector> values() const { return Eigen::Map<const Vector>(values_.data(), values_.size()); }
  Eigen::Map<Vector> gradients() { return Eigen::Map<Vector>(gradients_.data(), gradients_.size()); }
  Eigen::Map<const Vector> gradients() const { return Eigen::Map<const Vector>(gradients_.data(), gradients_.size()); }

  void zero_grad() { gradients_.setZero(); }

  // Copies `value` into parameter `name` after checking its shape and that it
  // is finite. A parameter with one row (a bias, a shared table) also accepts
  // a column of the same length, so (k,) and (k, 1) arrays both load.
  void set(const std::string& name, const Eigen::Ref<const Matrix>& value) {
    const ParameterInfo& p = info(id(name));
    const bool same = value.rows() == p.rows && value.cols() == p.cols;
    const bool column = p.rows == 1 && value.cols() == 1 && value.rows() == p.cols;
    if (!same && !column)
      throw Error("set_parameter: '" + name + "' is " + std::to_string(p.rows) + "x" + std::to_string(p.cols) +
                  ", got a " + std::to_string(value.rows()) + "x" + std::to_string(value.cols()) + " matrix");
    for (Index r = 0; r < value.rows(); ++r)
      for (Index c = 0; c < value.cols(); ++c)
        if (!std::isfinite(static_cast<double>(value(r, c))))
          throw Error("set_parameter: '" + name + "' element (" + std::to_string(r) + ", " + std::to_string(c) +
                      ") is not finite");
    MatrixMap dst = map(values_.data(), p);
    if (same) {
      dst = value;
    } else {
      dst = value.transpose();
    }
  }

  // f(info, value_map, gradient_map) for every parameter in order.
  template <class F>
  void visit(F&& f) {
    for (std::size_t i = 0; i < infos_.size(); ++i)
      f(infos_[i], map(values_.data(), infos_[i]), map(gradients_.data(), infos_[i]));
  }
  template <class F>
  void visit(F&& f) const {
    for (std::size_t i = 0; i < infos_.size(); ++i)
      f(infos_[i], cmap(values_.data(), infos_[i]), cmap(gradients_.data(), infos_[i]));
  }

  // Views of one parameter inside any buffer laid out like this store's
  // (a caller's own gradient vector, for instance).
  MatrixMap map_into(Scalar* base, int id) const { return map(base, info(id)); }

 private:
  static MatrixMap map(Scalar* base, const ParameterInfo& p) { return MatrixMap(base + p.offset, p.rows, p.cols); }
  static ConstMatrixMap cmap(const Scalar* base, const ParameterInfo& p) {
    return ConstMatrixMap(base + p.offset, p.rows, p.cols);
  }

  Vector values_;
  Vector gradients_;
  std::vector<ParameterInfo> infos_;
};

}  // namespace synattn

#endif  // SYNATTN_UTIL_PARAMETERS_HPP
