// convolution_cudnn.cpp — Convolution's cuDNN engine (convolution_gpu.hpp): descriptors for x, the
// weights and y; grouped, strided, padded, dilated cross-correlation. On FP32 data with TF32 tensor
// cores where the context allows them (Context::tf32), else strict FP32 (CUDNN_FMA_MATH); on bf16 or
// fp16 data (x, weights and y of one type, sums in FP32: cuDNN's pseudo-half configurations) with
// tensor cores. NCHW or NHWC: the weights are then (K, R, S, C/group), as cuDNN's NHWC kernels read them.
//
// Algorithms, in two steps (the rules are cuda/cudnn_choice.hpp's):
//   1. When the layer is shaped (before the arena exists), cuDNN's heuristic lists the candidates of
//      each pass (cudnnGetConvolution*Algorithm_v7; in TF32 mode under both tensor-op and FMA math).
//      Its first acceptable pick is kept for now, and the layer requests as its workspace the largest
//      that any acceptable candidate needs (its own `memory`), so that step 2 may pick any of them.
//   2. Once the arena is bound and before the first pass (Layer::OnMemoryBound), cuDNN times every
//      algorithm of each pass that will run (cudnnFind*Ex, with each math type as in step 1) on the
//      layer's real x, w, y, dy, dx and dw and on the shared workspace, at its real size; the lists
//      are merged by time and the fastest acceptable algorithm is kept with the math type it was
//      timed with and its own workspace, and logged. A pass that will not run keeps step 1's pick.
// Timings are cached per shape, rules, device and available workspace for the process, so layers of
// the same shape (and a second net or solver) reuse one measurement and agree to the bit.
#include <glog/logging.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <mutex>
#include <sstream>
#include <vector>

#include "../convolution_gpu.hpp"
#include "cortado/cuda/cudnn_choice.hpp"
#include "cortado/cuda/resources.hpp"  // cuda::Resources, CORTADO_CUDNN_CHECK, CORTADO_CUDA_CHECK
#include "cortado/error.hpp"

