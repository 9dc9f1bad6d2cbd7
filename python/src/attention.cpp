// synattn's Python binding — the attention layer as a compute kernel that
// views the caller's parameters.
//
// Who owns the parameters: Python. synattn.torch.SyntaxBiasedAttention keeps
// real torch.nn.Parameters (so optimisers, state_dict, load_state_dict,
// torch.save, .double() work as for any module) and every call here gets
// them as arrays. The kernel binds its layer's ParameterStore to those
// buffers for the call (ParameterStore::bind: pointers only, nothing copied)
// and computes with them; backward binds the gradients to one flat buffer
// (from a pool: reused only once nothing outside the pool refers to it) and
// hands autograd per-parameter views of it. The
// alternative, Python Parameters viewing the C++ layer's buffer, breaks as
// soon as anything replaces a Parameter's .data (.double(), .to(), some
// optimisers' foreach paths), silently training a buffer the layer no
// longer reads; binding per call cannot go stale.
//
// The layer's products read Wq, Wk, Wv (and bq, bk, bv) as one stacked
// matrix, so those must be adjacent in memory (ParameterStore::keep_adjacent).
// synattn.torch allocates them as views of one buffer, so they are; when
// they are not (a load or a dtype change gave each its own tensor) the
// kernel copies the three into a stacked scratch buffer for the call (3 * h *
// dk * d values, ~0.3 ms at d_model 512) rather than refusing.
//
// One kernel serves one module; a mutex makes concurrent calls on it take
// turns (the binding is the kernel's state). The GIL is released while the
// layer computes.
#include <synattn/attention/syntax_attention.hpp>
#include <synattn/bias/packed_buckets.hpp>
#include <synattn/util/random.hpp>

#include <chrono>
#include <cstring>
#include <map>
#include <memory>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "common.hpp"

#if defined(_OPENMP)
#include <omp.h>
#endif

namespace synattn_py {

using synattn::AttentionCache;
using synattn::AttentionOptions;
using synattn::Index;
using synattn::RowMajorMatrix;

namespace {

// AttentionOptions from the keyword dictionary synattn.torch builds. An
// unknown key is refused: a misspelt option must not silently do nothing.
AttentionOptions options_from(const py::dict& d) {
  AttentionOptions o;
  std::map<std::string, py::handle> given;
  for (auto kv : d) given[py::cast<std::string>(kv.first)] = kv.second;
  const auto take = [&](const char* key, auto& out) {
    auto it = given.find(key);
    if (it == given.end()) return;
    try {
      out = it->second.cast<std::decay_t<decltype(out)>>();
    } catch (const py::cast_error&) {
      throw py::type_error(std::string("SyntaxBiasedAttention: option '") + key + "' has the wrong type (" +
                           std::string(py::str(py::type::handle_of(it->second).attr("__name__"))) + ")");
    }
    given.erase(it);
  };
  take("d_model", o.d_model);
  take("heads", o.heads);
  take("key_size", o.key_size);
  take("value_size", o.value_size);
  take("memory_size", o.memory_size);
  take("syntax_bias", o.syntax_bias);
  take("bucketing", o.bias.bucketing);
  take("per_head", o.bias.per_head);
  std::string init = "zero";
  take("init", init);
  if (init == "zero")
    o.bias.init = synattn::TableInit::Zero;
  else if (init == "linear_decay")
    o.bias.init = synattn::TableInit::LinearDecay;
  else if (init == "exponential_decay")
    o.bias.init = synattn::TableInit::ExponentialDecay;
  else
    throw py::value_error("SyntaxBiasedAttention: init must be 'zero', 'linear_decay' or 'exponential_decay', got '" +
                          init + "'");
  take("decay", o.bias.decay);
  take("table_learnable", o.bias.table_learnable);
  take("scale", o.bias.scale);
  take("scale_learnable", o.bias.scale_learnable);
  take("views", o.bias.fusion.views);
  take("shared_table", o.bias.fusion.shared_table);
  take("per_head_weights", o.bias.fusion.per_head_weights);
  take("weights_learnable", o.bias.fusion.weights_learnable);
  take("causal", o.causal);
  take("talking_heads_pre", o.talking_heads_pre);
  take("talking_heads_post", o.talking_heads_post);
  take("dropout", o.dropout);
  take("check_finite", o.check_finite);
  std::string path = "automatic";
  take("path", path);
  if (path == "automatic")
    o.path = synattn::AttentionPath::automatic;
  else if (path == "fused")
    o.path = synattn::AttentionPath::fused;
  else if (path == "materialized")
    o.path = synattn::AttentionPath::materialized;
  else
    throw py::value_error("SyntaxBiasedAttention: path must be 'automatic', 'fused' or 'materialized', got '" + path +
                          "'");
  take("seed", o.seed);
  if (!given.empty()) {
    std::string names;
    for (const auto& kv : given) names += (names.empty() ? "" : ", ") + kv.first;
    throw py::value_error("SyntaxBiasedAttention: unknown option(s) " + names);
  }
  return o;
}

template <class Scalar>
class Kernel {
 public:
  using Layer = synattn::SyntaxBiasedAttention<Scalar>;
  using Matrix = RowMajorMatrix<Scalar>;
  using Cache = AttentionCache<Scalar>;
  using Array = py::array_t<Scalar>;

