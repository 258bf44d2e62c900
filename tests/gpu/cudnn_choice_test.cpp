// cudnn_choice_test.cpp — the rules that pick a cuDNN convolution algorithm (cuda/cudnn_choice.hpp) on
// hand-made result lists: the math types asked about, merging the tensor-op and FMA lists (timed by
// time, heuristic by rank), math type, determinism, each result's own workspace against the limit,
// the workspace requested before timing, and the fallback. Plain code over plain structs: it needs
// neither a GPU nor cuDNN, so it runs in every build.
#include <gtest/gtest.h>

#include <vector>

#include "cortado/cuda/cudnn_choice.hpp"

namespace cortado::test {
namespace {

using cudnn_choice::Candidate;
using cudnn_choice::Choose;
using cudnn_choice::Math;
using cudnn_choice::Rules;

// cuDNN's backward-filter algorithm numbers (cudnnConvolutionBwdFilterAlgo_t).
constexpr int kAlgo0 = 0, kAlgo1 = 1, kFft = 2, kAlgo3 = 3, kFftTiling = 6;

Candidate Result(int algo, Math math, bool deterministic, size_t memory, float ms = -1.0f, bool ok = true) {
  Candidate c;
  c.algo = algo;
  c.math = math;
  c.deterministic = deterministic;
  c.memory = memory;
  c.ms = ms;
  c.ok = ok;
  return c;
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
const std::vector<Candidate> kRanked = {
    Result(kFft, Math::kFma, true, 0, 0.5f, /*ok=*/false),
    Result(kAlgo0, Math::kTensorOp, false, 0, 1.0f),
    Result(kAlgo3, Math::kFma, false, 100, 2.0f),
    Result(kFftTiling, Math::kFma, true, 1 << 20, 3.0f),
    Result(kAlgo1, Math::kFma, true, 0, 4.0f),
};

TEST(CudnnChoice, StrictFp32TakesTheFastestFmaAlgorithmThatSucceeded) {
  const auto choice = Choose(kRanked, Allow(false, false, 1 << 30));
  ASSERT_TRUE(choice.found);
  EXPECT_EQ(choice.algo, kAlgo3);  // not the failed FFT, not the tensor-op ALGO_0
  EXPECT_EQ(choice.math, Math::kFma);
  EXPECT_EQ(choice.bytes, 100u);
  EXPECT_FALSE(choice.deterministic);
}

TEST(CudnnChoice, Tf32TakesTheFastestAndRunsItWithTheMathTypeItWasMeasuredWith) {
  const auto choice = Choose(kRanked, Allow(true, false, 1 << 30));
  ASSERT_TRUE(choice.found);
  EXPECT_EQ(choice.algo, kAlgo0);
  EXPECT_EQ(choice.math, Math::kTensorOp);
  const std::vector<Candidate> by_default = {Result(kAlgo1, Math::kDefault, true, 0)};
  EXPECT_EQ(Choose(by_default, Allow(true, false, 0)).math, Math::kDefault);
  EXPECT_FALSE(Choose(by_default, Allow(false, false, 0)).found);
}

TEST(CudnnChoice, ConversionToHalfPrecisionIsNeverAllowed) {
  const std::vector<Candidate> ranked = {Result(kAlgo0, Math::kOther, true, 0),
                                         Result(kAlgo1, Math::kTensorOp, true, 0)};
  EXPECT_EQ(Choose(ranked, Allow(true, false, 0)).algo, kAlgo1);
  EXPECT_FALSE(Choose(ranked, Allow(false, false, 0)).found);
}

TEST(CudnnChoice, DeterministicPrefersTheFastestDeterministicThatFits) {
  auto choice = Choose(kRanked, Allow(false, true, 1 << 30));
  EXPECT_EQ(choice.algo, kFftTiling);
  EXPECT_TRUE(choice.deterministic);
  choice = Choose(kRanked, Allow(false, true, 1000));  // FFT_TILING does not fit
  EXPECT_EQ(choice.algo, kAlgo1);
  EXPECT_TRUE(choice.deterministic);
}

TEST(CudnnChoice, DeterministicFallsBackToTheFastestWhenNoneIsDeterministic) {
  const std::vector<Candidate> ranked(kRanked.begin() + 1, kRanked.begin() + 3);  // ALGO_0 (TF32), ALGO_3: atomics
  const auto choice = Choose(ranked, Allow(false, true, 1 << 30));
  ASSERT_TRUE(choice.found);
  EXPECT_EQ(choice.algo, kAlgo3);
  EXPECT_FALSE(choice.deterministic);
}

TEST(CudnnChoice, TheWorkspaceLimitIsCheckedAgainstEachResultsOwnMemory) {
  EXPECT_EQ(Choose(kRanked, Allow(false, false, 99)).algo, kAlgo1);  // ALGO_3 needs 100 bytes
  EXPECT_EQ(Choose(kRanked, Allow(false, false, 100)).algo, kAlgo3);
  EXPECT_FALSE(Choose(std::vector<Candidate>(kRanked.begin(), kRanked.begin() + 3), Allow(false, false, 99)).found);
  EXPECT_FALSE(Choose({}, Allow(true, false, 1 << 30)).found);
}

TEST(CudnnChoice, Tf32AsksAboutTensorOpAndFmaMathAndStrictFp32AboutFmaAlone) {
  EXPECT_EQ(cudnn_choice::MathTypesToTry(true), (std::vector<Math>{Math::kTensorOp, Math::kFma}));
  EXPECT_EQ(cudnn_choice::MathTypesToTry(false), (std::vector<Math>{Math::kFma}));
}

// The point of timing both math types in TF32 mode: an FMA kernel that beats every tensor-op one
// (a TF32 kernel wrapped in layout transposes, say) is the one chosen.
TEST(CudnnChoice, Tf32TakesAnFmaAlgorithmThatMeasuredFasterThanTheTensorOpOnes) {
  const std::vector<Candidate> tensor_op = {Result(kAlgo1, Math::kTensorOp, true, 4096, 2.0f),
                                            Result(kAlgo0, Math::kTensorOp, false, 0, 3.0f)};
  const std::vector<Candidate> fma = {Result(kAlgo1, Math::kFma, true, 0, 1.5f),
                                      Result(kAlgo0, Math::kFma, false, 0, 5.0f)};
  const auto merged = cudnn_choice::MergeByTime({tensor_op, fma});
  ASSERT_EQ(merged.size(), 4u);
  auto choice = Choose(merged, Allow(true, false, 1 << 30));
  EXPECT_EQ(choice.algo, kAlgo1);
  EXPECT_EQ(choice.math, Math::kFma);
  EXPECT_EQ(choice.bytes, 0u);
  // And the other way round: the faster tensor-op kernel, with its own workspace.
  const std::vector<Candidate> faster_fma_missing = {Result(kAlgo1, Math::kFma, true, 0, 2.5f)};
  choice = Choose(cudnn_choice::MergeByTime({tensor_op, faster_fma_missing}), Allow(true, false, 1 << 30));
  EXPECT_EQ(choice.math, Math::kTensorOp);
  EXPECT_EQ(choice.bytes, 4096u);
}

TEST(CudnnChoice, MergeByTimeRanksByTimePutsFailuresLastAndKeepsTheFasterOfAPairListedTwice) {
  const std::vector<Candidate> first = {Result(kFft, Math::kFma, true, 0, 0.1f, /*ok=*/false),
                                        Result(kAlgo1, Math::kFma, true, 0, 3.0f),
                                        Result(kAlgo0, Math::kTensorOp, false, 0, 1.0f)};
  const std::vector<Candidate> second = {Result(kAlgo1, Math::kFma, true, 0, 2.0f),  // the same pair, faster
                                         Result(kAlgo3, Math::kFma, false, 0, 1.0f),  // ties ALGO_0: listed later
                                         Result(kFftTiling, Math::kFma, true, 0)};    // succeeded, untimed
  const auto merged = cudnn_choice::MergeByTime({first, second});
  ASSERT_EQ(merged.size(), 5u);
  EXPECT_EQ(merged[0].algo, kAlgo0);
  EXPECT_EQ(merged[1].algo, kAlgo3);
  EXPECT_EQ(merged[2].algo, kAlgo1);
  EXPECT_FLOAT_EQ(merged[2].ms, 2.0f);
  EXPECT_EQ(merged[3].algo, kFftTiling);
  EXPECT_EQ(merged[4].algo, kFft);
  EXPECT_FALSE(merged[4].ok);
}

TEST(CudnnChoice, MergeByRankTakesEachHeuristicListInTurnAndDropsRepeats) {
  const std::vector<Candidate> tensor_op = {Result(kAlgo1, Math::kTensorOp, true, 0),
                                            Result(kAlgo0, Math::kFma, false, 0),
                                            Result(kAlgo3, Math::kTensorOp, false, 0)};
  const std::vector<Candidate> fma = {Result(kAlgo0, Math::kFma, false, 0), Result(kAlgo1, Math::kFma, true, 0)};
  const auto merged = cudnn_choice::MergeByRank({tensor_op, fma});
  ASSERT_EQ(merged.size(), 4u);
  EXPECT_EQ(merged[0].algo, kAlgo1);
  EXPECT_EQ(merged[0].math, Math::kTensorOp);
  EXPECT_EQ(merged[1].algo, kAlgo0);
  EXPECT_EQ(merged[1].math, Math::kFma);
  EXPECT_EQ(merged[2].algo, kAlgo1);  // FMA's second: the tensor-op list's second repeated FMA's first
  EXPECT_EQ(merged[2].math, Math::kFma);
  EXPECT_EQ(merged[3].algo, kAlgo3);
}

// Before timing, the layer asks for enough workspace that the timing may pick any acceptable
// candidate: the largest need among those that succeeded, are of an allowed math type and fit.
TEST(CudnnChoice, WorkspaceToRequestIsTheLargestNeedOfTheAcceptableCandidates) {
  const std::vector<Candidate> listed = {Result(kAlgo0, Math::kTensorOp, false, 5000),
                                         Result(kAlgo1, Math::kFma, true, 300),
                                         Result(kFft, Math::kFma, true, 9000, -1.0f, /*ok=*/false),
                                         Result(kFftTiling, Math::kFma, true, 1 << 20),
                                         Result(kAlgo3, Math::kOther, false, 7000)};
  EXPECT_EQ(cudnn_choice::WorkspaceToRequest(listed, Allow(true, false, 1 << 30)), size_t{1} << 20);
  EXPECT_EQ(cudnn_choice::WorkspaceToRequest(listed, Allow(true, false, 6000)), 5000u);  // FFT_TILING too big
  EXPECT_EQ(cudnn_choice::WorkspaceToRequest(listed, Allow(false, false, 6000)), 300u);  // no tensor ops
  EXPECT_EQ(cudnn_choice::WorkspaceToRequest(listed, Allow(false, false, 100)), 0u);
  EXPECT_EQ(cudnn_choice::WorkspaceToRequest({}, Allow(true, false, 100)), 0u);
}

TEST(CudnnChoice, WorkspaceToRequestCountsOnlyDeterministicCandidatesWhenOneFits) {
  const std::vector<Candidate> listed = {Result(kAlgo0, Math::kFma, false, 5000),
                                         Result(kAlgo1, Math::kFma, true, 300)};
  EXPECT_EQ(cudnn_choice::WorkspaceToRequest(listed, Allow(false, true, 1 << 30)), 300u);
  EXPECT_EQ(cudnn_choice::WorkspaceToRequest(listed, Allow(false, false, 1 << 30)), 5000u);
  // No deterministic one fits: the timing may fall back to any, so their needs count.
  const std::vector<Candidate> big = {Result(kAlgo0, Math::kFma, false, 500),
                                      Result(kAlgo1, Math::kFma, true, 3000)};
  EXPECT_EQ(cudnn_choice::WorkspaceToRequest(big, Allow(false, true, 1000)), 500u);
  const std::vector<Candidate> atomics = {Result(kAlgo0, Math::kFma, false, 5000),
                                          Result(kAlgo3, Math::kFma, false, 9)};
  EXPECT_EQ(cudnn_choice::WorkspaceToRequest(atomics, Allow(false, true, 1 << 30)), 5000u);
}

TEST(CudnnChoice, FirstThatFitsTakesTheFirstFallbackWithinTheLimitWhateverItsDeterminism) {
  const std::vector<Candidate> fallbacks = {Result(kAlgo1, Math::kFma, true, 2048),
                                            Result(kAlgo0, Math::kFma, false, 0)};
  auto choice = cudnn_choice::FirstThatFits(fallbacks, 4096);
  ASSERT_TRUE(choice.found);
  EXPECT_EQ(choice.algo, kAlgo1);
  EXPECT_TRUE(choice.deterministic);
  choice = cudnn_choice::FirstThatFits(fallbacks, 1024);
  EXPECT_EQ(choice.algo, kAlgo0);
  EXPECT_FALSE(choice.deterministic);
  std::vector<Candidate> none = fallbacks;
  none[1].ok = false;  // cuDNN could not size it
  EXPECT_FALSE(cudnn_choice::FirstThatFits(none, 1024).found);
}

}  // namespace
}  // namespace cortado::test
