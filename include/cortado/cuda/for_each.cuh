// cuda/for_each.cuh — the GPU side of kernels/for_each.hpp: the kernels that run a functor over a
// range, ForEach's grid-stride loop over indices, Total's block sums, the per-channel sums
// (cuda/channel_sums.cuh), and CORTADO_GPU_MAP, CORTADO_GPU_MAP_CHANNELS, CORTADO_GPU_FOR_EACH,
// CORTADO_GPU_TOTAL and CORTADO_GPU_CHANNEL_SUMS, which instantiate them for one functor in the .cu
// beside a layer. CUDA sources only.
//
// Map: when every pointer is 16-byte aligned and all storage types have one size, each thread loads
// whole 16-byte packs (four floats) of every input, kPacksInFlight packs before it computes any, and
// stores whole packs; the last n mod 4 elements are done by the first threads of block 0. Otherwise
// one element per thread in a grid-stride loop.
// MapChannels: a 2-D grid, y over the planes (num · channels) and x over a plane's packs (or elements
// when a plane is not a whole number of aligned packs); a thread works out its channel once per plane.
#pragma once

#include <cstdint>
#include <utility>

#include "cortado/cuda/channel_sums.cuh"  // cuda::QueueChannelSums
#include "cortado/cuda/resources.hpp"      // cuda::Stream, kThreads, CORTADO_LAUNCH
#include "cortado/kernels/for_each.hpp"

