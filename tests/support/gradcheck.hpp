// Gradient checks by central differences, in double (test support).
//
// check_gradient perturbs every entry of a parameter in place (restoring it),
// evaluates a scalar loss at +-eps and compares the numerical gradient g^ with
// the analytic one g by ||g - g^|| / ||g + g^|| (Frobenius), mlpack's
// CheckGradient figure. Both being near zero (||g - g^|| below abs_tol) also
// passes: a gradient that is zero in exact arithmetic has a relative error of
// order one between two rounding noises.
#ifndef SYNATTN_TESTS_GRADCHECK_HPP
#define SYNATTN_TESTS_GRADCHECK_HPP

#include <Eigen/Core>

#include <cmath>
#include <sstream>
#include <string>

namespace synattn_test {

using MatrixD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;

struct GradCheck {
  std::string name;
  double relative = 0;      // ||g - g^|| / ||g + g^||
  double absolute = 0;      // ||g - g^||
  double norm = 0;          // ||g^||
  Eigen::Index worst = -1;  // entry with the largest |g - g^|
  double analytic_at_worst = 0, numeric_at_worst = 0;

  bool passes(double rel_tol, double abs_tol) const { return relative <= rel_tol || absolute <= abs_tol; }

  std::string describe() const {
    std::ostringstream out;
    out.precision(3);
    out << name << ": relative error " << std::scientific << relative << ", absolute " << absolute << ", |numeric| "
        << norm;
    if (worst >= 0)
      out << "; worst entry " << worst << ": analytic " << analytic_at_worst << " vs numeric " << numeric_at_worst;
    return out.str();
  }
};

// `param` is perturbed in place (a view into the layer, or the input matrix);
// `analytic` is dL/dparam as computed by the code under test; `loss()` returns
// the scalar loss for the current parameter values.
template <class Loss, class Param>
GradCheck check_gradient(const std::string& name, Param&& param, const MatrixD& analytic, Loss&& loss,
                         double eps = 1e-6) {
  GradCheck r;
  r.name = name;
  MatrixD numeric(param.rows(), param.cols());
  for (Eigen::Index i = 0; i < param.size(); ++i) {
    double& p = param.data()[i];
    const double saved = p;
    p = saved + eps;
    const double up = loss();
    p = saved - eps;
    const double down = loss();
    p = saved;
    numeric.data()[i] = (up - down) / (2 * eps);
  }
  if (analytic.rows() != numeric.rows() || analytic.cols() != numeric.cols()) {
    r.relative = r.absolute = INFINITY;
    return r;
  }
  const MatrixD diff = analytic - numeric;
  r.absolute = diff.norm();
  r.norm = numeric.norm();
  const double denom = (analytic + numeric).norm();
  r.relative = denom > 0 ? r.absolute / denom : (r.absolute > 0 ? INFINITY : 0.0);
  if (diff.size() > 0) {
    Eigen::Index row = 0, col = 0;
    diff.cwiseAbs().maxCoeff(&row, &col);
    r.worst = row * diff.cols() + col;
    r.analytic_at_worst = analytic(row, col);
    r.numeric_at_worst = numeric(row, col);
  }
  return r;
}

}  // namespace synattn_test

#endif  // SYNATTN_TESTS_GRADCHECK_HPP
