// LibTorch peer of bench_attention: see libtorch_peer.hpp.
#include "libtorch_peer.hpp"

#include <ATen/Parallel.h>
#include <torch/types.h>
#include <torch/version.h>

#include <dlfcn.h>

#include <cmath>
#include <cstring>
#include <limits>
#include <vector>

namespace synattn_bench {

namespace {

torch::Tensor copy_floats(const float* data, std::vector<std::int64_t> shape) {
  return torch::from_blob(const_cast<float*>(data), shape, torch::kFloat32).clone();
}

// OpenBLAS's own entry points, looked up in whatever this process loaded
// (Debian's libtorch reaches it through libblas.so.3): null when absent.
template <class F>
F openblas_symbol(const char* name) {
  return reinterpret_cast<F>(::dlsym(RTLD_DEFAULT, name));
}

}  // namespace

struct LibTorchPeer::Impl {
  int batch, n, d, heads, dk;
  torch::Tensor x, dout, bucket_index, masked;  // masked: (B, 1, n, n) bool
  torch::Tensor w_qkv, b_qkv, wo, bo, table, scale;
  torch::Tensor out;

  torch::Tensor run(const torch::Tensor& input) const {
    // qkv (B, n, 3d) = x [Wq; Wk; Wv]^T + b: one product, as in synattn.
    const torch::Tensor qkv = at::linear(input, w_qkv, b_qkv);
    const auto split = [&](int part) {  // (B, h, n, dk)
      return qkv.narrow(2, part * d, d).view({batch, n, heads, dk}).transpose(1, 2);
    };
    const torch::Tensor q = split(0), k = split(1), v = split(2);
    // S (B, h, n, n) = Q K^T / sqrt(dk) + s T[bucket] (shared over heads); masked pairs -inf
    torch::Tensor scores = at::matmul(q, k.transpose(-2, -1)) * (1.0 / std::sqrt(double(dk)));
    const torch::Tensor bias = (scale * table.index_select(0, bucket_index.view({-1}))).view({batch, 1, n, n});
    scores = (scores + bias).masked_fill(masked, -std::numeric_limits<float>::infinity());
    const torch::Tensor p = at::softmax(scores, -1);
    // ctx (B, n, d) = concat_heads(P V); out = ctx Wo^T + bo
    const torch::Tensor ctx = at::matmul(p, v).transpose(1, 2).reshape({batch, n, d});
    return at::linear(ctx, wo, bo);
  }

  std::vector<torch::Tensor> parameters() { return {w_qkv, b_qkv, wo, bo, table, scale}; }
};

LibTorchPeer::LibTorchPeer(int batch, int n, int d_model, int heads, const float* x, const std::int8_t* buckets,
                           const float* dout, const TorchPeerWeights& w)
    : impl_(new Impl) {
  Impl& m = *impl_;
  m.batch = batch;
  m.n = n;
  m.d = d_model;
  m.heads = heads;
  m.dk = d_model / heads;
  m.x = copy_floats(x, {batch, n, d_model});
  m.dout = copy_floats(dout, {batch, n, d_model});
  const torch::Tensor b8 =
      torch::from_blob(const_cast<std::int8_t*>(buckets), {batch, n, n}, torch::kInt8).to(torch::kInt64);
  m.masked = (b8 < 0).unsqueeze(1);
  m.bucket_index = b8.clamp_min(0).contiguous();
  m.w_qkv = torch::cat({copy_floats(w.wq, {d_model, d_model}), copy_floats(w.wk, {d_model, d_model}),
                        copy_floats(w.wv, {d_model, d_model})})
                .set_requires_grad(true);
  m.b_qkv = torch::cat({copy_floats(w.bq, {d_model}), copy_floats(w.bk, {d_model}), copy_floats(w.bv, {d_model})})
                .set_requires_grad(true);
  m.wo = copy_floats(w.wo, {d_model, d_model}).set_requires_grad(true);
  m.bo = copy_floats(w.bo, {d_model}).set_requires_grad(true);
  m.table = copy_floats(w.table, {w.buckets}).set_requires_grad(true);
  m.scale = torch::full({1}, w.scale, torch::kFloat32).set_requires_grad(true);
}

LibTorchPeer::~LibTorchPeer() = default;

void LibTorchPeer::forward() {
  torch::NoGradGuard no_grad;
  impl_->out = impl_->run(impl_->x);
}

void LibTorchPeer::forward_backward() {
  Impl& m = *impl_;
  for (auto& p : m.parameters()) p.mutable_grad() = torch::Tensor();
  const torch::Tensor x = m.x.detach().set_requires_grad(true);
  m.x = x;  // keeps x.grad reachable for copy_input_gradient
  m.out = m.run(x);
  m.out.backward(m.dout);
}

void LibTorchPeer::copy_output(float* out) const {
  const torch::Tensor o = impl_->out.detach().contiguous();
  std::memcpy(out, o.data_ptr<float>(), sizeof(float) * static_cast<std::size_t>(o.numel()));
}

void LibTorchPeer::copy_input_gradient(float* dx) const {
  const torch::Tensor g = impl_->x.grad().contiguous();
  std::memcpy(dx, g.data_ptr<float>(), sizeof(float) * static_cast<std::size_t>(g.numel()));
}

void LibTorchPeer::set_threads(int threads) {
  at::set_num_threads(threads);
  if (auto set = openblas_symbol<void (*)(int)>("openblas_set_num_threads")) set(threads);
}

std::string LibTorchPeer::describe() {
  std::string s = "LibTorch " TORCH_VERSION ", " + std::to_string(at::get_num_threads()) + " intra-op threads";
  if (auto core = openblas_symbol<char* (*)()>("openblas_get_corename"))
    s += std::string(", OpenBLAS core ") + core();
  else
    s += ", BLAS without openblas_get_corename";
  if (auto threads = openblas_symbol<int (*)()>("openblas_get_num_threads"))
    s += ", blas threads " + std::to_string(threads());
  return s;
}

}  // namespace synattn_bench
