// synattn — first-order optimisers over one flat parameter vector: SGD (with
// momentum, dampening, Nesterov), Adam and AdamW, with exactly the update
// formulas of torch.optim (PyTorch 1.13, single-tensor path, amsgrad off).
//
// An optimiser sees a model as `const std::vector<ParameterInfo>&` plus a
// flat values vector and a flat gradients vector (ParameterStore's layout),
// so it works for any layer, and for gradients that came from elsewhere (an
// all-reduce). Its state (momentum buffers, first and second moments) lives
// in flat vectors laid out like the parameters, plus one step count, so a
// checkpoint saves and restores it by name (state_names(), state()).
//
// Parameters with trainable == false are skipped: their values and state are
// never touched. Learning rate and weight decay per parameter come from
// ParameterGroups. The state is allocated at the first step; later steps do
// not allocate.
//
// Arithmetic is in Scalar with the hyper-parameters (and bias corrections,
// computed in double) cast to Scalar once per parameter, as PyTorch does for
// a float tensor.
#ifndef SYNATTN_TRAIN_OPTIMIZER_HPP
#define SYNATTN_TRAIN_OPTIMIZER_HPP

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <map>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "../matrix.hpp"
#include "../util/finite.hpp"
#include "../util/parameters.hpp"
#include "parameter_groups.hpp"

namespace synattn {

template <class Scalar>
class Optimizer {
  static_assert(std::is_same<Scalar, float>::value || std::is_same<Scalar, double>::value,
                "synattn::Optimizer<Scalar>: Scalar must be float or double");

 public:
  using Vector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;

  virtual ~Optimizer() = default;

  // "sgd", "adam" or "adamw" (stored in checkpoints, checked on load).
  virtual std::string kind() const = 0;
  // Names of the state vectors ("momentum_buffer"; "exp_avg", "exp_avg_sq").
  virtual std::vector<std::string> state_names() const = 0;
  // state_names().size(), without allocating (step() asks every time).
  virtual std::size_t state_count() const noexcept = 0;
  // Hyper-parameters as text (checkpoint metadata).
  virtual std::map<std::string, std::string> hyperparameters() const = 0;

  // One update of every trainable parameter: values -= f(gradients, state).
  // values and gradients are laid out by `infos` (ParameterStore's layout).
  //
  // All or nothing: a non-finite gradient, or an update that would make a
  // parameter or a state entry non-finite (a group multiplier of 1e308, say),
  // throws naming the parameter and entry, and leaves values, state and step
  // count as they were. The update is computed twice to know this before
  // writing (first to check, then to write, with the same arithmetic); it
  // reads and writes each entry a few times, next to the forward and
  // backward passes' products.
  void step(const std::vector<ParameterInfo>& infos, Eigen::Ref<Vector> values,
            const Eigen::Ref<const Vector>& gradients) {
    check_layout("step", infos, values.size(), gradients.size());
    if (steps_ >= kMaxSteps)
      throw Error(kind() + "::step: the step count has reached " + std::to_string(kMaxSteps) +
                  " (2^53), beyond which bias corrections lose precision");
    const NonFiniteEntry bad_gradient = first_non_finite_entry(infos, gradients.data());
    if (bad_gradient.found)
      throw Error(kind() + "::step: the gradient of '" + bad_gradient.name + "' entry " +
                  std::to_string(bad_gradient.index) + " is " + number(bad_gradient.value) + "; nothing was updated");
    const bool had_layout = !layout_.empty();
    check_same_model(infos, values.size());
    const bool fresh_state = state_.size() != state_count();
    if (fresh_state) state_.assign(state_count(), Vector::Zero(values.size()));
    ++steps_;
    for (const bool commit : {false, true})
      for (const ParameterInfo& p : infos) {
        if (!p.trainable || p.size() == 0) continue;
        const double lr = lr_ * groups_.lr_multiplier(p);
        const double wd = groups_.weight_decay(p, weight_decay_);
        const Index bad = update(p.offset, p.size(), lr, wd, values.data(), gradients.data(), commit);
        if (bad == p.size()) continue;
        // Only the checking pass can stop here: undo what this call set up.
        --steps_;
        if (fresh_state) state_.clear();
        if (!had_layout) layout_.clear();
        throw Error(kind() + "::step: the update would make '" + p.name + "' entry " + std::to_string(bad) +
                    " (or its optimiser state) non-finite, at learning rate " + number(lr) + " (value " +
                    number(double(values[p.offset + bad])) + ", gradient " +
                    number(double(gradients[p.offset + bad])) + "); nothing was updated");
      }
  }
  void step(ParameterStore<Scalar>& store) { step(store.infos(), store.values(), store.gradients()); }

