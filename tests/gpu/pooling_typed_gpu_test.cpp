// pooling_typed_gpu_test.cpp — MAX and AVE pooling on the GPU over 16-bit storage and channels-last
// blobs (pooling.cpp, cuda/pooling.cu): the kernels index NCHW and NHWC through one ImageLayout and run
// the CPU's window arithmetic in float, each output rounded once, and their gradient gathers add in
// the CPU's scatter order, so the GPU's results equal the CPU's NCHW ones (transposed from NHWC) bit
// for bit, forward and backward, in every storage type.
#include <string>
#include <vector>

#include "gpu_compare.hpp"
#include "layers/typed_pooling.hpp"

namespace cortado::test {

namespace {

// The windows: padding, CEIL windows cut by the border, an empty window, overlapping windows (several
// gradients gathered into one dx), kernels of other heights and widths, and global pooling.
const char* const kWindows[] = {
    "kernel_size: 2 stride: 2",
    "kernel_size: 3 stride: 2 pad: 1",
    "kernel_size: 3 stride: 2",
    "kernel_size: 3 stride: 1 pad: 1",
    "kernel_h: 2 kernel_w: 3 stride_h: 3 stride_w: 2 pad_h: 1 pad_w: 2",
    "kernel_h: 3 kernel_w: 2 stride_h: 2 stride_w: 1 pad_h: 1 pad_w: 0 round_mode: FLOOR",
    "kernel_size: 1 stride: 3",
    "global_pooling: true",
};

// The GPU layer over blobs of `type` in NHWC (nhwc) or NCHW, against the CPU layer (Cortado's loops,
// NCHW) over blobs of the same type, on the same values: y and dx equal element for element.
void ExpectGpuEqualsCpu(DataType type, bool nhwc) {
  const std::vector<int> shape{2, 5, 9, 7};  // C = 5: an NHWC plane's neighbours are not aligned
  for (const char* pool : {"MAX", "AVE"})
    for (const char* window : kWindows) {
      const std::string text = std::string("type: 'Pooling' pooling_param { pool: ") + pool + " " + window;
      SCOPED_TRACE(std::string(DataTypeName(type)) + (nhwc ? " NHWC " : " NCHW ") + text);
      TypedPooling cpu(text + " engine: CAFFE }", shape, type);
      TypedPooling gpu(text + " }", shape, type, nhwc, Device::kGPU);
      ASSERT_EQ(gpu.top().shape(), cpu.top().shape());
      ASSERT_EQ(gpu.top().channels_last(), nhwc);
      const std::vector<float> x = GaussianIn(type, Blob(shape).count(), 11);
      const std::vector<float> dy = GaussianIn(type, cpu.top().count(), 12);
      cpu.Run(x, dy);
      gpu.Run(x, dy);
      for (size_t i = 0; i < cpu.y.size(); ++i) ASSERT_EQ(gpu.y[i], cpu.y[i]) << "y " << i;
      for (size_t i = 0; i < cpu.dx.size(); ++i) ASSERT_EQ(gpu.dx[i], cpu.dx[i]) << "dx " << i;
    }
}

}  // namespace

// Channels-last on the GPU: the NCHW CPU layer's results, transposed, in float, bf16 and fp16.
TEST(PoolingTypedGpu, ChannelsLastEqualsTheCpusNchwTransposed) {
  SKIP_WITHOUT_GPU();
  for (DataType type : {DataType::kFloat, DataType::kBFloat16, DataType::kFloat16}) ExpectGpuEqualsCpu(type, true);
}

// 16-bit NCHW on the GPU: the CPU's 16-bit results.
TEST(PoolingTypedGpu, SixteenBitNchwEqualsTheCpus) {
  SKIP_WITHOUT_GPU();
  for (DataType type : {DataType::kBFloat16, DataType::kFloat16}) ExpectGpuEqualsCpu(type, false);
}

}  // namespace cortado::test
