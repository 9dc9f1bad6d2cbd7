// synattn — a deterministic, non-blocking ring all-reduce (sum) over fixed
// buckets of one flat buffer.
//
// Why not MPI_Iallreduce: MPI does not promise the order in which a float
// sum is combined; Open MPI picks an algorithm by message size and rank
// count, and different algorithms round differently. Here the order is ours:
// bucket b (a fixed slice [begin, end) of the buffer) is cut into P chunks
// with fixed boundaries, chunk c is accumulated around the ring starting at
// rank c (x_{c+1} + x_c, then x_{c+2} + that, ...), and the finished chunks
// are passed around unchanged. For fixed P and fixed buckets every element is
// therefore summed in the same order on every run and on every rank (bit
// for bit), whatever the network, the timing or whether the reduction
// overlapped with the backward pass. Traffic per rank is the ring's
// 2 (P-1)/P times the bucket, as MPI's own ring.
//
// Non-blocking: start(b) queues bucket b and posts its first exchange as
// soon as fewer than max_in_flight buckets are under way; progress() (call
// it often, e.g. between layers' backward passes) advances every posted
// bucket as far as its messages have arrived and posts queued ones; wait()
// completes them all. Only the thread that owns MPI (FUNNELED) may call
// these. The limit bounds the outstanding messages (and the receive
// buffers being written) at any moment; four keep a link busy. (On one
// machine, Open MPI's shared-memory transport with CMA single-copy, its
// default, ran this ring 10x slower for buffers above ~4 MB whatever the
// limit — 12-15 ms for 1.05 M floats against 1.0 ms with
// `--mca btl_vader_single_copy_mechanism none`, tests/mpi/mpi_ring_timing;
// README says so.)
//
// One exchange per step: step s < P-1 (reduce-scatter) sends chunk (r - s)
// to rank r+1 and adds the chunk (r - s - 1) received from rank r-1 into its
// own; step P-1+s (all-gather) sends the finished chunk (r + 1 - s) and
// receives the finished chunk (r - s) in place. Tags are bucket indices, so
// several buckets may be in flight at once.
//
// Agreement and hangs. Every rank must cut the same buckets: with other
// sizes a receive truncates or silently takes a short message, with other
// counts an exchange is never matched. The constructor is therefore
// collective and checks it (the total and a checksum of the boundaries),
// throwing the same mpi::Error on every rank when they differ. wait()
// completes exchanges through the communicator's wait (communicator.hpp):
// a peer that stops answering ends the job after the communicator's
// timeout, with a message naming the bucket and step, instead of hanging.
#ifndef SYNATTN_MPI_RING_ALLREDUCE_HPP
#define SYNATTN_MPI_RING_ALLREDUCE_HPP

#include <mpi.h>

#include <Eigen/Core>

#include <algorithm>
#include <string>
#include <utility>
#include <vector>

#include "../error.hpp"
#include "../matrix.hpp"
#include "checksum.hpp"
#include "communicator.hpp"

namespace synattn {
namespace mpi {

template <class Scalar>
class RingAllReduce {
 public:
  struct Bucket {
    Index begin = 0, end = 0;  // slice of the flat buffer
  };

