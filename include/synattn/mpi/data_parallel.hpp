// synattn — data-parallel training over MPI ranks on one flat parameter and
// gradient buffer (SyntaxTransformerTagger's, or any model laid out by a
// ParameterStore).
//
// Every rank holds the whole model. Per step:
//   1. every rank takes its deterministic share of the global batch
//      (shard(): a contiguous, balanced slice of the batch's sentences);
//   2. runs forward and backward on it, the loss normalised by the token
//      count of the WHOLE global batch (global_count()), so that the sum of
//      the ranks' gradients is exactly the one-process gradient's formula;
//   3. the gradients are summed across ranks (RingAllReduce: fixed buckets,
//      fixed order, bit-identical on every run for a given P) — overlapped
//      with the backward pass when options.overlap: the model's backward
//      reports which gradients are final (hook()), and each bucket whose
//      slice is final starts its reduction while lower layers are still
//      being differentiated (as PyTorch's DistributedDataParallel does);
//   4. every rank takes the identical optimiser step on identical gradients.
// At start, rank 0's parameters (and optimiser state, on resume) are
// broadcast, and the ranks check that they agree: a fingerprint of model
// shape, options and data (verify_agreement) and a hash of the parameter
// bytes (verify_parameters). A mismatch throws the same mpi::Error on every
// rank, naming the ranks and the first field that differs. Sizes are checked
// by the entry points themselves, collectively, before any transfer depends
// on them: the constructor (the model's number of values, then the ring's
// buckets), broadcast_parameters and broadcast_optimizer (the count), so a
// caller that skips verify_agreement gets the same error on every rank
// naming both sizes, not a truncated broadcast or an exchange that never
// completes. Every wait has the communicator's timeout (communicator.hpp).
//
// Data: Fingerprint::add_checksum records a Checksum (checksum.hpp) of what
// each rank will train on, so that ranks holding different files of the
// same size are refused too, not only ones with other counts.
//
// Buckets: parameters are grouped from the END of the buffer (the classifier
// and top layers, whose gradients are final first) into buckets of at least
// options.bucket_bytes, whole parameters each; a parameter larger than that is
// a bucket alone. The boundaries depend only on the parameter layout and the
// option, so they are identical on every rank and every run, with or without
// overlap, which therefore give the same bits.
//
// Against one process with the same global batch, a P-rank run differs only
// by the order of floating-point sums: the shards' gradients are summed
// across ranks instead of along one batch, and each shard is padded to its
// own longest sentence (other product shapes). Dropout masks are keyed by
// global sequence (util/random.hpp): the caller passes each rank the step's
// stream set to its shard's first sentence, stream.sequences_from(
// shard(n, rank, size).first), and every rank then draws the one-process
// masks of its sentences, so runs with dropout meet the same bound (tests/mpi
// pins it with dropout 0.1 at every site).
#ifndef SYNATTN_MPI_DATA_PARALLEL_HPP
#define SYNATTN_MPI_DATA_PARALLEL_HPP

#include <mpi.h>

#include <Eigen/Core>

#include <algorithm>
#include <chrono>
#include <cstdint>
#include <cstring>
#include <functional>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "../matrix.hpp"
#include "../train/optimizer.hpp"
#include "../util/parameters.hpp"
#include "../util/random.hpp"
#include "checksum.hpp"
#include "communicator.hpp"
#include "ring_allreduce.hpp"