namespace cortado {

namespace {

using cudnn_choice::Candidate;
using cudnn_choice::Choice;
using cudnn_choice::Math;

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

// ---- names and math types --------------------------------------------------------------------------

const char* ForwardName(int algo) {
  switch (algo) {
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM: return "IMPLICIT_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_PRECOMP_GEMM: return "IMPLICIT_PRECOMP_GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_GEMM: return "GEMM";
    case CUDNN_CONVOLUTION_FWD_ALGO_DIRECT: return "DIRECT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_FWD_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_FWD_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "?";
  }
}

const char* BackwardDataName(int algo) {
  switch (algo) {
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_0: return "ALGO_0";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_1: return "ALGO_1";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_FFT_TILING: return "FFT_TILING";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_BWD_DATA_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    default: return "?";
  }
}

const char* BackwardFilterName(int algo) {
  switch (algo) {
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0: return "ALGO_0";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1: return "ALGO_1";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT: return "FFT";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3: return "ALGO_3";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD: return "WINOGRAD";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_WINOGRAD_NONFUSED: return "WINOGRAD_NONFUSED";
    case CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING: return "FFT_TILING";
    default: return "?";
  }
}

Math MathOf(cudnnMathType_t math) {
  switch (math) {
    case CUDNN_FMA_MATH: return Math::kFma;
    case CUDNN_TENSOR_OP_MATH: return Math::kTensorOp;
    case CUDNN_DEFAULT_MATH: return Math::kDefault;
    default: return Math::kOther;
  }
}

cudnnMathType_t CudnnMath(Math math) {
  switch (math) {
    case Math::kFma: return CUDNN_FMA_MATH;
    case Math::kTensorOp: return CUDNN_TENSOR_OP_MATH;
    case Math::kDefault: return CUDNN_DEFAULT_MATH;
    case Math::kOther: break;
  }
  return CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION;
}

const char* MathName(Math math, cudnnDataType_t type) {
  if (type == CUDNN_DATA_BFLOAT16) return math == Math::kFma ? "BF16 (FMA)" : "BF16";
  if (type == CUDNN_DATA_HALF) return math == Math::kFma ? "FP16 (FMA)" : "FP16";
  return math == Math::kFma ? "FP32" : "TF32";
}

cudnnDataType_t CudnnType(DataType type) {
  switch (type) {
    case DataType::kBFloat16: return CUDNN_DATA_BFLOAT16;
    case DataType::kFloat16: return CUDNN_DATA_HALF;
    case DataType::kFloat: break;
  }
  return CUDNN_DATA_FLOAT;
}

// How a pass's algorithm was picked, for the log.
enum class Origin { kHeuristic, kMeasured, kReused };

const char* OriginName(Origin origin) {
  switch (origin) {
    case Origin::kHeuristic: return "cuDNN's heuristic, not timed";
    case Origin::kMeasured: return "measured";
    case Origin::kReused: return "as measured for the same shape";
  }
  return "?";
}

struct PassChoice {
  Choice choice;
  Origin origin = Origin::kHeuristic;
};

}  // namespace

struct CudnnConvolution {
  TensorDescriptor x, y;
  FilterDescriptor w;
  ConvolutionDescriptor conv;
  // The algorithm and math type of each pass; the math type is set on `conv` before each call.
  PassChoice forward, backward_data, backward_filter;
  cudnn_choice::Rules rules;  // as last shaped: the limit is the workspace that may be requested
  cudnnDataType_t type = CUDNN_DATA_FLOAT;  // of x, the weights and y
  std::string shape_key;      // shape, rules and device, without the workspace
  int num = 0;
  size_t requested = 0;  // the workspace asked for when shaped: enough for any acceptable candidate
  // Which passes will run, as the bound buffers said (all, until they are known): the log names those.
  bool runs_backward_data = true, runs_backward_filter = true;
  bool bound = false;  // the buffers were bound and the algorithms timed (CudnnConvolutionMeasure)
  std::string logged;  // the choice last written to the log
};

namespace {

// ---- the three passes, for the generic code below --------------------------------------------------
// Each lists its candidates by cuDNN's heuristic or by timing on real buffers, asks one algorithm's
// workspace (the fallbacks), and names its algorithms. The math type is already set on c.conv.

struct ForwardPass {
  using Perf = cudnnConvolutionFwdAlgoPerf_t;
  static constexpr const char* kName = "forward";
  static PassChoice& Of(CudnnConvolution& c) { return c.forward; }
  static const char* AlgoName(int algo) { return ForwardName(algo); }
  static int MaxCount(cudnnHandle_t handle) {
    int n = 0;
    CORTADO_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithmMaxCount(handle, &n));
    return n;
  }
  static void Heuristic(cudnnHandle_t handle, const CudnnConvolution& c, int n, int* count, Perf* perf) {
    CORTADO_CUDNN_CHECK(cudnnGetConvolutionForwardAlgorithm_v7(handle, c.x.get(), c.w.get(), c.conv.get(), c.y.get(),
                                                               n, count, perf));
  }
  static void Find(cudnnHandle_t handle, const CudnnConvolution& c, const CudnnConvolutionBuffers& b, int n,
                   int* count, Perf* perf) {
    CORTADO_CUDNN_CHECK(cudnnFindConvolutionForwardAlgorithmEx(handle, c.x.get(), b.x, c.w.get(), b.w, c.conv.get(),
                                                               c.y.get(), b.y, n, count, perf, b.workspace,
                                                               b.workspace_bytes));
  }
  static cudnnStatus_t Workspace(cudnnHandle_t handle, const CudnnConvolution& c, int algo, size_t* bytes) {
    return cudnnGetConvolutionForwardWorkspaceSize(handle, c.x.get(), c.w.get(), c.conv.get(), c.y.get(),
                                                   static_cast<cudnnConvolutionFwdAlgo_t>(algo), bytes);
  }
  // (algorithm, deterministic) tried in order when nothing acceptable fits.
  static std::vector<std::pair<int, bool>> Fallbacks() { return {{CUDNN_CONVOLUTION_FWD_ALGO_IMPLICIT_GEMM, true}}; }
};

struct BackwardDataPass {
  using Perf = cudnnConvolutionBwdDataAlgoPerf_t;
  static constexpr const char* kName = "backward data";
  static PassChoice& Of(CudnnConvolution& c) { return c.backward_data; }
  static const char* AlgoName(int algo) { return BackwardDataName(algo); }
  static int MaxCount(cudnnHandle_t handle) {
    int n = 0;
    CORTADO_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithmMaxCount(handle, &n));
    return n;
  }
  static void Heuristic(cudnnHandle_t handle, const CudnnConvolution& c, int n, int* count, Perf* perf) {
    CORTADO_CUDNN_CHECK(cudnnGetConvolutionBackwardDataAlgorithm_v7(handle, c.w.get(), c.y.get(), c.conv.get(),
                                                                    c.x.get(), n, count, perf));
  }
  static void Find(cudnnHandle_t handle, const CudnnConvolution& c, const CudnnConvolutionBuffers& b, int n,
                   int* count, Perf* perf) {
    CORTADO_CUDNN_CHECK(cudnnFindConvolutionBackwardDataAlgorithmEx(handle, c.w.get(), b.w, c.y.get(), b.dy,
                                                                    c.conv.get(), c.x.get(), b.dx, n, count, perf,
                                                                    b.workspace, b.workspace_bytes));
  }
  static cudnnStatus_t Workspace(cudnnHandle_t handle, const CudnnConvolution& c, int algo, size_t* bytes) {
    return cudnnGetConvolutionBackwardDataWorkspaceSize(handle, c.w.get(), c.y.get(), c.conv.get(), c.x.get(),
                                                        static_cast<cudnnConvolutionBwdDataAlgo_t>(algo), bytes);
  }
  static std::vector<std::pair<int, bool>> Fallbacks() {
    return {{CUDNN_CONVOLUTION_BWD_DATA_ALGO_1, true}, {CUDNN_CONVOLUTION_BWD_DATA_ALGO_0, false}};
  }
};

