// shape_ops_gpu_test.cpp — Crop, Tile, Reduction and ArgMax on the GPU against the CPU: Crop with
// default, shared and per-axis offsets (bottom 0's diff zero outside the crop), Tile along several
// axes, Reduction's four operations to a scalar and per row, ArgMax with and without an axis, with
// out_max_val and top_k, and its tie order on hand-made values. The layers also claim GPU support
// exactly when built with CUDA.
#include "cortado/gpu.hpp"
#include "cortado/layer_registry.hpp"
#include "gpu_compare.hpp"

namespace cortado::test {

TEST(ShapeOpsGpu, LayersClaimGpuSupportExactlyWhenBuiltWithCuda) {
  Context ctx(Device::kCPU, 1);
  for (const char* type : {"Crop", "Tile", "Reduction", "ArgMax"}) {
    auto layer = LayerRegistry::Create(ParseLayer(std::string("name: 'x' type: '") + type + "'"), ctx);
    EXPECT_EQ(layer->HasGpuImplementation(), BuiltWithCuda()) << type;
  }
}

TEST(ShapeOpsGpu, Crop) {
  SKIP_WITHOUT_GPU();
  ExpectGpuMatchesCpu("type: 'Crop'", {{2, 3, 5, 6}, {1, 1, 3, 4}});
  ExpectGpuMatchesCpu("type: 'Crop' crop_param { offset: 1 }", {{2, 3, 5, 6}, {1, 1, 3, 4}});
  ExpectGpuMatchesCpu("type: 'Crop' crop_param { axis: 1 offset: 1 offset: 2 offset: 0 }",
                      {{2, 3, 5, 6}, {2, 2, 3, 4}});
  ExpectGpuMatchesCpu("type: 'Crop' crop_param { axis: 0 offset: 1 offset: 0 offset: 2 offset: 1 }",
                      {{3, 3, 5, 6}, {2, 3, 3, 4}});
  ExpectGpuMatchesCpu("type: 'Crop' crop_param { axis: -1 offset: 3 }", {{4, 7}, {4, 2}});
  ExpectGpuMatchesCpu("type: 'Crop'", {{2, 3, 5, 6}, {2, 3, 5, 6}});  // nothing cropped
}

TEST(ShapeOpsGpu, Tile) {
  SKIP_WITHOUT_GPU();
  ExpectGpuMatchesCpu("type: 'Tile' tile_param { tiles: 3 }", {{2, 3, 4, 5}});
  ExpectGpuMatchesCpu("type: 'Tile' tile_param { axis: 0 tiles: 2 }", {{2, 3, 4}});
  ExpectGpuMatchesCpu("type: 'Tile' tile_param { axis: -1 tiles: 5 }", {{2, 3, 4}});
  ExpectGpuMatchesCpu("type: 'Tile' tile_param { axis: 2 tiles: 1 }", {{2, 3, 4}});
}

TEST(ShapeOpsGpu, Reduction) {
  SKIP_WITHOUT_GPU();
  for (const char* op : {"SUM", "ASUM", "SUMSQ", "MEAN"}) {
    SCOPED_TRACE(op);
    const std::string p = std::string("type: 'Reduction' reduction_param { operation: ") + op;
    ExpectGpuMatchesCpu(p + " }", {{2, 3, 4, 5}});
    ExpectGpuMatchesCpu(p + " axis: 1 coeff: -0.5 }", {{2, 3, 4, 5}});
    ExpectGpuMatchesCpu(p + " axis: -1 coeff: 2 }", {{7, 3, 300}});
    ExpectGpuMatchesCpu(p + " axis: 1 }", {{3, 100000}});  // rows much longer than a block
  }
}

TEST(ShapeOpsGpu, ArgMax) {
  SKIP_WITHOUT_GPU();
  GpuCompareOptions options;
  options.check_backward = false;
  ExpectGpuMatchesCpu("type: 'ArgMax'", {{4, 10}}, 1, options);
  ExpectGpuMatchesCpu("type: 'ArgMax' argmax_param { top_k: 3 }", {{4, 3, 2, 5}}, 1, options);
  ExpectGpuMatchesCpu("type: 'ArgMax' argmax_param { top_k: 4 out_max_val: true }", {{4, 10}}, 1, options);
  ExpectGpuMatchesCpu("type: 'ArgMax' argmax_param { axis: 1 }", {{2, 5, 3, 4}}, 1, options);
  ExpectGpuMatchesCpu("type: 'ArgMax' argmax_param { axis: 1 top_k: 5 out_max_val: true }", {{2, 5, 3, 4}}, 1,
                      options);
  ExpectGpuMatchesCpu("type: 'ArgMax' argmax_param { axis: -1 top_k: 2 }", {{2, 5, 3, 4}}, 1, options);
  ExpectGpuMatchesCpu("type: 'ArgMax' argmax_param { axis: 0 top_k: 2 }", {{3, 7}}, 1, options);
}

TEST(ShapeOpsGpu, ArgMaxTiesPickTheHigherIndexFirst) {
  SKIP_WITHOUT_GPU();
  LayerFixture f("type: 'ArgMax' argmax_param { top_k: 4 out_max_val: true }", {{1, 5}}, 1, 1701, Device::kGPU);
  f.bottom(0).WriteData({2, 7, 2, 7, 1});
  f.Forward();
  f.ctx().Synchronize();
  EXPECT_EQ(f.top(0).ReadData(), (std::vector<float>{3, 1, 2, 0, 7, 7, 2, 2}));
}

}  // namespace cortado::test