  // The base learning rate (a schedule sets it before every step); a group's
  // rate is lr() times its multiplier.
  double lr() const noexcept { return lr_; }
  void set_lr(double lr) {
    if (!(lr >= 0) || !std::isfinite(lr))
      throw Error(kind() + ": learning rate must be finite and >= 0, got " + std::to_string(lr));
    lr_ = lr;
  }
  double weight_decay() const noexcept { return weight_decay_; }
  const ParameterGroups& groups() const noexcept { return groups_; }
  void set_groups(ParameterGroups groups) { groups_ = std::move(groups); }

  // Completed steps (PyTorch's state['step']); bias corrections use it.
  long long steps() const noexcept { return steps_; }
  // The most steps an optimiser counts: bias corrections take the count as a
  // double, exact up to 2^53 (so incrementing it can never overflow either).
  static constexpr long long kMaxSteps = 1LL << 53;

  // The state vectors, in state_names() order; empty before the first step
  // or a restore.
  const std::vector<Vector>& state() const noexcept { return state_; }

  // Replaces the whole state (a checkpoint being loaded): one vector per
  // state name, all of the parameters' size, and the completed step count.
  void restore(std::vector<Vector> state, long long steps) {
    const std::size_t want = state_names().size();
    if (state.size() != want)
      throw Error(kind() + "::restore: expected " + std::to_string(want) + " state vectors, got " +
                  std::to_string(state.size()));
    for (std::size_t i = 1; i < state.size(); ++i)
      if (state[i].size() != state[0].size())
        throw Error(kind() + "::restore: state vector '" + state_names()[i] + "' has " +
                    std::to_string(state[i].size()) + " entries, '" + state_names()[0] + "' has " +
                    std::to_string(state[0].size()));
    if (steps < 0 || steps > kMaxSteps)
      throw Error(kind() + "::restore: step count must be in [0, 2^53], got " + std::to_string(steps));
    state_ = std::move(state);
    steps_ = steps;
    layout_.clear();  // the next step() takes the model's layout, checked against the state's size
  }
  // Forgets the state, the step count and the model it served.
  void reset() {
    state_.clear();
    steps_ = 0;
    layout_.clear();
  }

 protected:
  Optimizer(double lr, double weight_decay, ParameterGroups groups)
      : lr_(lr), weight_decay_(weight_decay), groups_(std::move(groups)) {}

  // The update of values[offset, offset + size) from gradients there, with
  // the parameter's learning rate and weight decay; state_ is allocated and
  // steps_ already counts this step. commit false: computes it without
  // writing and returns the index (from offset) of the first entry whose new
  // value or state would not be finite, or size; commit true: writes it (the
  // same arithmetic, so the same values) and returns size.
  virtual Index update(Index offset, Index size, double lr, double weight_decay, Scalar* values,
                       const Scalar* gradients, bool commit) = 0;

  static std::string number(double v) {
    char buf[32];
    std::snprintf(buf, sizeof buf, "%.17g", v);
    return buf;
  }
  void check_hyper(bool ok, const std::string& what, double got) const {
    if (!ok) throw Error(kind() + ": " + what + ", got " + number(got));
  }
  // The hyper-parameters every optimiser has, checked by the derived
  // constructor first (the base's cannot: kind() names the derived class).
  void check_lr_and_weight_decay() {
    set_lr(lr_);
    check_hyper(weight_decay_ >= 0 && std::isfinite(weight_decay_), "weight_decay must be finite and >= 0",
                weight_decay_);
  }

  std::vector<Vector> state_;
  long long steps_ = 0;

