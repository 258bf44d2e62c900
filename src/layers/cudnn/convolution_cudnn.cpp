// convolution_cudnn.cpp — Convolution's cuDNN engine (kernels/dense.hpp): descriptors for x, the
// weights, y and the bias; grouped, strided, padded, dilated cross-correlation in FP32 with
// CUDNN_FMA_MATH (no TF32 tensor cores, so results stay within float rounding of the CPU's).
//
// Algorithms: when the layer is shaped (at set-up, before the arena exists), cuDNN runs and times
// every algorithm for the shape (cudnnFind*, on memory it allocates for the purpose and frees); the
// fastest that works in plain FP32 and whose workspace fits under the layer's limit is kept, and the
// choice is logged. Choices are cached per shape for the process. The layer then requests the
// largest of the three workspaces as a scratch buffer, so it lives in the arena.
#include <glog/logging.h>

#include <algorithm>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>

#include "cortado/cuda/resources.hpp"  // cuda::Resources, CORTADO_CUDNN_CHECK
#include "cortado/error.hpp"
#include "cortado/kernels/dense.hpp"

namespace cortado {

namespace {

// Owns one cuDNN descriptor. Destruction ignores errors: it may run while an earlier error unwinds.
template <typename T, cudnnStatus_t (*Create)(T*), cudnnStatus_t (*Destroy)(T)>
class Descriptor {
 public:
  Descriptor() { CORTADO_CUDNN_CHECK(Create(&desc_)); }
  ~Descriptor() {
    if (desc_ != nullptr) Destroy(desc_);
  }
  Descriptor(const Descriptor&) = delete;
  Descriptor& operator=(const Descriptor&) = delete;
  T get() const { return desc_; }

