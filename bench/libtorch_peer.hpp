// The attention layer bench_attention times, written with LibTorch's C++ API:
// a C++ user's real alternative to synattn. Built into
// bench_attention only when find_package(Torch) succeeds
// (SYNATTN_WITH_LIBTORCH); no torch header leaks into the benchmark's own
// translation unit, which would double its compile time.
//
// The same layer as SyntaxBiasedAttention<float> with a shared table:
//   qkv = x [Wq; Wk; Wv]^T + [bq; bk; bv]                  (B, n, 3d)
//   S   = Q K^T / sqrt(dk) + s * T[bucket]  (bucket -1: -inf)  (B, h, n, n)
//   P   = softmax(S),  ctx = P V,  out = ctx Wo^T + bo     (B, n, d)
// and its backward through autograd. Padding is only ever masked pairs here
// (bench_attention's sequences have no padding), so fully masked rows, which
// softmax turns into NaN in torch, do not occur.
#ifndef SYNATTN_BENCH_LIBTORCH_PEER_HPP
#define SYNATTN_BENCH_LIBTORCH_PEER_HPP

#include <cstdint>
#include <memory>
#include <string>

namespace synattn_bench {

// Row-major float parameters in nn.Linear's layout (y = x W^T + b).
struct TorchPeerWeights {
  const float* wq;     // (d, d)
  const float* wk;     // (d, d)
  const float* wv;     // (d, d)
  const float* bq;     // (d)
  const float* bk;     // (d)
  const float* bv;     // (d)
  const float* wo;     // (d, d)
  const float* bo;     // (d)
  const float* table;  // (buckets)
  int buckets;
  float scale;
};

class LibTorchPeer {
 public:
  // x, dout: (batch * n, d_model); buckets: (batch * n, n), -1 = masked pair.
  // All three are copied. The weights are copied too.
  LibTorchPeer(int batch, int n, int d_model, int heads, const float* x, const std::int8_t* buckets,
               const float* dout, const TorchPeerWeights& weights);
  ~LibTorchPeer();
  LibTorchPeer(const LibTorchPeer&) = delete;
  LibTorchPeer& operator=(const LibTorchPeer&) = delete;

  // Inference: the forward under torch::NoGradGuard (nothing kept for autograd).
  void forward();
  // Forward with autograd, then backward of <out, dout>: x.grad and every
  // parameter's grad (reset to undefined first, like PyTorch's zero_grad(set_to_none)).
  void forward_backward();
  // The last pass's output and, after forward_backward(), dL/dx; both (batch * n, d_model).
  void copy_output(float* out) const;
  void copy_input_gradient(float* dx) const;

  // at::set_num_threads, and OpenBLAS's own thread count when it is loaded
  // (Debian's torch calls BLAS, which does not follow at::set_num_threads).
  static void set_threads(int threads);
  // "LibTorch 1.13.0, OpenBLAS core Haswell, blas threads 1": what ran.
  static std::string describe();

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

}  // namespace synattn_bench

#endif  // SYNATTN_BENCH_LIBTORCH_PEER_HPP
