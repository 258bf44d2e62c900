// kernels/for_each.hpp — one arithmetic for both devices: a layer's element-wise and per-channel math
// is written once, as a functor, and run over a range by the CPU or the GPU.
//
// What is shared. A functor holds a formula's parameters by value and maps the input values of one
// element to its output value, in float: `float operator()(float x, float dy) const` (Map), or with
// the element's channel first, `float operator()(int64_t c, float x) const` (MapChannels). Its body is
// CORTADO_HOST_DEVICE, so the same lines compile for the host and for the GPU. Map runs it where the
// context lives:
//   - the CPU: an OpenMP loop (split over the threads when the range is large), vectorised;
//   - the GPU (cuda/for_each.cuh): a grid-stride kernel that loads and stores 16 bytes at a time when
//     every pointer allows it, two such packs in flight per thread; MapChannels launches a 2-D grid of
//     (planes × spatial), so a thread finds its channel once per plane instead of dividing per element.
// Element i of the output depends only on element i of the inputs, so both devices compute the same
// float operations in the same order, and the output may be one of the inputs (in place).
//
// Storage. The pointers are of a storage type T (float, BFloat16 or Float16: storage_types.hpp); values
// are converted to float before the functor and back after it (ToFloat, FromFloat), so 16-bit storage
// only adds those conversions.
//
// Work that is not one element in, one element out (a softmax over a position's channels, a loss per
// sample, an index mapping of a crop) is a functor of the index, f(i), run by ForEach: an OpenMP loop
// on the CPU, a grid-stride kernel on the GPU.
//
// Per-channel sums (ChannelSums) and sums to one value (Total: a loss and its count) share their
// per-element terms and their finishing steps the same way; only the order of the additions is each
// device's own, fixed by the shape (so results repeat bit for bit on each device).
//
// What stays device-specific, and is named as such where it lives: cuDNN and cuBLAS calls; scatter and
// gather backward passes (pooling's MAX backward); and kernels whose CPU form is another algorithm
// (im2col-based convolution, LRN's running window sums).
//
// Building. A .cpp calls Map; in a CUDA build the GPU side of each functor is instantiated once in a
// .cu beside the layer's family (CORTADO_GPU_MAP, cuda/for_each.cuh), and a missing one fails at link
// time. A CPU-only build needs nothing per functor: MapGpu then says the build has no CUDA, and so do
// the device-specific GPU functions declared with CORTADO_GPU_ONLY.
#pragma once

#include <climits>
#include <type_traits>
#include <cstdint>
#include <utility>

#include "cortado/context.hpp"
#include "cortado/error.hpp"
#include "cortado/kernels/storage_types.hpp"

#if defined(__CUDACC__)
#define CORTADO_HOST_DEVICE __host__ __device__
#else
#define CORTADO_HOST_DEVICE
#endif

