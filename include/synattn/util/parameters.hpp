// synattn — learnable parameters as named views into one flat buffer.
//
// A layer registers its parameters once; values and gradients then live in two
// contiguous vectors, so an optimiser or a serialiser sees one vector each, and
// a layer copies, moves and assigns by value. Views are made on demand from
// offsets (nothing stores a pointer into the buffers), so copies never alias.
//
// Binding (a whole model in one buffer). A model builds its sub-layers
// standalone, registers their parameters under prefixed names in its own root
// store, then bind()s each sub-layer's store to the root's storage: from then
// on every parameter's value and gradient live where the binding says (the
// root's buffers), and the sub-layer's own buffers are released. Several
// stores may bind a parameter to the same place (a table shared by layers:
// their backward passes all add into one gradient). The flat values() and
// gradients() of a bound store do not exist (they throw); per-parameter views
// (value, gradient, visit, set, zero_grad) work as before. Copying a bound
// store gives an unbound, self-owning copy of the current values, so a copy
// never aliases the original; moving keeps the binding (the pointers are into
// the binder's buffers, which the binder re-binds when it moves itself).
// Layers that rely on several parameters being adjacent (one product against
// stacked matrices) declare it with keep_adjacent(); bind() checks it.
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
#include "checked_size.hpp"

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

// Where `p` ends in its flat buffer (offset + rows * cols), or false when the
// offset or the shape is negative or the end overflows Index. A layout from
// outside (a caller's infos, a checkpoint) is checked with this before
// size() is trusted.
inline bool parameter_end(const ParameterInfo& p, Index& end) noexcept {
  Index size = 0;
  return checked_multiply(p.rows, p.cols, size) && checked_add(p.offset, size, end);
}

// Throws unless parameter `index` of a layout lies inside a buffer of
// `buffer_size` entries; `where` begins the message ("clip_grad_norm"),
// `buffer` names the buffer. The one layout check of every function that
// takes a parameter layout beside a flat buffer.
inline void check_parameter_span(const std::string& where, std::size_t index, const ParameterInfo& p,
                                 Index buffer_size, const char* buffer = "values") {
  // The message is built only on failure: optimisers check every step, and
  // a step after the first allocates nothing.
  const auto who = [&] { return where + ": parameter " + std::to_string(index) + " ('" + p.name + "')"; };
  Index end = 0;
  if (!parameter_end(p, end))
    throw Error(who() + " has offset " + std::to_string(p.offset) + " and shape " + shape_text(p.rows, p.cols) +
                ": negative, or its end overflows");
  if (end > buffer_size)
    throw Error(who() + " spans [" + std::to_string(p.offset) + ", " + std::to_string(end) + "), outside the " +
                std::to_string(buffer_size) + " " + buffer);
}

template <class Scalar>
class ParameterStore {
 public:
  using Matrix = RowMajorMatrix<Scalar>;
  using Vector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;
  using MatrixMap = Eigen::Map<Matrix>;
  using ConstMatrixMap = Eigen::Map<const Matrix>;

  ParameterStore() = default;
  // A copy owns its storage (unbound), holding the source's current values
  // and gradients.
  ParameterStore(const ParameterStore& other)
      : values_(other.size()), gradients_(other.size()), infos_(other.infos_), adjacent_(other.adjacent_) {
    for (int i = 0; i < other.count(); ++i) {
      value(i) = other.value(i);
      gradient(i) = other.gradient(i);
    }
  }
  // Assigning to a store bound to a model's buffer (a sub-layer of a model:
  // model.part = nn::Linear<float>(...)) writes the values and gradients
  // into that buffer, so the model and its optimiser keep training what the
  // layer reads; a store of another layout is refused (Error), since taking
  // its buffers would silently detach the layer from the model's (the
  // optimiser then trained a buffer the layer no longer read). A model's own
  // assignment unbinds its parts first (nn::BoundModel), so it is not this.
  ParameterStore& operator=(const ParameterStore& other) {
    if (this != &other) {
      if (bound()) {
        assign_bound(other);
      } else {
        ParameterStore copy(other);
        take(std::move(copy));
      }
    }
    return *this;
  }
  ParameterStore(ParameterStore&&) noexcept = default;
  ParameterStore& operator=(ParameterStore&& other) {
    if (this != &other) {
      if (bound())
        assign_bound(other);
      else
        take(std::move(other));
    }
    return *this;
  }

