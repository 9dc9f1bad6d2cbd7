// libFuzzer target for the checkpoint loader (train/checkpoint.hpp):
// parameters and optimiser state, on top of the safetensors reader. Run from
// the checkout root:
//   cmake --preset fuzz && cmake --build --preset fuzz --target fuzz_checkpoint && tools/make_checkpoint_seeds.sh build/fuzz/checkpoint-seeds && build/fuzz/fuzz/fuzz_checkpoint -max_total_time=60 -timeout=10 build/fuzz/checkpoint-seeds
//
// Each input that parses as safetensors is loaded into a small model (float
// and double) with each optimiser (none, SGD, SGD with momentum, Adam,
// AdamW), once with the default options and once with every leniency on.
// Promises checked (a broken one aborts, a finding):
// - load_checkpoint returns or throws synattn::Error, nothing else;
// - when it throws, the parameters, the optimiser's state and its step
//   count are as they were;
// - when it returns without allow_non_finite, every value loaded is finite;
// - what it accepted saves (make_checkpoint, with the same non-finite
//   choice) and loads back into a fresh model and optimiser with the same
//   bits, step counts and metadata, and saving that again gives the same
//   bytes.
//
// Seeds: SYNATTN_FUZZ_WRITE_SEEDS=DIR makes this program write real
// checkpoints (several optimisers and step counts) and mutated ones into DIR
// and exit instead of fuzzing (tools/make_checkpoint_seeds.sh), so the seeds
// always match this model's parameter names.
#include <synattn/io/safetensors.hpp>
#include <synattn/train/checkpoint.hpp>
#include <synattn/train/optimizer.hpp>

#include <cstddef>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <memory>
#include <string>
#include <vector>

