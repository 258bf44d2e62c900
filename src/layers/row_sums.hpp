// row_sums.hpp — sums over rows of contiguous values, once for both devices (kernels/for_each.hpp), for
// the layers that reduce a blob read as rows × dim (Reduction, MVN). A Term adds element i's shares of
// Term::kSums sums in double, term(i, row, sums); a Finish stores what the layer keeps from a row's
// totals, finish(row, totals): the same functors as ChannelSums takes, a row being a channel of the
// ChannelLayout (1, rows, dim). The order of the additions is each device's own, fixed by the shape:
//   - the CPU: one ForEach index per row, adding the row's elements in increasing order (the layers'
//     CPU loops as they have always been), the rows split over the threads;
//   - the GPU: ChannelSums's chunked block sums over (1, rows, dim) (cuda/channel_sums.cuh), so a long
//     row is summed by many threads; `scratch` holds RowSumScratchFloats(rows, Term::kSums)
//     floats there (the CPU needs none).
// A .cu instantiates the GPU side of each (Term, Finish) pair with CORTADO_GPU_CHANNEL_SUMS.
#pragma once

#include <cstdint>

#include "cortado/context.hpp"
#include "cortado/kernels/channel_sums.hpp"  // kChannelSumBlocks
#include "cortado/kernels/for_each.hpp"

namespace cortado {

// rows × dim values as a ChannelLayout: row r is channel r of one image.
inline ChannelLayout RowLayout(int64_t rows, int64_t dim) { return ChannelLayout{1, rows, dim}; }

// Floats of the GPU's scratch for RowSums with `sums` sums per row: enough for any dim, and never more
// for fewer rows, so a reshape to a smaller batch fits the memory planned (rows · chunks, the blocks'
// partial sums, is at most rows + kChannelSumBlocks: kernels/channel_sums.hpp's ChannelSumChunks).
inline int RowSumScratchFloats(int64_t rows, int sums) {
  return static_cast<int>(2 * sums * (rows + kChannelSumBlocks));
}

// The CPU's work for one row: its elements' terms added in order, then finish.
template <typename Term, typename Finish>
struct RowSumsCpu {
  int64_t dim;
  Term term;
  Finish finish;
  void operator()(int64_t r) const {
    double totals[Term::kSums] = {};
    for (int64_t i = r * dim, end = i + dim; i < end; ++i) term(i, r, totals);
    finish(r, static_cast<const double*>(totals));
  }
};

// The Term's sums of every row of rows × dim values, each finished by `finish`, on the context's
// device (a row of no values finishes with zero totals).
template <typename Term, typename Finish>
void RowSums(Context& ctx, int64_t rows, int64_t dim, float* scratch, const Term& term, const Finish& finish) {
  if (rows <= 0) return;
  if (ctx.device() == Device::kGPU) {
    ChannelSumsGpu(ctx, RowLayout(rows, dim), scratch, term, finish);
  } else {
    ForEachCpu(rows, RowSumsCpu<Term, Finish>{dim, term, finish}, dim);
  }
}

}  // namespace cortado