  explicit Kernel(const py::dict& options) : layer_(options_from(options)) {}

  const Layer& layer() const { return layer_; }

  // (name, shape as PyTorch stores it, trainable) per parameter, in the
  // layer's order: a (1, k) row is (k,), as the C++ checkpoints store it.
  py::list parameter_infos() const {
    py::list out;
    for (const synattn::ParameterInfo& p : layer_.parameter_infos()) {
      py::tuple shape = p.rows == 1 ? py::make_tuple(p.cols) : py::make_tuple(p.rows, p.cols);
      out.append(py::make_tuple(p.name, shape, p.trainable));
    }
    return out;
  }

  // The C++ layer's initial parameters (the same seed gives the same
  // weights as SyntaxBiasedAttention<Scalar>(options) in C++), one flat copy.
  Array initial_parameters() const {
    Array out(static_cast<py::ssize_t>(layer_.parameter_count()));
    std::memcpy(out.mutable_data(), layer_.parameters().data(), sizeof(Scalar) * layer_.parameter_count());
    return out;
  }

  py::object forward_self(const py::list& params, const py::handle& x_obj, const py::handle& lengths_obj,
                          const py::handle& buckets_obj, long long dropout_seed, bool training) {
    const char* fn = "SyntaxBiasedAttention.forward";
    const Array x = require_array<Scalar>(fn, "x", x_obj, 2);
    const std::vector<int> lengths = lengths_of(fn, "lengths", lengths_obj);
    const py::array_t<std::int8_t> buckets = bucket_array(fn, buckets_obj);
    Array out({x.shape(0), static_cast<py::ssize_t>(layer_.d_model())});
    std::shared_ptr<Cache> cache = take_cache();
    {
      Bound bound(*this, params, nullptr);
      py::gil_scoped_release free;
      const synattn::SelfAttentionInput<Scalar> input{map2d(x), lengths, bucket_map(buckets)};
      run(input, *cache, out, dropout_seed, training);
    }
    return result(out, std::move(cache), training);
  }

  py::object forward_cross(const py::list& params, const py::handle& xq_obj, const py::handle& lq_obj,
                           const py::handle& mem_obj, const py::handle& lkv_obj, const py::handle& buckets_obj,
                           long long dropout_seed, bool training) {
    const char* fn = "SyntaxBiasedAttention.forward (cross)";
    const Array xq = require_array<Scalar>(fn, "x", xq_obj, 2);
    const Array mem = require_array<Scalar>(fn, "memory", mem_obj, 2);
    const std::vector<int> lq = lengths_of(fn, "lengths", lq_obj);
    const std::vector<int> lkv = lengths_of(fn, "memory_lengths", lkv_obj);
    const py::array_t<std::int8_t> buckets = bucket_array(fn, buckets_obj);
    Array out({xq.shape(0), static_cast<py::ssize_t>(layer_.d_model())});
    std::shared_ptr<Cache> cache = take_cache();
    {
      Bound bound(*this, params, nullptr);
      py::gil_scoped_release free;
      const synattn::CrossAttentionInput<Scalar> input{map2d(xq), lq, map2d(mem), lkv, bucket_map(buckets)};
      run(input, *cache, out, dropout_seed, training);
    }
    return result(out, std::move(cache), training);
  }

