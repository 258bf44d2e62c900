// convolution_cudnn.cpp — Convolution's cuDNN engine (convolution_gpu.hpp): descriptors for x, the
// weights, y and the bias; grouped, strided, padded, dilated cross-correlation on FP32 data, with TF32
// tensor cores where the context allows them (Context::tf32), else strict FP32 (CUDNN_FMA_MATH).
//
// Algorithms: when the layer is shaped (at set-up, before the arena exists), cuDNN runs and times
// every algorithm for the shape (cudnnFind*, on memory it allocates for the purpose and frees); the
// fastest whose math type the context allows, deterministic when the context asks for reproducible
// runs, and whose workspace fits under the layer's limit is kept (cuda/cudnn_choice.hpp), and the
// choice is logged. Choices are cached per shape and rules for the process. The layer then requests
// the largest of the three workspaces as its workspace, which all layers share in the arena.
#include <glog/logging.h>

#include <algorithm>
#include <cstdint>
#include <initializer_list>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>

#include "../convolution_gpu.hpp"
#include "cortado/cuda/cudnn_choice.hpp"
#include "cortado/cuda/resources.hpp"  // cuda::Resources, CORTADO_CUDNN_CHECK
#include "cortado/error.hpp"

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

const char* MathName(cudnnMathType_t math) { return math == CUDNN_FMA_MATH ? "FP32" : "TF32"; }

}  // namespace

struct CudnnConvolution {
  TensorDescriptor x, y, bias;
  FilterDescriptor w;
  ConvolutionDescriptor conv;
  cudnnConvolutionFwdAlgo_t forward = CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM;
  cudnnConvolutionBwdDataAlgo_t backward_data = CUDNN_CONVOLUTION_BWD_DATA_ALGO_0;
  cudnnConvolutionBwdFilterAlgo_t backward_filter = CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0;
  // The math type each pass's algorithm was measured with, set on `conv` before each call.
  cudnnMathType_t forward_math = CUDNN_FMA_MATH, data_math = CUDNN_FMA_MATH, filter_math = CUDNN_FMA_MATH;
  std::string logged;  // the choice last written to the log
};