struct BackwardFilterPass {
  using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;
  static constexpr const char* kName = "backward filter";
  static PassChoice& Of(CudnnConvolution& c) { return c.backward_filter; }
  static const char* AlgoName(int algo) { return BackwardFilterName(algo); }
  static int MaxCount(cudnnHandle_t handle) {
    int n = 0;
    CORTADO_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithmMaxCount(handle, &n));
    return n;
  }
  static void Heuristic(cudnnHandle_t handle, const CudnnConvolution& c, int n, int* count, Perf* perf) {
    CORTADO_CUDNN_CHECK(cudnnGetConvolutionBackwardFilterAlgorithm_v7(handle, c.x.get(), c.y.get(), c.conv.get(),
                                                                      c.w.get(), n, count, perf));
  }
  static void Find(cudnnHandle_t handle, const CudnnConvolution& c, const CudnnConvolutionBuffers& b, int n,
                   int* count, Perf* perf) {
    CORTADO_CUDNN_CHECK(cudnnFindConvolutionBackwardFilterAlgorithmEx(handle, c.x.get(), b.x, c.y.get(), b.dy,
                                                                      c.conv.get(), c.w.get(), b.dw, n, count, perf,
                                                                      b.workspace, b.workspace_bytes));
  }
  static cudnnStatus_t Workspace(cudnnHandle_t handle, const CudnnConvolution& c, int algo, size_t* bytes) {
    return cudnnGetConvolutionBackwardFilterWorkspaceSize(handle, c.x.get(), c.y.get(), c.conv.get(), c.w.get(),
                                                          static_cast<cudnnConvolutionBwdFilterAlgo_t>(algo), bytes);
  }
  static std::vector<std::pair<int, bool>> Fallbacks() {
    return {{CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, true}, {CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, false}};
  }
};

// ---- listing, choosing, caching --------------------------------------------------------------------