 private:
  // The state belongs to one model: the first step() records its layout
  // (names, offsets and shapes; not which are trainable, which a schedule may
  // change), and a later step() with another layout, or a restored state of
  // another size, is refused instead of silently sharing or resetting the
  // moments.
  void check_same_model(const std::vector<ParameterInfo>& infos, Index values) {
    if (!state_.empty() && state_[0].size() != values)
      throw Error(kind() + "::step: the optimizer state holds " + std::to_string(state_[0].size()) +
                  " entries per vector, the parameters " + std::to_string(values) +
                  ": it was restored or stepped for another model (reset() it to start afresh)");
    if (layout_.empty() && !infos.empty()) {
      layout_ = infos;
      return;
    }
    bool same = layout_.size() == infos.size();
    for (std::size_t i = 0; same && i < infos.size(); ++i)
      same = layout_[i].name == infos[i].name && layout_[i].offset == infos[i].offset &&
             layout_[i].rows == infos[i].rows && layout_[i].cols == infos[i].cols;
    if (!same)
      throw Error(kind() + "::step: these parameters are laid out differently from those of the earlier steps (" +
                  std::to_string(infos.size()) + " parameters, " + std::to_string(layout_.size()) +
                  " before): one optimizer serves one model (reset() it to start afresh)");
  }

  void check_layout(const char* fn, const std::vector<ParameterInfo>& infos, Index values, Index gradients) const {
    const std::string where = kind() + "::" + fn;  // short: no allocation (steps after the first allocate nothing)
    if (gradients != values)
      throw Error(where + ": gradients has " + std::to_string(gradients) + " entries, values has " +
                  std::to_string(values));
    for (std::size_t i = 0; i < infos.size(); ++i) check_parameter_span(where, i, infos[i], values);
  }

  double lr_;
  double weight_decay_;
  ParameterGroups groups_;
  std::vector<ParameterInfo> layout_;  // the model served since the last reset or restore
};

// ---- SGD ----------------------------------------------------------------

struct SgdOptions {
  double lr = 1e-3;
  double momentum = 0.0;
  double dampening = 0.0;
  double weight_decay = 0.0;  // L2: added to the gradient
  bool nesterov = false;
};

// torch.optim.SGD:
//   g = grad + wd * p
//   momentum != 0:  buf = g at the first step, else buf = mu * buf + (1 - dampening) * g
//                   g = nesterov ? g + mu * buf : buf
//   p -= lr * g
template <class Scalar>
class Sgd final : public Optimizer<Scalar> {
  using Base = Optimizer<Scalar>;

 public:
  explicit Sgd(const SgdOptions& options, ParameterGroups groups = {})
      : Base(options.lr, options.weight_decay, std::move(groups)), o_(options) {
    this->check_lr_and_weight_decay();
    this->check_hyper(o_.momentum >= 0 && std::isfinite(o_.momentum), "momentum must be finite and >= 0", o_.momentum);
    this->check_hyper(std::isfinite(o_.dampening), "dampening must be finite", o_.dampening);
    if (o_.nesterov && (o_.momentum <= 0 || o_.dampening != 0))
      throw Error("sgd: nesterov needs momentum > 0 and dampening == 0 (as torch.optim.SGD), got momentum " +
                  Base::number(o_.momentum) + ", dampening " + Base::number(o_.dampening));
  }

  std::string kind() const override { return "sgd"; }
  std::vector<std::string> state_names() const override {
    return o_.momentum != 0 ? std::vector<std::string>{"momentum_buffer"} : std::vector<std::string>{};
  }
  std::size_t state_count() const noexcept override { return o_.momentum != 0 ? 1 : 0; }
  std::map<std::string, std::string> hyperparameters() const override {
    return {{"lr", Base::number(this->lr())},
            {"momentum", Base::number(o_.momentum)},
            {"dampening", Base::number(o_.dampening)},
            {"weight_decay", Base::number(o_.weight_decay)},
            {"nesterov", o_.nesterov ? "true" : "false"}};
  }
  const SgdOptions& options() const noexcept { return o_; }

