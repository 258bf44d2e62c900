// im2col_hdf5_output_gpu_test.cpp — HDF5Output writing the same file from a GPU layer as from a CPU
// one, two forwards appended; both Im2col and HDF5Output claim GPU support exactly when built with
// CUDA. Im2col's plain CPU-against-GPU comparisons (columns and col2im gradient over pad / stride /
// dilation / rectangular kernels, a channel axis after leading axes, one spatial axis) are rows of
// layer_table_gpu_test.cpp.
#include <string>
#include <vector>

#include "cortado/gpu.hpp"
#include "cortado/hdf5.hpp"  // HaveHdf5Support, ReadHdf5Datasets
#include "cortado/layer_registry.hpp"
#include "gpu_compare.hpp"

namespace cortado::test {

TEST(Im2colHdf5OutputGpu, LayersClaimGpuSupportExactlyWhenBuiltWithCuda) {
  Context ctx(Device::kCPU, 1);
  for (const char* type : {"Im2col", "HDF5Output"}) {
    auto layer = LayerRegistry::Create(ParseLayer(std::string("name: 'x' type: '") + type + "'"), ctx);
    EXPECT_EQ(layer->HasGpuImplementation(), BuiltWithCuda()) << type;
  }
}

// The same two batches through a CPU and a GPU layer: the files hold the same datasets.
TEST(Im2colHdf5OutputGpu, Hdf5OutputWritesTheSameFile) {
  SKIP_WITHOUT_GPU();
  if (!HaveHdf5Support()) GTEST_SKIP() << "this build has no HDF5";
  const std::string dir = TempDir();
  std::vector<std::vector<Hdf5Dataset>> files;
  for (Device device : {Device::kCPU, Device::kGPU}) {
    const std::string file = dir + (device == Device::kGPU ? "/gpu.h5" : "/cpu.h5");
    LayerFixture f("name: 'out' type: 'HDF5Output' hdf5_output_param { file_name: '" + file + "' }", {{2, 3, 2}, {2}},
                   0, 1701, device);
    for (int k = 0; k < 2; ++k) {
      std::vector<float> data(12), label(2);
      for (int i = 0; i < 12; ++i) data[i] = 0.5f * i - k;
      for (int n = 0; n < 2; ++n) label[n] = static_cast<float>(10 * k + n);
      f.bottom(0).WriteData(data);
      f.bottom(1).WriteData(label);
      f.Forward();
    }
    files.push_back(ReadHdf5Datasets(file, {"data", "label"}));
  }
  for (int d = 0; d < 2; ++d) {
    EXPECT_EQ(files[1][d].dims, files[0][d].dims) << "dataset " << d;
    EXPECT_EQ(files[1][d].values, files[0][d].values) << "dataset " << d;
  }
  EXPECT_EQ(files[0][0].dims, (std::vector<int64_t>{4, 3, 2, 1}));
  EXPECT_EQ(files[0][1].values, (std::vector<float>{0, 1, 10, 11}));
}

}  // namespace cortado::test
