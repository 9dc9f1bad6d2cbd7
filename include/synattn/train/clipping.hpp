// synattn — gradient clipping by global norm (torch.nn.utils.clip_grad_norm_).
//
//   total = sqrt(sum over trainable parameters of sum g^2)   (in double)
//   coef  = max_norm / (total + 1e-6); gradients *= coef when coef < 1
//
// Finite double gradients whose squares overflow (|g| above ~1.3e154) are
// summed as (g / max|g|)^2 instead, as LAPACK's nrm2 does, so they are still
// clipped. A NaN or inf gradient leaves the gradients untouched
// and is reported in ClipResult::finite (PyTorch would scale every gradient
// by NaN), or thrown as synattn::Error naming the first non-finite entry when
// ClipOptions::error_if_nonfinite is set. The sum runs serially in parameter
// order, so it does not depend on the thread count. Frozen parameters are
// neither counted nor scaled.
#ifndef SYNATTN_TRAIN_CLIPPING_HPP
#define SYNATTN_TRAIN_CLIPPING_HPP

#include <Eigen/Core>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "../error.hpp"
#include "../util/finite.hpp"
#include "../util/parameters.hpp"

namespace synattn {

struct ClipResult {
  double total_norm = 0;  // before clipping
  double scale = 1;       // what the gradients were multiplied by (1: untouched)
  bool finite = true;     // false: total_norm is NaN/inf and nothing was scaled
  bool clipped() const noexcept { return scale < 1; }
};

struct ClipOptions {
  bool error_if_nonfinite = false;
};

template <class Scalar>
ClipResult clip_grad_norm(const std::vector<ParameterInfo>& infos,
                          Eigen::Ref<Eigen::Matrix<Scalar, Eigen::Dynamic, 1>> gradients, double max_norm,
                          ClipOptions options = {}) {
  if (!(max_norm > 0) || !std::isfinite(max_norm))
    throw Error("clip_grad_norm: max_norm must be finite and > 0, got " + std::to_string(max_norm));
  double sum = 0;
  for (std::size_t i = 0; i < infos.size(); ++i) {
    const ParameterInfo& p = infos[i];
    check_parameter_span("clip_grad_norm", i, p, gradients.size(), "gradients");
    if (!p.trainable) continue;
    for (Index k = 0; k < p.size(); ++k) {
      const double g = static_cast<double>(gradients[p.offset + k]);
      sum += g * g;
    }
  }
  ClipResult r;
  r.total_norm = std::sqrt(sum);
  // 1 / (total + 1e-6) as max_norm / (norm_scale * (scaled + 1e-6 / norm_scale)).
  double norm_scale = 1, scaled_norm = r.total_norm;
  if (!std::isfinite(sum)) {
    // Either a gradient is not finite, or finite double gradients' squares
    // overflowed (|g| above ~1.3e154): then the norm is taken of g / max|g|,
    // as LAPACK's nrm2 does, instead of leaving 1e200 gradients unclipped.
    const NonFiniteEntry bad = first_non_finite_entry(infos, gradients.data());
    if (bad.found) {
      r.finite = false;
      if (options.error_if_nonfinite)
        throw Error("clip_grad_norm: gradient of '" + bad.name + "' entry " + std::to_string(bad.index) + " is " +
                    std::to_string(bad.value) + "; the total norm is not finite");
      return r;
    }
    for (const ParameterInfo& p : infos)
      if (p.trainable)
        for (Index k = 0; k < p.size(); ++k)
          norm_scale = std::max(norm_scale, std::abs(static_cast<double>(gradients[p.offset + k])));
    double ssq = 0;
    for (const ParameterInfo& p : infos)
      if (p.trainable)
        for (Index k = 0; k < p.size(); ++k) {
          const double g = static_cast<double>(gradients[p.offset + k]) / norm_scale;
          ssq += g * g;
        }
    scaled_norm = std::sqrt(ssq);
    r.total_norm = norm_scale * scaled_norm;  // inf only when the norm itself exceeds the largest double
  }
  const double coef = (max_norm / norm_scale) / (scaled_norm + 1e-6 / norm_scale);
  if (coef < 1) {
    r.scale = coef;
    const Scalar c = static_cast<Scalar>(coef);
    for (const ParameterInfo& p : infos)
      if (p.trainable) gradients.segment(p.offset, p.size()) *= c;
  }
  return r;
}

template <class Scalar>
ClipResult clip_grad_norm(ParameterStore<Scalar>& store, double max_norm, ClipOptions options = {}) {
  return clip_grad_norm<Scalar>(store.infos(), store.gradients(), max_norm, options);
}

}  // namespace synattn

#endif  // SYNATTN_TRAIN_CLIPPING_HPP