namespace synattn {
namespace mpi {

struct DataParallelOptions {
  // Reduce buckets while the backward pass is still running (off: all
  // buckets start after backward). Same bits either way.
  bool overlap = true;
  // Smallest bucket, in bytes (whole parameters per bucket; 256 KiB cuts the
  // recipe's d_model 128 model into one bucket per layer or so).
  std::size_t bucket_bytes = std::size_t{256} << 10;
};

// Sentences [begin, end) of an n-sentence global batch that `rank` of
// `size` takes: contiguous, sizes differ by at most one.
inline std::pair<std::size_t, std::size_t> shard(std::size_t n, int rank, int size) {
  if (size < 1 || rank < 0 || rank >= size)
    throw synattn::Error("mpi::shard: rank " + std::to_string(rank) + " of " + std::to_string(size) +
                         " ranks, expected 0 <= rank < size");
  const auto r = static_cast<std::size_t>(rank), p = static_cast<std::size_t>(size);
  return {n * r / p, n * (r + 1) / p};
}

// This rank's items of a global batch (see shard()).
template <class T>
std::vector<T> shard_of(const std::vector<T>& items, int rank, int size) {
  const auto [b, e] = shard(items.size(), rank, size);
  return std::vector<T>(items.begin() + static_cast<std::ptrdiff_t>(b), items.begin() + static_cast<std::ptrdiff_t>(e));
}

// "key=value" lines that must be equal on every rank (verify_agreement).
class Fingerprint {
 public:
  template <class T>
  Fingerprint& add(const std::string& key, const T& value) {
    std::ostringstream s;
    s.precision(17);
    s << value;
    text_ += key + "=" + s.str() + "\n";
    return *this;
  }
  // Names and shapes of every parameter, in buffer order.
  Fingerprint& add_parameters(const std::vector<ParameterInfo>& infos) {
    for (const ParameterInfo& p : infos)
      add("parameter " + p.name, shape_text(p.rows, p.cols) + (p.trainable ? "" : " frozen"));
    return *this;
  }
  // A checksum of content that must be equal on every rank (the training
  // data, say), as 16 hex digits: equal counts do not mean equal data.
  Fingerprint& add_checksum(const std::string& key, const Checksum& sum) { return add(key, sum.hex()); }
  const std::string& text() const noexcept { return text_; }

 private:
  std::string text_;
};

// FNV-1a over the bytes of n values: equal parameters <=> equal hashes
// (up to collisions), for the start-up agreement check.
template <class Scalar>
std::uint64_t bytes_hash(const Scalar* data, Index n) {
  return Checksum().add_bytes(data, static_cast<std::size_t>(n) * sizeof(Scalar)).value();
}

// Throws mpi::Error on every rank when the ranks' fingerprints differ,
// naming the first line where a rank differs from rank 0. Collective.
inline void verify_agreement(const Communicator& comm, const std::string& fingerprint) {
  const std::vector<std::string> all = comm.allgather(fingerprint);
  const auto lines = [](const std::string& t) {
    std::vector<std::string> out;
    std::istringstream in(t);
    for (std::string line; std::getline(in, line);) out.push_back(line);
    return out;
  };
  const std::vector<std::string> root = lines(all[0]);
  for (std::size_t r = 1; r < all.size(); ++r) {
    if (all[r] == all[0]) continue;
    const std::vector<std::string> mine = lines(all[r]);
    std::size_t i = 0;
    while (i < root.size() && i < mine.size() && root[i] == mine[i]) ++i;
    const std::string a = i < mine.size() ? "'" + mine[i] + "'" : "nothing more";
    const std::string b = i < root.size() ? "'" + root[i] + "'" : "nothing more";
    throw Error("verify_agreement: ranks disagree at start (model shape, options or data): rank " + std::to_string(r) +
                " has " + a + " where rank 0 has " + b + " (line " + std::to_string(i + 1) +
                " of the fingerprint); every rank must run the same command on the same data");
  }
}

template <class Scalar>
class DataParallel {
 public:
  using Vector = Eigen::Matrix<Scalar, Eigen::Dynamic, 1>;
  using Bucket = typename RingAllReduce<Scalar>::Bucket;

  // comm must outlive this object. infos: the model's flat layout.
  // Collective: throws on every rank unless every rank has the same number
  // of values and the same buckets.
  DataParallel(const Communicator& comm, const std::vector<ParameterInfo>& infos, DataParallelOptions options = {})
      : comm_(&comm), options_(options), size_(agreed_size(comm, infos)),
        ring_(comm, make_buckets(infos, options.bucket_bytes)) {}

  int rank() const noexcept { return comm_->rank(); }
  int size() const noexcept { return comm_->size(); }
  bool is_root() const noexcept { return comm_->is_root(); }
  const Communicator& communicator() const noexcept { return *comm_; }
  const DataParallelOptions& options() const noexcept { return options_; }
  std::size_t bucket_count() const noexcept { return ring_.bucket_count(); }
  const Bucket& bucket(std::size_t b) const { return ring_.bucket(b); }

