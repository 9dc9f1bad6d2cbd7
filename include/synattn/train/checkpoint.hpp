// synattn — training checkpoints in the safetensors format: parameters,
// optimiser state and step, loadable by any safetensors reader.
//
// Needs nlohmann-json through io/safetensors.hpp: link synattn::checkpoint.
//
// Layout of a checkpoint file:
//   <parameter name>                       every parameter, frozen ones too
//   optimizer.<state>.<parameter name>     each state vector (exp_avg,
//                                          exp_avg_sq, momentum_buffer) of
//                                          each trainable parameter
//   __metadata__: format = "synattn.checkpoint.v1", dtype = "F32" | "F64",
//     step, optimizer = kind or "none", optimizer.steps, optimizer.<hyper>
//     (lr, betas, ...: for the record; load does not apply them), plus the
//     caller's own keys (which may not reuse these names).
// Shapes are PyTorch's: a (1, k) parameter (bias, table row, the (1, 1)
// strength) is stored as [k], any other (r, c) parameter as [r, c]. Loading
// also accepts [1, k] and [k, 1] for a (1, k) parameter and [] for a (1, 1)
// one, so files written by PyTorch load unchanged. Data are in the model's
// Scalar (F32 for float, F64 for double), so our files load back bit for bit.
//
// Loading checks everything before changing anything: every parameter (and,
// when an optimiser is given, every state tensor) must be present with an
// accepted shape, a finite value and the model's dtype; an F32 file is
// refused for a double model (and F64 for float) unless convert_dtype is set,
// which converts with a cast (a finite value the cast would make infinite is
// refused). Tensors the model does not have are refused unless
// allow_unexpected is set; optimiser tensors are ignored when no optimiser is
// given (loading weights for inference). A file without our "format" key
// (weights from elsewhere) loads with step 0 and no optimiser state. The
// step counts must lie in [0, 2^53] (Optimizer::kMaxSteps).
//
// NaN and infinity, one rule both ways: refused unless asked for. Saving
// (save_checkpoint, save_weights_half) throws Error naming the tensor and its
// first non-finite element, before anything is written, so the previous file
// under that name stays as it was; loading throws FormatError naming the
// tensor and element. A diverged run can still be kept for inspection:
// CheckpointSaveOptions::allow_non_finite saves it (F32/F64 bit for bit) and
// CheckpointLoadOptions::allow_non_finite loads it back, bit for bit. Why
// refuse by default: a NaN parameter poisons every later step, so a silent
// save would overwrite the last good checkpoint with a dead one, and a silent
// load would resume a run that can only produce NaN. A finite value that F16
// cannot hold (|v| >= 65520, which would round to infinity) is refused by
// save_weights_half whatever the options: it would change the value.
#ifndef SYNATTN_TRAIN_CHECKPOINT_HPP
#define SYNATTN_TRAIN_CHECKPOINT_HPP

#include <Eigen/Core>

#include <cmath>
#include <cstdint>
#include <cstdio>
#include <limits>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "../io/safetensors.hpp"
#include "../util/finite.hpp"
#include "../util/metadata_number.hpp"
#include "../util/parameters.hpp"
#include "optimizer.hpp"

