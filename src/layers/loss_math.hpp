// loss_math.hpp — what the losses that sum over positions share, once for both devices
// (kernels/for_each.hpp): the loss and its count summed by Total in a fixed order, the normalizer kept
// where the context lives for the backward pass, and the first bad label flagged for a one-line error.
// SoftmaxWithLoss, InfogainLoss, SigmoidCrossEntropyLoss, ContrastiveLoss, HingeLoss,
// MultinomialLogisticLoss and EuclideanLoss run their terms through it.
//
// A loss layer keeps a work blob of kWorkFloats floats (a step scratch, on either device): Total's
// scratch for two sums (loss, count), then the normalizer (a float) at kNormalizer, then the bad-label
// flag (an unsigned: the first bad position, kNoBadLabel when none) at kFlag. At the end, the GPU's
// read-back of such a flag (FirstBadLabelGpu), which Embed and BatchReindex share.
#pragma once

#include <cstdint>

#include "cortado/context.hpp"
#include "cortado/kernels/for_each.hpp"

namespace cortado::loss {

constexpr int64_t kWorkFloats = 1024;
constexpr int64_t kNormalizer = TotalScratchFloats(2);
constexpr int64_t kFlag = kNormalizer + 1;
static_assert(kFlag < kWorkFloats, "the loss work blob is too small");
constexpr unsigned kNoBadLabel = 0xffffffffu;

inline unsigned* FlagOf(float* work) { return reinterpret_cast<unsigned*>(work + kFlag); }

// Keeps the smallest position flagged in *flag, whichever thread of either device flags it.
CORTADO_HOST_DEVICE inline void KeepFirst(unsigned* flag, int64_t position) {
  const auto p = static_cast<unsigned>(position);
#if defined(__CUDA_ARCH__)
  atomicMin(flag, p);
#else
  unsigned seen = __atomic_load_n(flag, __ATOMIC_RELAXED);
  while (p < seen && !__atomic_compare_exchange_n(flag, &seen, p, true, __ATOMIC_RELAXED, __ATOMIC_RELAXED)) {
  }
#endif
}

// Whether class label l (of position p) lies in [0, classes): a term counts it; one outside is flagged
// at p for the layer's one-line error, and the term skips it (never reading through it).
CORTADO_HOST_DEVICE inline bool InRangeOrFlagged(int l, int64_t classes, unsigned* flag, int64_t p) {
  if (l >= 0 && l < classes) return true;
  KeepFirst(flag, p);
  return false;
}

// Total's finish: n = max(the count when by_count, else `fixed`, 1) is kept at work[kNormalizer], and
// the loss top gets Σ loss / n. A Term adds a position's loss to sums[0] and, when it counts, 1 to
// sums[1].
struct StoreLoss {
  bool by_count;
  double fixed;
  float* normalizer;
  float* loss;
  CORTADO_HOST_DEVICE void operator()(const double* totals) const {
    double n = by_count ? totals[1] : fixed;
    if (n < 1.0) n = 1.0;
    *normalizer = static_cast<float>(n);
    *loss = static_cast<float>(totals[0] / n);
  }
};

// Clears the bad-label flag of `work` (before a forward pass whose terms flag labels):
// ForEach(ctx, 1, ClearFlag{FlagOf(work)}).
struct ClearFlag {
  unsigned* flag;
  CORTADO_HOST_DEVICE void operator()(int64_t) const { *flag = kNoBadLabel; }
};

// The first position the terms flagged, or −1; with its label value in *value_host. Waits for the GPU
// unless value_host is null (labels checked upstream: nothing is read, and −1 is returned).
int64_t FirstFlagged(Context& ctx, float* work, const float* labels, float* value_host);

// Σ term over [0, n), finished by StoreLoss into `loss` (a top's data) with the normalizer in work.
template <typename Term>
void SumLoss(Context& ctx, int64_t n, float* work, const Term& term, bool by_count, double fixed, float* loss) {
  Total(ctx, n, work, term, StoreLoss{by_count, fixed, work + kNormalizer, loss});
}

// dloss / n as a backward pass scales its gradient, from the loss top's diff and the work blob's
// normalizer (pointers into the context's device; read where the functor runs).
CORTADO_HOST_DEVICE inline float GradScale(const float* dloss, const float* work) {
  return dloss[0] / work[kNormalizer];
}

}  // namespace cortado::loss

namespace cortado {

// ---- GPU-specific: the bad-label read-back (cuda/loss_math.cu) -----------------------------------
// No CUDA types, so a layer's .cpp calls it (CORTADO_GPU_ONLY: in a CPU-only build it throws); flag and
// labels are device pointers. The loss and accuracy terms above and the Embed and BatchReindex kernels
// (embed_gpu.hpp, batch_reindex_gpu.hpp) mark the first position whose label is out of range in one
// device word, `flag` (an unsigned; all ones when none); this reads it back (waiting for the compute
// stream) and returns that position and the label's value there (*value_host), or −1 when every label
// was valid. A null value_host (labels checked on the host upstream, Layer::BadLabelOut) skips the
// check: nothing is read or waited for.
CORTADO_GPU_ONLY(int64_t FirstBadLabelGpu(Context& ctx, const float* flag, const float* labels, float* value_host))

}  // namespace cortado
