// synattn — one flat parameter buffer for a whole model.
//
// A model's sub-layers are built standalone, each owning a ParameterStore.
// bind_parameters() then (1) registers every sub-layer parameter in the
// model's root store under "<prefix><name>" (a parameter of a store visited
// with a shared prefix and named "table" or "scale" goes to "<shared>table" /
// "<shared>scale" instead, once for all such stores), (2) copies the values
// in and (3) binds every sub-layer store to its slices of the root buffers.
// Registration completes before any binding, so the root never reallocates
// under a binding. rebind_parameters() repeats (3) only: a model calls it
// after it was copied (its sub-layers are then unbound copies) or moved.
// BoundModel holds a whole model's parts and does both, with the model's
// copy and move rules; BoundModelAccess gives such a model its options() and
// parameter API.
#ifndef SYNATTN_NN_PARAMETER_BINDING_HPP
#define SYNATTN_NN_PARAMETER_BINDING_HPP

#include <string>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "../util/parameter_access.hpp"
#include "../util/parameters.hpp"
#include "common.hpp"

namespace synattn {
namespace nn {

namespace detail {
inline std::string root_name(const std::string& prefix, const std::string& shared, const std::string& name) {
  if (!shared.empty() && (name == "table" || name == "scale")) return shared + name;
  return prefix + name;
}
}  // namespace detail

template <class Scalar, class Visit>
void rebind_parameters(ParameterStore<Scalar>& root, Visit&& visit) {
  visit([&](const std::string& prefix, ParameterStore<Scalar>& store, const std::string& shared) {
    std::vector<Scalar*> values, gradients;
    for (int i = 0; i < store.count(); ++i) {
      const int id = root.id(nn::detail::root_name(prefix, shared, store.info(i).name));
      values.push_back(root.value_data(id));
      gradients.push_back(root.gradient_data(id));
    }
    store.bind(values, gradients);
  });
}


// visit(f) must call f(prefix, ParameterStore<Scalar>&, shared_prefix) for
// every sub-layer store, always in the same order.
template <class Scalar, class Visit>
void bind_parameters(ParameterStore<Scalar>& root, Visit&& visit) {
  if (root.count() > 0 || root.bound()) throw Error("bind_parameters: the root store must be empty");
  std::vector<bool> copied;
  visit([&](const std::string& prefix, ParameterStore<Scalar>& store, const std::string& shared) {
    for (const ParameterInfo& p : store.infos()) {
      const std::string name = nn::detail::root_name(prefix, shared, p.name);
      const int id = root.find(name);
      if (id < 0) {
        root.add(name, p.rows, p.cols, p.trainable);
      } else {
        const ParameterInfo& q = root.info(id);
        if (shared.empty() || q.rows != p.rows || q.cols != p.cols || q.trainable != p.trainable)
          throw Error("bind_parameters: parameter '" + name + "' registered twice with different shapes or options");
      }
    }
  });
  copied.assign(static_cast<std::size_t>(root.count()), false);
  visit([&](const std::string& prefix, ParameterStore<Scalar>& store, const std::string& shared) {
    for (int i = 0; i < store.count(); ++i) {
      const int id = root.id(nn::detail::root_name(prefix, shared, store.info(i).name));
      if (!copied[static_cast<std::size_t>(id)]) {  // a shared parameter takes its first layer's values
        root.value(id) = store.value(i);
        copied[static_cast<std::size_t>(id)] = true;
      }
    }
  });
  rebind_parameters(root, visit);
}

// A whole model: its parts bound into one flat buffer, with the copy and move
// rules the tagger and the parser share. State holds the parts and `root`,
// the store they are bound into; State::visit_stores(f) lists every part's
// store in the order of the buffer (bind_parameters' visit), and
// State::kCopyName names a refused copy. BoundModel is a State (its parts are
// members as they were), bound at construction. A copy owns its own buffers
// (values copied, its parts bound to them); a moved model keeps working; a
// moved-from model holds no layers, and using or copying it is refused by
// name (require_not_moved_from) instead of undefined behaviour. A self-move
// keeps the model.
template <class State>
class BoundModel : public State {
 public:
  template <class Options>
  explicit BoundModel(const Options& options) : State(options) {
    bind_parameters(this->root, visitor());
  }
  BoundModel(const BoundModel& other) : State((other.require(State::kCopyName), static_cast<const State&>(other))) {
    rebind();
  }
  BoundModel(BoundModel&& other) : State(static_cast<State&&>(other)), moved_from_(other.moved_from_) {
    rebind();
    other.moved_from_ = true;
  }
  BoundModel& operator=(const BoundModel& other) {
    if (this != &other) {
      other.require(State::kCopyName);
      unbind_parts();  // the parts take the other's layout (ParameterStore's bound assignment would refuse it)
      State::operator=(other);
      moved_from_ = false;
      rebind();
    }
    return *this;
  }
  BoundModel& operator=(BoundModel&& other) {
    if (this != &other) {
      unbind_parts();
      State::operator=(static_cast<State&&>(other));
      moved_from_ = other.moved_from_;
      rebind();
      other.moved_from_ = true;
    }
    return *this;
  }

  // Throws unless the model holds its layers; fn names the refused call.
  void require(const char* fn) const { require_not_moved_from(moved_from_, fn); }
  bool moved_from() const noexcept { return moved_from_; }

 private:
  auto visitor() {
    return [this](auto&& f) { this->visit_stores(f); };
  }
  // The parts of a copy are unbound copies, those of a move still point at
  // the buffers they were bound to: either way they bind to this root.
  void rebind() { rebind_parameters(this->root, visitor()); }
  void unbind_parts() {
    visitor()([](const std::string&, auto& store, const std::string&) { store.unbind(); });
  }

  bool moved_from_ = false;
};

// What a model built on a BoundModel answers alike (the tagger, the parser):
// its options and the one store behind ParameterAccess's API (parameters(),
// parameter(name), ...). Self holds `BoundModel<State> s_`, State having
// `options` and `root`, and befriends this class; Self's copies and moves
// are its BoundModel's.
template <class Self, class Options, class Scalar>
class BoundModelAccess : public ParameterAccess<Self, Scalar> {
 public:
  const Options& options() const noexcept { return self().s_.options; }
  ParameterStore<Scalar>& parameter_store() noexcept { return self().s_.root; }
  const ParameterStore<Scalar>& parameter_store() const noexcept { return self().s_.root; }

 protected:
  BoundModelAccess() = default;
  ~BoundModelAccess() = default;

 private:
  Self& self() noexcept { return static_cast<Self&>(*this); }
  const Self& self() const noexcept { return static_cast<const Self&>(*this); }
};

}  // namespace nn
}  // namespace synattn

#endif  // SYNATTN_NN_PARAMETER_BINDING_HPP