namespace synattn {

struct CheckpointLoadOptions {
  bool convert_dtype = false;     // accept F32 for a double model, F64 for float (cast)
  bool allow_unexpected = false;  // ignore tensors the model has no parameter for
  bool allow_non_finite = false;  // accept NaN and infinity (a diverged run saved on purpose)
};

struct CheckpointSaveOptions {
  bool allow_non_finite = false;  // write NaN and infinity (keep a diverged run for inspection)
};

struct CheckpointInfo {
  long long step = 0;
  std::map<std::string, std::string> metadata;  // the whole __metadata__
};

namespace detail {

constexpr const char* format = "synattn.checkpoint.v1";

inline std::vector<std::uint64_t> shape_of(const ParameterInfo& p) {
  if (p.rows == 1) return {static_cast<std::uint64_t>(p.cols)};
  return {static_cast<std::uint64_t>(p.rows), static_cast<std::uint64_t>(p.cols)};
}

inline bool shape_accepted(const ParameterInfo& p, const std::vector<std::uint64_t>& s) {
  const auto r = static_cast<std::uint64_t>(p.rows), c = static_cast<std::uint64_t>(p.cols);
  if (s.size() == 2 && s[0] == r && s[1] == c) return true;
  if (p.rows == 1) {
    if (s.size() == 1 && s[0] == c) return true;
    if (s.size() == 2 && s[0] == c && s[1] == 1) return true;
  }
  return p.size() == 1 && s.empty();
}

inline bool reserved_key(const std::string& k) {
  return k == "format" || k == "dtype" || k == "step" || k == "optimizer" || starts_with(k, "optimizer.");
}

// A file's metadata: the caller's extra keys (none of them reserved: fn
// names the refusing call), then the format key every file of this format
// carries. The caller adds dtype and the rest.
inline void start_metadata(const char* fn, const std::map<std::string, std::string>& extra, SafetensorsFile& file) {
  for (const auto& kv : extra) {
    if (reserved_key(kv.first))
      throw Error(std::string(fn) + ": extra metadata key '" + kv.first +
                  "' is reserved (format, dtype, step, optimizer, optimizer.*)");
    file.metadata.insert(kv);
  }
  file.metadata["format"] = format;
}

// A step count: decimal digits only (what save_checkpoint writes, so it
// round-trips), at most `max`. The optimiser's count is held to 2^53
// (Optimizer::kMaxSteps) here, so Optimizer::restore cannot refuse it after
// the parameters were changed.
inline long long parse_count(const std::string& path, const std::string& key, const std::string& text,
                             long long max = std::numeric_limits<long long>::max()) {
  // Digits only (the one metadata-number helper, util/metadata_number.hpp).
  if (!text.empty() && text[0] == '-')
    throw FormatError(path, 0, integer_refusal("__metadata__ '" + key + "'", text, 0, max));
  return metadata_integer(path, key, text, 0, max);
}

inline std::string exact_number_text(double v) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.17g", v);
  return buf;
}

inline const char* non_finite_name(double v) { return std::isnan(v) ? "NaN" : v > 0 ? "inf" : "-inf"; }

// Throws unless data[0, n) is finite or `allowed` (see the file comment).
template <class Scalar>
void check_finite_for_save(const char* fn, const std::string& what, const Scalar* data, Index n, bool allowed) {
  if (allowed) return;
  const Index i = first_non_finite(data, n);  // util/finite.hpp
  if (i == n) return;
  throw Error(std::string(fn) + ": " + what + " element " + std::to_string(i) + " is " +
              non_finite_name(static_cast<double>(data[i])) +
              "; nothing was written (set CheckpointSaveOptions::allow_non_finite to keep a diverged run)");
}

// Copies tensor `name` into out[0, p.size()) after checking its dtype, shape
// and values.
template <class Scalar>
void read_tensor(const std::string& path, const SafetensorsFile& file, const std::string& name, const ParameterInfo& p,
                 const CheckpointLoadOptions& options, Scalar* out) {
  const auto it = file.tensors.find(name);
  if (it == file.tensors.end()) throw FormatError(path, 0, "missing tensor '" + name + "'");
  const SafeTensor& t = it->second;
  const SafetensorsDType want = safetensors_dtype_of<Scalar>();
  if (t.dtype != want) {
    if (!t.is_floating())
      throw FormatError(path, 0, "tensor '" + name + "' has dtype " + safetensors_dtype_name(t.dtype) + ", expected " +
                                    safetensors_dtype_name(want));
    if (!options.convert_dtype)
      throw FormatError(path, 0, "dtype mismatch: tensor '" + name + "' is " + safetensors_dtype_name(t.dtype) +
                                    ", the model is " + safetensors_dtype_name(want) +
                                    " (set CheckpointLoadOptions::convert_dtype to convert)");
  }
  if (!shape_accepted(p, t.shape))
    throw FormatError(path, 0, "shape mismatch: tensor '" + name + "' is " + shape_text(t.shape) +
                                  ", expected " + shape_text(shape_of(p)) + " (a " +
                                  shape_text(p.rows, p.cols) + " parameter)");
  const bool same = t.dtype == want;
  for (Index i = 0; i < p.size(); ++i) {
    // The model's own dtype is copied bit for bit (NaN payloads included);
    // another goes through double, which holds F16, F32 and F64 exactly, and
    // is range-checked before the cast (a finite double beyond float's range
    // is undefined behaviour to convert, and would silently become inf).
    const double wide = same ? 0.0 : t.get<double>(static_cast<std::size_t>(i));
    if (!same && std::isfinite(wide) && std::abs(wide) > static_cast<double>(std::numeric_limits<Scalar>::max()))
      throw FormatError(path, 0, "tensor '" + name + "' element " + std::to_string(i) + " = " + exact_number_text(wide) +
                                    " overflows the model's " + safetensors_dtype_name(want) + " (convert_dtype)");
    const Scalar v = same ? t.get<Scalar>(static_cast<std::size_t>(i)) : static_cast<Scalar>(wide);
    if (!std::isfinite(v)) {
      if (!options.allow_non_finite)
        throw FormatError(path, 0, "tensor '" + name + "' element " + std::to_string(i) + " is not finite (" +
                                      non_finite_name(static_cast<double>(v)) +
                                      "; set CheckpointLoadOptions::allow_non_finite to load a diverged run)");
    }
    out[i] = v;
  }
}

}  // namespace detail

