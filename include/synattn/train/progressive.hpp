// synattn — progressive introduction of the syntax strength s.
//
// A syntax bias that is learnable from step 1 can grow before the attention
// has learnt anything to bias, or be pushed to zero by early noise. Two ways
// to bring it in (steps count from 1, as the optimiser's):
//
//   Hold: for steps 1..K, s is held at `value`: before the optimiser step its
//         value is written and its gradient zeroed (so Adam's moments and a
//         momentum buffer stay zero: they start clean at step K + 1), and
//         after the step the value is written again (weight decay or an old
//         momentum could otherwise move it). From step K + 1 on s is free.
//   Ramp: s starts at `value` and learns from step 1, but after each step
//         t < K it is pulled back towards the start: s = value + (t/K)(s - value).
//         The anchor's pull fades linearly; from step K on s is free. (A ramp
//         of the gradient instead would do nothing under Adam, which is
//         invariant to the gradient's scale.)
//
// Applied to every trainable parameter the predicate selects (default: names that are
// or end in "scale": the attention's syntax strengths). Stateless: the step
// number is all it needs, so resuming from a checkpoint needs nothing more.
//
// Loop:  begin() once; per step t: forward, backward, before_step(t),
//        optimiser.step(), after_step(t).
#ifndef SYNATTN_TRAIN_PROGRESSIVE_HPP
#define SYNATTN_TRAIN_PROGRESSIVE_HPP

#include <Eigen/Core>

#include <cmath>
#include <string>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "../util/parameters.hpp"
#include "parameter_groups.hpp"

namespace synattn {

struct ProgressiveOptions {
  enum class Mode { Hold, Ramp };
  Mode mode = Mode::Hold;
  double value = 0.1;   // Hold: the value held; Ramp: the start (anchor)
  long long steps = 0;  // K (0: s is free from the start)
  ParameterPredicate selects = [](const ParameterInfo& p) { return name_is_or_ends_with(p.name, "scale"); };
};

template <class Scalar>
class ProgressiveStrength {
 public:
  using Vector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;

  explicit ProgressiveStrength(ProgressiveOptions options) : o_(std::move(options)) {
    if (!o_.selects) throw Error("ProgressiveStrength: options.selects is empty");
    if (o_.steps < 0) throw Error("ProgressiveStrength: options.steps must be >= 0, got " + std::to_string(o_.steps));
    if (!std::isfinite(o_.value))
      throw Error("ProgressiveStrength: options.value must be finite, got " + std::to_string(o_.value));
  }

  const ProgressiveOptions& options() const noexcept { return o_; }
  // True while step `step` is constrained (Hold: step <= K; Ramp: step < K).
  bool active(long long step) const noexcept {
    return o_.mode == ProgressiveOptions::Mode::Hold ? step <= o_.steps : step < o_.steps;
  }

  // Writes the start value into every selected parameter (before training).
  void begin(const std::vector<ParameterInfo>& infos, Eigen::Ref<Vector> values) const {
    if (o_.steps == 0) return;
    for_selected(infos, values.size(), [&](const ParameterInfo& p) { fill(values, p); });
  }

  // Before the optimiser step `step`: Hold writes the value and zeroes the
  // gradient; Ramp does nothing.
  void before_step(long long step, const std::vector<ParameterInfo>& infos, Eigen::Ref<Vector> values,
                   Eigen::Ref<Vector> gradients) const {
    check_step("before_step", step);
    if (gradients.size() != values.size())
      throw Error("ProgressiveStrength::before_step: gradients has " + std::to_string(gradients.size()) +
                  " entries, values has " + std::to_string(values.size()));
    if (o_.mode != ProgressiveOptions::Mode::Hold || !active(step)) return;
    for_selected(infos, values.size(), [&](const ParameterInfo& p) {
      fill(values, p);
      gradients.segment(p.offset, p.size()).setZero();
    });
  }

  // After the optimiser step `step`: Hold writes the value again; Ramp pulls
  // s towards the start by 1 - step/K.
  void after_step(long long step, const std::vector<ParameterInfo>& infos, Eigen::Ref<Vector> values) const {
    check_step("after_step", step);
    if (!active(step)) return;
    if (o_.mode == ProgressiveOptions::Mode::Hold) {
      for_selected(infos, values.size(), [&](const ParameterInfo& p) { fill(values, p); });
      return;
    }
    const Scalar start = static_cast<Scalar>(o_.value);
    const Scalar alpha = static_cast<Scalar>(static_cast<double>(step) / static_cast<double>(o_.steps));
    for_selected(infos, values.size(), [&](const ParameterInfo& p) {
      auto s = values.segment(p.offset, p.size());
      s = (start + alpha * (s.array() - start)).matrix();
    });
  }

  // The same on a ParameterStore.
  void begin(ParameterStore<Scalar>& store) const { begin(store.infos(), store.values()); }
  void before_step(long long step, ParameterStore<Scalar>& store) const {
    before_step(step, store.infos(), store.values(), store.gradients());
  }
  void after_step(long long step, ParameterStore<Scalar>& store) const {
    after_step(step, store.infos(), store.values());
  }

 private:
  void check_step(const char* fn, long long step) const {
    if (step < 1)
      throw Error(std::string("ProgressiveStrength::") + fn + ": step must be >= 1 (steps count from 1), got " +
                  std::to_string(step));
  }
  template <class F>
  void for_selected(const std::vector<ParameterInfo>& infos, Index size, F&& f) const {
    for (std::size_t i = 0; i < infos.size(); ++i) {
      const ParameterInfo& p = infos[i];
      if (!p.trainable || !o_.selects(p)) continue;  // a frozen strength is the user's to set
      check_parameter_span("ProgressiveStrength", i, p, size);
      f(p);
    }
  }
  void fill(Eigen::Ref<Vector> values, const ParameterInfo& p) const {
    values.segment(p.offset, p.size()).setConstant(static_cast<Scalar>(o_.value));
  }

  ProgressiveOptions o_;
};

}  // namespace synattn

#endif  // SYNATTN_TRAIN_PROGRESSIVE_HPP