  py::object forward_packed(const py::list& params, const py::handle& x_obj, const synattn::PackedBuckets& packed,
                            long long dropout_seed, bool training) {
    const char* fn = "SyntaxBiasedAttention.forward (packed)";
    const Array x = require_array<Scalar>(fn, "x", x_obj, 2);
    Array out({x.shape(0), static_cast<py::ssize_t>(layer_.d_model())});
    std::shared_ptr<Cache> cache = take_cache();
    {
      Bound bound(*this, params, nullptr);
      py::gil_scoped_release free;
      const synattn::PackedSelfAttentionInput<Scalar> input{map2d(x), packed};
      run(input, *cache, out, dropout_seed, training);
    }
    return result(out, std::move(cache), training);
  }

  // The C++ layer's own time for forward + backward, for the benchmark's
  // binding-overhead column (bench/bench_python.py): one bind, then
  // `iterations` steps entirely in C++ (the cache, outputs and gradients
  // reused, the gradients zeroed every step as a trainer does). Each step's
  // seconds, so that the caller can take the median: on a shared machine the
  // mean is the outliers'. `packed` (or None): packed documents instead of
  // lengths/buckets.
  std::vector<double> time_forward_backward(const py::list& params, const py::handle& x_obj, const py::handle& lengths_obj,
                               const py::handle& buckets_obj, const py::handle& packed_obj,
                               const py::handle& dout_obj, int iterations) {
    const char* fn = "time_forward_backward";
    if (iterations < 1) throw py::value_error(std::string(fn) + ": iterations must be >= 1");
    const Array x = require_array<Scalar>(fn, "x", x_obj, 2);
    const Array dout = require_array<Scalar>(fn, "dout", dout_obj, 2);
    const synattn::PackedBuckets* packed =
        packed_obj.is_none() ? nullptr : &packed_obj.cast<const synattn::PackedBuckets&>();
    const std::vector<int> lengths = packed ? packed->lengths() : lengths_of(fn, "lengths", lengths_obj);
    const py::array_t<std::int8_t> buckets =
        packed ? py::array_t<std::int8_t>(std::vector<py::ssize_t>{0, 0}) : bucket_array(fn, buckets_obj);
    Matrix out(x.shape(0), layer_.d_model()), dx(x.shape(0), layer_.d_model());
    Eigen::Matrix<Scalar, Eigen::Dynamic, 1> grads(layer_.parameter_count());
    Cache cache;
    Bound bound(*this, params, grads.data());
    std::vector<double> seconds(static_cast<std::size_t>(iterations));
    py::gil_scoped_release free;
    for (int it = 0; it < iterations; ++it) {
      const auto start = std::chrono::steady_clock::now();
      if (packed)
        layer_.forward(synattn::PackedSelfAttentionInput<Scalar>{map2d(x), *packed}, cache, out);
      else
        layer_.forward(synattn::SelfAttentionInput<Scalar>{map2d(x), lengths, bucket_map(buckets)}, cache, out);
      grads.setZero();
      layer_.backward(cache, map2d(dout), {dx});
      seconds[static_cast<std::size_t>(it)] =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    }
    return seconds;
  }

  // (dx, dmemory or None, the parameters' gradients). The cache is used up
  // (the layer refuses it a second time).
  py::tuple backward(const py::list& params, Cache& cache, const py::handle& dout_obj) {
    const char* fn = "SyntaxBiasedAttention.backward";
    const Array dout = require_array<Scalar>(fn, "dout", dout_obj, 2);
    if (cache.empty()) throw py::value_error(std::string(fn) + ": the cache holds no training forward pass");
    const py::ssize_t rows = static_cast<py::ssize_t>(cache.batch() * cache.query_length());
    Array dx({rows, static_cast<py::ssize_t>(layer_.d_model())});
    // A copy of the pool's entry: its references mark it busy until the
    // views are handed out (another thread's backward cannot take it).
    GradientBuffer grads = take_gradients();
    py::object dmem_obj = py::none();
    {
      Bound bound(*this, params, grads.flat.mutable_data());
      auto dx_map = mutable_map2d(dx);
      if (cache.cross()) {
        Array dmem({static_cast<py::ssize_t>(cache.batch() * cache.key_length()),
                    static_cast<py::ssize_t>(layer_.memory_size())});
        auto dm = mutable_map2d(dmem);
        {
          py::gil_scoped_release free;
          layer_.parameter_store().zero_grad();  // backward adds into them
          layer_.backward(cache, map2d(dout), {dx_map, dm});
        }
        dmem_obj = dmem;
      } else {
        py::gil_scoped_release free;
        layer_.parameter_store().zero_grad();
        layer_.backward(cache, map2d(dout), {dx_map});
      }
    }
    // Each parameter's gradient as a view of the flat buffer, shaped like
    // the parameter (PyTorch's shape): torch.from_numpy of each is free,
    // where slicing and reshaping a tensor per parameter cost ~10 us each.
    py::tuple views(grads.views.size());
    for (std::size_t i = 0; i < grads.views.size(); ++i) views[i] = grads.views[i];
    return py::make_tuple(dx, dmem_obj, views);
  }