// The checkpoint of parameters (laid out by `infos`), the optimiser's state
// (none when `optimizer` is null) and `step`, as save_checkpoint writes it:
// for a caller that stores the bytes itself (serialize_safetensors).
// Throws Error, naming the tensor and element, for NaN or infinity unless
// options.allow_non_finite. Scalar is deduced from the optimiser; with a
// null one, name it: make_checkpoint<double>(...).
template <class Scalar>
SafetensorsFile make_checkpoint(const std::vector<ParameterInfo>& infos,
                                const Eigen::Ref<const typename Optimizer<Scalar>::Vector>& values,
                                const Optimizer<Scalar>* optimizer, long long step,
                                const std::map<std::string, std::string>& extra = {},
                                const CheckpointSaveOptions& options = {}) {
  namespace d = detail;
  constexpr const char* fn = "save_checkpoint";
  if (step < 0) throw Error("save_checkpoint: step must be >= 0, got " + std::to_string(step));
  SafetensorsFile file;
  d::start_metadata(fn, extra, file);
  file.metadata["dtype"] = safetensors_dtype_name(safetensors_dtype_of<Scalar>());
  file.metadata["step"] = std::to_string(step);
  for (std::size_t i = 0; i < infos.size(); ++i) {
    const ParameterInfo& p = infos[i];
    check_parameter_span(fn, i, p, values.size());
    // Optimiser state is stored as optimizer.<state>.<parameter>: a parameter
    // named so would be overwritten by another's state.
    if (starts_with(p.name, "optimizer."))
      throw Error("save_checkpoint: parameter name '" + p.name + "' is reserved (optimizer.* holds optimiser state)");
    d::check_finite_for_save(fn, "parameter '" + p.name + "'", values.data() + p.offset, p.size(),
                             options.allow_non_finite);
    if (!file.tensors.emplace(p.name, SafeTensor::from(values.data() + p.offset, d::shape_of(p))).second)
      throw Error("save_checkpoint: parameter name '" + p.name + "' appears twice");
  }
  if (optimizer == nullptr) {
    file.metadata["optimizer"] = "none";
  } else {
    file.metadata["optimizer"] = optimizer->kind();
    file.metadata["optimizer.steps"] = std::to_string(optimizer->steps());
    for (const auto& kv : optimizer->hyperparameters()) file.metadata["optimizer." + kv.first] = kv.second;
    const std::vector<std::string> names = optimizer->state_names();
    const auto& state = optimizer->state();
    for (std::size_t s = 0; s < names.size(); ++s) {
      // Before the first step the state is all zeros (not yet allocated).
      const bool have = s < state.size();
      if (have && state[s].size() != values.size())
        throw Error("save_checkpoint: the optimizer's '" + names[s] + "' state holds " +
                    std::to_string(state[s].size()) + " entries, the parameters " + std::to_string(values.size()) +
                    ": it belongs to another model");
      for (const ParameterInfo& p : infos) {
        if (!p.trainable) continue;
        const std::string name = "optimizer." + names[s] + "." + p.name;
        if (have) {
          d::check_finite_for_save(fn, "optimizer state '" + name + "'", state[s].data() + p.offset, p.size(),
                                   options.allow_non_finite);
          file.tensors[name] = SafeTensor::from(state[s].data() + p.offset, d::shape_of(p));
        } else {
          const Eigen::Matrix<Scalar, Eigen::Dynamic, 1> zeros =
              Eigen::Matrix<Scalar, Eigen::Dynamic, 1>::Zero(p.size());
          file.tensors[name] = SafeTensor::from(zeros.data(), d::shape_of(p));
        }
      }
    }
  }
  return file;
}

template <class Scalar>
SafetensorsFile make_checkpoint(const ParameterStore<Scalar>& store, const Optimizer<Scalar>* optimizer, long long step,
                                const std::map<std::string, std::string>& extra = {},
                                const CheckpointSaveOptions& options = {}) {
  return make_checkpoint<Scalar>(store.infos(), store.values(), optimizer, step, extra, options);
}

