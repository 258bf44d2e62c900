// mpi_ranks.cpp — MpiRanks (parallel.hpp): one rank per process, started by mpirun on one machine or
// several (-H host1,host2). MPI is initialised for MPI_THREAD_SERIALIZED: the gradient exchange's
// communication thread and the solver's thread both call MPI, never at once (a mutex), and in the
// same order on every rank (the solver's collectives come only after the exchange has finished).
// MPI's C interface only: without these, mpi.h in C++ pulls in the deprecated C++ bindings' library.
#define OMPI_SKIP_MPICXX 1
#define MPICH_SKIP_MPICXX 1
#include <mpi.h>

#include <algorithm>
#include <cstdlib>
#include <mutex>
#include <string>
#include <vector>

#include "cortado/error.hpp"
#include "cortado/parallel.hpp"

namespace cortado {

bool BuiltWithMpi() { return true; }

namespace {

void Check(int rc, const char* what) {
  if (rc == MPI_SUCCESS) return;
  char text[MPI_MAX_ERROR_STRING];
  int length = 0;
  MPI_Error_string(rc, text, &length);
  Fail("MPI: ", what, " failed: ", std::string(text, length));
}

class MpiRanks final : public Ranks {
 public:
  MpiRanks(int* argc, char*** argv) {
    int provided = 0;
    Check(MPI_Init_thread(argc, argv, MPI_THREAD_SERIALIZED, &provided), "MPI_Init_thread");
    if (provided < MPI_THREAD_SERIALIZED) {
      MPI_Finalize();
      Fail("this MPI library cannot be called from more than one thread (MPI_THREAD_SERIALIZED)");
    }
    Check(MPI_Comm_dup(MPI_COMM_WORLD, &world_), "MPI_Comm_dup");
    MPI_Comm_rank(world_, &rank_);
    MPI_Comm_size(world_, &size_);
    Check(MPI_Comm_split_type(world_, MPI_COMM_TYPE_SHARED, rank_, MPI_INFO_NULL, &local_), "MPI_Comm_split_type");
    MPI_Comm_rank(local_, &local_rank_);
    MPI_Comm_size(local_, &local_size_);
  }

  ~MpiRanks() override {
    MPI_Comm_free(&local_);
    MPI_Comm_free(&world_);
    MPI_Finalize();
  }

  const char* kind() const override { return "MPI"; }

  void SumOnHost(double* values, int count) override {
    std::lock_guard<std::mutex> lock(mutex_);
    Check(MPI_Allreduce(MPI_IN_PLACE, values, count, MPI_DOUBLE, MPI_SUM, world_), "MPI_Allreduce");
  }

  void SumFloatsOnHost(float* values, int64_t count) override {
    std::lock_guard<std::mutex> lock(mutex_);
    constexpr int64_t kMostPerCall = int64_t{1} << 30;  // MPI counts are ints
    for (int64_t done = 0; done < count; done += kMostPerCall) {
      const int n = static_cast<int>(std::min(kMostPerCall, count - done));
      Check(MPI_Allreduce(MPI_IN_PLACE, values + done, n, MPI_FLOAT, MPI_SUM, world_), "MPI_Allreduce");
    }
  }

  void Broadcast(void* data, size_t bytes, int root) override {
    std::lock_guard<std::mutex> lock(mutex_);
    Check(MPI_Bcast(data, static_cast<int>(bytes), MPI_BYTE, root, world_), "MPI_Bcast");
  }

  std::vector<std::string> GatherOnRoot(const std::string& value) override {
    std::lock_guard<std::mutex> lock(mutex_);
    const int length = static_cast<int>(value.size());
    std::vector<int> lengths(rank_ == 0 ? size_ : 0), offsets(lengths.size(), 0);
    Check(MPI_Gather(&length, 1, MPI_INT, lengths.data(), 1, MPI_INT, 0, world_), "MPI_Gather");
    std::string all;
    if (rank_ == 0) {
      for (int r = 1; r < size_; ++r) offsets[r] = offsets[r - 1] + lengths[r - 1];
      all.resize(static_cast<size_t>(offsets.back() + lengths.back()));
    }
    Check(MPI_Gatherv(value.data(), length, MPI_CHAR, all.data(), lengths.data(), offsets.data(), MPI_CHAR, 0,
                      world_),
          "MPI_Gatherv");
    std::vector<std::string> values;
    for (int r = 0; r < static_cast<int>(lengths.size()); ++r) values.push_back(all.substr(offsets[r], lengths[r]));
    return values;
  }

  [[noreturn]] void Abort() override {
    MPI_Abort(MPI_COMM_WORLD, 1);
    std::_Exit(1);  // MPI_Abort does not return; if it did, the process still ends
  }

 private:
  MPI_Comm world_ = MPI_COMM_NULL, local_ = MPI_COMM_NULL;
  std::mutex mutex_;
};

// Open MPI sets OMPI_COMM_WORLD_SIZE in the processes mpirun starts; MPICH's and Slurm's launchers set
// PMI_SIZE, PMIx-based ones PMIX_RANK.
bool LaunchedByMpirun() {
  return std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr ||
         std::getenv("PMIX_RANK") != nullptr;
}

}  // namespace

std::unique_ptr<Ranks> JoinMpiRanks(int* argc, char*** argv) {
  if (!LaunchedByMpirun()) return nullptr;
  return std::make_unique<MpiRanks>(argc, argv);
}

}  // namespace cortado
