// loss_gpu_test.cpp — HingeLoss and MultinomialLogisticLoss on the GPU: a bad label is the CPU's
// Error. The plain CPU-against-GPU comparisons of SigmoidCrossEntropyLoss, ContrastiveLoss, HingeLoss
// and MultinomialLogisticLoss (every normalization, ignore_label, loss weights, the bottoms' gradients)
// are rows of layer_table_gpu_test.cpp.
#include "cortado/error.hpp"
#include "gpu_compare.hpp"

namespace cortado::test {

TEST(LossGpu, BadLabelIsTheCpusError) {
  SKIP_WITHOUT_GPU();
  for (const std::string type : {"HingeLoss", "MultinomialLogisticLoss"}) {
    std::string messages[2];
    const Device devices[2] = {Device::kCPU, Device::kGPU};
    for (int k = 0; k < 2; ++k) {
      LayerFixture f("name: 'loss' type: '" + type + "'", {{4, 3}, {4}}, 1, 1701, devices[k]);
      f.bottom(0).WriteData(std::vector<float>(12, 0.5f));
      f.bottom(1).WriteData({0, 2, 5, 7});
      try {
        f.Forward();
      } catch (const Error& e) {
        messages[k] = e.what();
      }
    }
    EXPECT_NE(messages[0].find("label 5 (at position 2)"), std::string::npos) << messages[0];
    EXPECT_EQ(messages[1], messages[0]);
  }
}

}  // namespace cortado::test
