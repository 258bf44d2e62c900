// parallel.hpp — data-parallel training: ranks that each train a copy of the net on their own block of
// every batch and average their gradients before each update.
//
//   Ranks             who trains together, and the small host collectives the solver needs (seeds,
//                     stop flags, losses, generator states). MpiRanks: one rank per process, started
//                     by mpirun (src/parallel/mpi/); ThreadRanks: one rank per thread of one process
//                     (trainer train --gpu=0,1), synchronised in memory.
//   GradientExchange  averages the flat gradient buffer over the ranks in buckets, each started as
//                     soon as the backward pass has produced it, so the exchange overlaps the rest of
//                     backward (as PyTorch's DDP and Horovod do). CPU ranks: MPI_Allreduce on a
//                     communication thread; GPU ranks: NCCL on a communication stream, its
//                     communicator set up from a unique id that rank 0 broadcasts over the Ranks.
//
// Rank r of N reads records [r·B, (r+1)·B) of every N·B (batch_pipeline.hpp), so N ranks of batch B
// train the same weights as one process of batch N·B, up to the order of float sums (BatchNorm keeps
// per-rank statistics, as in Caffe and PyTorch's DDP).
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

namespace cortado {

class Context;
class Net;

// Whether this build has MPI (src/parallel/mpi/) and NCCL (src/parallel/nccl/).
bool BuiltWithMpi();
bool BuiltWithNccl();

class Ranks {
 public:
  virtual ~Ranks() = default;
  int rank() const { return rank_; }
  int size() const { return size_; }
  // Among the ranks on this machine: the GPU a rank uses.
  int local_rank() const { return local_rank_; }
  int local_size() const { return local_size_; }
  // "MPI" or "threads", for the log.
  virtual const char* kind() const = 0;

  // Collectives: every rank calls them in the same order; they return when every rank has.
  // values[i] becomes the sum over the ranks of values[i].
  virtual void SumOnHost(double* values, int count) = 0;
  // The same for host gradient buckets (CPU ranks; MPI only).
  virtual void SumFloatsOnHost(float* values, int64_t count) = 0;
  // Rank root's bytes, on every rank.
  virtual void Broadcast(void* data, size_t bytes, int root) = 0;
  // Every rank's value, in rank order, on rank 0 (empty elsewhere).
  virtual std::vector<std::string> GatherOnRoot(const std::string& value) = 0;

  // After an error on this rank: ends every rank at once (exit code 1), so that none waits forever
  // for this one. Does not return.
  [[noreturn]] virtual void Abort() = 0;

 protected:
  int rank_ = 0, size_ = 1, local_rank_ = 0, local_size_ = 1;
};

// When this process was started by mpirun (Open MPI's OMPI_COMM_WORLD_SIZE, or PMI/PMIx variables),
// initialises MPI and returns this process's rank; otherwise null (a single process, without MPI).
// A build without MPI started by mpirun with more than one process is an Error.
std::unique_ptr<Ranks> JoinMpiRanks(int* argc, char*** argv);

// N ranks, one per thread of this process: make one ThreadRanksGroup, then each thread takes its
// Ranks with Rank(r). Abort() on any rank makes the collectives of every other rank throw Error.
class ThreadRanksGroup {
 public:
  explicit ThreadRanksGroup(int size);
  ~ThreadRanksGroup();
  std::unique_ptr<Ranks> Rank(int rank);
  // Ends the group: every collective, waiting or to come, throws Error (a rank failed).
  void Abort();

  struct Shared;

 private:
  std::shared_ptr<Shared> shared_;
};

class GradientExchange {
 public:
  // bucket_bytes: the solver field exchange_bucket_mb (default 4 MiB; scripts/bench/README.md, "Model").
  // For the net's flat gradient buffer (after Initialize), on ctx's device: MPI on the CPU, NCCL on a
  // GPU (an Error in a build without NCCL).
  static std::unique_ptr<GradientExchange> Create(Ranks& ranks, Context& ctx, Net& net, size_t bucket_bytes);
  virtual ~GradientExchange();

  // Net::Backward calls it after each layer's backward pass (in the backward order, every layer,
  // whether or not it had one): starts the buckets no later layer writes to.
  void LayerDone(int layer);
  // Starts the buckets not started yet; returns when the averaged gradients are in the buffer (CPU),
  // or queues the compute stream's wait for them (GPU). Then the next pass may begin.
  void Finish();

  int num_buckets() const { return static_cast<int>(buckets_.size()); }
  // Host seconds Finish has spent waiting (CPU), in total.
  double wait_seconds() const { return wait_seconds_; }

  // A bucket: count floats of the flat buffer from offset; ready when layer `ready_after`'s backward
  // (and every later layer's) has run.
  struct Bucket {
    int64_t offset, count;
    int ready_after;
  };
  // Splits the net's parameters into buckets of about bucket_bytes, the last layers' first (the
  // order backward produces them); a parameter is never split.
  static std::vector<Bucket> PlanBuckets(Net& net, size_t bucket_bytes);

 protected:
  GradientExchange(Ranks& ranks, Net& net, size_t bucket_bytes);
  virtual void Start(const Bucket& bucket) = 0;
  // Waits for every started bucket (CPU) or queues the wait (GPU).
  virtual void WaitAll() = 0;

  Ranks& ranks_;
  float* diff_;

 private:
  std::vector<Bucket> buckets_;
  size_t next_ = 0;
  double wait_seconds_ = 0;
};

// The GPU exchange (src/parallel/nccl/); a build without NCCL throws Error.
std::unique_ptr<GradientExchange> CreateNcclExchange(Ranks& ranks, Context& ctx, Net& net, size_t bucket_bytes);
// Aborts every NCCL communicator of this process (ncclCommAbort), so that no rank of a thread group
// waits on the GPU for one that failed. Nothing in a build without NCCL.
void AbortGpuExchanges();

}  // namespace cortado
