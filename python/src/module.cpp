// synattn's Python binding — the module: errors and registration.
//
// The library's exceptions become Python ones carrying its messages:
// synattn::Error (bad arguments, refused trees) -> synattn.Error, a
// ValueError; synattn::FormatError (a malformed or unreadable file) ->
// synattn.FormatError, a ValueError too; other synattn::RuntimeError ->
// RuntimeError. pybind11 turns std::bad_alloc into MemoryError, so no input
// ends the interpreter.
#include <synattn/error.hpp>

#include "common.hpp"

PYBIND11_MODULE(_synattn, m) {
  namespace py = pybind11;
  m.doc() = "synattn's compiled core: the attention kernel, trees, buckets, the parser (see the synattn package)";
  static py::exception<synattn::Error> error(m, "Error", PyExc_ValueError);
  static py::exception<synattn::FormatError> parse_error(m, "FormatError", PyExc_ValueError);
  py::register_exception_translator([](std::exception_ptr p) {
    try {
      if (p) std::rethrow_exception(p);
    } catch (const synattn::FormatError& e) {
      parse_error(e.what());
    } catch (const synattn::Error& e) {  // TreeError too
      error(e.what());
    } catch (const synattn::RuntimeError& e) {
      PyErr_SetString(PyExc_RuntimeError, e.what());
    }
  });
  synattn_py::register_trees(m);
  synattn_py::register_attention(m);
  synattn_py::register_text(m);
}
