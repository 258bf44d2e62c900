// loss_gpu_test.cpp — GPU against CPU for SigmoidCrossEntropyLoss, ContrastiveLoss, HingeLoss and
// MultinomialLogisticLoss: the loss written on the device, every normalization, ignore_label, loss
// weights and the bottoms' gradients.
#include "cortado/error.hpp"
#include "gpu_compare.hpp"

namespace cortado::test {

namespace {
GpuCompareOptions Labels(int bottom, int classes) {
  GpuCompareOptions o;
  o.label_bottoms = {{bottom, classes}};
  return o;
}
}  // namespace

// ---- SigmoidCrossEntropyLoss -------------------------------------------------------------------------

TEST(LossGpu, SigmoidCrossEntropyLossMatchesTheCpuInEveryNormalization) {
  SKIP_WITHOUT_GPU();
  for (const std::string norm : {"VALID", "FULL", "BATCH_SIZE", "NONE"}) {
    SCOPED_TRACE(norm);
    // Gaussian targets (not probabilities) still exercise the formula.
    ExpectGpuMatchesCpu("type: 'SigmoidCrossEntropyLoss' loss_param { normalization: " + norm + " }",
                        {{6, 5, 3}, {6, 15}});
    // Targets in {0, 1}, label 1 ignored.
    ExpectGpuMatchesCpu("type: 'SigmoidCrossEntropyLoss' loss_weight: 2 loss_param { normalization: " + norm +
                            " ignore_label: 1 }",
                        {{6, 5}, {6, 5}}, 1, Labels(1, 2));
  }
  ExpectGpuMatchesCpu("type: 'SigmoidCrossEntropyLoss' loss_param { normalize: false }", {{4, 7}, {4, 7}}, 1,
                      Labels(1, 2));
  ExpectGpuMatchesCpu("type: 'SigmoidCrossEntropyLoss' loss_param { ignore_label: 0 }", {{4, 7}, {4, 7}}, 1,
                      Labels(1, 1));  // every position ignored
}

TEST(LossGpu, SigmoidCrossEntropyLossLargeInput) {
  SKIP_WITHOUT_GPU();
  GpuCompareOptions o = Labels(1, 2);
  o.input_std = 20.0f;
  ExpectGpuMatchesCpu("type: 'SigmoidCrossEntropyLoss'", {{64, 1000}, {64, 1000}}, 1, o);
}

// ---- ContrastiveLoss ---------------------------------------------------------------------------------

TEST(LossGpu, ContrastiveLossMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  for (const std::string extra : {"", "contrastive_loss_param { legacy_version: true }",
                                  "loss_weight: 2 contrastive_loss_param { margin: 4 }"}) {
    SCOPED_TRACE(extra);
    GpuCompareOptions o = Labels(2, 2);
    o.input_std = 0.5f;  // distances on both sides of the margin
    ExpectGpuMatchesCpu("type: 'ContrastiveLoss' " + extra, {{16, 5}, {16, 5}, {16}}, 1, o);
    ExpectGpuMatchesCpu("type: 'ContrastiveLoss' " + extra, {{300, 7, 1, 1}, {300, 7, 1, 1}, {300, 1, 1, 1}}, 1, o);
  }
}

// ---- HingeLoss -----------------------------------------------------------------------------------------

TEST(LossGpu, HingeLossMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  ExpectGpuMatchesCpu("type: 'HingeLoss'", {{8, 10}, {8}}, 1, Labels(1, 10));
  ExpectGpuMatchesCpu("type: 'HingeLoss' loss_weight: 2 hinge_loss_param { norm: L2 }", {{8, 10}, {8}}, 1,
                      Labels(1, 10));
  ExpectGpuMatchesCpu("type: 'HingeLoss' hinge_loss_param { norm: L2 }", {{300, 4, 2, 3}, {300}}, 1, Labels(1, 24));
}

// ---- MultinomialLogisticLoss ---------------------------------------------------------------------------

TEST(LossGpu, MultinomialLogisticLossMatchesTheCpu) {
  SKIP_WITHOUT_GPU();
  // Gaussian "probabilities" include negatives and values near 0: the clamp and large gradients
  // (compared relative to their size).
  ExpectGpuMatchesCpu("type: 'MultinomialLogisticLoss'", {{300, 10}, {300}}, 1, Labels(1, 10));
  ExpectGpuMatchesCpu("type: 'MultinomialLogisticLoss' loss_weight: 2", {{5, 4}, {5}}, 1, Labels(1, 4));
}

// ---- bad labels ----------------------------------------------------------------------------------------

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