 protected:
  Index update(Index offset, Index size, double lr, double weight_decay, Scalar* values, const Scalar* gradients,
               bool commit) override {
    const Scalar s_lr = static_cast<Scalar>(lr), s_wd = static_cast<Scalar>(weight_decay);
    const Scalar mu = static_cast<Scalar>(o_.momentum), keep = static_cast<Scalar>(1.0 - o_.dampening);
    Scalar* buf = o_.momentum != 0 ? this->state_[0].data() + offset : nullptr;
    const bool first = this->steps_ == 1;
    Scalar* p = values + offset;
    const Scalar* grad = gradients + offset;
    if (commit) {
      for (Index i = 0; i < size; ++i) {
        Scalar g = grad[i];
        if (weight_decay != 0) g = g + s_wd * p[i];
        if (buf) {
          buf[i] = first ? g : mu * buf[i] + keep * g;
          g = o_.nesterov ? g + mu * buf[i] : buf[i];
        }
        p[i] = p[i] - s_lr * g;
      }
      return size;
    }
    // The same statements into a block of locals, then one vectorised
    // finiteness test per block (the loop itself stays free of reductions).
    constexpr Index kBlock = 1024;
    Scalar next[kBlock], moment[kBlock];
    for (Index b0 = 0; b0 < size; b0 += kBlock) {
      const Index len = std::min(kBlock, size - b0);
      for (Index j = 0; j < len; ++j) {
        const Index i = b0 + j;
        Scalar g = grad[i];
        if (weight_decay != 0) g = g + s_wd * p[i];
        Scalar b = 0;
        if (buf) {
          b = first ? g : mu * buf[i] + keep * g;
          g = o_.nesterov ? g + mu * b : b;
        }
        moment[j] = b;
        next[j] = p[i] - s_lr * g;
      }
      if (all_finite_contiguous(next, len) && all_finite_contiguous(moment, len)) continue;
      for (Index j = 0; j < len; ++j)
        if (!std::isfinite(next[j]) || !std::isfinite(moment[j])) return b0 + j;
    }
    return size;
  }

 private:
  SgdOptions o_;
};

// ---- Adam / AdamW ---------------------------------------------------------

struct AdamOptions {
  double lr = 1e-3;
  double beta1 = 0.9;
  double beta2 = 0.999;
  double eps = 1e-8;
  double weight_decay = 0.0;  // Adam: L2 added to the gradient; AdamW: decoupled
  bool decoupled_weight_decay = false;  // true: AdamW

  // torch.optim.AdamW's defaults (weight_decay 1e-2).
  static AdamOptions adamw(double lr = 1e-3, double weight_decay = 1e-2) {
    AdamOptions o;
    o.lr = lr;
    o.weight_decay = weight_decay;
    o.decoupled_weight_decay = true;
    return o;
  }
};

// torch.optim.Adam / AdamW, step t (1-based):
//   AdamW: p *= 1 - lr * wd                 Adam: g = grad + wd * p
//   m = beta1 * m + (1 - beta1) * g
//   v = beta2 * v + (1 - beta2) * g * g
//   denom = sqrt(v) / sqrt(1 - beta2^t) + eps      (eps after the correction)
//   p -= (lr / (1 - beta1^t)) * m / denom
template <class Scalar>
class Adam final : public Optimizer<Scalar> {
  using Base = Optimizer<Scalar>;

 public:
  explicit Adam(const AdamOptions& options, ParameterGroups groups = {})
      : Base(options.lr, options.weight_decay, std::move(groups)), o_(options) {
    this->check_lr_and_weight_decay();
    this->check_hyper(o_.beta1 >= 0 && o_.beta1 < 1, "beta1 must be in [0, 1)", o_.beta1);
    this->check_hyper(o_.beta2 >= 0 && o_.beta2 < 1, "beta2 must be in [0, 1)", o_.beta2);
    this->check_hyper(o_.eps >= 0 && std::isfinite(o_.eps), "eps must be finite and >= 0", o_.eps);
  }