// cuDNN's candidates for one pass, one list per math type the rules try (each result keeps the math
// type cuDNN reports for it), merged: timed on `buffers` (by time), or by the heuristic (by rank).
// Arrays are sized by cuDNN's own count of algorithms for the pass.
template <typename Pass>
std::vector<Candidate> ListCandidates(cudnnHandle_t handle, const CudnnConvolution& c,
                                      const CudnnConvolutionBuffers* buffers) {
  const int most = Pass::MaxCount(handle);
  std::vector<std::vector<Candidate>> lists;
  for (const Math math : cudnn_choice::MathTypesToTry(c.rules.tf32)) {
    std::vector<typename Pass::Perf> perf(static_cast<size_t>(std::max(most, 1)));
    int count = 0;
    CORTADO_CUDNN_CHECK(cudnnSetConvolutionMathType(c.conv.get(), CudnnMath(math)));
    if (buffers != nullptr) {
      Pass::Find(handle, c, *buffers, static_cast<int>(perf.size()), &count, perf.data());
    } else {
      Pass::Heuristic(handle, c, static_cast<int>(perf.size()), &count, perf.data());
    }
    std::vector<Candidate> list;
    for (int i = 0; i < count && i < static_cast<int>(perf.size()); ++i) {
      const typename Pass::Perf& p = perf[i];
      Candidate candidate;
      candidate.algo = static_cast<int>(p.algo);
      candidate.math = MathOf(p.mathType);
      candidate.ok = p.status == CUDNN_STATUS_SUCCESS;
      candidate.deterministic = p.determinism == CUDNN_DETERMINISTIC;
      candidate.memory = p.memory;
      candidate.ms = buffers != nullptr ? p.time : -1.0f;
      list.push_back(candidate);
    }
    lists.push_back(std::move(list));
  }
  return buffers != nullptr ? cudnn_choice::MergeByTime(lists) : cudnn_choice::MergeByRank(lists);
}

// The heuristic's first acceptable candidate or, when none is, the first of the pass's FMA fallbacks
// whose workspace fits; else an Error naming the layer. The pick may run untimed (a pass the timing
// skipped, a new shape after the memory is bound), so its workspace is also asked of cuDNN directly,
// and the larger of the two answers counts.
template <typename Pass>
Choice HeuristicChoice(cudnnHandle_t handle, const CudnnConvolution& c, const std::vector<Candidate>& candidates,
                       const std::string& who) {
  std::vector<Candidate> remaining = candidates;
  for (Choice choice = cudnn_choice::Choose(remaining, c.rules); choice.found;
       choice = cudnn_choice::Choose(remaining, c.rules)) {
    size_t need = 0;
    CORTADO_CUDNN_CHECK(cudnnSetConvolutionMathType(c.conv.get(), CudnnMath(choice.math)));
    if (Pass::Workspace(handle, c, choice.algo, &need) == CUDNN_STATUS_SUCCESS && need <= c.rules.limit) {
      choice.bytes = std::max(choice.bytes, need);
      return choice;
    }
    remaining.erase(std::remove_if(remaining.begin(), remaining.end(),
                                   [&](const Candidate& r) { return r.algo == choice.algo && r.math == choice.math; }),
                    remaining.end());
  }
  std::vector<Candidate> fallbacks;
  CORTADO_CUDNN_CHECK(cudnnSetConvolutionMathType(c.conv.get(), CUDNN_FMA_MATH));
  for (const auto& [algo, deterministic] : Pass::Fallbacks()) {
    Candidate f;
    f.algo = algo;
    f.math = Math::kFma;
    f.deterministic = deterministic;
    f.ok = Pass::Workspace(handle, c, algo, &f.memory) == CUDNN_STATUS_SUCCESS;
    fallbacks.push_back(f);
  }
  const Choice fallback = cudnn_choice::FirstThatFits(fallbacks, c.rules.limit);
  if (fallback.found) return fallback;
  size_t smallest = SIZE_MAX;
  for (const Candidate& f : fallbacks)
    if (f.ok) smallest = std::min(smallest, f.memory);
  if (smallest == SIZE_MAX)
    Fail(who, ": cuDNN has no ", Pass::kName, " convolution algorithm for this shape (use engine: CAFFE)");
  Fail(who, ": no cuDNN ", Pass::kName, " convolution algorithm fits in its workspace of ", c.rules.limit,
       " bytes (the smallest needs ", smallest, "); raise cudnn_workspace_limit_mb");
}