  // buckets: disjoint slices, identical on every rank (checked here:
  // collective). The communicator must outlive this object.
  RingAllReduce(const Communicator& comm, std::vector<Bucket> buckets, int max_in_flight = 4)
      : comm_(&comm), buckets_(std::move(buckets)), max_in_flight_(max_in_flight) {
    // First, before any local check can throw on one rank only.
    Index total = 0;
    Checksum layout;
    for (const Bucket& k : buckets_) {
      total += k.end - k.begin;
      layout.add(k.begin).add(k.end);
    }
    comm.require_same(static_cast<long long>(total), "RingAllReduce", "the number of values in the buckets");
    comm.require_same(static_cast<long long>(buckets_.size()), "RingAllReduce", "the number of buckets");
    comm.require_same(layout.value(), "RingAllReduce", "the bucket boundaries (checksum)");
    if (max_in_flight < 1)
      throw synattn::Error("RingAllReduce: max_in_flight must be >= 1, got " + std::to_string(max_in_flight));
    const Index P = comm.size();
    state_.resize(buckets_.size());
    for (std::size_t b = 0; b < buckets_.size(); ++b) {
      const Bucket& k = buckets_[b];
      if (k.begin < 0 || k.end < k.begin)
        throw synattn::Error("RingAllReduce: bucket " + std::to_string(b) + " is [" + std::to_string(k.begin) + ", " +
                             std::to_string(k.end) + "), expected 0 <= begin <= end");
      if ((k.end - k.begin) / P >= (Index{1} << 30))
        throw Error("RingAllReduce: bucket " + std::to_string(b) + " is too large for one MPI message per chunk");
      // Chunk 0 is the widest: the receive buffer of the reduce-scatter steps.
      state_[b].scratch.resize(chunk_end(b, 0) - chunk_begin(b, 0));
    }
  }
  RingAllReduce(const RingAllReduce&) = delete;
  RingAllReduce& operator=(const RingAllReduce&) = delete;
  ~RingAllReduce() {
    // Never leave requests behind (an exception between start and wait).
    for (auto& s : state_)
      for (MPI_Request& r : s.requests)
        if (r != MPI_REQUEST_NULL) {
          MPI_Cancel(&r);
          MPI_Request_free(&r);
        }
  }

  std::size_t bucket_count() const noexcept { return buckets_.size(); }
  const Bucket& bucket(std::size_t b) const { return buckets_.at(b); }

  // Starts reducing bucket b of `data` in place (data must stay valid and
  // untouched in that slice until wait()). A bucket starts once per round;
  // buckets are posted in the order they were started.
  void start(Scalar* data, std::size_t b) {
    State& s = state_.at(b);
    if (s.step >= 0) throw synattn::Error("RingAllReduce::start: bucket " + std::to_string(b) + " was already started");
    s.data = data;
    s.step = 0;
    if (comm_->size() == 1) {
      s.step = total_steps();  // nothing to exchange
      return;
    }
    order_.push_back(b);
    pump();
  }
  bool started(std::size_t b) const { return state_.at(b).step >= 0; }

  // Advances every posted bucket as far as its messages allow; never blocks.
  void progress() {
    for (std::size_t b = 0; b < state_.size(); ++b) {
      State& s = state_[b];
      while (s.posted && s.step < total_steps()) {
        int done = 0;
        check(MPI_Testall(2, s.requests, &done, MPI_STATUSES_IGNORE), "MPI_Testall", "RingAllReduce::progress");
        if (!done) break;
        advance(b);
      }
    }
  }

  // Completes every started bucket (blocking) and makes the object ready for
  // the next round. Throws if a bucket was never started.
  void wait() {
    for (std::size_t b = 0; b < state_.size(); ++b)
      if (state_[b].step < 0)
        throw synattn::Error("RingAllReduce::wait: bucket " + std::to_string(b) + " was never started");
    // In start order: when bucket order_[i] is reached, the ones before it
    // are done, so there is room to post it.
    for (std::size_t b : order_) {
      State& s = state_[b];
      pump();
      SYNATTN_ASSERT(s.posted || s.step == total_steps());
      while (s.step < total_steps()) {
        comm_->wait(2, s.requests, [&] { return describe_step(b); });
        advance(b);
      }
    }
    for (State& s : state_) {
      s.step = -1;
      s.posted = false;
    }
    order_.clear();
    next_to_post_ = 0;
    in_flight_ = 0;
  }

 private:
  struct State {
    Scalar* data = nullptr;
    int step = -1;  // -1: not started; total_steps(): done
    bool posted = false;  // its exchanges are under way (counted in in_flight_)
    MPI_Request requests[2] = {MPI_REQUEST_NULL, MPI_REQUEST_NULL};
    Eigen::Matrix<Scalar, Eigen::Dynamic, 1> scratch;
  };

