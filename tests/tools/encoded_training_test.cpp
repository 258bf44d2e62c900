// encoded_training_test.cpp — the same images converted plain and --encoded train the same net to
// the same accuracy: convert_imageset stores JPEG files as decoded pixels or as their own bytes
// (decoded later in the Data layer's workers), and both LMDBs must feed identical batches — here
// read with different numbers of worker threads — so the two runs end with identical weights.
#include <opencv2/core.hpp>
#include <opencv2/imgcodecs.hpp>
#include <opencv2/imgproc.hpp>

#include <filesystem>
#include <fstream>
#include <random>
#include <regex>
#include <sstream>

#include "cortado/image.hpp"
#include "cortado/io.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

// 24×24 colour JPEGs of four classes — a bar across, a bar down, a filled disc, a ring — in random
// places and colours over noise; "name label" lines in list.txt.
void WriteShapeImages(const std::string& dir, int count) {
  std::mt19937 rng(11);
  std::ofstream list(dir + "/list.txt");
  for (int i = 0; i < count; ++i) {
    cv::Mat image(24, 24, CV_8UC3);
    cv::randu(image, cv::Scalar::all(0), cv::Scalar::all(60));
    const int label = i % 4;
    const cv::Scalar colour(150 + rng() % 100, 150 + rng() % 100, 150 + rng() % 100);
    const int a = 6 + static_cast<int>(rng() % 12), b = 6 + static_cast<int>(rng() % 12);
    if (label == 0) cv::rectangle(image, cv::Point(2, a - 2), cv::Point(21, a + 2), colour, cv::FILLED);
    if (label == 1) cv::rectangle(image, cv::Point(a - 2, 2), cv::Point(a + 2, 21), colour, cv::FILLED);
    if (label == 2) cv::circle(image, cv::Point(a, b), 5, colour, cv::FILLED);
    if (label == 3) cv::circle(image, cv::Point(a, b), 5, colour, 1);
    const std::string name = "shape " + std::to_string(i) + ".jpg";  // a space: split at the last one
    ASSERT_TRUE(cv::imwrite(dir + "/" + name, image));
    list << name << " " << label << "\n";
  }
}

std::string WriteSolver(const std::string& dir, const std::string& name, const std::string& lmdb, int threads) {
  const std::string net = dir + "/" + name + "_net.prototxt";
  std::ofstream(net) << R"(name: "shapes"
layer { name: "data" type: "Data" top: "data" top: "label" include { phase: TRAIN }
  transform_param { scale: 0.00390625 mirror: true }
  data_param { source: ")" << lmdb << R"(" batch_size: 16 backend: LMDB threads: )" << threads << R"( } }
layer { name: "data" type: "Data" top: "data" top: "label" include { phase: TEST }
  transform_param { scale: 0.00390625 }
  data_param { source: ")" << lmdb << R"(" batch_size: 50 backend: LMDB threads: )" << threads << R"( } }
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
  convolution_param { num_output: 8 kernel_size: 5 weight_filler { type: "xavier" } } }
layer { name: "relu" type: "ReLU" bottom: "conv" top: "conv" }
layer { name: "pool" type: "Pooling" bottom: "conv" top: "pool" pooling_param { pool: MAX kernel_size: 2 stride: 2 } }
layer { name: "ip" type: "InnerProduct" bottom: "pool" top: "ip" inner_product_param { num_output: 4 weight_filler { type: "xavier" } } }
layer { name: "accuracy" type: "Accuracy" bottom: "ip" bottom: "label" top: "accuracy" include { phase: TEST } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip" bottom: "label" top: "loss" }
)";
  const std::string solver = dir + "/" + name + "_solver.prototxt";
  std::ofstream(solver) << "net: '" << net << "'\n"
                        << "test_iter: 4 test_interval: 150 test_initialization: false\n"
                        << "base_lr: 0.05 momentum: 0.9 lr_policy: 'fixed' max_iter: 150 display: 50\n"
                        << "random_seed: 5 solver_mode: CPU snapshot: 0 snapshot_prefix: '" << dir << "/" << name << "'\n";
  return solver;
}

}  // namespace

TEST(EncodedTraining, PlainAndEncodedConversionsTrainToTheSameAccuracy) {
  if (!BuiltWithImageSupport()) GTEST_SKIP() << "this build has no OpenCV";
  const std::string dir = TempDir();
  std::filesystem::create_directories(dir + "/images");
  WriteShapeImages(dir + "/images", 200);
  const std::string convert = ToolPath("convert_imageset") + " '" + dir + "/images/' '" + dir + "/images/list.txt' ";
  const auto plain = RunCommand(convert + dir + "/plain_lmdb");
  ASSERT_EQ(plain.exit_code, 0) << plain.err;
  const auto encoded = RunCommand(ToolPath("convert_imageset") + " --encoded '" + dir + "/images/' '" + dir +
                                  "/images/list.txt' " + dir + "/encoded_lmdb");
  ASSERT_EQ(encoded.exit_code, 0) << encoded.err;
  // The encoded database is the smaller one: it holds JPEG bytes, not pixels.
  EXPECT_LT(std::filesystem::file_size(dir + "/encoded_lmdb/data.mdb"),
            std::filesystem::file_size(dir + "/plain_lmdb/data.mdb"));

  const auto plain_run = RunCommand(ToolPath("trainer") + " train --solver=" +
                                    WriteSolver(dir, "plain", dir + "/plain_lmdb", 1));
  ASSERT_EQ(plain_run.exit_code, 0) << plain_run.err;
  const auto encoded_run = RunCommand(ToolPath("trainer") + " train --solver=" +
                                      WriteSolver(dir, "encoded", dir + "/encoded_lmdb", 2));
  ASSERT_EQ(encoded_run.exit_code, 0) << encoded_run.err;

  const double plain_accuracy = LastLoggedValue(plain_run.err, "accuracy", "Test net output #[0-9]+: ");
  EXPECT_GT(plain_accuracy, 0.9) << "the shapes should be easy to tell apart\n" << plain_run.err;
  EXPECT_EQ(LastLoggedValue(encoded_run.err, "accuracy", "Test net output #[0-9]+: "), plain_accuracy);
  // The weights, blob by blob (the files differ where the layers name their sources).
  NetParameter plain_weights, encoded_weights;
  ReadProtoFromBinaryFile(dir + "/plain_iter_150.caffemodel", &plain_weights);
  ReadProtoFromBinaryFile(dir + "/encoded_iter_150.caffemodel", &encoded_weights);
  ASSERT_EQ(encoded_weights.layer_size(), plain_weights.layer_size());
  for (int i = 0; i < plain_weights.layer_size(); ++i) {
    ASSERT_EQ(encoded_weights.layer(i).blobs_size(), plain_weights.layer(i).blobs_size());
    for (int j = 0; j < plain_weights.layer(i).blobs_size(); ++j)
      EXPECT_EQ(encoded_weights.layer(i).blobs(j).SerializeAsString(), plain_weights.layer(i).blobs(j).SerializeAsString())
          << "layer " << plain_weights.layer(i).name() << " blob " << j
          << ": decoding in the workers gave other pixels than decoding at conversion";
  }
}

}  // namespace cortado::test