namespace cortado::cuda {

// 16 bytes of storage type T, loaded and stored as one.
template <typename T>
struct alignas(16) Pack {
  static constexpr int kSize = 16 / sizeof(T);
  T v[kSize];
};

constexpr int kPacksInFlight = 2;

template <typename... Ts>
bool AllAligned16(const Ts*... p) {
  return ((reinterpret_cast<uintptr_t>(p) % 16 == 0) && ...);
}

// Room for the inputs' values (one row even without inputs: a map may take none, as a fill does).
template <typename... Ins>
constexpr int kInputRows = sizeof...(Ins) > 0 ? static_cast<int>(sizeof...(Ins)) : 1;

// v[I][k] = element k of input I's pack q, as float.
template <int W, int kRows, typename... Ins, size_t... I>
__device__ __forceinline__ void LoadPacks(float (&v)[kRows][W], int64_t q, std::index_sequence<I...>,
                                          const Ins*... in) {
  auto load = [q](float(&dst)[W], const auto* src) {
    using S = std::remove_cv_t<std::remove_pointer_t<decltype(src)>>;
    const Pack<S> pack = reinterpret_cast<const Pack<S>*>(src)[q];
#pragma unroll
    for (int k = 0; k < W; ++k) dst[k] = ToFloat(pack.v[k]);
  };
  (load(v[I], in), ...);
  (void)load;
}

template <typename F, int W, int kRows, size_t... I, typename... Lead>
__device__ __forceinline__ float CallAt(const F& f, const float (&v)[kRows][W], int k, std::index_sequence<I...>,
                                        Lead... lead) {
  return f(lead..., v[I][k]...);
}

template <typename F, typename T, typename... Ins>
__global__ void MapPacksKernel(int64_t packs, int tail, F f, T* out, const Ins*... in) {
  constexpr int W = Pack<T>::kSize;
  using Inputs = std::index_sequence_for<Ins...>;
  const int64_t stride = static_cast<int64_t>(blockDim.x) * gridDim.x;
  for (int64_t p = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; p < packs;
       p += stride * kPacksInFlight) {
    float v[kPacksInFlight][kInputRows<Ins...>][W];
#pragma unroll
    for (int u = 0; u < kPacksInFlight; ++u)
      if (p + u * stride < packs) LoadPacks<W>(v[u], p + u * stride, Inputs{}, in...);
#pragma unroll
    for (int u = 0; u < kPacksInFlight; ++u) {
      if (p + u * stride >= packs) continue;
      Pack<T> r;
#pragma unroll
      for (int k = 0; k < W; ++k) r.v[k] = FromFloat<T>(CallAt(f, v[u], k, Inputs{}));
      reinterpret_cast<Pack<T>*>(out)[p + u * stride] = r;
    }
  }
  if (blockIdx.x == 0 && threadIdx.x < tail) {
    const int64_t i = packs * W + threadIdx.x;
    out[i] = FromFloat<T>(f(ToFloat(in[i])...));
  }
}

template <typename F, typename T, typename... Ins>
__global__ void MapKernel(int64_t n, F f, T* out, const Ins*... in) {
  CORTADO_KERNEL_LOOP(i, n) out[i] = FromFloat<T>(f(ToFloat(in[i])...));
}

// units: packs per plane when kPacked, else elements per plane.
template <bool kPacked, typename F, typename T, typename... Ins>
__global__ void MapChannelsKernel(ChannelLayout l, int64_t units, F f, T* out, const Ins*... in) {
  constexpr int W = Pack<T>::kSize;
  using Inputs = std::index_sequence_for<Ins...>;
  const int64_t planes = l.num * l.channels;
  for (int64_t p = static_cast<int64_t>(blockIdx.y) * blockDim.y + threadIdx.y; p < planes;
       p += static_cast<int64_t>(gridDim.y) * blockDim.y) {
    const int64_t c = p % l.channels;
    for (int64_t u = static_cast<int64_t>(blockIdx.x) * blockDim.x + threadIdx.x; u < units;
         u += static_cast<int64_t>(gridDim.x) * blockDim.x) {
      if constexpr (kPacked) {
        const int64_t q = p * units + u;
        float v[kInputRows<Ins...>][W];
        LoadPacks<W>(v, q, Inputs{}, in...);
        Pack<T> r;
#pragma unroll
        for (int k = 0; k < W; ++k) r.v[k] = FromFloat<T>(CallAt(f, v, k, Inputs{}, c));
        reinterpret_cast<Pack<T>*>(out)[q] = r;
      } else {
        const int64_t i = p * l.spatial + u;
        out[i] = FromFloat<T>(f(c, ToFloat(in[i])...));
      }
    }
  }
}

template <typename F>
__global__ void ForEachKernel(int64_t n, F f) {
  CORTADO_KERNEL_LOOP(i, n) f(i);
}

// Block b's sums of its grid-stride share of [0, n), at partial[q · kTotalBlocks + b].
template <typename Term>
__global__ void TotalPartsKernel(int64_t n, Term term, double* partial) {
  double sum[Term::kSums] = {};
  CORTADO_KERNEL_LOOP(i, n) term(i, sum);
  using Reduce = cub::BlockReduce<double, kThreads>;
  __shared__ typename Reduce::TempStorage storage;
#pragma unroll
  for (int q = 0; q < Term::kSums; ++q) {
    const double total = Reduce(storage).Sum(sum[q]);
    if (threadIdx.x == 0) partial[q * kTotalBlocks + blockIdx.x] = total;
    __syncthreads();  // the storage is reused
  }
}

// One thread: the blocks' sums added in order, then finish.
template <int kSums, typename Finish>
__global__ void TotalFinishKernel(const double* partial, Finish finish) {
  double totals[kSums];
#pragma unroll
  for (int q = 0; q < kSums; ++q) {
    double sum = 0;
    for (int b = 0; b < kTotalBlocks; ++b) sum += partial[q * kTotalBlocks + b];
    totals[q] = sum;
  }
  finish(static_cast<const double*>(totals));
}

}  // namespace cortado::cuda

namespace cortado {

template <typename F, typename T, typename... Ins>
void MapGpu(Context& ctx, int64_t n, F f, T* out, const Ins*... in) {
  constexpr bool kOneSize = ((sizeof(Ins) == sizeof(T)) && ...);
  constexpr int W = cuda::Pack<T>::kSize;
  if (kOneSize && cuda::AllAligned16(out, in...)) {
    const int64_t packs = n / W;
    const unsigned blocks = cuda::GridFor(packs, int64_t{cuda::kThreads} * cuda::kPacksInFlight, 65535 * 8);
    CORTADO_LAUNCH((cuda::MapPacksKernel<F, T, Ins...>), blocks, cuda::kThreads, 0, cuda::Stream(ctx), packs,
                   static_cast<int>(n - packs * W), f, out, in...);
  } else {
    CORTADO_LAUNCH((cuda::MapKernel<F, T, Ins...>), cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx), n, f,
                   out, in...);
  }
}