  // Registers a zero-initialised rows x cols parameter and returns its id.
  int add(std::string name, Index rows, Index cols, bool trainable = true) {
    if (bound()) throw Error("ParameterStore::add: cannot add '" + name + "' to a bound store");
    if (rows < 0 || cols < 0)
      throw Error("ParameterStore::add: parameter '" + name + "' has negative shape " + shape_text(rows, cols));
    if (find(name) >= 0) throw Error("ParameterStore::add: parameter '" + name + "' already exists");
    Index size = 0, end = 0;
    if (!checked_multiply(rows, cols, size) || !checked_add(values_.size(), size, end))
      throw Error("ParameterStore::add: parameter '" + name + "' of shape " + shape_text(rows, cols) +
                  " does not fit: the store's size would overflow");
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
  // Scalars in the store's layout (also when bound).
  Index size() const noexcept { return infos_.empty() ? 0 : infos_.back().offset + infos_.back().size(); }
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
      throw Error("ParameterStore::id: no parameter named '" + name + "' (this layer has: " + known + ")");
    }
    return i;
  }

  MatrixMap value(int id) { return MatrixMap(value_data(id), info(id).rows, info(id).cols); }
  ConstMatrixMap value(int id) const { return ConstMatrixMap(value_data(id), info(id).rows, info(id).cols); }
  MatrixMap gradient(int id) { return MatrixMap(gradient_data(id), info(id).rows, info(id).cols); }
  ConstMatrixMap gradient(int id) const { return ConstMatrixMap(gradient_data(id), info(id).rows, info(id).cols); }

  // Where parameter `id`'s value and gradient live (own buffers or bound).
  Scalar* value_data(int id) {
    return bound() ? value_ptr_[static_cast<std::size_t>(id)] : values_.data() + info(id).offset;
  }
  const Scalar* value_data(int id) const {
    return bound() ? value_ptr_[static_cast<std::size_t>(id)] : values_.data() + info(id).offset;
  }
  Scalar* gradient_data(int id) {
    return bound() ? gradient_ptr_[static_cast<std::size_t>(id)] : gradients_.data() + info(id).offset;
  }
  const Scalar* gradient_data(int id) const {
    return bound() ? gradient_ptr_[static_cast<std::size_t>(id)] : gradients_.data() + info(id).offset;
  }

  // The flat buffers, in registration order (an unbound store only).
  Eigen::Map<Vector> values() { return Eigen::Map<Vector>(require_unbound("values").values_.data(), size()); }
  Eigen::Map<const Vector> values() const {
    return Eigen::Map<const Vector>(require_unbound("values").values_.data(), size());
  }
  Eigen::Map<Vector> gradients() {
    return Eigen::Map<Vector>(require_unbound("gradients").gradients_.data(), size());
  }
  Eigen::Map<const Vector> gradients() const {
    return Eigen::Map<const Vector>(require_unbound("gradients").gradients_.data(), size());
  }

  // Zeroes every gradient (a shared, bound gradient once per store bound to it).
  void zero_grad() {
    if (!bound()) {
      gradients_.setZero();
      return;
    }
    for (int i = 0; i < count(); ++i) gradient(i).setZero();
  }

  // ---- Binding ----

  // Parameters first..last (ids, inclusive) must stay adjacent, in order, in
  // both buffers when bound (checked by bind()).
  void keep_adjacent(int first, int last) { adjacent_.emplace_back(first, last); }

  // Binds parameter i to values[i] / gradients[i] (info(i).size() scalars
  // each, owned by the caller and outliving the binding; the caller copies
  // the values in). The own buffers are released. Throws when a pointer is
  // null, the counts differ or a keep_adjacent() group is not adjacent.
  void bind(const std::vector<Scalar*>& values, const std::vector<Scalar*>& gradients) {
    const auto n = static_cast<std::size_t>(count());
    if (values.size() != n || gradients.size() != n)
      throw Error("ParameterStore::bind: got " + std::to_string(values.size()) + " value and " +
                  std::to_string(gradients.size()) + " gradient pointers, expected " + std::to_string(n));
    for (std::size_t i = 0; i < n; ++i)
      if (!values[i] || !gradients[i])
        throw Error("ParameterStore::bind: null pointer for parameter '" + infos_[i].name + "'");
    for (const auto& g : adjacent_)
      for (int i = g.first; i < g.second; ++i) {
        const auto a = static_cast<std::size_t>(i), b = a + 1;
        if (values[a] + infos_[a].size() != values[b] || gradients[a] + infos_[a].size() != gradients[b])
          throw Error("ParameterStore::bind: parameters '" + infos_[a].name + "' and '" + infos_[b].name +
                      "' must be adjacent (in this order) in the bound buffers");
      }
    value_ptr_ = values;
    gradient_ptr_ = gradients;
    values_.resize(0);
    gradients_.resize(0);
  }

  // Back to own buffers, holding the current values and gradients.
  void unbind() {
    if (bound()) take(ParameterStore(*this));
  }

  bool bound() const noexcept { return !value_ptr_.empty(); }

  // Copies `value` into parameter `name` after checking its shape and that it
  // is finite. A parameter with one row (a bias, a shared table) also accepts
  // a column of the same length, so (k,) and (k, 1) arrays both load.
  void set(const std::string& name, const Eigen::Ref<const Matrix>& value) {
    const ParameterInfo& p = info(id(name));
    const bool same = value.rows() == p.rows && value.cols() == p.cols;
    const bool column = p.rows == 1 && value.cols() == 1 && value.rows() == p.cols;
    if (!same && !column)
      throw Error("set_parameter: '" + name + "' is " + shape_text(p.rows, p.cols) +
                  ", got a " + shape_text(value.rows(), value.cols()) + " matrix");
    for (Index r = 0; r < value.rows(); ++r)
      for (Index c = 0; c < value.cols(); ++c)
        if (!std::isfinite(static_cast<double>(value(r, c))))
          throw Error("set_parameter: '" + name + "' element (" + std::to_string(r) + ", " + std::to_string(c) +
                      ") is not finite");
    MatrixMap dst = this->value(id(name));
    if (same) {
      dst = value;
    } else {
      dst = value.transpose();
    }
  }

  // f(info, value_map, gradient_map) for every parameter in order.
  template <class F>
  void visit(F&& f) {
    for (int i = 0; i < count(); ++i) f(info(i), value(i), gradient(i));
  }
  template <class F>
  void visit(F&& f) const {
    for (int i = 0; i < count(); ++i) f(info(i), value(i), gradient(i));
  }

  // Views of one parameter inside any buffer laid out like this store's
  // (a caller's own gradient vector, for instance).
  MatrixMap map_into(Scalar* base, int id) const { return map(base, info(id)); }

 private:
  static MatrixMap map(Scalar* base, const ParameterInfo& p) { return MatrixMap(base + p.offset, p.rows, p.cols); }
  static ConstMatrixMap cmap(const Scalar* base, const ParameterInfo& p) {
    return ConstMatrixMap(base + p.offset, p.rows, p.cols);
  }

  // Member-wise move: what the default move assignment did.
  void take(ParameterStore&& o) noexcept {
    values_ = std::move(o.values_);
    gradients_ = std::move(o.gradients_);
    infos_ = std::move(o.infos_);
    adjacent_ = std::move(o.adjacent_);
    value_ptr_ = std::move(o.value_ptr_);
    gradient_ptr_ = std::move(o.gradient_ptr_);
  }
  void assign_bound(const ParameterStore& other) {
    bool same = other.count() == count();
    for (int i = 0; same && i < count(); ++i)
      same = other.info(i).name == info(i).name && other.info(i).rows == info(i).rows &&
             other.info(i).cols == info(i).cols;
    if (!same)
      throw Error(std::string("ParameterStore: cannot assign parameters of another layout (") +
                  (other.count() > 0 ? "'" + other.info(0).name + "' " + std::to_string(other.info(0).rows) + "x" +
                                           std::to_string(other.info(0).cols) + ", ..."
                                     : std::string("none")) +
                  ") to a layer bound to a model's flat buffer (" +
                  (count() > 0 ? "'" + info(0).name + "' " + std::to_string(info(0).rows) + "x" +
                                     std::to_string(info(0).cols) + ", ..."
                               : std::string("none")) +
                  "): the layer would detach from the buffer the model's optimiser trains; build the model with "
                  "the options the new layer needs");
    for (int i = 0; i < count(); ++i) {
      value(i) = other.value(i);
      gradient(i) = other.gradient(i);
    }
  }

  const ParameterStore& require_unbound(const char* what) const {
    if (bound())
      throw Error(std::string("ParameterStore::") + what +
                  ": the parameters are bound to an outside buffer (a model's); use the model's flat buffers");
    return *this;
  }
  ParameterStore& require_unbound(const char* what) {
    static_cast<const ParameterStore&>(*this).require_unbound(what);
    return *this;
  }

  Vector values_;
  Vector gradients_;
  std::vector<ParameterInfo> infos_;
  std::vector<std::pair<int, int>> adjacent_;  // keep_adjacent() groups
  std::vector<Scalar*> value_ptr_;             // bound: per-parameter storage; empty: own buffers
  std::vector<Scalar*> gradient_ptr_;
};

}  // namespace synattn

#endif  // SYNATTN_UTIL_PARAMETERS_HPP
