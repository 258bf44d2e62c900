// cudnn_choice.hpp — which of cuDNN's measured convolution algorithms a layer runs (cudnnFind* ranks
// them fastest first): the first that succeeded, whose math type is one this context allows, that is
// deterministic when reproducibility was asked for (else, when none is, the first that is not), and
// whose workspace fits the limit. The math type the algorithm was measured with is the one it runs
// with (the layer sets it on the descriptor before each call). cuDNN builds only; no device needed,
// so the rules are tested on the CPU.
#pragma once

#include <cudnn.h>

#include <cstddef>
#include <vector>

namespace cortado::cudnn_choice {

struct Rules {
  bool tf32 = false;           // TF32 tensor cores allowed (else plain FP32 FMA only)
  bool deterministic = false;  // prefer algorithms that give the same bits every run
  size_t limit = 0;            // the most workspace, in bytes
};

template <typename Algo>
struct Choice {
  Algo algo{};
  cudnnMathType_t math = CUDNN_FMA_MATH;
  size_t bytes = 0;
  bool found = false;          // false: nothing acceptable fits (the caller falls back)
  bool deterministic = false;  // whether the chosen algorithm is
};

// Strict FP32 runs FMA kernels only; TF32 also allows cuDNN's default math (TF32 on sm_80+) and tensor
// ops, never a conversion of FP32 data to FP16.
inline bool MathAllowed(cudnnMathType_t math, bool tf32) {
  if (math == CUDNN_FMA_MATH) return true;
  return tf32 && (math == CUDNN_DEFAULT_MATH || math == CUDNN_TENSOR_OP_MATH);
}

// `ranked`: cuDNN's results (the first `count`); `workspace_of(algo, math, &bytes)` asks cuDNN again for
// an algorithm's exact workspace under a math type (a cudnnStatus_t; failure skips the algorithm).
template <typename Perf, typename WorkspaceOf>
auto Choose(const std::vector<Perf>& ranked, int count, const Rules& rules, WorkspaceOf workspace_of)
    -> Choice<decltype(Perf{}.algo)> {
  using Algo = decltype(Perf{}.algo);
  for (const bool want_deterministic : {true, false}) {
    if (want_deterministic && !rules.deterministic) continue;
    for (int i = 0; i < count && i < static_cast<int>(ranked.size()); ++i) {
      const Perf& p = ranked[i];
      if (p.status != CUDNN_STATUS_SUCCESS || !MathAllowed(p.mathType, rules.tf32)) continue;
      const bool deterministic = p.determinism == CUDNN_DETERMINISTIC;
      if (want_deterministic && !deterministic) continue;
      size_t need = 0;
      if (workspace_of(p.algo, p.mathType, &need) != CUDNN_STATUS_SUCCESS || need > rules.limit) continue;
      Choice<Algo> choice;
      choice.algo = p.algo;
      choice.math = p.mathType;
      choice.bytes = need;
      choice.found = true;
      choice.deterministic = deterministic;
      return choice;
    }
  }
  return {};
}

}  // namespace cortado::cudnn_choice
