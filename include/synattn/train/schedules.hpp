// synattn — learning-rate schedules: pure functions of the step number.
//
// Steps are numbered from 1 (the first optimiser step is step 1), as in the
// Transformer paper, so no schedule wastes its first step on a zero rate.
// Each returns the factor the base rate is multiplied by (peak 1):
//
//   warmup_constant       min(1, step / warmup)
//   warmup_inverse_sqrt   min(step / warmup, sqrt(warmup / step))
//       = sqrt(warmup) * min(step^-0.5, step * warmup^-1.5), the paper's
//       d_model^-0.5 * min(...) divided by its peak warmup^-0.5 * d_model^-0.5,
//       so the rate is exactly lr at step == warmup
//   warmup_cosine         step / warmup up to warmup, then
//       floor + (1 - floor) * (1 + cos(pi * progress)) / 2,
//       progress = (step - warmup) / (total - warmup), clamped to [0, 1];
//       floor is a fraction of the peak rate (PyTorch's eta_min / lr)
//
// warmup = 0 means no warmup (factor 1 from step 1 on).
#ifndef SYNATTN_TRAIN_SCHEDULES_HPP
#define SYNATTN_TRAIN_SCHEDULES_HPP

#include <algorithm>
#include <cmath>
#include <string>

#include "../error.hpp"

namespace synattn {

namespace detail {

inline void check_step(const char* fn, long long step, long long warmup) {
  if (step < 1) throw Error(std::string(fn) + ": step must be >= 1 (steps count from 1), got " + std::to_string(step));
  if (warmup < 0) throw Error(std::string(fn) + ": warmup must be >= 0, got " + std::to_string(warmup));
}

inline double warmup_ramp(long long step, long long warmup) {
  return warmup > 0 && step < warmup ? static_cast<double>(step) / static_cast<double>(warmup) : 1.0;
}

}  // namespace detail

inline double warmup_constant(long long step, long long warmup) {
  detail::check_step("warmup_constant", step, warmup);
  return detail::warmup_ramp(step, warmup);
}

inline double warmup_inverse_sqrt(long long step, long long warmup) {
  detail::check_step("warmup_inverse_sqrt", step, warmup);
  if (warmup == 0) return 1.0 / std::sqrt(static_cast<double>(step));
  const double s = static_cast<double>(step), w = static_cast<double>(warmup);
  return std::min(s / w, std::sqrt(w / s));
}

inline double warmup_cosine(long long step, long long warmup, long long total, double floor = 0.0) {
  detail::check_step("warmup_cosine", step, warmup);
  if (total <= warmup)
    throw Error("warmup_cosine: total (" + std::to_string(total) + ") must exceed warmup (" + std::to_string(warmup) +
                ")");
  if (!(floor >= 0 && floor <= 1)) throw Error("warmup_cosine: floor must be in [0, 1], got " + std::to_string(floor));
  if (step < warmup) return detail::warmup_ramp(step, warmup);
  const double progress = std::min(1.0, static_cast<double>(step - warmup) / static_cast<double>(total - warmup));
  const double pi = 3.14159265358979323846;
  return floor + (1.0 - floor) * 0.5 * (1.0 + std::cos(pi * progress));
}

// A schedule as a value (for configuration files and the training loop):
// lr(step) = base_lr * factor(step).
struct LrSchedule {
  enum class Kind { Constant, WarmupConstant, WarmupInverseSqrt, WarmupCosine };
  Kind kind = Kind::Constant;
  double base_lr = 1e-3;
  long long warmup = 0;
  long long total = 0;  // WarmupCosine only
  double floor = 0.0;   // WarmupCosine only, fraction of base_lr

  double factor(long long step) const {
    switch (kind) {
      case Kind::Constant:
        detail::check_step("LrSchedule::factor", step, 0);
        return 1.0;
      case Kind::WarmupConstant: return warmup_constant(step, warmup);
      case Kind::WarmupInverseSqrt: return warmup_inverse_sqrt(step, warmup);
      case Kind::WarmupCosine: return warmup_cosine(step, warmup, total, floor);
    }
    return 1.0;
  }
  double lr(long long step) const { return base_lr * factor(step); }
};

}  // namespace synattn

#endif  // SYNATTN_TRAIN_SCHEDULES_HPP