namespace cortado {

// ---- storage ↔ arithmetic -------------------------------------------------------------------------
CORTADO_HOST_DEVICE inline float ToFloat(float v) { return v; }
template <typename T>
CORTADO_HOST_DEVICE T FromFloat(float v);
template <>
CORTADO_HOST_DEVICE inline float FromFloat<float>(float v) { return v; }
template <>
CORTADO_HOST_DEVICE inline BFloat16 FromFloat<BFloat16>(float v) { return ToBFloat16(v); }
template <>
CORTADO_HOST_DEVICE inline Float16 FromFloat<Float16>(float v) { return ToFloat16(v); }

// std::min and std::max as the CPU loops have always used them (a NaN first argument is returned, a
// NaN second one is not), for both devices.
CORTADO_HOST_DEVICE inline float MinOf(float a, float b) { return b < a ? b : a; }
CORTADO_HOST_DEVICE inline float MaxOf(float a, float b) { return a < b ? b : a; }

// A class label as the layers read it: static_cast<int>(v) as x86 does it, so NaN and values outside
// int's range are INT_MIN (never a class).
CORTADO_HOST_DEVICE inline int LabelOf(float v) {
  return v >= -2147483648.0f && v < 2147483648.0f ? static_cast<int>(v) : INT_MIN;
}

// ---- shapes -----------------------------------------------------------------------------------------
// (num, channels, spatial): num · channels planes of `spatial` contiguous elements; plane p holds
// channel p % channels. Caffe's (N, C, H, W) blobs, Scale's (outer, dim, inner) and PReLU's
// (num, channels, dim) are all such a layout.
struct ChannelLayout {
  int64_t num = 0, channels = 1, spatial = 1;
  int64_t count() const { return num * channels * spatial; }
};

// Ranges at least this long are split over the CPU's threads (below it a thread team costs more than
// the loop).
constexpr int64_t kCpuParallelElements = int64_t{1} << 15;

// ---- the CPU side -----------------------------------------------------------------------------------
// out[i] = f(in[i]...) for i < n.
// (A short range runs outside any OpenMP region: an `if` clause that keeps a region to one thread still
// costs the loop its vectorised form.)
template <typename F, typename T, typename... Ins>
void MapCpu(int64_t n, F f, T* out, const Ins*... in) {
  if (n >= kCpuParallelElements) {
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; ++i) out[i] = FromFloat<T>(f(ToFloat(in[i])...));
  } else {
#pragma omp simd
    for (int64_t i = 0; i < n; ++i) out[i] = FromFloat<T>(f(ToFloat(in[i])...));
  }
}

// out[i] = f(c, in[i]...) over a ChannelLayout, c the channel of element i.
template <typename F, typename T, typename... Ins>
void MapPlane(int64_t p, ChannelLayout l, const F& f, T* out, const Ins*... in) {
  const int64_t c = p % l.channels, base = p * l.spatial;
#pragma omp simd
  for (int64_t s = 0; s < l.spatial; ++s) out[base + s] = FromFloat<T>(f(c, ToFloat(in[base + s])...));
}

template <typename F, typename T, typename... Ins>
void MapChannelsCpu(ChannelLayout l, F f, T* out, const Ins*... in) {
  const int64_t planes = l.num * l.channels;
  if (l.count() >= kCpuParallelElements) {
#pragma omp parallel for schedule(static)
    for (int64_t p = 0; p < planes; ++p) MapPlane(p, l, f, out, in...);
  } else {
    for (int64_t p = 0; p < planes; ++p) MapPlane(p, l, f, out, in...);
  }
}

// ---- per-channel sums --------------------------------------------------------------------------------
// A Term adds element i's share of Term::kSums sums, in double: term(i, c, sum). A Finish turns a
// channel's totals into what the layer keeps: finish(c, totals). Both are CORTADO_HOST_DEVICE functors
// of the layer's; the order of the additions is each device's own, fixed by the shape alone:
//   - the CPU sums each image's stretch of the channel in vector lanes and adds the stretches in order
//     (ChannelSumCpu), channels split over the threads;
//   - the GPU sums chunks of a channel in blocks and adds the chunks in order (cuda/channel_sums.cuh);
//     `scratch` holds ChannelSumScratchFloats(num, channels, spatial, Term::kSums) floats there (the
//     CPU needs none).

// Sum k of `term` over channel c.
template <int k, typename Term>
double ChannelSumCpu(ChannelLayout l, int64_t c, const Term& term) {
  double sum = 0;
  for (int64_t n = 0; n < l.num; ++n) {
    const int64_t base = (n * l.channels + c) * l.spatial;
    double part = 0;
#pragma omp simd reduction(+ : part)
    for (int64_t q = 0; q < l.spatial; ++q) {
      double sums[Term::kSums] = {};
      term(base + q, c, sums);
      part += sums[k];
    }
    sum += part;
  }
  return sum;
}

