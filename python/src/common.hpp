// synattn's Python binding — what its translation units share: array checks
// that raise TypeError / ValueError before anything reads memory, and the
// registration functions each unit defines.
//
// The binding never links libtorch: it takes CPU buffers (NumPy arrays;
// torch tensors reach it as tensor.numpy() views, which share memory), so a
// torch upgrade does not need a rebuild. Arrays are never copied here:
// a buffer with the wrong dtype, a non-C-contiguous one or one of the wrong
// rank is refused, naming the argument, and the Python layer decides what
// to copy (synattn/torch.py).
#ifndef SYNATTN_PYTHON_COMMON_HPP
#define SYNATTN_PYTHON_COMMON_HPP

#include <pybind11/numpy.h>
#include <pybind11/pybind11.h>
#include <pybind11/stl.h>

#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

#include <synattn/matrix.hpp>

namespace synattn_py {

namespace py = pybind11;

template <class T>
const char* dtype_name() {
  if (std::is_same<T, float>::value) return "float32";
  if (std::is_same<T, double>::value) return "float64";
  if (std::is_same<T, std::int8_t>::value) return "int8";
  if (std::is_same<T, std::int32_t>::value) return "int32";
  return "?";
}

inline std::string shape_of(const py::array& a) {
  std::string s = "(";
  for (py::ssize_t k = 0; k < a.ndim(); ++k) s += (k ? ", " : "") + std::to_string(a.shape(k));
  return s + (a.ndim() == 1 ? ",)" : ")");
}

// `obj` as an array of T without a copy: TypeError for another dtype (or a
// non-array), ValueError for a non-C-contiguous one or another rank. What
// pybind11's own py::array_t casts would do (convert silently, copying) is
// exactly what the binding must not do.
template <class T>
py::array_t<T> require_array(const char* fn, const char* name, const py::handle& obj, int ndim = -1) {
  if (!py::isinstance<py::array>(obj))
    throw py::type_error(std::string(fn) + ": '" + name + "' must be a NumPy array (or a CPU tensor's .numpy()), got " +
                         std::string(py::str(py::type::handle_of(obj).attr("__name__"))));
  py::array a = py::reinterpret_borrow<py::array>(obj);
  if (!a.dtype().is(py::dtype::of<T>()))
    throw py::type_error(std::string(fn) + ": '" + name + "' has dtype " + std::string(py::str(a.dtype())) +
                         ", expected " + dtype_name<T>());
  if (ndim >= 0 && a.ndim() != ndim)
    throw py::value_error(std::string(fn) + ": '" + name + "' has shape " + shape_of(a) + ", expected " +
                          std::to_string(ndim) + " dimensions");
  if (!(a.flags() & py::array::c_style))
    throw py::value_error(std::string(fn) + ": '" + name + "' is not C-contiguous (call .contiguous() / np.ascontiguousarray)");
  return py::reinterpret_borrow<py::array_t<T>>(a);
}

// A 2-D C-contiguous array as an Eigen row-major map (no copy).
template <class T>
Eigen::Map<const synattn::RowMajorMatrix<T>> map2d(const py::array_t<T>& a) {
  return Eigen::Map<const synattn::RowMajorMatrix<T>>(a.data(), a.shape(0), a.shape(1));
}
template <class T>
Eigen::Map<synattn::RowMajorMatrix<T>> mutable_map2d(py::array_t<T>& a) {
  return Eigen::Map<synattn::RowMajorMatrix<T>>(a.mutable_data(), a.shape(0), a.shape(1));
}

// Sequence lengths from a list, tuple or integer array (any integer dtype).
// An int32 or int64 C-contiguous array (what synattn.torch passes: a
// tensor's .numpy(), a BucketBatch's lengths) is read in place, once; any
// other integer array is converted first.
inline std::vector<int> lengths_of(const char* fn, const char* name, const py::handle& obj) {
  std::vector<int> out;
  const auto take = [&](long long x, py::ssize_t i) {
    if (x < 0 || x > 0x7fffffff)
      throw py::value_error(std::string(fn) + ": '" + name + "'[" + std::to_string(i) + "] = " + std::to_string(x) +
                            " is not a length in [0, 2^31)");
    out.push_back(static_cast<int>(x));
  };
  if (py::isinstance<py::array>(obj)) {
    py::array a = py::reinterpret_borrow<py::array>(obj);
    if (a.ndim() != 1 || (a.dtype().kind() != 'i' && a.dtype().kind() != 'u'))
      throw py::value_error(std::string(fn) + ": '" + name + "' must be a 1-D integer array, got dtype " +
                            std::string(py::str(a.dtype())) + " and shape " + shape_of(a));
    out.reserve(static_cast<std::size_t>(a.size()));
    const bool contiguous = (a.flags() & py::array::c_style) != 0;
    if (contiguous && a.dtype().is(py::dtype::of<std::int32_t>())) {
      const auto* v = static_cast<const std::int32_t*>(a.data());
      for (py::ssize_t i = 0; i < a.size(); ++i) take(v[i], i);
    } else if (contiguous && a.dtype().is(py::dtype::of<std::int64_t>())) {
      const auto* v = static_cast<const std::int64_t*>(a.data());
      for (py::ssize_t i = 0; i < a.size(); ++i) take(v[i], i);
    } else {
      // Another integer type: a few integers, the copy is nothing. Unsigned
      // values beyond 2^63 wrap negative here and are refused by take().
      py::array_t<long long, py::array::forcecast> v(a);
      for (py::ssize_t i = 0; i < v.size(); ++i) take(v.at(i), i);
    }
    return out;
  }
  try {
    out = obj.cast<std::vector<int>>();
  } catch (const py::cast_error&) {
    throw py::type_error(std::string(fn) + ": '" + name + "' must be a sequence of ints or an integer array");
  }
  for (std::size_t i = 0; i < out.size(); ++i)
    if (out[i] < 0)
      throw py::value_error(std::string(fn) + ": '" + name + "'[" + std::to_string(i) + "] = " +
                            std::to_string(out[i]) + " is not a length in [0, 2^31)");
  return out;
}

void register_attention(py::module_& m);
void register_trees(py::module_& m);
void register_text(py::module_& m);

}  // namespace synattn_py

#endif  // SYNATTN_PYTHON_COMMON_HPP
