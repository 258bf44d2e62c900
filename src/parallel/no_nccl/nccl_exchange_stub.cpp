// nccl_exchange_stub.cpp — a build without NCCL (or without CUDA): data-parallel GPU training is an
// Error that says what is missing; CPU ranks exchange over MPI and need none of this.
#include "cortado/error.hpp"
#include "cortado/parallel.hpp"

namespace cortado {

bool BuiltWithNccl() { return false; }

std::unique_ptr<GradientExchange> CreateNcclExchange(Ranks&, Context&, Net&, size_t) {
  Fail("data-parallel training on GPUs needs NCCL, and this build of Cortado has none (install NCCL and "
       "rebuild with CUDA)");
}

void AbortGpuExchanges() {}

}  // namespace cortado