template <typename Term, typename Finish, size_t... K>
void FinishChannelCpu(ChannelLayout l, int64_t c, const Term& term, const Finish& finish, std::index_sequence<K...>) {
  const double totals[] = {ChannelSumCpu<static_cast<int>(K)>(l, c, term)...};
  finish(c, totals);
}

template <typename Term, typename Finish>
void ChannelSumsCpu(ChannelLayout l, const Term& term, const Finish& finish) {
  const auto sums = std::make_index_sequence<Term::kSums>{};
  if (l.count() >= kCpuParallelElements) {
#pragma omp parallel for schedule(static)
    for (int64_t c = 0; c < l.channels; ++c) FinishChannelCpu(l, c, term, finish, sums);
  } else {
    for (int64_t c = 0; c < l.channels; ++c) FinishChannelCpu(l, c, term, finish, sums);
  }
}

// ---- any per-index work ------------------------------------------------------------------------------
// f(i) for i < n, where index i's work is its own: f reads and writes through the pointers it holds, and
// no two indices write one place (a softmax position, a loss's sample, a gate of an LSTM cell, an index
// of a crop). `work` is about how many elements one index touches, for the CPU's split.
template <typename F>
void ForEachCpu(int64_t n, const F& f, int64_t work = 1) {
  if (n * work >= kCpuParallelElements && n > 1) {
#pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; ++i) f(i);
  } else {
    for (int64_t i = 0; i < n; ++i) f(i);
  }
}

// ---- totals ------------------------------------------------------------------------------------------
// Term::kSums sums over i < n of term(i, sums) (term adds index i's shares into sums[0 .. kSums), in
// double), then finish(totals), which stores what the layer keeps where the context lives (a loss top,
// a normalizer). The order of the additions is each device's own and fixed:
//   - the CPU adds the indices in order, on one thread (a loss's CPU loop as it always was);
//   - the GPU gives each of kTotalBlocks blocks a grid-stride share, sums each block (CUB), and adds
//     the blocks' sums in order (cuda/for_each.cuh); `scratch` holds TotalScratchFloats(Term::kSums)
//     floats there (aligned for doubles; the CPU needs none).
constexpr int kTotalBlocks = 128;
constexpr int64_t TotalScratchFloats(int sums) { return int64_t{2} * sums * kTotalBlocks; }

template <typename Term, typename Finish>
void TotalCpu(int64_t n, const Term& term, const Finish& finish) {
  double totals[Term::kSums] = {};
  for (int64_t i = 0; i < n; ++i) term(i, totals);
  finish(static_cast<const double*>(totals));
}

// ---- the GPU side: defined in cuda/for_each.cuh, instantiated by CORTADO_GPU_MAP ----------------------
#if defined(CORTADO_WITH_CUDA)
template <typename F, typename T, typename... Ins>
void MapGpu(Context& ctx, int64_t n, F f, T* out, const Ins*... in);
template <typename F, typename T, typename... Ins>
void MapChannelsGpu(Context& ctx, ChannelLayout l, F f, T* out, const Ins*... in);
template <typename Term, typename Finish>
void ChannelSumsGpu(Context& ctx, ChannelLayout l, float* scratch, const Term& term, const Finish& finish);
template <typename F>
void ForEachGpu(Context& ctx, int64_t n, F f);
template <typename Term, typename Finish>
void TotalGpu(Context& ctx, int64_t n, float* scratch, const Term& term, const Finish& finish);
// A device-specific GPU function, declared beside its layer: CORTADO_GPU_ONLY(void F(Context& ctx, …)).
// A CUDA build defines it in a .cu; a CPU-only build gets a body that says the build has no CUDA, so
// no stub is written by hand.
#define CORTADO_GPU_ONLY(...) __VA_ARGS__;
#else
[[noreturn]] inline void FailNoCudaInThisBuild() {
  Fail("this build of Cortado has no CUDA: run the net with solver_mode: CPU");
}
#define CORTADO_GPU_ONLY(...) \
  inline __VA_ARGS__ { ::cortado::FailNoCudaInThisBuild(); }