namespace {

struct Algorithms {
  cudnn_choice::Choice<cudnnConvolutionFwdAlgo_t> forward;
  cudnn_choice::Choice<cudnnConvolutionBwdDataAlgo_t> backward_data;
  cudnn_choice::Choice<cudnnConvolutionBwdFilterAlgo_t> backward_filter;
};

// The chosen algorithm or, when nothing acceptable fits, the first of `fallbacks` (in FP32) whose
// workspace fits; else an Error naming the layer.
template <typename Algo, typename WorkspaceOf>
cudnn_choice::Choice<Algo> OrFallback(cudnn_choice::Choice<Algo> choice, std::initializer_list<Algo> fallbacks,
                                      const cudnn_choice::Rules& rules, WorkspaceOf workspace_of,
                                      const std::string& who) {
  if (choice.found) return choice;
  size_t smallest = SIZE_MAX;
  for (Algo algo : fallbacks) {
    size_t need = 0;
    CORTADO_CUDNN_CHECK(workspace_of(algo, CUDNN_FMA_MATH, &need));
    if (need <= rules.limit) {
      choice.algo = algo, choice.math = CUDNN_FMA_MATH, choice.bytes = need;
      return choice;
    }
    smallest = std::min(smallest, need);
  }
  Fail(who, ": no cuDNN convolution algorithm fits in its workspace of ", rules.limit, " bytes (the smallest needs ",
       smallest, "); raise cudnn_workspace_limit_mb");
}

// cuDNN runs and times every algorithm for the descriptors' shapes (cudnnFind*, on buffers it
// allocates itself: this happens at set-up, before the arena exists) and ranks them by time; the
// rules of cudnn_choice.hpp pick one for each of the three passes.
Algorithms Measure(cudnnHandle_t handle, const CudnnConvolution& c, const cudnn_choice::Rules& rules,
                   const std::string& who) {
  const cudnnMathType_t find_math = rules.tf32 ? CUDNN_DEFAULT_MATH : CUDNN_FMA_MATH;
  Algorithms a;
  int count = 0;
  {
    auto workspace_of = [&](cudnnConvolutionFwdAlgo_t algo, cudnnMathType_t math, size_t* bytes) {
      cudnnSetConvolutionMathType(c.conv.get(), math);
      return cudnnGetConvolutionForwardWorkspaceSize(handle, c.x.get(), c.w.get(), c.conv.get(), c.y.get(), algo,
                                                     bytes);
    };
    std::vector<cudnnConvolutionFwdAlgoPerf_t> ranked(CUDNN_CONVOLUTION_FWD_ALGO_COUNT);
    CORTADO_CUDNN_CHECK(cudnnSetConvolutionMathType(c.conv.get(), find_math));
    CORTADO_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithm(handle, c.x.get(), c.w.get(), c.conv.get(), c.y.get(),
                                                             static_cast<int>(ranked.size()), &count, ranked.data()));
    a.forward = OrFallback(cudnn_choice::Choose(ranked, count, rules, workspace_of),
                           {CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM}, rules, workspace_of, who);
  }
  {
    auto workspace_of = [&](cudnnConvolutionBwdDataAlgo_t algo, cudnnMathType_t math, size_t* bytes) {
      cudnnSetConvolutionMathType(c.conv.get(), math);
      return cudnnGetConvolutionBackwardDataWorkspaceSize(handle, c.w.get(), c.y.get(), c.conv.get(), c.x.get(), algo,
                                                          bytes);
    };
    std::vector<cudnnConvolutionBwdDataAlgoPerf_t> ranked(CUDNN_CONVOLUTION_BWD_DATA_ALGO_COUNT);
    CORTADO_CUDNN_CHECK(cudnnSetConvolutionMathType(c.conv.get(), find_math));
    CORTADO_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithm(handle, c.w.get(), c.y.get(), c.conv.get(),
                                                                  c.x.get(), static_cast<int>(ranked.size()), &count,
                                                                  ranked.data()));
    a.backward_data = OrFallback(cudnn_choice::Choose(ranked, count, rules, workspace_of),
                                 {CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, CUDNN_CONVOLUTION_BWD_DATA_ALGO_0}, rules,
                                 workspace_of, who);
  }
  {
    auto workspace_of = [&](cudnnConvolutionBwdFilterAlgo_t algo, cudnnMathType_t math, size_t* bytes) {
      cudnnSetConvolutionMathType(c.conv.get(), math);
      return cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, c.x.get(), c.y.get(), c.conv.get(), c.w.get(),
                                                            algo, bytes);
    };
    std::vector<cudnnConvolutionBwdFilterAlgoPerf_t> ranked(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_COUNT);
    CORTADO_CUDNN_CHECK(cudnnSetConvolutionMathType(c.conv.get(), find_math));
    CORTADO_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithm(handle, c.x.get(), c.y.get(), c.conv.get(),
                                                                    c.w.get(), static_cast<int>(ranked.size()),
                                                                    &count, ranked.data()));
    a.backward_filter = OrFallback(cudnn_choice::Choose(ranked, count, rules, workspace_of),
                                   {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0}, rules,
                                   workspace_of, who);
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
  int dims[4] = {};
  CORTADO_CUDNN_CHECK(cudnnGetConvolution2dForwardOutputDim(c.conv.get(), c.x.get(), c.w.get(), &dims[0], &dims[1],
                                                            &dims[2], &dims[3]));
  CHECK(dims[0] == num && dims[1] == num_output && dims[2] == g.out_h() && dims[3] == g.out_w())
      << who << ": cuDNN's output shape " << dims[0] << "x" << dims[1] << "x" << dims[2] << "x" << dims[3]
      << " differs from the layer's";

  cudnn_choice::Rules rules;
  rules.tf32 = ctx.tf32();
  rules.deterministic = ctx.gpu_settings().deterministic;
  rules.limit = workspace_limit;

  // Measured once per shape and rules in this process: layers of the same shape (and a second net, or
  // a second solver) reuse the choice, so their results agree to the bit.
  std::ostringstream key;
  key << num << ' ' << g.channels << ' ' << g.height << ' ' << g.width << ' ' << num_output << ' ' << group << ' '
      << g.kernel_h << ' ' << g.kernel_w << ' ' << g.pad_h << ' ' << g.pad_w << ' ' << g.stride_h << ' ' << g.stride_w
      << ' ' << g.dilation_h << ' ' << g.dilation_w << ' ' << workspace_limit << ' ' << rules.tf32 << ' '
      << rules.deterministic << ' ' << cuda::Resources(ctx).device;
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
    chosen = Measure(handle, c, rules, who);
    std::lock_guard<std::mutex> lock(cache_mutex);
    cache.emplace(key.str(), chosen);
  }
  c.forward = chosen.forward.algo, c.forward_math = chosen.forward.math;
  c.backward_data = chosen.backward_data.algo, c.data_math = chosen.backward_data.math;
  c.backward_filter = chosen.backward_filter.algo, c.filter_math = chosen.backward_filter.math;
  const size_t workspace = std::max({chosen.forward.bytes, chosen.backward_data.bytes, chosen.backward_filter.bytes});
  std::ostringstream choice;
  choice << who << ": cuDNN algorithms (" << (measured ? "measured" : "as measured for the same shape")
         << ") forward " << NameOf(kForwardNames, c.forward) << " " << MathName(c.forward_math) << ", backward data "
         << NameOf(kBackwardDataNames, c.backward_data) << " " << MathName(c.data_math) << ", backward filter "
         << NameOf(kBackwardFilterNames, c.backward_filter) << " " << MathName(c.filter_math) << "; workspace "
         << workspace << " bytes";
  if (rules.deterministic && !(chosen.backward_data.deterministic && chosen.backward_filter.deterministic))
    choice << "; no deterministic backward algorithm fits, so the gradients may differ in their last bits between runs";
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
  CORTADO_CUDNN_CHECK(cudnnSetConvolutionMathType(c.conv.get(), c.forward_math));
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
  if (dw != nullptr) {
    CORTADO_CUDNN_CHECK(cudnnSetConvolutionMathType(c.conv.get(), c.filter_math));
    CORTADO_CUDNN_CHECK(cudnnConvolutionBackwardFilter(handle, &one, c.x.get(), x, c.y.get(), dy, c.conv.get(),
                                                       c.backward_filter, workspace, workspace_bytes, &one,
                                                       c.w.get(), dw));
  }
  if (dx != nullptr) {
    CORTADO_CUDNN_CHECK(cudnnSetConvolutionMathType(c.conv.get(), c.data_math));
    CORTADO_CUDNN_CHECK(cudnnConvolutionBackwardData(handle, &one, c.w.get(), w, c.y.get(), dy, c.conv.get(),
                                                     c.backward_data, workspace, workspace_bytes, &zero, c.x.get(),
                                                     dx));
  }
}

}  // namespace cortado