template <typename F, typename T, typename... Ins>
void MapChannelsGpu(Context& ctx, ChannelLayout l, F f, T* out, const Ins*... in) {
  constexpr bool kOneSize = ((sizeof(Ins) == sizeof(T)) && ...);
  constexpr int W = cuda::Pack<T>::kSize;
  const bool packed = kOneSize && l.spatial % W == 0 && cuda::AllAligned16(out, in...);
  const int64_t units = packed ? l.spatial / W : l.spatial;
  // A block of kThreads: as many threads across a plane as it has units (a power of two), the rest
  // over further planes.
  int across = 1;
  while (across < cuda::kThreads && across < units) across *= 2;
  const dim3 block(across, cuda::kThreads / across);
  const dim3 grid(cuda::GridFor(units, across, 1 << 30), cuda::GridFor(l.num * l.channels, block.y, 65535));
  if (packed) {
    CORTADO_LAUNCH((cuda::MapChannelsKernel<true, F, T, Ins...>), grid, block, 0, cuda::Stream(ctx), l, units, f,
                   out, in...);
  } else {
    CORTADO_LAUNCH((cuda::MapChannelsKernel<false, F, T, Ins...>), grid, block, 0, cuda::Stream(ctx), l, units, f,
                   out, in...);
  }
}

template <typename Term, typename Finish>
void ChannelSumsGpu(Context& ctx, ChannelLayout l, float* scratch, const Term& term, const Finish& finish) {
  cuda::QueueChannelSums(ctx, l.num, l.channels, l.spatial, scratch, term, finish);
}

template <typename F>
void ForEachGpu(Context& ctx, int64_t n, F f) {
  CORTADO_LAUNCH(cuda::ForEachKernel<F>, cuda::BlocksFor(n), cuda::kThreads, 0, cuda::Stream(ctx), n, f);
}

template <typename Term, typename Finish>
void TotalGpu(Context& ctx, int64_t n, float* scratch, const Term& term, const Finish& finish) {
  double* partial = reinterpret_cast<double*>(scratch);
  CORTADO_LAUNCH(cuda::TotalPartsKernel<Term>, kTotalBlocks, cuda::kThreads, 0, cuda::Stream(ctx), n, term, partial);
  CORTADO_LAUNCH((cuda::TotalFinishKernel<Term::kSums, Finish>), 1, 1, 0, cuda::Stream(ctx), partial, finish);
}

}  // namespace cortado

// The GPU side of one functor, instantiated in a family's .cu (inside namespace cortado), by the
// pointer types of its call: CORTADO_GPU_MAP(ReLUForward, float*, const float*).
#define CORTADO_GPU_MAP(F, ...) template void MapGpu(Context&, int64_t, F, __VA_ARGS__)
#define CORTADO_GPU_MAP_CHANNELS(F, ...) template void MapChannelsGpu(Context&, ChannelLayout, F, __VA_ARGS__)
// MapStored's instantiations: a functor of one or two inputs over each storage type.
#define CORTADO_GPU_MAP_STORED_1(F)                    \
  CORTADO_GPU_MAP(F, float*, const float*);          \
  CORTADO_GPU_MAP(F, BFloat16*, const BFloat16*);    \
  CORTADO_GPU_MAP(F, Float16*, const Float16*)
#define CORTADO_GPU_MAP_STORED_2(F)                                    \
  CORTADO_GPU_MAP(F, float*, const float*, const float*);              \
  CORTADO_GPU_MAP(F, BFloat16*, const BFloat16*, const BFloat16*);     \
  CORTADO_GPU_MAP(F, Float16*, const Float16*, const Float16*)
#define CORTADO_GPU_FOR_EACH(F) template void ForEachGpu(Context&, int64_t, F)
#define CORTADO_GPU_TOTAL(Term, Finish) \
  template void TotalGpu(Context&, int64_t, float*, const Term&, const Finish&)
#define CORTADO_GPU_CHANNEL_SUMS(Term, Finish) \
  template void ChannelSumsGpu(Context&, ChannelLayout, float*, const Term&, const Finish&)
