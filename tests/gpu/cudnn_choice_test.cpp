// cudnn_choice_test.cpp — the rules that pick a cuDNN convolution algorithm from cuDNN's ranked
// measurements (cuda/cudnn_choice.hpp), on made-up rankings: math type, determinism, workspace limit.
// Needs no GPU (the rules are plain code over cuDNN's structs), only a build with cuDNN.
#include <gtest/gtest.h>

#ifdef CORTADO_WITH_CUDNN
#include <map>
#include <vector>

#include "cortado/cuda/cudnn_choice.hpp"

namespace cortado::test {
namespace {

using cudnn_choice::Choose;
using cudnn_choice::Rules;
using Perf = cudnnConvolutionBwdFilterAlgoPerf_t;

Perf Result(cudnnConvolutionBwdFilterAlgo_t algo, cudnnMathType_t math, bool deterministic, size_t memory,
            cudnnStatus_t status = CUDNN_STATUS_SUCCESS) {
  Perf p{};
  p.algo = algo;
  p.status = status;
  p.mathType = math;
  p.determinism = deterministic ? CUDNN_DETERMINISTIC : CUDNN_NON_DETERMINISTIC;
  p.memory = memory;
  return p;
}

// cuDNN's answer to "how much workspace": each algorithm's `memory` in the ranking.
auto WorkspaceFrom(const std::vector<Perf>& ranked) {
  return [ranked](cudnnConvolutionBwdFilterAlgo_t algo, cudnnMathType_t, size_t* bytes) {
    for (const Perf& p : ranked)
      if (p.algo == algo) {
        *bytes = p.memory;
        return CUDNN_STATUS_SUCCESS;
      }
    return CUDNN_STATUS_BAD_PARAM;
  };
}

Rules Allow(bool tf32, bool deterministic, size_t limit) {
  Rules rules;
  rules.tf32 = tf32;
  rules.deterministic = deterministic;
  rules.limit = limit;
  return rules;
}

// Fastest first: a failed one, a TF32 one with atomics, an FP32 one with atomics, a deterministic FP32
// one needing much workspace, a deterministic one needing none.
const std::vector<Perf> kRanked = {
    Result(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT, CUDNN_FMA_MATH, true, 0, CUDNN_STATUS_NOT_SUPPORTED),
    Result(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, CUDNN_DEFAULT_MATH, false, 0),
    Result(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3, CUDNN_FMA_MATH, false, 100),
    Result(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING, CUDNN_FMA_MATH, true, 1 << 20),
    Result(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, CUDNN_FMA_MATH, true, 0),
};

TEST(CudnnChoice, StrictFp32TakesTheFastestFmaAlgorithmThatSucceeded) {
  const auto choice = Choose(kRanked, static_cast<int>(kRanked.size()), Allow(false, false, 1 << 30),
                             WorkspaceFrom(kRanked));
  ASSERT_TRUE(choice.found);
  EXPECT_EQ(choice.algo, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3);  // not the failed FFT, not the TF32 ALGO_0
  EXPECT_EQ(choice.math, CUDNN_FMA_MATH);
  EXPECT_EQ(choice.bytes, 100u);
  EXPECT_FALSE(choice.deterministic);
}

TEST(CudnnChoice, Tf32TakesTheFastestAndRunsItWithTheMathTypeItWasMeasuredWith) {
  const auto choice = Choose(kRanked, static_cast<int>(kRanked.size()), Allow(true, false, 1 << 30),
                             WorkspaceFrom(kRanked));
  ASSERT_TRUE(choice.found);
  EXPECT_EQ(choice.algo, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0);
  EXPECT_EQ(choice.math, CUDNN_DEFAULT_MATH);
}

TEST(CudnnChoice, ConversionToHalfPrecisionIsNeverAllowed) {
  const std::vector<Perf> ranked = {
      Result(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_0, CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION, true, 0),
      Result(CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1, CUDNN_TENSOR_OP_MATH, true, 0)};
  EXPECT_EQ(Choose(ranked, 2, Allow(true, false, 0), WorkspaceFrom(ranked)).algo, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1);
  EXPECT_FALSE(Choose(ranked, 2, Allow(false, false, 0), WorkspaceFrom(ranked)).found);
}

TEST(CudnnChoice, DeterministicPrefersTheFastestDeterministicThatFits) {
  const int n = static_cast<int>(kRanked.size());
  auto choice = Choose(kRanked, n, Allow(false, true, 1 << 30), WorkspaceFrom(kRanked));
  EXPECT_EQ(choice.algo, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_FFT_TILING);
  EXPECT_TRUE(choice.deterministic);
  choice = Choose(kRanked, n, Allow(false, true, 1000), WorkspaceFrom(kRanked));  // FFT_TILING does not fit
  EXPECT_EQ(choice.algo, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1);
  EXPECT_TRUE(choice.deterministic);
}

TEST(CudnnChoice, DeterministicFallsBackToTheFastestWhenNoneIsDeterministic) {
  const std::vector<Perf> ranked(kRanked.begin() + 1, kRanked.begin() + 3);  // ALGO_0 (TF32), ALGO_3: both atomics
  const auto choice = Choose(ranked, 2, Allow(false, true, 1 << 30), WorkspaceFrom(ranked));
  ASSERT_TRUE(choice.found);
  EXPECT_EQ(choice.algo, CUDNN_CONVOLUTION_BWD_FILTER_ALGO_3);
  EXPECT_FALSE(choice.deterministic);
}

TEST(CudnnChoice, TheWorkspaceLimitAndTheCountCuDnnReturnedAreKept) {
  const int n = static_cast<int>(kRanked.size());
  EXPECT_EQ(Choose(kRanked, n, Allow(false, false, 99), WorkspaceFrom(kRanked)).algo,
            CUDNN_CONVOLUTION_BWD_FILTER_ALGO_1);  // ALGO_3 needs 100 bytes
  EXPECT_FALSE(Choose(kRanked, 3, Allow(false, false, 99), WorkspaceFrom(kRanked)).found);  // only 3 ranked
}

}  // namespace
}  // namespace cortado::test

#else
TEST(CudnnChoice, NeedsABuildWithCudnn) { GTEST_SKIP() << "this build has no cuDNN"; }
#endif