// Timings for the process: one per pass, shape, rules, device and available workspace.
std::mutex cache_mutex;
std::map<std::string, Choice>& Cache() {
  static std::map<std::string, Choice> cache;
  return cache;
}

std::string CacheKey(const CudnnConvolution& c, const char* pass, size_t workspace) {
  std::ostringstream key;
  key << c.shape_key << ' ' << workspace << ' ' << pass;
  return key.str();
}

bool Cached(const std::string& key, Choice* choice) {
  std::lock_guard<std::mutex> lock(cache_mutex);
  auto it = Cache().find(key);
  if (it == Cache().end()) return false;
  *choice = it->second;
  return true;
}

// Step 1 for one pass: the heuristic's pick (or a timing of this shape already made for this
// workspace), and the workspace that lets step 2 choose any acceptable candidate.
template <typename Pass>
size_t PlanPass(cudnnHandle_t handle, CudnnConvolution& c, const std::string& who) {
  const std::vector<Candidate> candidates = ListCandidates<Pass>(handle, c, nullptr);
  PassChoice& pass = Pass::Of(c);
  pass.choice = HeuristicChoice<Pass>(handle, c, candidates, who);
  pass.origin = Origin::kHeuristic;
  Choice timed;
  if (Cached(CacheKey(c, Pass::kName, c.rules.limit), &timed)) pass.choice = timed, pass.origin = Origin::kReused;
  return std::max(cudnn_choice::WorkspaceToRequest(candidates, c.rules), pass.choice.bytes);
}

// Step 2 for one pass: times every candidate on the real buffers (or takes this shape's earlier
// timing for the same workspace) and keeps the fastest acceptable; when none is, step 1's pick stays.
template <typename Pass>
void MeasurePass(cudnnHandle_t handle, CudnnConvolution& c, const CudnnConvolutionBuffers& buffers) {
  cudnn_choice::Rules rules = c.rules;
  rules.limit = buffers.workspace_bytes;
  const std::string key = CacheKey(c, Pass::kName, buffers.workspace_bytes);
  PassChoice& pass = Pass::Of(c);
  Choice timed;
  if (Cached(key, &timed)) {
    pass.choice = timed, pass.origin = Origin::kReused;
    return;
  }
  timed = cudnn_choice::Choose(ListCandidates<Pass>(handle, c, &buffers), rules);
  if (!timed.found) timed = pass.choice;  // fits: the workspace was planned for it
  std::lock_guard<std::mutex> lock(cache_mutex);
  pass.choice = Cache().emplace(key, timed).first->second;  // another thread's equal timing wins
  pass.origin = Origin::kMeasured;
}

// One log line per change: the algorithm and math type of each pass that runs, how each was picked,
// and the most workspace they need.
void LogChoice(CudnnConvolution& c, const std::string& who) {
  struct Line {
    const char* pass;
    const char* name;
    const PassChoice& chosen;
  };
  std::vector<Line> lines = {{"forward", ForwardName(c.forward.choice.algo), c.forward}};
  if (c.runs_backward_data)
    lines.push_back({"backward data", BackwardDataName(c.backward_data.choice.algo), c.backward_data});
  if (c.runs_backward_filter)
    lines.push_back({"backward filter", BackwardFilterName(c.backward_filter.choice.algo), c.backward_filter});
  const bool one_origin = std::all_of(lines.begin(), lines.end(),
                                      [&](const Line& l) { return l.chosen.origin == lines[0].chosen.origin; });
  std::ostringstream out;
  out << who << ": cuDNN algorithms";
  if (one_origin) out << " (" << OriginName(lines[0].chosen.origin) << ")";
  for (size_t i = 0; i < lines.size(); ++i) {
    out << (i == 0 ? " " : ", ") << lines[i].pass << " " << lines[i].name << " "
        << MathName(lines[i].chosen.choice.math, c.type);
    if (!one_origin) out << " (" << OriginName(lines[i].chosen.origin) << ")";
  }
  size_t workspace = 0;
  for (const Line& l : lines) workspace = std::max(workspace, l.chosen.choice.bytes);
  out << "; workspace " << workspace << " bytes";
  const bool data_ok = !c.runs_backward_data || c.backward_data.choice.deterministic;
  const bool filter_ok = !c.runs_backward_filter || c.backward_filter.choice.deterministic;
  if (c.rules.deterministic && !(data_ok && filter_ok))
    out << "; no deterministic backward algorithm fits, so the gradients may differ in their last bits between runs";
  if (out.str() != c.logged) {
    c.logged = out.str();
    LOG(INFO) << c.logged;
  }
}