 private:
  // Binds the layer's store to the caller's parameter arrays (and gradients
  // to `grads`, a flat buffer laid out like the layer's, or — for a forward
  // pass, which never writes gradients — to the values themselves, so no
  // buffer is allocated for nothing) for one call, under the kernel's mutex.
  //
  // The checked pointers are remembered with the array objects themselves
  // (held, so no other object can take their address): synattn.torch passes
  // the same NumPy views call after call while the Parameters' storage stays
  // put, and a call that passes them again is bound without checking the
  // twelve arrays afresh. An array is taken as the same only if it is the
  // same object and still has the same data pointer, dtype, size and
  // contiguity (NumPy lets .shape and .dtype be set in place).
  class Bound {
   public:
    Bound(Kernel& k, const py::list& params, Scalar* grads) : lock_(k.mutex_, std::defer_lock) {
      // The lock first, so that the kernel's binding scratch below is this
      // call's alone. Without the GIL when it must wait: a thread holding the
      // GIL while it waits for a call that must take the GIL back to finish
      // would deadlock.
      if (!lock_.try_lock()) {
        py::gil_scoped_release free;
        lock_.lock();
      }
      const auto& infos = k.layer_.parameter_infos();
      const char* fn = "SyntaxBiasedAttention";
      if (params.size() != infos.size())
        throw py::value_error(std::string(fn) + ": got " + std::to_string(params.size()) + " parameters, expected " +
                              std::to_string(infos.size()));
      std::vector<Scalar*>& values = k.bound_values_;
      if (!k.same_arrays(params)) {
        k.bound_arrays_.clear();
        values.clear();
        k.bound_arrays_.reserve(infos.size());
        values.reserve(infos.size());
        for (std::size_t i = 0; i < infos.size(); ++i) {
          Array a = require_array<Scalar>(fn, ("parameter " + infos[i].name).c_str(), params[i]);
          if (a.size() != infos[i].size())
            throw py::value_error(std::string(fn) + ": parameter '" + infos[i].name + "' has shape " + shape_of(a) +
                                  ", expected " + std::to_string(infos[i].rows) + " x " +
                                  std::to_string(infos[i].cols));
          // The layer only reads values; const_cast because bind() takes one
          // pointer type for values and gradients.
          values.push_back(const_cast<Scalar*>(a.data()));
          k.bound_arrays_.push_back(std::move(a));
        }
      }
      std::vector<Scalar*>& use = k.bind_values_;
      use = values;
      stack(k, use, 0, 2);  // Wq, Wk, Wv
      stack(k, use, 3, 5);  // bq, bk, bv
      std::vector<Scalar*>& gradients = k.bind_gradients_;
      if (grads) {
        gradients.resize(infos.size());
        for (std::size_t i = 0; i < infos.size(); ++i) gradients[i] = grads + infos[i].offset;
      } else {
        gradients = use;
      }
      k.layer_.parameter_store().bind(use, gradients);
    }

   private:
    // Parameters first..last must be adjacent; when they are not, copy them
    // into the kernel's scratch (one buffer per group) and point there.
    void stack(Kernel& k, std::vector<Scalar*>& values, int first, int last) {
      const auto& infos = k.layer_.parameter_infos();
      bool adjacent = true;
      for (int i = first; i < last; ++i)
        adjacent = adjacent && values[i] + infos[i].size() == values[i + 1];
      if (adjacent) return;
      std::vector<Scalar>& scratch = k.scratch_[first == 0 ? 0 : 1];
      Index total = 0;
      for (int i = first; i <= last; ++i) total += infos[i].size();
      scratch.resize(static_cast<std::size_t>(total));
      Index at = 0;
      for (int i = first; i <= last; ++i) {
        std::memcpy(scratch.data() + at, values[i], sizeof(Scalar) * infos[i].size());
        values[i] = scratch.data() + at;
        at += infos[i].size();
      }
    }

