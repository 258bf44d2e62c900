// mixed_precision_training_test.cpp — a BatchNorm net trained on Fashion-MNIST in bf16 and in fp16
// (activations and gradients stored in 16 bits, fp32 master weights; fp16 with dynamic loss scaling)
// ends within half a point of the same training in float, scored on the 10,000 test images. Needs
// data/fashion_mnist (scripts/test.sh prepares it with data/get_fashion_mnist.sh).
#include <cstdio>
#include <filesystem>

#include "cortado/io.hpp"
#include "cortado/solver.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

// Two convolutions, each followed by BatchNorm, Scale and ReLU (the layers mixed precision keeps or
// stores in 16 bits), then two inner products.
std::string FashionNet(const std::string& root) {
  std::string data;
  for (const char* phase : {"TRAIN", "TEST"}) {
    const bool train = std::string(phase) == "TRAIN";
    data += std::string("layer { name: 'data' type: 'Data' top: 'data' top: 'label' include { phase: ") + phase +
            " } transform_param { scale: 0.00390625 } data_param { source: '" + root + "/data/fashion_mnist/fashion_" +
            (train ? "train" : "test") + "_lmdb' batch_size: " + (train ? "64" : "100") + " backend: LMDB" +
            (train ? " shuffle: true" : "") + " } }\n";
  }
  std::string body;
  auto block = [&](const std::string& name, const std::string& bottom, int outputs) {
    body += "layer { name: '" + name + "' type: 'Convolution' bottom: '" + bottom + "' top: '" + name +
            "' convolution_param { num_output: " + std::to_string(outputs) +
            " kernel_size: 3 pad: 1 bias_term: false weight_filler { type: 'msra' } } }\n"
            "layer { name: '" + name + "_bn' type: 'BatchNorm' bottom: '" + name + "' top: '" + name + "' }\n" +
            "layer { name: '" + name + "_scale' type: 'Scale' bottom: '" + name + "' top: '" + name +
            "' scale_param { bias_term: true } }\n" +
            "layer { name: '" + name + "_relu' type: 'ReLU' bottom: '" + name + "' top: '" + name + "' }\n" +
            "layer { name: '" + name + "_pool' type: 'Pooling' bottom: '" + name + "' top: '" + name +
            "_pool' pooling_param { pool: MAX kernel_size: 2 stride: 2 } }\n";
  };
  block("conv1", "data", 16);
  block("conv2", "conv1_pool", 32);
  body += R"(
layer { name: 'ip1' type: 'InnerProduct' bottom: 'conv2_pool' top: 'ip1'
        inner_product_param { num_output: 128 weight_filler { type: 'msra' } } }
layer { name: 'relu3' type: 'ReLU' bottom: 'ip1' top: 'ip1' }
layer { name: 'ip2' type: 'InnerProduct' bottom: 'ip1' top: 'ip2'
        inner_product_param { num_output: 10 weight_filler { type: 'xavier' } } }
layer { name: 'loss' type: 'SoftmaxWithLoss' bottom: 'ip2' bottom: 'label' top: 'loss' }
layer { name: 'accuracy' type: 'Accuracy' bottom: 'ip2' bottom: 'label' top: 'accuracy' include { phase: TEST } }
)";
  return "name: 'fashion_bn'\n" + data + body;
}

// Test accuracy after training in `precision` (FLOAT, BFLOAT16, FLOAT16).
double TrainedAccuracy(Type precision, int iterations) {
  const std::string root = SourceDir();
  SolverParameter param;
  ReadProtoFromTextString(std::string("base_lr: 0.02 momentum: 0.9 weight_decay: 0.0005 lr_policy: 'multistep' gamma: 0.1 ") +
                          "display: 0 random_seed: 3 solver_mode: CPU test_iter: 100 test_interval: 1000000 "
                          "test_initialization: false snapshot_after_train: false",
                          &param);
  param.set_max_iter(iterations);
  param.add_stepvalue(iterations * 2 / 3);
  param.add_stepvalue(iterations * 9 / 10);
  ReadProtoFromTextString(FashionNet(root), param.mutable_net_param());
  param.set_snapshot_prefix(TempDir() + "/fashion");
  param.set_precision(precision);
  Solver solver(param);
  solver.Step(iterations);
  solver.TestAll();
  double accuracy = -1;
  const auto& names = solver.test_nets()[0]->blob_names();
  const auto& outputs = solver.test_nets()[0]->output_blob_indices();
  for (size_t k = 0; k < outputs.size(); ++k)
    if (names[outputs[k]] == "accuracy") accuracy = solver.last_test_scores(0)[k];
  std::printf("Fashion-MNIST BatchNorm net, %s, %d iterations: test accuracy %.4f (%d steps skipped)\n",
              Type_Name(precision).c_str(), iterations, accuracy, solver.skipped_steps());
  return accuracy;
}

}  // namespace

TEST(MixedPrecisionTraining, BatchNormNetInBf16AndFp16EndsWithinHalfAPointOfFloat) {
  const std::string root = SourceDir();
  for (const char* db : {"/data/fashion_mnist/fashion_train_lmdb/data.mdb", "/data/fashion_mnist/fashion_test_lmdb/data.mdb"})
    ASSERT_TRUE(std::filesystem::exists(root + db)) << root + db << " is missing: scripts/test.sh prepares Fashion-MNIST";
  constexpr int kIterations = 3000;
  const double float_accuracy = TrainedAccuracy(FLOAT, kIterations);
  ASSERT_GT(float_accuracy, 0.85);  // the float run learned: the comparison means something
  EXPECT_NEAR(TrainedAccuracy(BFLOAT16, kIterations), float_accuracy, 0.005);
  EXPECT_NEAR(TrainedAccuracy(FLOAT16, kIterations), float_accuracy, 0.005);
}

}  // namespace cortado::test