  // ---- Start-up ----

  // Rank 0's values replace every rank's, then verify_parameters().
  // The counts are compared across ranks first (the broadcast does it), so
  // that a bad size throws on every rank, not on one while the rest wait.
  void broadcast_parameters(Eigen::Ref<Vector> values) const {
    comm_->broadcast(values.data(), static_cast<std::size_t>(values.size()), 0, "DataParallel::broadcast_parameters");
    check_size("broadcast_parameters", values.size());
    verify_parameters(values);
  }

  // Throws on every rank unless every rank holds the same parameter bytes.
  void verify_parameters(const Eigen::Ref<const Vector>& values) const {
    comm_->require_same(static_cast<long long>(values.size()), "DataParallel::verify_parameters",
                        "the number of values");
    check_size("verify_parameters", values.size());
    const std::vector<std::uint64_t> h = comm_->allgather(bytes_hash(values.data(), values.size()));
    for (std::size_t r = 1; r < h.size(); ++r)
      if (h[r] != h[0])
        throw Error("DataParallel::verify_parameters: rank " + std::to_string(r) +
                    "'s parameters differ from rank 0's (hash of the parameter bytes)");
  }

  // Rank 0's optimiser state and step count replace every rank's (resume
  // from a checkpoint that only rank 0 read). Collective.
  void broadcast_optimizer(Optimizer<Scalar>& optimizer) const {
    long long steps = comm_->broadcast_value(optimizer.steps());
    long long vectors = comm_->broadcast_value(static_cast<long long>(optimizer.state().size()));
    if (vectors == 0) {  // rank 0 has taken no step yet (SGD without momentum has no state at all)
      if (steps == 0) {
        optimizer.reset();
      } else if (!optimizer.state().empty() || optimizer.steps() != steps) {
        optimizer.restore({}, steps);
      }
      return;
    }
    std::vector<Vector> state(static_cast<std::size_t>(vectors));
    for (std::size_t i = 0; i < state.size(); ++i) {
      state[i] = comm_->is_root() ? optimizer.state()[i] : Vector::Zero(size_);
      comm_->broadcast(state[i].data(), static_cast<std::size_t>(state[i].size()), 0,
                       "DataParallel::broadcast_optimizer");
      check_size("broadcast_optimizer", state[i].size());
    }
    optimizer.restore(std::move(state), steps);
  }

  // ---- Per step ----

  // Sum over ranks of a count (the global batch's tokens: the loss
  // normaliser every rank must use).
  long long global_count(long long local) const { return comm_->sum(local); }

  // Starts a reduction round on `gradients` (the model's flat gradient
  // buffer, already holding or about to receive this rank's gradients).
  void begin(Eigen::Ref<Vector> gradients) {
    check_size("begin", gradients.size());
    if (data_) throw synattn::Error("DataParallel::begin: the previous round was not finish()ed");
    data_ = gradients.data();
  }

  // The model's backward reports: gradients at offsets >= from are final.
  // With overlap, every bucket inside [from, end) starts now; all started
  // buckets progress.
  void ready(Index from) {
    if (!data_) throw synattn::Error("DataParallel::ready: call begin() first");
    if (!options_.overlap) return;
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t b = ring_.bucket_count(); b-- > 0;) {
      if (ring_.bucket(b).begin < from) break;  // buckets ascend; lower ones are not final yet
      if (!ring_.started(b)) ring_.start(data_, b);
    }
    ring_.progress();
    progress_seconds_ += seconds_since(t0);
  }

  // A callback for SyntaxTransformerTagger::backward(cache, hook()).
  std::function<void(Index)> hook() {
    return [this](Index from) { ready(from); };
  }

  // Starts what has not started, waits for everything: the buffer then
  // holds the sum over ranks. The time spent here is the reduction time the
  // backward pass did not hide (wait_seconds()).
  void finish() {
    if (!data_) throw synattn::Error("DataParallel::finish: call begin() first");
    const auto t0 = std::chrono::steady_clock::now();
    for (std::size_t b = ring_.bucket_count(); b-- > 0;)
      if (!ring_.started(b)) ring_.start(data_, b);
    ring_.wait();
    data_ = nullptr;
    wait_seconds_ += seconds_since(t0);
    ++rounds_;
  }

