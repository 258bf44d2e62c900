// mpi_ranks_stub.cpp — JoinMpiRanks in a build without MPI: a single process is fine; one of several
// started by mpirun cannot train with the others, which is an Error rather than N separate runs.
#include <cstdlib>

#include "cortado/error.hpp"
#include "cortado/parallel.hpp"

namespace cortado {

bool BuiltWithMpi() { return false; }

std::unique_ptr<Ranks> JoinMpiRanks(int*, char***) {
  const char* size = std::getenv("OMPI_COMM_WORLD_SIZE");
  if (size == nullptr) size = std::getenv("PMI_SIZE");
  CORTADO_REQUIRE(size == nullptr || std::atoi(size) <= 1, "started by mpirun with ", size,
                  " processes, but this build of Cortado has no MPI (install libopenmpi-dev and rebuild)");
  return nullptr;
}

}  // namespace cortado
