// batch_copy_stub.cpp — BatchUploader in a CPU-only build: there is no GPU to upload to (no GPU
// context can exist here, so none is reached in practice; a plan for a GPU makes only the staging
// blobs, in batch_uploader.cpp); the interface is batch_uploader.hpp's.
#include "cortado/data/batch_uploader.hpp"
#include "cortado/error.hpp"

namespace cortado {

struct BatchUploader::State {};

namespace {
[[noreturn]] void NoGpu() {
  Fail("[BatchUploader] this build of Cortado has no GPU support (rebuild with the CUDA toolkit)");
}
}  // namespace

std::shared_ptr<BatchUploader::State> BatchUploader::StartCopies(Context&, const std::vector<int64_t>&) { NoGpu(); }
BatchUploader::~BatchUploader() = default;
const std::vector<float*>& BatchUploader::Stage() { NoGpu(); }
void BatchUploader::Upload(const BlobVec&) { NoGpu(); }

}  // namespace cortado