namespace {

void expect(bool ok, const char* promise) {
  if (!ok) {
    std::fprintf(stderr, "fuzz_checkpoint: broken promise: %s\n", promise);
    std::abort();
  }
}

// The model: a matrix, a row, a (1, 1) strength, a frozen column and an
// empty row, so every shape rule of the loader is reachable.
template <class Scalar>
synattn::ParameterStore<Scalar> make_model() {
  synattn::ParameterStore<Scalar> store;
  store.add("embedding.weight", 3, 2);
  store.add("layers.0.attention.table", 1, 4);
  store.add("layers.0.attention.scale", 1, 1);
  store.add("frozen.weight", 2, 1, false);
  store.add("empty.bias", 1, 0);
  for (Eigen::Index i = 0; i < store.size(); ++i) store.values()[i] = static_cast<Scalar>(0.25 * (i % 7) - 0.5);
  return store;
}

constexpr int kOptimizers = 5;  // none, sgd, sgd with momentum, adam, adamw

template <class Scalar>
std::unique_ptr<synattn::Optimizer<Scalar>> make_optimizer(int kind) {
  switch (kind) {
    case 1: return std::make_unique<synattn::Sgd<Scalar>>(synattn::SgdOptions{0.1});
    case 2: return std::make_unique<synattn::Sgd<Scalar>>(synattn::SgdOptions{0.1, 0.9});
    case 3: return std::make_unique<synattn::Adam<Scalar>>(synattn::AdamOptions{});
    case 4: return std::make_unique<synattn::Adam<Scalar>>(synattn::AdamOptions::adamw());
    default: return nullptr;
  }
}

// `steps` optimiser steps on fixed gradients.
template <class Scalar>
void train(synattn::ParameterStore<Scalar>& store, synattn::Optimizer<Scalar>* opt, int steps) {
  if (opt == nullptr) return;
  for (int t = 0; t < steps; ++t) {
    for (Eigen::Index i = 0; i < store.size(); ++i)
      store.gradients()[i] = static_cast<Scalar>(0.1 * ((i + t) % 5) - 0.2);
    opt->step(store);
  }
}

template <class V>
bool same_bits(const V& a, const V& b) {
  return a.size() == b.size() &&
         (a.size() == 0 ||
          std::memcmp(a.data(), b.data(), sizeof(typename V::Scalar) * static_cast<std::size_t>(a.size())) == 0);
}

template <class Scalar>
bool same_state(const synattn::Optimizer<Scalar>* a, const synattn::Optimizer<Scalar>* b) {
  if (a == nullptr || b == nullptr) return a == b;
  if (a->steps() != b->steps() || a->state().size() != b->state().size()) return false;
  for (std::size_t s = 0; s < a->state().size(); ++s)
    if (!same_bits(a->state()[s], b->state()[s])) return false;
  return true;
}

template <class V>
bool all_finite(const V& v) {
  for (Eigen::Index i = 0; i < v.size(); ++i)
    if (!std::isfinite(v[i])) return false;
  return true;
}

// The metadata a caller keeps when saving again: everything not ours.
std::map<std::string, std::string> caller_keys(const std::map<std::string, std::string>& metadata) {
  std::map<std::string, std::string> out;
  for (const auto& kv : metadata)
    if (!synattn::detail::reserved_key(kv.first)) out.insert(kv);
  return out;
}

template <class Scalar>
void check_load(const synattn::SafetensorsFile& file, int kind, const synattn::CheckpointLoadOptions& options) {
  using Vector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;
  synattn::ParameterStore<Scalar> store = make_model<Scalar>();
  const auto opt = make_optimizer<Scalar>(kind);
  train(store, opt.get(), 1);  // a state that a failed load must leave alone
  const synattn::ParameterStore<Scalar> before_store = store;
  const auto before_opt = make_optimizer<Scalar>(kind);
  if (before_opt) before_opt->restore(opt->state(), opt->steps());

  synattn::CheckpointInfo info;
  try {
    info = synattn::load_checkpoint<Scalar>(file, "fuzz", store, opt.get(), options);
  } catch (const synattn::Error&) {
    expect(same_bits(Vector(store.values()), Vector(before_store.values())), "a refused load leaves the parameters");
    expect(same_state<Scalar>(opt.get(), before_opt.get()), "a refused load leaves the optimizer");
    return;
  } catch (const synattn::FormatError&) {
    expect(same_bits(Vector(store.values()), Vector(before_store.values())), "a refused load leaves the parameters");
    expect(same_state<Scalar>(opt.get(), before_opt.get()), "a refused load leaves the optimizer");
    return;
  }
  expect(info.step >= 0, "the step is non-negative");
  if (!options.allow_non_finite) {
    expect(all_finite(Vector(store.values())), "a default load gives finite parameters");
    if (opt)
      for (const Vector& s : opt->state()) expect(all_finite(s), "a default load gives a finite optimizer state");
  }

  // Save what was loaded; it must load back identically, and save again to the same bytes.
  synattn::CheckpointSaveOptions save;
  save.allow_non_finite = options.allow_non_finite;
  synattn::CheckpointLoadOptions again;
  again.allow_non_finite = options.allow_non_finite;
  const std::map<std::string, std::string> extra = caller_keys(info.metadata);
  std::string bytes;
  synattn::ParameterStore<Scalar> back = make_model<Scalar>();
  const auto back_opt = make_optimizer<Scalar>(kind);
  synattn::CheckpointInfo back_info;
  try {
    bytes = synattn::serialize_safetensors(synattn::make_checkpoint<Scalar>(store, opt.get(), info.step, extra, save));
    const synattn::SafetensorsFile parsed = synattn::parse_safetensors(bytes.data(), bytes.size(), "round trip");
    back_info = synattn::load_checkpoint<Scalar>(parsed, "round trip", back, back_opt.get(), again);
  } catch (const synattn::Error& e) {
    std::fprintf(stderr, "fuzz_checkpoint: %s\n", e.what());
    expect(false, "an accepted checkpoint saves and loads back");
  } catch (const synattn::FormatError& e) {
    std::fprintf(stderr, "fuzz_checkpoint: %s\n", e.what());
    expect(false, "an accepted checkpoint saves and loads back");
  }
  expect(same_bits(Vector(back.values()), Vector(store.values())), "the round trip keeps the parameters' bits");
  expect(same_state<Scalar>(back_opt.get(), opt.get()), "the round trip keeps the optimizer's state and steps");
  expect(back_info.step == info.step, "the round trip keeps the step");
  expect(caller_keys(back_info.metadata) == extra, "the round trip keeps the caller's metadata");
  const std::string twice = synattn::serialize_safetensors(
      synattn::make_checkpoint<Scalar>(back, back_opt.get(), back_info.step, extra, save));
  expect(twice == bytes, "saving the reloaded checkpoint gives the same bytes");
}

template <class Scalar>
void check_all(const synattn::SafetensorsFile& file) {
  synattn::CheckpointLoadOptions lenient;
  lenient.convert_dtype = true;
  lenient.allow_unexpected = true;
  lenient.allow_non_finite = true;
  for (int kind = 0; kind < kOptimizers; ++kind) {
    check_load<Scalar>(file, kind, {});
    check_load<Scalar>(file, kind, lenient);
  }
}

// ---- Seeds ----------------------------------------------------------------

void write(const std::string& dir, const std::string& name, const std::string& bytes) {
  std::ofstream out(dir + "/" + name, std::ios::binary);
  out.write(bytes.data(), static_cast<std::streamsize>(bytes.size()));
  expect(static_cast<bool>(out), "the seed file is written");
}

const char* const kKindNames[kOptimizers] = {"none", "sgd", "sgd_momentum", "adam", "adamw"};

template <class Scalar>
synattn::SafetensorsFile real_checkpoint(int kind, int steps, bool diverged = false) {
  synattn::ParameterStore<Scalar> store = make_model<Scalar>();
  const auto opt = make_optimizer<Scalar>(kind);
  train(store, opt.get(), steps);
  synattn::CheckpointSaveOptions save;
  if (diverged) {
    store.values()[1] = std::numeric_limits<Scalar>::quiet_NaN();
    store.values()[7] = std::numeric_limits<Scalar>::infinity();
    save.allow_non_finite = true;
  }
  return synattn::make_checkpoint<Scalar>(store, opt.get(), steps, {{"run", "seed"}}, save);
}

void write_seeds(const std::string& dir) {
  using synattn::serialize_safetensors;
  int count = 0;
  const auto put = [&](const std::string& name, const synattn::SafetensorsFile& f) {
    write(dir, name + ".safetensors", serialize_safetensors(f));
    ++count;
  };
  for (int kind = 0; kind < kOptimizers; ++kind)
    for (int steps : {0, 1, 3}) {
      put(std::string("f32_") + kKindNames[kind] + "_" + std::to_string(steps), real_checkpoint<float>(kind, steps));
      put(std::string("f64_") + kKindNames[kind] + "_" + std::to_string(steps), real_checkpoint<double>(kind, steps));
    }
  put("f32_adam_diverged", real_checkpoint<float>(3, 2, true));
  put("f64_sgd_momentum_diverged", real_checkpoint<double>(2, 2, true));
  {
    const std::string half = "half.safetensors";
    synattn::save_weights_half(dir + "/" + half, make_model<float>());
    ++count;
  }

  // Mutations of a real Adam checkpoint, one refusal (or leniency) each.
  const synattn::SafetensorsFile good = real_checkpoint<double>(3, 2);
  const std::string good_bytes = serialize_safetensors(good);
  write(dir, "truncated_half.safetensors", good_bytes.substr(0, good_bytes.size() / 2));
  write(dir, "truncated_data.safetensors", good_bytes.substr(0, good_bytes.size() - 3));
  count += 2;
  synattn::SafetensorsFile f = good;
  f.tensors.at("embedding.weight").shape = {2, 3};
  put("wrong_shape", f);
  f = good;
  f.tensors.at("layers.0.attention.table").shape = {4, 1};
  f.tensors.at("layers.0.attention.scale").shape = {};
  put("other_layouts", f);
  f = good;
  f.metadata["optimizer.steps"] = "9007199254740993";  // 2^53 + 1
  put("huge_optimizer_steps", f);
  f = good;
  f.metadata["step"] = "99999999999999999999";
  put("huge_step", f);
  f = good;
  f.metadata["step"] = "+7";
  put("signed_step", f);
  f = good;
  f.tensors.erase("optimizer.exp_avg.embedding.weight");
  put("missing_state", f);
  f = good;
  f.tensors["extra.weight"] = f.tensors.at("embedding.weight");
  put("unexpected_tensor", f);
  f = good;
  f.metadata["optimizer"] = "sgd";
  put("other_optimizer", f);
  f = good;
  f.metadata["format"] = "synattn.checkpoint.v0";
  put("other_format", f);
  f = good;
  f.metadata.erase("format");
  put("foreign_weights", f);
  f = good;
  {
    const double nan = std::numeric_limits<double>::quiet_NaN(), huge = 1e300;
    std::memcpy(f.tensors.at("embedding.weight").bytes.data() + 8, &nan, 8);
    std::memcpy(f.tensors.at("frozen.weight").bytes.data(), &huge, 8);  // overflows float when converted
  }
  put("nan_and_huge", f);
  f = good;
  {
    std::vector<float> w(6, 0.5f);
    f.tensors.at("embedding.weight") = synattn::SafeTensor::from(w.data(), {3, 2});
  }
  put("mixed_dtype", f);
  std::printf("wrote %d checkpoint seeds to %s\n", count, dir.c_str());
}

}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
  if (const char* dir = std::getenv("SYNATTN_FUZZ_WRITE_SEEDS")) {
    write_seeds(dir);
    std::exit(0);
  }
  return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  synattn::SafetensorsFile file;
  try {
    file = synattn::parse_safetensors(data, size, "fuzz");
  } catch (const synattn::Error&) {
    return 0;
  } catch (const synattn::FormatError&) {
    return 0;
  }
  check_all<float>(file);
  check_all<double>(file);
  return 0;
}