// Writes make_checkpoint(...) to `path` atomically (through a temporary
// file): when it throws, a previous file under `path` is left as it was.
template <class Scalar>
void save_checkpoint(const std::string& path, const std::vector<ParameterInfo>& infos,
                     const Eigen::Ref<const typename Optimizer<Scalar>::Vector>& values,
                     const Optimizer<Scalar>* optimizer, long long step,
                     const std::map<std::string, std::string>& extra = {},
                     const CheckpointSaveOptions& options = {}) {
  save_safetensors(path, make_checkpoint<Scalar>(infos, values, optimizer, step, extra, options));
}

template <class Scalar>
void save_checkpoint(const std::string& path, const ParameterStore<Scalar>& store, const Optimizer<Scalar>* optimizer,
                     long long step, const std::map<std::string, std::string>& extra = {},
                     const CheckpointSaveOptions& options = {}) {
  save_checkpoint<Scalar>(path, store.infos(), store.values(), optimizer, step, extra, options);
}

// Weights only, each rounded to F16 (half the bytes of F32): for shipping a
// trained model, not for resuming training (no optimiser state, step 0).
// Metadata as save_checkpoint's, with dtype "F16". Every finite value must
// lie within F16's range (|v| < 65520), else Error naming the tensor; NaN and
// infinity as in save_checkpoint (refused unless options.allow_non_finite).
// Loads with CheckpointLoadOptions::convert_dtype into a float or double model.
template <class Scalar>
void save_weights_half(const std::string& path, const ParameterStore<Scalar>& store,
                       const std::map<std::string, std::string>& extra = {},
                       const CheckpointSaveOptions& options = {}) {
  namespace d = detail;
  SafetensorsFile file;
  d::start_metadata("save_weights_half", extra, file);
  file.metadata["dtype"] = "F16";
  file.metadata["step"] = "0";
  file.metadata["optimizer"] = "none";
  std::vector<float> staged;
  for (int i = 0; i < store.count(); ++i) {
    const ParameterInfo& p = store.info(i);
    const auto v = store.value(i);
    d::check_finite_for_save("save_weights_half", "parameter '" + p.name + "'", v.data(), p.size(),
                             options.allow_non_finite);
    // A finite double beyond float's range would become inf on the way to
    // float (undefined behaviour, and then half_from sees no overflow): it
    // is beyond F16's range all the more.
    bool finite = true;
    for (Index k = 0; k < p.size() && finite; ++k)
      finite = !std::isfinite(v.data()[k]) ||
               std::abs(static_cast<double>(v.data()[k])) <= static_cast<double>(std::numeric_limits<float>::max());
    if (finite) {
      staged.assign(v.data(), v.data() + p.size());
      file.tensors[p.name] = SafeTensor::half_from(staged.data(), d::shape_of(p), &finite);
    }
    if (!finite)
      throw Error("save_weights_half: parameter '" + p.name + "' has a value beyond F16's range (|v| >= 65520)");
  }
  save_safetensors(path, file);
}

