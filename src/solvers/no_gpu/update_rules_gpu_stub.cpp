// update_rules_gpu_stub.cpp — the solver's GPU arithmetic in a CPU-only build: every entry point says
// that the GPU path is missing (a GPU solver cannot be created here: its Context throws first).
#include "cortado/error.hpp"
#include "cortado/update_rules.hpp"

namespace cortado {

namespace {
[[noreturn]] void NoGpu(const char* what) {
  Fail("[", what, "] this build of Cortado has no GPU support (rebuild with the CUDA toolkit)");
}
}  // namespace

void gpu_update(Context&, const UpdateConstants&, FlatParams&, const std::vector<float*>&, float) {
  NoGpu("gpu_update");
}
void gpu_regularize(Context&, FlatParams&, float, bool) { NoGpu("gpu_regularize"); }
void gpu_update_fused(Context&, const UpdateConstants&, FlatParams&, const std::vector<float*>&, const FusedUpdate&) {
  NoGpu("gpu_update_fused");
}
void gpu_download(Context&, int64_t, const float*, float*) { NoGpu("gpu_download"); }
void gpu_upload(Context&, int64_t, const float*, float*) { NoGpu("gpu_upload"); }

}  // namespace cortado