    std::unique_lock<std::mutex> lock_;
  };

  // Whether `params` holds the arrays bound last time, unchanged (Bound).
  bool same_arrays(const py::list& params) const {
    if (bound_arrays_.size() != params.size()) return false;
    for (std::size_t i = 0; i < bound_arrays_.size(); ++i) {
      const Array& a = bound_arrays_[i];
      if (PyList_GET_ITEM(params.ptr(), static_cast<py::ssize_t>(i)) != a.ptr() || a.data() != bound_values_[i] ||
          !a.dtype().is(py::dtype::of<Scalar>()) || a.size() != layer_.parameter_infos()[i].size() ||
          !(a.flags() & py::array::c_style))
        return false;
    }
    return true;
  }

  // A flat gradient buffer and its per-parameter views (shaped like the
  // Parameters), reused from call to call when nothing outside the pool
  // refers to them any more (GradientBuffer::free).
  struct GradientBuffer {
    Array flat;
    std::vector<Array> views;
    // Free when the pool holds the only references: the flat array's are
    // the pool's own and its views' (each view keeps its base alive); a
    // view's is the pool's. Anything that still reads the memory — a
    // tensor from torch.from_numpy(view), a .grad that took it over, a
    // NumPy view of either — holds one of these arrays (NumPy sets a view's
    // base to the array owning the memory; torch.from_numpy keeps the
    // array), so the count is higher and the buffer is not reused.
    bool free() const {
      if (flat.ref_count() != 1 + static_cast<py::ssize_t>(views.size())) return false;
      for (const Array& v : views)
        if (v.ref_count() != 1) return false;
      return true;
    }
  };

  py::array_t<std::int8_t> bucket_array(const char* fn, const py::handle& obj) const {
    if (obj.is_none()) {
      if (layer_.has_syntax_bias())
        throw py::value_error(std::string(fn) + ": 'buckets' is None, but the layer has a syntax bias");
      return py::array_t<std::int8_t>(std::vector<py::ssize_t>{0, 0});
    }
    if (!layer_.has_syntax_bias())
      throw py::value_error(std::string(fn) + ": the layer has no syntax bias (syntax_bias=False); pass buckets=None");
    return require_array<std::int8_t>(fn, "buckets", obj, 2);
  }
  static Eigen::Map<const synattn::BucketBlock> bucket_map(const py::array_t<std::int8_t>& b) {
    return Eigen::Map<const synattn::BucketBlock>(b.data(), b.shape(0), b.shape(1));
  }

  template <class Input>
  void run(const Input& input, Cache& cache, Array& out, long long dropout_seed, bool training) {
    auto o = mutable_map2d(out);
    if (!training) {
      layer_.infer(input, cache, o);
      return;
    }
    if (dropout_seed >= 0) {
      const synattn::RandomStream stream(static_cast<std::uint64_t>(dropout_seed));
      layer_.forward(input, cache, o, &stream);
    } else {
      layer_.forward(input, cache, o);
    }
  }

  py::object result(Array& out, std::shared_ptr<Cache> cache, bool training) {
    if (!training) {
      give_back(std::move(cache));
      return out;
    }
    return py::make_tuple(out, py::cast(std::move(cache)));
  }

  // Caches are reused: a forward pass takes one that no Python object holds
  // any more (its backward pass is done, or its graph was dropped), so the
  // cache's buffers (the probabilities: batch * heads * n^2 values) are not
  // allocated and faulted in afresh every step. Under the GIL.
  std::shared_ptr<Cache> take_cache() {
    for (auto& c : pool_)
      if (c.use_count() == 1) return c;
    if (pool_.size() < kPoolSize) {
      pool_.push_back(std::make_shared<Cache>());
      return pool_.back();
    }
    return std::make_shared<Cache>();  // many graphs alive at once: beyond the pool, a fresh one
  }
  void give_back(std::shared_ptr<Cache> cache) { cache.reset(); }