// Restores parameters (and the optimiser's state and step count, when
// `optimizer` is not null) from a parsed checkpoint; `source` names it in
// errors. Returns the step and the metadata. Nothing is changed when it
// throws (FormatError "SOURCE: reason").
template <class Scalar>
CheckpointInfo load_checkpoint(const SafetensorsFile& file, const std::string& source,
                               const std::vector<ParameterInfo>& infos,
                               Eigen::Ref<typename Optimizer<Scalar>::Vector> values, Optimizer<Scalar>* optimizer,
                               const CheckpointLoadOptions& options = {}) {
  namespace d = detail;
  using Vector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;
  const std::string& path = source;
  const auto meta = [&](const std::string& key) -> const std::string* {
    const auto it = file.metadata.find(key);
    return it == file.metadata.end() ? nullptr : &it->second;
  };
  const std::string* format = meta("format");
  if (format && *format != d::format)
    throw FormatError(path, 0, "__metadata__ format is '" + *format + "', expected '" + d::format + "'");

  std::map<std::string, bool> used;
  Vector staged = values;
  for (std::size_t i = 0; i < infos.size(); ++i) {
    const ParameterInfo& p = infos[i];
    check_parameter_span("load_checkpoint", i, p, values.size());
    d::read_tensor<Scalar>(path, file, p.name, p, options, staged.data() + p.offset);
    used[p.name] = true;
  }

  std::vector<Vector> state;
  long long optimizer_steps = 0;
  if (optimizer != nullptr) {
    const std::string* kind = format ? meta("optimizer") : nullptr;
    if (kind == nullptr || *kind == "none")
      throw FormatError(path, 0, "the checkpoint holds no optimizer state (this optimizer is '" + optimizer->kind() +
                                    "')");
    if (*kind != optimizer->kind())
      throw FormatError(path, 0, "the checkpoint's optimizer is '" + *kind + "', this optimizer is '" +
                                    optimizer->kind() + "'");
    const std::string* steps = meta("optimizer.steps");
    if (steps == nullptr) throw FormatError(path, 0, "__metadata__ has no 'optimizer.steps'");
    optimizer_steps = d::parse_count(path, "optimizer.steps", *steps, Optimizer<Scalar>::kMaxSteps);
    for (const std::string& s : optimizer->state_names()) {
      state.push_back(Vector::Zero(values.size()));
      for (const ParameterInfo& p : infos) {
        if (!p.trainable) continue;
        const std::string name = "optimizer." + s + "." + p.name;
        d::read_tensor<Scalar>(path, file, name, p, options, state.back().data() + p.offset);
        used[name] = true;
      }
    }
  }
  for (const auto& kv : file.tensors) {
    if (used.count(kv.first) || options.allow_unexpected) continue;
    if (optimizer == nullptr && starts_with(kv.first, "optimizer.")) continue;
    throw FormatError(path, 0, "unexpected tensor '" + kv.first + "' (the model has no parameter of that name)");
  }

  CheckpointInfo info;
  info.metadata = file.metadata;
  if (const std::string* step = meta("step")) info.step = d::parse_count(path, "step", *step);
  values = staged;
  if (optimizer != nullptr) optimizer->restore(std::move(state), optimizer_steps);
  return info;
}

template <class Scalar>
CheckpointInfo load_checkpoint(const SafetensorsFile& file, const std::string& source, ParameterStore<Scalar>& store,
                               Optimizer<Scalar>* optimizer, const CheckpointLoadOptions& options = {}) {
  return load_checkpoint<Scalar>(file, source, store.infos(), store.values(), optimizer, options);
}

// The same from the file at `path` (errors "PATH: reason").
template <class Scalar>
CheckpointInfo load_checkpoint(const std::string& path, const std::vector<ParameterInfo>& infos,
                               Eigen::Ref<typename Optimizer<Scalar>::Vector> values,
                               Optimizer<Scalar>* optimizer, const CheckpointLoadOptions& options = {}) {
  return load_checkpoint<Scalar>(load_safetensors(path), path, infos, values, optimizer, options);
}

template <class Scalar>
CheckpointInfo load_checkpoint(const std::string& path, ParameterStore<Scalar>& store, Optimizer<Scalar>* optimizer,
                               const CheckpointLoadOptions& options = {}) {
  return load_checkpoint<Scalar>(path, store.infos(), store.values(), optimizer, options);
}

namespace detail {
template <class Scalar>
void save_store_weights(const std::string& path, const ParameterStore<Scalar>& store,
                        const std::map<std::string, std::string>& extra, const CheckpointSaveOptions& options) {
  save_checkpoint<Scalar>(path, store, nullptr, 0, extra, options);
}
template <class Scalar>
CheckpointInfo load_store_weights(const std::string& path, ParameterStore<Scalar>& store,
                                  const CheckpointLoadOptions& options) {
  return load_checkpoint<Scalar>(path, store, nullptr, options);
}
}  // namespace detail

// A whole layer's or model's weights, for anything that owns its parameters
// in one store (parameter_store()): SyntaxBiasedAttention, the nn:: layers,
// nn::SyntaxTransformerTagger, parse::BiaffineParser. save_weights writes a
// checkpoint of the parameters alone (no optimiser state, step 0)
// atomically; load_weights reads it into a model built with the same options,
// refusing (with the model unchanged) a file whose tensors' names, shapes or
// dtype differ, as load_checkpoint does. What the model was built from (its
// options, a vocabulary) is the caller's to keep; `extra` metadata is the
// place for it, and load_weights returns it in CheckpointInfo::metadata.
template <class Model>
void save_weights(const std::string& path, const Model& model, const std::map<std::string, std::string>& extra = {},
                  const CheckpointSaveOptions& options = {}) {
  detail::save_store_weights(path, model.parameter_store(), extra, options);
}

template <class Model>
CheckpointInfo load_weights(const std::string& path, Model& model, const CheckpointLoadOptions& options = {}) {
  return detail::load_store_weights(path, model.parameter_store(), options);
}

}  // namespace synattn

#endif  // SYNATTN_TRAIN_CHECKPOINT_HPP