  int total_steps() const noexcept { return 2 * (comm_->size() - 1); }
  // What wait() waits for, for the timeout message.
  std::string describe_step(std::size_t b) const {
    const int P = comm_->size(), r = comm_->rank();
    return "the ring all-reduce (RingAllReduce::wait) of bucket " + std::to_string(b) + " of " +
           std::to_string(buckets_.size()) + ", step " + std::to_string(state_[b].step + 1) + " of " +
           std::to_string(total_steps()) + ": a message from rank " + std::to_string((r + P - 1) % P) +
           " and one to rank " + std::to_string((r + 1) % P);
  }
  static Index wrap(Index c, Index P) { return ((c % P) + P) % P; }
  // Chunk c of bucket b: fixed boundaries, the first (size % P) chunks one longer.
  Index chunk_begin(std::size_t b, Index c) const {
    const Index n = buckets_[b].end - buckets_[b].begin, P = comm_->size();
    return buckets_[b].begin + c * (n / P) + std::min(c, n % P);
  }
  Index chunk_end(std::size_t b, Index c) const { return chunk_begin(b, c + 1); }

  // Posts the first exchange of queued buckets while there is room.
  void pump() {
    while (in_flight_ < max_in_flight_ && next_to_post_ < order_.size()) {
      const std::size_t b = order_[next_to_post_++];
      state_[b].posted = true;
      ++in_flight_;
      post(b);
    }
  }

  // Posts the receive and the send of bucket b's current step.
  void post(std::size_t b) {
    State& s = state_[b];
    const Index P = comm_->size(), r = comm_->rank();
    const int right = static_cast<int>(wrap(r + 1, P)), left = static_cast<int>(wrap(r - 1, P));
    Index send_chunk, recv_chunk;
    Scalar* recv_to;
    if (s.step < P - 1) {  // reduce-scatter: receive into scratch, add in advance()
      send_chunk = wrap(r - s.step, P);
      recv_chunk = wrap(r - s.step - 1, P);
      recv_to = s.scratch.data();
    } else {  // all-gather: finished chunks, received in place
      const Index t = s.step - (P - 1);
      send_chunk = wrap(r + 1 - t, P);
      recv_chunk = wrap(r - t, P);
      recv_to = s.data + chunk_begin(b, recv_chunk);
    }
    const int tag = static_cast<int>(b);
    const int recv_n = static_cast<int>(chunk_end(b, recv_chunk) - chunk_begin(b, recv_chunk));
    const int send_n = static_cast<int>(chunk_end(b, send_chunk) - chunk_begin(b, send_chunk));
    check(MPI_Irecv(recv_to, recv_n, datatype<Scalar>(), left, tag, comm_->get(), &s.requests[0]), "MPI_Irecv",
          "RingAllReduce");
    check(MPI_Isend(s.data + chunk_begin(b, send_chunk), send_n, datatype<Scalar>(), right, tag, comm_->get(),
                    &s.requests[1]),
          "MPI_Isend", "RingAllReduce");
  }

  // Bucket b's current exchange has completed: accumulate, then post the next.
  void advance(std::size_t b) {
    State& s = state_[b];
    const Index P = comm_->size(), r = comm_->rank();
    if (s.step < P - 1) {
      const Index c = wrap(r - s.step - 1, P);
      const Index begin = chunk_begin(b, c), n = chunk_end(b, c) - begin;
      Scalar* own = s.data + begin;
      const Scalar* in = s.scratch.data();
      // own = own + in: one addition per element, the ring fixes the order.
      for (Index i = 0; i < n; ++i) own[i] = own[i] + in[i];
    }
    ++s.step;
    if (s.step < total_steps()) {
      post(b);
    } else {
      --in_flight_;
      pump();
    }
  }

  const Communicator* comm_;
  std::vector<Bucket> buckets_;
  int max_in_flight_;
  std::vector<State> state_;
  std::vector<std::size_t> order_;  // started buckets, in start order
  std::size_t next_to_post_ = 0;    // order_[next_to_post_] is the next to post
  int in_flight_ = 0;
};

}  // namespace mpi
}  // namespace synattn

#endif  // SYNATTN_MPI_RING_ALLREDUCE_HPP