  std::string kind() const override { return o_.decoupled_weight_decay ? "adamw" : "adam"; }
  std::vector<std::string> state_names() const override { return {"exp_avg", "exp_avg_sq"}; }
  std::size_t state_count() const noexcept override { return 2; }
  std::map<std::string, std::string> hyperparameters() const override {
    return {{"lr", Base::number(this->lr())},         {"beta1", Base::number(o_.beta1)},
            {"beta2", Base::number(o_.beta2)},        {"eps", Base::number(o_.eps)},
            {"weight_decay", Base::number(o_.weight_decay)}};
  }
  const AdamOptions& options() const noexcept { return o_; }

 protected:
  Index update(Index offset, Index size, double lr, double weight_decay, Scalar* values, const Scalar* gradients,
               bool commit) override {
    const double t = static_cast<double>(this->steps_);
    const double bias_correction1 = 1.0 - std::pow(o_.beta1, t);
    const double bias_correction2 = 1.0 - std::pow(o_.beta2, t);
    const Scalar step_size = static_cast<Scalar>(lr / bias_correction1);
    const Scalar bc2_sqrt = static_cast<Scalar>(std::sqrt(bias_correction2));
    const Scalar b1 = static_cast<Scalar>(o_.beta1), one_b1 = static_cast<Scalar>(1.0 - o_.beta1);
    const Scalar b2 = static_cast<Scalar>(o_.beta2), one_b2 = static_cast<Scalar>(1.0 - o_.beta2);
    const Scalar eps = static_cast<Scalar>(o_.eps);
    const bool decoupled = o_.decoupled_weight_decay;
    const Scalar decay = static_cast<Scalar>(decoupled ? 1.0 - lr * weight_decay : weight_decay);
    // Eigen arrays over blocks that stay in L1: its sqrt is a vector
    // instruction, whereas std::sqrt in a plain loop keeps GCC from
    // vectorising (errno), which made the update scalar and 3-4x slower.
    using Array = Eigen::Array<Scalar, Eigen::Dynamic, 1>;
    constexpr Index kBlock = 1024;
    // The checking pass computes a block's new second moments and values on
    // the stack (no allocation after the first step) with the committing
    // pass's statements; a finite new value also means a finite first moment
    // (an infinite one would make it infinite or NaN), so p and v are scanned.
    using BlockArray = Eigen::Array<Scalar, Eigen::Dynamic, 1, Eigen::ColMajor, kBlock, 1>;
    BlockArray v_new, p_new;
    for (Index b0 = 0; b0 < size; b0 += kBlock) {
      const Index len = std::min(kBlock, size - b0);
      Eigen::Map<Array> m(this->state_[0].data() + offset + b0, len);
      Eigen::Map<Array> v(this->state_[1].data() + offset + b0, len);
      Eigen::Map<Array> p(values + offset + b0, len);
      const Eigen::Map<const Array> grad(gradients + offset + b0, len);
      if (commit) {
        const auto update_with = [&](const auto& g) {
          m = m * b1 + one_b1 * g;
          v = v * b2 + one_b2 * (g * g);
          p = p + (-step_size) * (m / (v.sqrt() / bc2_sqrt + eps));
        };
        if (weight_decay != 0 && decoupled) p *= decay;
        if (weight_decay != 0 && !decoupled)
          update_with(grad + decay * p);  // read by the first two statements, before p changes
        else
          update_with(grad);
        continue;
      }
      v_new.resize(len);
      p_new.resize(len);
      const auto check_with = [&](const auto& g) {
        v_new = v * b2 + one_b2 * (g * g);
        p_new = p_new + (-step_size) * ((m * b1 + one_b1 * g) / (v_new.sqrt() / bc2_sqrt + eps));
      };
      if (weight_decay != 0 && decoupled)
        p_new = p * decay;
      else
        p_new = p;
      if (weight_decay != 0 && !decoupled)
        check_with(grad + decay * p);
      else
        check_with(grad);
      if (all_finite(p_new) && all_finite(v_new)) continue;
      for (Index i = 0; i < len; ++i)
        if (!std::isfinite(p_new[i]) || !std::isfinite(v_new[i])) return b0 + i;
    }
    return size;
  }

 private:
  AdamOptions o_;
};

}  // namespace synattn

#endif  // SYNATTN_TRAIN_OPTIMIZER_HPP
