// cudnn_choice.hpp — which of cuDNN's convolution algorithms a layer runs, as pure functions over
// cuDNN's result lists (cudnn/convolution_cudnn.cpp turns each cudnnConvolution*AlgoPerf_t into a
// Candidate): the math types to ask about (strict FP32: FMA only; TF32: tensor-op and FMA), how two
// lists are merged (timed lists by time, heuristic lists by rank), which candidate is chosen (the first
// that succeeded, of an allowed math type, deterministic when reproducibility was asked for — else,
// when none is, the first that is not — and whose own workspace fits the limit), and how much
// workspace to request before timing so that the timing may pick any acceptable candidate. The math
// type a candidate was listed with is the one it runs with. No cuDNN header and no device: CPU-only
// builds compile it, and tests/gpu/cudnn_choice_test.cpp tests it on hand-made lists in every build.
#pragma once

#include <algorithm>
#include <cstddef>
#include <utility>
#include <vector>

namespace cortado::cudnn_choice {

// cuDNN's math types (cudnnMathType_t): kOther is CUDNN_TENSOR_OP_MATH_ALLOW_CONVERSION (FP32 data
// converted to FP16), which is never allowed.
enum class Math { kFma, kTensorOp, kDefault, kOther };

struct Rules {
  bool tf32 = false;           // TF32 tensor cores allowed (else plain FP32 FMA only)
  bool deterministic = false;  // prefer algorithms that give the same bits every run
  size_t limit = 0;            // the most workspace, in bytes
};

// One algorithm as cuDNN listed it: timed (cudnnFind*Ex) or ranked by its heuristic
// (cudnnGetConvolution*Algorithm_v7).
struct Candidate {
  int algo = 0;  // the cudnnConvolution*Algo_t value
  Math math = Math::kFma;
  bool ok = false;             // cuDNN's status was success
  bool deterministic = false;  // CUDNN_DETERMINISTIC
  size_t memory = 0;           // the workspace it needs, in bytes (cuDNN's `memory`)
  float ms = -1;               // the measured time; negative when not measured
};

struct Choice {
  int algo = 0;
  Math math = Math::kFma;
  size_t bytes = 0;
  bool found = false;          // false: nothing acceptable fits (the caller falls back)
  bool deterministic = false;  // whether the chosen algorithm is
};

// Strict FP32 runs FMA kernels only; TF32 also allows tensor ops and cuDNN's default math (TF32 on
// sm_80+), never a conversion of FP32 data to FP16.
inline bool MathAllowed(Math math, bool tf32) {
  if (math == Math::kFma) return true;
  return tf32 && (math == Math::kDefault || math == Math::kTensorOp);
}

// The math types cuDNN is asked about, one list each: in TF32 mode tensor ops (TF32 kernels and,
// where cuDNN reports them so, FMA ones) and FMA, whose kernels a tensor-op search does not always
// time; strict FP32 FMA only. The tensor-op list comes first: it leads a merge by rank.
inline std::vector<Math> MathTypesToTry(bool tf32) {
  if (tf32) return {Math::kTensorOp, Math::kFma};
  return {Math::kFma};
}

namespace detail {
inline bool SamePair(const Candidate& a, const Candidate& b) { return a.algo == b.algo && a.math == b.math; }
// Drops later copies of an (algorithm, math type) pair.
inline std::vector<Candidate> Unique(const std::vector<Candidate>& in) {
  std::vector<Candidate> out;
  for (const Candidate& c : in) {
    const bool seen = std::any_of(out.begin(), out.end(), [&](const Candidate& o) { return SamePair(o, c); });
    if (!seen) out.push_back(c);
  }
  return out;
}
}  // namespace detail

// Timed lists (one per math type) merged into one ranking, fastest first: those that succeeded by
// their time (an untimed one after the timed ones), then those that failed; equal times keep the
// order of the lists. A pair listed twice keeps its place in the ranking (its faster time).
inline std::vector<Candidate> MergeByTime(const std::vector<std::vector<Candidate>>& lists) {
  std::vector<Candidate> all;
  for (const auto& list : lists) all.insert(all.end(), list.begin(), list.end());
  std::stable_sort(all.begin(), all.end(), [](const Candidate& a, const Candidate& b) {
    auto rank = [](const Candidate& c) { return std::make_pair(c.ok ? (c.ms >= 0 ? 0 : 1) : 2, c.ok ? c.ms : 0.0f); };
    return rank(a) < rank(b);
  });
  return detail::Unique(all);
}

// Heuristic lists (ranked by cuDNN's guess, untimed) merged by rank: the first of each list, then
// the second of each, and so on; a pair listed twice keeps its first place.
inline std::vector<Candidate> MergeByRank(const std::vector<std::vector<Candidate>>& lists) {
  std::vector<Candidate> all;
  size_t longest = 0;
  for (const auto& list : lists) longest = std::max(longest, list.size());
  for (size_t rank = 0; rank < longest; ++rank)
    for (const auto& list : lists)
      if (rank < list.size()) all.push_back(list[rank]);
  return detail::Unique(all);
}

// Whether the rules allow a candidate, leaving determinism aside: it succeeded, its math type is
// allowed and its own workspace fits.
inline bool Acceptable(const Candidate& c, const Rules& rules) {
  return c.ok && MathAllowed(c.math, rules.tf32) && c.memory <= rules.limit;
}

// The first acceptable candidate of `ranked` (best first), deterministic ones first when the rules
// ask for them; found is false when none is acceptable.
inline Choice Choose(const std::vector<Candidate>& ranked, const Rules& rules) {
  for (const bool want_deterministic : {true, false}) {
    if (want_deterministic && !rules.deterministic) continue;
    for (const Candidate& c : ranked) {
      if (!Acceptable(c, rules) || (want_deterministic && !c.deterministic)) continue;
      Choice choice;
      choice.algo = c.algo;
      choice.math = c.math;
      choice.bytes = c.memory;
      choice.found = true;
      choice.deterministic = c.deterministic;
      return choice;
    }
  }
  return {};
}

// The workspace to request before timing, so that the timing may choose any candidate the rules
// allow: the largest `memory` among the acceptable candidates — among the deterministic ones when
// the rules ask for determinism and one is acceptable (Choose would not take the others). 0 when
// none is acceptable.
inline size_t WorkspaceToRequest(const std::vector<Candidate>& candidates, const Rules& rules) {
  bool only_deterministic = false;
  if (rules.deterministic)
    only_deterministic = std::any_of(candidates.begin(), candidates.end(),
                                     [&](const Candidate& c) { return Acceptable(c, rules) && c.deterministic; });
  size_t most = 0;
  for (const Candidate& c : candidates)
    if (Acceptable(c, rules) && (c.deterministic || !only_deterministic)) most = std::max(most, c.memory);
  return most;
}

// The fallback when nothing acceptable fits: the first of `fallbacks` (FMA algorithms whose
// workspace the caller asked cuDNN for) that succeeded and fits under `limit`, whatever its
// determinism; found is false when none does.
inline Choice FirstThatFits(const std::vector<Candidate>& fallbacks, size_t limit) {
  Rules any;
  any.limit = limit;
  return Choose(fallbacks, any);
}

}  // namespace cortado::cudnn_choice
