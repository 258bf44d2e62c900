// gpu_timeline.cu — GpuTimeline: timing CUDA events recorded on a context's compute stream.
#include <cuda_runtime.h>
#include <glog/logging.h>

#include <memory>
#include <vector>

#include "cortado/cuda/resources.hpp"  // cuda::Stream, cuda::Event, CORTADO_CUDA_CHECK
#include "cortado/solver.hpp"          // GpuTimeline

namespace cortado {

struct GpuTimeline::Events {
  std::vector<std::unique_ptr<cuda::Event>> marks;
};

GpuTimeline::GpuTimeline(Context& ctx, int marks) : ctx_(ctx), events_(std::make_unique<Events>()) {
  CORTADO_CUDA_CHECK(cudaSetDevice(cuda::Resources(ctx).device));
  for (int i = 0; i < marks; ++i) events_->marks.push_back(std::make_unique<cuda::Event>(/*timing=*/true));
}

GpuTimeline::~GpuTimeline() = default;

void GpuTimeline::Mark(int i) {
  CORTADO_CUDA_CHECK(cudaEventRecord(events_->marks.at(i)->get(), cuda::Stream(ctx_)));
}

void GpuTimeline::Wait() { CORTADO_CUDA_CHECK(cudaStreamSynchronize(cuda::Stream(ctx_))); }

double GpuTimeline::Milliseconds(int from, int to) const {
  float ms = 0;
  CORTADO_CUDA_CHECK(cudaEventElapsedTime(&ms, events_->marks.at(from)->get(), events_->marks.at(to)->get()));
  return ms;
}

}  // namespace cortado