size_t WorkspaceOfChoices(const CudnnConvolution& c) {
  return std::max({c.forward.choice.bytes, c.backward_data.choice.bytes, c.backward_filter.choice.bytes});
}

}  // namespace

bool BuiltWithCudnn() { return true; }

CudnnConvolutionPtr CreateCudnnConvolution() {
  return CudnnConvolutionPtr(new CudnnConvolution, [](CudnnConvolution* conv) { delete conv; });
}

size_t CudnnConvolutionReshape(Context& ctx, CudnnConvolution& c, int num, int num_output, int group,
                               const ConvGeometry& g, DataType type, bool channels_last, size_t workspace_limit,
                               const std::string& who) {
  const cudnnHandle_t handle = cuda::Resources(ctx).cudnn;
  const cudnnTensorFormat_t format = channels_last ? CUDNN_TENSOR_NHWC : CUDNN_TENSOR_NCHW;
  c.type = CudnnType(type);
  CORTADO_CUDNN_CHECK(cudnnSetTensor4dDescriptor(c.x.get(), format, c.type, num, g.channels, g.height, g.width));
  CORTADO_CUDNN_CHECK(cudnnSetTensor4dDescriptor(c.y.get(), format, c.type, num, num_output, g.out_h(), g.out_w()));
  CORTADO_CUDNN_CHECK(cudnnSetFilter4dDescriptor(c.w.get(), c.type, format, num_output, g.channels / group,
                                                 g.kernel_h, g.kernel_w));
  // The sums are FP32 for every data type (16-bit data: cuDNN's PSEUDO_HALF / PSEUDO_BFLOAT16 configs).
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

  // Tensor cores: TF32 where the context allows it on FP32 data; always on 16-bit data, whose point they are.
  const bool tensor_ops = ctx.tf32() || c.type != CUDNN_DATA_FLOAT;
  const bool deterministic = ctx.gpu_settings().deterministic;
  std::ostringstream key;
  key << num << ' ' << g.channels << ' ' << g.height << ' ' << g.width << ' ' << num_output << ' ' << group << ' '
      << g.kernel_h << ' ' << g.kernel_w << ' ' << g.pad_h << ' ' << g.pad_w << ' ' << g.stride_h << ' ' << g.stride_w
      << ' ' << g.dilation_h << ' ' << g.dilation_w << ' ' << tensor_ops << ' ' << deterministic << ' '
      << cuda::Resources(ctx).device << ' ' << static_cast<int>(c.type) << ' ' << channels_last;
  // The same shape and limit again (the net reshaping each pass after a shape change upstream): the
  // algorithms stand, timed ones included.
  if (!c.shape_key.empty() && key.str() == c.shape_key && workspace_limit == c.rules.limit)
    return std::max(c.requested, WorkspaceOfChoices(c));
  c.num = num;
  c.rules.tf32 = tensor_ops;
  c.rules.deterministic = deterministic;
  c.rules.limit = workspace_limit;
  c.shape_key = key.str();

  c.requested = std::max({PlanPass<ForwardPass>(handle, c, who), PlanPass<BackwardDataPass>(handle, c, who),
                          PlanPass<BackwardFilterPass>(handle, c, who)});
  // Before the buffers are bound this is a plan: the log speaks once they are timed, and for a new
  // shape after that (picked within the bound workspace, from the heuristic or an earlier timing).
  if (c.bound) LogChoice(c, who);
  return c.requested;
}