  // Gradient buffers are reused the same way (GradientBuffer::free): a
  // step does not allocate, fault in and zero a fresh buffer the size of
  // the parameters (1 MB at d_model 256). Under the GIL.
  GradientBuffer take_gradients() {
    for (const GradientBuffer& g : grad_pool_)
      if (g.free()) return g;
    GradientBuffer g;
    g.flat = Array(static_cast<py::ssize_t>(layer_.parameter_count()));
    for (const synattn::ParameterInfo& p : layer_.parameter_infos()) {
      std::vector<py::ssize_t> shape =
          p.rows == 1 ? std::vector<py::ssize_t>{static_cast<py::ssize_t>(p.cols)}
                      : std::vector<py::ssize_t>{static_cast<py::ssize_t>(p.rows), static_cast<py::ssize_t>(p.cols)};
      g.views.push_back(Array(shape, g.flat.mutable_data() + p.offset, g.flat));
    }
    if (grad_pool_.size() < kPoolSize) grad_pool_.push_back(g);  // else many graphs alive at once: not pooled
    return g;
  }

  static constexpr std::size_t kPoolSize = 4;

  Layer layer_;
  std::mutex mutex_;
  std::vector<std::shared_ptr<Cache>> pool_;
  std::vector<Scalar> scratch_[2];
  std::vector<GradientBuffer> grad_pool_;
  // Bound's memory of the last checked parameter arrays and its scratch.
  std::vector<Array> bound_arrays_;
  std::vector<Scalar*> bound_values_, bind_values_, bind_gradients_;
};

template <class Scalar>
void register_kernel(py::module_& m, const char* name, const char* cache_name) {
  using K = Kernel<Scalar>;
  py::class_<AttentionCache<Scalar>, std::shared_ptr<AttentionCache<Scalar>>>(m, cache_name,
                                     "What a training forward pass keeps for its backward pass (opaque; one use)")
      .def_property_readonly("batch", &AttentionCache<Scalar>::batch)
      .def_property_readonly("cross", &AttentionCache<Scalar>::cross);
  py::class_<K>(m, name, "The attention layer as a kernel over parameters passed per call (synattn.torch uses it)")
      .def(py::init<const py::dict&>(), py::arg("options"))
      .def("parameter_infos", &K::parameter_infos)
      .def("initial_parameters", &K::initial_parameters)
      .def_property_readonly("parameter_count", [](const K& k) { return k.layer().parameter_count(); })
      .def_property_readonly("d_model", [](const K& k) { return k.layer().d_model(); })
      .def_property_readonly("heads", [](const K& k) { return k.layer().heads(); })
      .def_property_readonly("key_size", [](const K& k) { return k.layer().key_size(); })
      .def_property_readonly("value_size", [](const K& k) { return k.layer().value_size(); })
      .def_property_readonly("memory_size", [](const K& k) { return k.layer().memory_size(); })
      .def_property_readonly("num_buckets", [](const K& k) { return k.layer().num_buckets(); })
      .def("forward", &K::forward_self, py::arg("params"), py::arg("x"), py::arg("lengths"), py::arg("buckets"),
           py::arg("dropout_seed") = -1, py::arg("training") = true)
      .def("forward_cross", &K::forward_cross, py::arg("params"), py::arg("x"), py::arg("lengths"), py::arg("memory"),
           py::arg("memory_lengths"), py::arg("buckets"), py::arg("dropout_seed") = -1, py::arg("training") = true)
      .def("forward_packed", &K::forward_packed, py::arg("params"), py::arg("x"), py::arg("packed"),
           py::arg("dropout_seed") = -1, py::arg("training") = true)
      .def("backward", &K::backward, py::arg("params"), py::arg("cache"), py::arg("dout"))
      .def("time_forward_backward", &K::time_forward_backward, py::arg("params"), py::arg("x"), py::arg("lengths"),
           py::arg("buckets"), py::arg("packed"), py::arg("dout"), py::arg("iterations"));
}

}  // namespace

void register_attention(py::module_& m) {
  register_kernel<float>(m, "AttentionKernelF32", "AttentionCacheF32");
  register_kernel<double>(m, "AttentionKernelF64", "AttentionCacheF64");
  m.def(
      "set_num_threads",
      [](int n) {
        if (n < 1) throw py::value_error("set_num_threads: n must be >= 1, got " + std::to_string(n));
#if defined(_OPENMP)
        omp_set_num_threads(n);
#endif
      },
      py::arg("n"),
      "Threads synattn's OpenMP loops may use (the calling thread's setting; results are the same bits at any count)");
  m.def("get_num_threads", [] { return synattn::max_threads(); });
}

}  // namespace synattn_py
