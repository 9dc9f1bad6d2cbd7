// synattn — gradient clipping by global norm (torch.nn.utils.clip_grad_norm_).
//
//   total = sqrt(sum over trainable parameters of sum g^2)   (in double)
//   coef  = max_norm / (total + 1e-6); gradients *= coef when coef < 1
//
// A non-finite total (a NaN or inf gradient) leaves the gradients untouched
// and is reported in ClipResult::finite (PyTorch would scale every gradient
// by NaN), or thrown as synattn::Error naming the first non-finite entry when
// ClipOptions::error_if_nonfinite is set. The sum runs serially in parameter
// order, so it does not depend on the thread count. Frozen parameters are
// neither counted nor scaled.
#ifndef SYNATTN_TRAIN_CLIPPING_HPP
#define SYNATTN_TRAIN_CLIPPING_HPP

#include <Eigen/Core>

#include <cmath>
#include <string>
#include <vector>

#include "../error.hpp"
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
  if (!std::isfinite(r.total_norm)) {
    r.finite = false;
    if (options.error_if_nonfinite) {
      for (const ParameterInfo& p : infos) {
        if (!p.trainable) continue;
        for (Index k = 0; k < p.size(); ++k)
          if (!std::isfinite(static_cast<double>(gradients[p.offset + k])))
            throw Error("clip_grad_norm: gradient of '" + p.name + "' entry " + std::to_string(k) + " is " +
                        std::to_string(static_cast<double>(gradients[p.offset + k])) +
                        "; the total norm is not finite");
      }
      throw Error("clip_grad_norm: the total gradient norm overflows (" + std::to_string(r.total_norm) + ")");
    }
    return r;
  }
  const double coef = max_norm / (r.total_norm + 1e-6);
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