 private:
  T desc_ = nullptr;
};

using TensorDescriptor =
    Descriptor<cudnnTensorDescriptor_t, cudnnCreateTensorDescriptor, cudnnDestroyTensorDescriptor>;
using FilterDescriptor =
    Descriptor<cudnnFilterDescriptor_t, cudnnCreateFilterDescriptor, cudnnDestroyFilterDescriptor>;
using ConvolutionDescriptor =
    Descriptor<cudnnConvolutionDescriptor_t, cudnnCreateConvolutionDescriptor, cudnnDestroyConvolutionDescriptor>;

const char* const kForwardNames[] = {"IMPLICIT_GEMM", "IMPLICIT_PRECOMP_GEMM", "GEMM", "DIRECT",
                                     "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
const char* const kBackwardDataNames[] = {"ALGO_0", "ALGO_1", "FFT", "FFT_TILING", "WINOGRAD", "WINOGRAD_NONFUSED"};
const char* const kBackwardFilterNames[] = {"ALGO_0",   "ALGO_1", "FFT", "ALGO_3", "WINOGRAD", "WINOGRAD_NONFUSED",
                                            "FFT_TILING"};

template <size_t N>
const char* NameOf(const char* const (&names)[N], int algo) {
  return algo >= 0 && static_cast<size_t>(algo) < N ? names[algo] : "?";
}

// The first of cuDNN's ranked candidates that succeeded, runs without tensor-core math, and needs at
// most `limit` bytes of workspace (asked again for the exact size). When none fits, the successful
// candidate with the smallest workspace, if that fits; else an Error naming the layer.
template <typename Perf, typename Algo, typename WorkspaceOf>
Algo Choose(const std::vector<Perf>& ranked, int count, Algo fallback, size_t limit, WorkspaceOf workspace_of,
            size_t* bytes, const std::string& who) {
  bool found = false;
  Algo smallest = fallback;
  size_t smallest_bytes = 0;
  for (int i = 0; i < count; ++i) {
    const Perf& p = ranked[i];
    if (p.status != CUDNN_STATUS_SUCCESS) continue;
    size_t need = 0;
    if (workspace_of(p.algo, &need) != CUDNN_STATUS_SUCCESS) continue;
    const bool tensor_ops = p.mathType == CUDNN_TENSOR_OP_MATH || p.mathType == CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
    if (!tensor_ops && need <= limit) {
      *bytes = need;
      return p.algo;
    }
    if (!tensor_ops && (!found || need < smallest_bytes)) found = true, smallest = p.algo, smallest_bytes = need;
  }
  if (!found) CORTADO_CUDNN_CHECK(workspace_of(fallback, &smallest_bytes));
  CORTADO_REQUIRE(smallest_bytes <= limit, who, ": no cuDNN convolution algorithm fits in its workspace of ",
                  limit, " bytes (the smallest needs ", smallest_bytes, ")");
  *bytes = smallest_bytes;
  return smallest;
}

}  // namespace

struct CudnnConvolution {
  TensorDescriptor x, y, bias;
  FilterDescriptor w;
  ConvolutionDescriptor conv;
  cudnnConvolutionFwdAlgo_t forward = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnConvolutionBwdDataAlgo_t backward_data = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
  cudnnConvolutionBwdFilterAlgo_t backward_filter = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0;
  std::string logged;  // the choice last written to the log
};

namespace {

struct Algorithms {
  cudnnConvolutionFwdAlgo_t forward = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnConvolutionBwdDataAlgo_t backward_data = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
  cudnnConvolutionBwdFilterAlgo_t backward_filter = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0;
  size_t forward_bytes = 0, data_bytes = 0, filter_bytes = 0;
};

// cuDNN runs and times every algorithm for the descriptors' shapes (cudnnFind*, on buffers it
// allocates itself: this happens at set-up, before the arena exists) and ranks them by time; the
// fastest in plain FP32 within the workspace limit is kept for each of the three passes.
Algorithms Measure(cudnnHandle_t handle, const CudnnConvolution& c, size_t limit, const std::string& who) {
  Algorithms a;
  int count = 0;
  {
    std::vector<cudnnConvolutionFwdAlgoPerf_t> ranked(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
    CORTADO_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithm(handle, c.x.get(), c.w.get(), c.conv.get(), c.y.get(),
                                                             static_cast<int>(ranked.size()), &count, ranked.data()));
    a.forward = Choose(ranked, count, CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, limit,
                       [&](cudnnConvolutionFwdAlgo_t algo, size_t* bytes) {
                         return cudnnGetConvolutionForwardWorkspaceSize(handle, c.x.get(), c.w.get(), c.conv.get(),
                                                                        c.y.get(), algo, bytes);
                       },
                       &a.forward_bytes, who);
  }
  {
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> ranked(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
    CORTADO_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithm(handle, c.w.get(), c.y.get(), c.conv.get(),
                                                                  c.x.get(), static_cast<int>(ranked.size()), &count,
                                                                  ranked.data()));
    a.backward_data = Choose(ranked, count, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, limit,
                             [&](cudnnConvolutionBwdDataAlgo_t algo, size_t* bytes) {
                               return cudnnGetConvolutionBackwardDataWorkspaceSize(
                                   handle, c.w.get(), c.y.get(), c.conv.get(), c.x.get(), algo, bytes);
                             },
                             &a.data_bytes, who);
  }
  {
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> ranked(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
    CORTADO_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithm(handle, c.x.get(), c.y.get(), c.conv.get(),
                                                                    c.w.get(), static_cast<int>(ranked.size()),
                                                                    &count, ranked.data()));
    a.backward_filter = Choose(ranked, count, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, limit,
                               [&](cudnnConvolutionBwdFilterAlgo_t algo, size_t* bytes) {
                                 return cudnnGetConvolutionBackwardFilterWorkspaceSize(
                                     handle, c.x.get(), c.y.get(), c.conv.get(), c.w.get(), algo, bytes);
                               },
                               &a.filter_bytes, who);
  }
  return a;
}

}  // namespace

bool BuiltWithCudnn() { return true; }

CudnnConvolutionPtr CreateCudnnConvolution() {
  return CudnnConvolutionPtr(new CudnnConvolution, [](CudnnConvolution* conv) { delete conv; });
}

size_t CudnnConvolutionReshape(Context& ctx, CudnnConvolution& c, int num, int num_output, int group,
                               const ConvGeometry& g, size_t workspace_limit, const std::string& who) {
  const cudnnHandle_t handle = cuda::Resources(ctx).cudnn;
  CORTADO_CUDNN_CHECK(cudnnSetTensor4dDescriptor(c.x.get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, num, g.channels,
                                                 g.height, g.width));
  CORTADO_CUDNN_CHECK(cudnnSetTensor4dDescriptor(c.y.get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, num, num_output,
                                                 g.out_h(), g.out_w()));
  CORTADO_CUDNN_CHECK(cudnnSetTensor4dDescriptor(c.bias.get(), CUDNN_TENSOR_NCHW, CUDNN_DATA_FLOAT, 1, num_output,
                                                 1, 1));
  CORTADO_CUDNN_CHECK(cudnnSetFilter4dDescriptor(c.w.get(), CUDNN_DATA_FLOAT, CUDNN_TENSOR_NCHW, num_output,
                                                 g.channels / group, g.kernel_h, g.kernel_w));
  CORTADO_CUDNN_CHECK(cudnnSetConvolution2dDescriptor(c.conv.get(), g.pad_h, g.pad_w, g.stride_h, g.stride_w,
                                                      g.dilation_h, g.dilation_w, CUDNN_CROSS_CORRELATION,
                                                      CUDNN_DATA_FLOAT));
  CORTADO_CUDNN_CHECK(cudnnSetConvolutionGroupCount(c.conv.get(), group));
  CORTADO_CUDNN_CHECK(cudnnSetConvolutionMathType(c.conv.get(), CUDNN_FMA_MATH));
  int dims[4] = {};
  CORTADO_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(c.conv.get(), c.x.get(), c.w.get(), &dims[0], &dims[1],
                                                            &dims[2], &dims[3]));
  CHECK(dims[0] == num && dims[1] == num_output && dims[2] == g.out_h() && dims[3] == g.out_w())
      << who << ": cuDNN's output shape " << dims[0] << "x" << dims[1] << "x" << dims[2] << "x" << dims[3]
      << " differs from the layer's";