template <typename F, typename T, typename... Ins>
void MapGpu(Context&, int64_t, F, T*, const Ins*...) {
  FailNoCudaInThisBuild();
}
template <typename F, typename T, typename... Ins>
void MapChannelsGpu(Context&, ChannelLayout, F, T*, const Ins*...) {
  FailNoCudaInThisBuild();
}
template <typename Term, typename Finish>
void ChannelSumsGpu(Context&, ChannelLayout, float*, const Term&, const Finish&) {
  FailNoCudaInThisBuild();
}
template <typename F>
void ForEachGpu(Context&, int64_t, F) {
  FailNoCudaInThisBuild();
}
template <typename Term, typename Finish>
void TotalGpu(Context&, int64_t, float*, const Term&, const Finish&) {
  FailNoCudaInThisBuild();
}
#endif

// ---- where the context lives ------------------------------------------------------------------------
template <typename F, typename T, typename... Ins>
void Map(Context& ctx, int64_t n, F f, T* out, const Ins*... in) {
  if (n == 0) return;
  if (ctx.device() == Device::kGPU) {
    MapGpu(ctx, n, f, out, in...);
  } else {
    MapCpu(n, f, out, in...);
  }
}

// Map over buffers that all hold `type`, a blob's storage type known at run time (a layer that computes
// on 16-bit storage: the net's plan gives it bottoms and tops of one type). In a CUDA build each
// functor is instantiated for the three types (CORTADO_GPU_MAP_STORED_1 / _2, cuda/for_each.cuh).
template <typename F, typename... In>
void MapStored(Context& ctx, int64_t n, F f, DataType type, void* out, const In*... in) {
  static_assert((std::is_void_v<In> && ...), "MapStored takes untyped buffers");
  switch (type) {
    case DataType::kFloat: Map(ctx, n, f, static_cast<float*>(out), static_cast<const float*>(in)...); break;
    case DataType::kBFloat16: Map(ctx, n, f, static_cast<BFloat16*>(out), static_cast<const BFloat16*>(in)...); break;
    case DataType::kFloat16: Map(ctx, n, f, static_cast<Float16*>(out), static_cast<const Float16*>(in)...); break;
  }
}

template <typename F, typename T, typename... Ins>
void MapChannels(Context& ctx, ChannelLayout l, F f, T* out, const Ins*... in) {
  if (l.count() == 0) return;
  if (ctx.device() == Device::kGPU) {
    MapChannelsGpu(ctx, l, f, out, in...);
  } else {
    MapChannelsCpu(l, f, out, in...);
  }
}

// The Term's sums of every channel, each finished by `finish`, on the context's device.
template <typename Term, typename Finish>
void ChannelSums(Context& ctx, ChannelLayout l, float* scratch, const Term& term, const Finish& finish) {
  if (l.channels == 0) return;
  if (ctx.device() == Device::kGPU) {
    ChannelSumsGpu(ctx, l, scratch, term, finish);
  } else {
    ChannelSumsCpu(l, term, finish);
  }
}

// f(i) for every i < n, on the context's device.
template <typename F>
void ForEach(Context& ctx, int64_t n, F f, int64_t work = 1) {
  if (n <= 0) return;
  if (ctx.device() == Device::kGPU) {
    ForEachGpu(ctx, n, f);
  } else {
    ForEachCpu(n, f, work);
  }
}

// The Term's totals over [0, n), finished by `finish`, on the context's device (finish runs even for
// n = 0, with zero totals).
template <typename Term, typename Finish>
void Total(Context& ctx, int64_t n, float* scratch, const Term& term, const Finish& finish) {
  if (ctx.device() == Device::kGPU) {
    TotalGpu(ctx, n, scratch, term, finish);
  } else {
    TotalCpu(n, term, finish);
  }
}

}  // namespace cortado