size_t CudnnConvolutionMeasure(Context& ctx, CudnnConvolution& c, const CudnnConvolutionBuffers& buffers,
                               const std::string& who) {
  cudaStreamCaptureStatus capture = cudaStreamCaptureStatusNone;
  CORTADO_CUDA_CHECK(cudaStreamIsCapturing(cuda::Stream(ctx), &capture));
  CHECK(capture == cudaStreamCaptureStatusNone)
      << who << ": cuDNN's algorithms are timed at set-up, never while a CUDA graph is being captured";
  const cudnnHandle_t handle = cuda::Resources(ctx).cudnn;
  // The shared workspace at its real size, but never more than the layer's limit.
  CudnnConvolutionBuffers real = buffers;
  real.workspace_bytes = std::min(buffers.workspace_bytes, c.rules.limit);
  c.runs_backward_data = real.dy != nullptr && real.dx != nullptr;
  c.runs_backward_filter = real.dy != nullptr && real.dw != nullptr;
  if (c.num > 0 && real.x != nullptr && real.w != nullptr && real.y != nullptr) {
    MeasurePass<ForwardPass>(handle, c, real);
    if (c.runs_backward_data) MeasurePass<BackwardDataPass>(handle, c, real);
    if (c.runs_backward_filter) MeasurePass<BackwardFilterPass>(handle, c, real);
  }
  c.bound = true;
  LogChoice(c, who);
  return std::max(c.requested, WorkspaceOfChoices(c));
}

void CudnnConvolutionForward(Context& ctx, const CudnnConvolution& c, const void* x, const void* w, void* y,
                             void* workspace, size_t workspace_bytes) {
  const cudnnHandle_t handle = cuda::Resources(ctx).cudnn;
  const float one = 1.0f, zero = 0.0f;
  CORTADO_CUDNN_CHECK(cudnnSetConvolutionMathType(c.conv.get(), CudnnMath(c.forward.choice.math)));
  CORTADO_CUDNN_CHECK(cudnnConvolutionForward(handle, &one, c.x.get(), x, c.w.get(), w, c.conv.get(),
                                              static_cast<cudnnConvolutionFwdAlgo_t>(c.forward.choice.algo),
                                              workspace, workspace_bytes, &zero, c.y.get(), y));
}

void CudnnConvolutionBackward(Context& ctx, const CudnnConvolution& c, const void* x, const void* w, const void* dy,
                              void* dw, bool dw_accumulates, void* dx, void* workspace, size_t workspace_bytes) {
  const cudnnHandle_t handle = cuda::Resources(ctx).cudnn;
  const float one = 1.0f, zero = 0.0f;
  if (dw != nullptr) {
    CORTADO_CUDNN_CHECK(cudnnSetConvolutionMathType(c.conv.get(), CudnnMath(c.backward_filter.choice.math)));
    CORTADO_CUDNN_CHECK(cudnnConvolutionBackwardFilter(
        handle, &one, c.x.get(), x, c.y.get(), dy, c.conv.get(),
        static_cast<cudnnConvolutionBwdFilterAlgo_t>(c.backward_filter.choice.algo), workspace, workspace_bytes,
        dw_accumulates ? &one : &zero, c.w.get(), dw));
  }
  if (dx != nullptr) {
    CORTADO_CUDNN_CHECK(cudnnSetConvolutionMathType(c.conv.get(), CudnnMath(c.backward_data.choice.math)));
    CORTADO_CUDNN_CHECK(cudnnConvolutionBackwardData(
        handle, &one, c.w.get(), w, c.y.get(), dy, c.conv.get(),
        static_cast<cudnnConvolutionBwdDataAlgo_t>(c.backward_data.choice.algo), workspace, workspace_bytes, &zero,
        c.x.get(), dx));
  }
}

}  // namespace cortado