  // Seconds blocked in finish() and spent in ready() since construction.
  double wait_seconds() const noexcept { return wait_seconds_; }
  double progress_seconds() const noexcept { return progress_seconds_; }
  long long rounds() const noexcept { return rounds_; }
  // Bytes this rank sends per round: 2 (P-1)/P of the buffer (ring).
  double bytes_sent_per_round() const noexcept {
    const double P = static_cast<double>(comm_->size());
    return 2.0 * (P - 1.0) / P * static_cast<double>(size_) * static_cast<double>(sizeof(Scalar));
  }

  // Buckets for a layout (see the top of the file).
  static std::vector<Bucket> make_buckets(const std::vector<ParameterInfo>& infos, std::size_t bucket_bytes) {
    std::vector<Bucket> out;  // built from the end, reversed at the end
    const Index cap = static_cast<Index>(std::max<std::size_t>(bucket_bytes / sizeof(Scalar), 1));
    Index end = infos.empty() ? 0 : infos.back().offset + infos.back().size();
    Index begin = end;
    for (std::size_t i = infos.size(); i-- > 0;) {
      begin = infos[i].offset;
      if (end - begin >= cap) {
        out.push_back({begin, end});
        end = begin;
      }
    }
    if (end > 0) out.push_back({0, end});
    return std::vector<Bucket>(out.rbegin(), out.rend());
  }

 private:
  // The layout's number of values, once every rank is known to have the same.
  static Index agreed_size(const Communicator& comm, const std::vector<ParameterInfo>& infos) {
    const Index n = infos.empty() ? 0 : infos.back().offset + infos.back().size();
    comm.require_same(static_cast<long long>(n), "DataParallel",
                      "the number of parameter values (the ranks built different models)");
    return n;
  }
  static double seconds_since(std::chrono::steady_clock::time_point t0) {
    return std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  }
  void check_size(const char* fn, Index n) const {
    if (n != size_)
      throw synattn::Error(std::string("DataParallel::") + fn + ": the buffer has " + std::to_string(n) +
                           " values, expected the model's " + std::to_string(size_));
  }

  const Communicator* comm_;
  DataParallelOptions options_;
  Index size_;
  RingAllReduce<Scalar> ring_;
  Scalar* data_ = nullptr;
  double wait_seconds_ = 0, progress_seconds_ = 0;
  long long rounds_ = 0;
};

// One data-parallel gradient of a model with the tagger's interface: this
// rank's shard (tokens/lengths/buckets/labels; zero sentences is allowed)
// through forward, loss normalised by the global batch's token count, and
// backward with the reduction overlapped; on return model.gradients() holds
// the global batch's gradient on every rank. Returns this rank's loss terms
// (sum them across ranks for the global loss). `dropout` (null: no dropout)
// should start at the shard's first global sentence (see the top).
template <class Model, class Scalar, class Ids, class Lengths, class Buckets, class Cache>
auto data_parallel_gradient(Model& model, DataParallel<Scalar>& dp, const Ids& ids, const Lengths& lengths,
                            const Buckets& buckets, const Ids& labels, Cache& cache, const RandomStream* dropout,
                            long long global_tokens) {
  model.zero_grad();
  dp.begin(model.gradients());
  decltype(model.loss(cache, cache.logits, labels, 1.0)) result{};
  if (!lengths.empty()) {
    // The logits in the cache's lent buffer (TaggerCache::logits).
    cache.logits.resize(ids.size(), model.options().num_classes);
    model.forward({ids, lengths, buckets}, cache, cache.logits, dropout);
    result = model.loss(cache, cache.logits, labels, static_cast<double>(global_tokens > 0 ? global_tokens : 1));
    model.backward(cache, dp.hook());
  }
  dp.finish();
  return result;
}

}  // namespace mpi
}  // namespace synattn

#endif  // SYNATTN_MPI_DATA_PARALLEL_HPP