  // Measured once per shape and limit in this process: layers of the same shape (and a second net,
  // or a second solver) reuse the choice, so their results agree to the bit.
  std::ostringstream key;
  key << num << ' ' << g.channels << ' ' << g.height << ' ' << g.width << ' ' << num_output << ' ' << group << ' '
      << g.kernel_h << ' ' << g.kernel_w << ' ' << g.pad_h << ' ' << g.pad_w << ' ' << g.stride_h << ' ' << g.stride_w
      << ' ' << g.dilation_h << ' ' << g.dilation_w << ' ' << workspace_limit << ' ' << cuda::Resources(ctx).device;
  static std::mutex cache_mutex;
  static std::map<std::string, Algorithms> cache;
  Algorithms chosen;
  bool measured = false;
  {
    std::lock_guard<std::mutex> lock(cache_mutex);
    auto it = cache.find(key.str());
    if (it != cache.end()) chosen = it->second;
    else measured = true;
  }
  if (measured) {
    chosen = Measure(handle, c, workspace_limit, who);
    std::lock_guard<std::mutex> lock(cache_mutex);
    cache.emplace(key.str(), chosen);
  }
  c.forward = chosen.forward;
  c.backward_data = chosen.backward_data;
  c.backward_filter = chosen.backward_filter;
  const size_t forward_bytes = chosen.forward_bytes, data_bytes = chosen.data_bytes,
               filter_bytes = chosen.filter_bytes;
  const size_t workspace = std::max({forward_bytes, data_bytes, filter_bytes});
  std::ostringstream choice;
  choice << who << ": cuDNN algorithms (" << (measured ? "measured" : "as measured for the same shape")
         << ") forward " << NameOf(kForwardNames, c.forward) << ", backward data "
         << NameOf(kBackwardDataNames, c.backward_data) << ", backward filter "
         << NameOf(kBackwardFilterNames, c.backward_filter) << "; workspace " << workspace << " bytes";
  if (choice.str() != c.logged) {
    c.logged = choice.str();
    LOG(INFO) << c.logged;
  }
  return workspace;
}

void CudnnConvolutionForward(Context& ctx, const CudnnConvolution& c, const float* x, const float* w,
                             const float* bias, float* y, void* workspace, size_t workspace_bytes) {
  const cudnnHandle_t handle = cuda::Resources(ctx).cudnn;
  const float one = 1.0f, zero = 0.0f;
  CORTADO_CUDNN_CHECK(cudnnConvolutionForward(handle, &one, c.x.get(), x, c.w.get(), w, c.conv.get(), c.forward,
                                              workspace, workspace_bytes, &zero, c.y.get(), y));
  if (bias != nullptr) CORTADO_CUDNN_CHECK(cudnnAddTensor(handle, &one, c.bias.get(), bias, &one, c.y.get(), y));
}

void CudnnConvolutionBackward(Context& ctx, const CudnnConvolution& c, const float* x, const float* w,
                              const float* dy, float* dw, float* db, float* dx, void* workspace,
                              size_t workspace_bytes) {
  const cudnnHandle_t handle = cuda::Resources(ctx).cudnn;
  const float one = 1.0f, zero = 0.0f;
  if (db != nullptr)
    CORTADO_CUDNN_CHECK(cudnnConvolutionBackwardBias(handle, &one, c.y.get(), dy, &one, c.bias.get(), db));
  if (dw != nullptr)
    CORTADO_CUDNN_CHECK(cudnnConvolutionBackwardFilter(handle, &one, c.x.get(), x, c.y.get(), dy, c.conv.get(),
                                                       c.backward_filter, workspace, workspace_bytes, &one,
                                                       c.w.get(), dw));
  if (dx != nullptr)
    CORTADO_CUDNN_CHECK(cudnnConvolutionBackwardData(handle, &one, c.w.get(), w, c.y.get(), dy, c.conv.get(),
                                                     c.backward_data, workspace, workspace_bytes, &zero, c.x.get(),
                                                     dx));
}

}  // namespace cortado
