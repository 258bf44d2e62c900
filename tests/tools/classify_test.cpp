// classify_test.cpp — the built classify end to end. LeNet, trained briefly on MNIST, names the digit of
// MNIST test images written as PNG files, with probabilities equal (to the 4 printed decimals) to an
// in-process forward of the same input, in Caffe's output format. A net whose output is its input
// (an identity InnerProduct) shows exactly what reaches the net: BGR order, the per-channel means of a
// compute_image_mean .binaryproto subtracted, --scale, grey images made BGR and resized. And each
// mistake is one line on stderr with exit code 1. The MNIST tests need data/mnist (scripts/test.sh
// prepares it) and are skipped, visibly, without it; the image tests need OpenCV in the build.
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "bad_input.hpp"  // ToolError, Has
#include "cortado/batch_size.hpp"
#include "cortado/cortado.pb.h"
#include "cortado/gpu.hpp"
#include "cortado/image.hpp"
#include "cortado/io.hpp"
#include "gpu/gpu_compare.hpp"  // SKIP_WITHOUT_GPU
#include "test_util.hpp"

namespace cortado::test {

namespace {

namespace fs = std::filesystem;

constexpr int kDigits = 10, kMnistSize = 28;
constexpr const char* kLeNetScale = "0.00390625";  // transform_param scale of lenet_train_test.prototxt

#define SKIP_WITHOUT_OPENCV() \
  if (!BuiltWithImageSupport()) GTEST_SKIP() << "this build has no OpenCV, which classify needs"

// ---- images ----------------------------------------------------------------------------------------

// Writes a PNG of planar C×H×W pixels (C 1: grey; C 3: B, G, R planes, as a net sees them): a PNM
// written here, re-encoded as PNG by Cortado's OpenCV image reader.
void WritePng(const std::string& path, int channels, int height, int width, const std::vector<uint8_t>& planar) {
  ASSERT_EQ(planar.size(), size_t(channels) * height * width);
  std::string pnm = (channels == 1 ? "P5\n" : "P6\n") + std::to_string(width) + " " + std::to_string(height) + "\n255\n";
  const size_t plane = size_t(height) * width;
  for (size_t i = 0; i < plane; ++i) {
    if (channels == 1) {
      pnm += static_cast<char>(planar[i]);
    } else {
      for (int c = 2; c >= 0; --c) pnm += static_cast<char>(planar[c * plane + i]);  // PPM stores R, G, B
    }
  }
  WriteFile(path + ".pnm", pnm);
  Datum encoded;
  ReadImageToDatum(path + ".pnm", 0, 0, 0, channels == 1 ? ColorMode::kGray : ColorMode::kColor, "png", &encoded);
  ASSERT_TRUE(encoded.encoded());
  WriteFile(path, encoded.data());
  fs::remove(path + ".pnm");
}

// MNIST test image `index` (28×28 grey bytes) and its label, from the idx files.
struct MnistImage {
  std::vector<uint8_t> pixels;
  int label = -1;
};
MnistImage ReadMnistTest(const std::string& root, int index) {
  MnistImage image;
  const std::string images = ReadFile(root + "/data/mnist/t10k-images-idx3-ubyte");
  const std::string labels = ReadFile(root + "/data/mnist/t10k-labels-idx1-ubyte");
  const size_t at = 16 + size_t(index) * kMnistSize * kMnistSize;
  EXPECT_GE(images.size(), at + kMnistSize * kMnistSize);
  EXPECT_GT(labels.size(), size_t(8 + index));
  if (images.size() < at + kMnistSize * kMnistSize || labels.size() <= size_t(8 + index)) return image;
  image.pixels.assign(images.begin() + at, images.begin() + at + kMnistSize * kMnistSize);
  image.label = static_cast<uint8_t>(labels[8 + index]);
  return image;
}

// ---- running classify ------------------------------------------------------------------------------

struct Prediction {
  double probability;
  std::string label;
};
struct Block {
  std::string image;
  std::vector<Prediction> predictions;
};

// Runs classify with `args` (from the repository root); fails the test unless it exits 0. Returns
// stdout; stderr goes to *err when given.
std::string Classify(const std::string& args, std::string* err = nullptr) {
  const std::string out = NewTempDir() + "/stdout.txt";
  // In a subshell: RunCommand sends the command's own stdout to /dev/null.
  const CommandResult r = RunCommand("(cd " + SourceDir() + " && " + ToolPath("classify") + " " + args + " >" + out + ")");
  EXPECT_EQ(r.exit_code, 0) << args << "\n" << r.err;
  if (err != nullptr) *err = r.err;
  return ReadFile(out);
}

// Parses classify's output, checking that every line has Caffe's format exactly.
std::vector<Block> ParseOutput(const std::string& text) {
  std::vector<Block> blocks;
  const std::regex header("^---------- Prediction for (.+?)(?: \\(raw scores of '[^']*', not probabilities\\))? "
                          "----------$");
  const std::regex line("^(-?[0-9]+\\.[0-9]{4}) - \"(.*)\"$");
  std::istringstream in(text);
  std::smatch match;
  for (std::string row; std::getline(in, row);) {
    if (std::regex_match(row, match, header)) {
      blocks.push_back({match[1], {}});
    } else if (std::regex_match(row, match, line) && !blocks.empty()) {
      blocks.back().predictions.push_back({std::stod(match[1]), match[2]});
    } else {
      ADD_FAILURE() << "not a line of classify's output: '" << row << "'\n" << text;
    }
  }
  return blocks;
}

std::string Fixed4(float value) {
  std::ostringstream out;
  out << std::fixed;
  out.precision(4);
  out << value;
  return out.str();
}

// ---- LeNet on MNIST --------------------------------------------------------------------------------

bool HaveMnist() {
  for (const char* file : {"/data/mnist/mnist_train_lmdb/data.mdb", "/data/mnist/t10k-images-idx3-ubyte",
                           "/data/mnist/t10k-labels-idx1-ubyte"})
    if (!fs::exists(SourceDir() + file)) return false;
  return true;
}

#define SKIP_WITHOUT_MNIST() \
  if (!HaveMnist()) GTEST_SKIP() << SourceDir() << "/data/mnist is missing: scripts/test.sh prepares MNIST"

// LeNet's weights after a short run of Caffe's recipe on the unchanged train/test net (fixed seed),
// trained once per test program.
const std::string& TrainedLeNet() {
  static std::string weights;
  if (!weights.empty()) return weights;
  const std::string dir = NewTempDir();
  std::ofstream(dir + "/lenet_solver.prototxt")
      << "net: 'models/mnist/lenet_train_test.prototxt'\n"
      << "base_lr: 0.01 momentum: 0.9 weight_decay: 0.0005 lr_policy: 'inv' gamma: 0.0001 power: 0.75\n"
      << "max_iter: 200 display: 100 snapshot: 0 random_seed: 1 solver_mode: CPU\n"
      << "snapshot_prefix: '" << dir << "/lenet'\n";
  const auto train = RunCommand("cd " + SourceDir() + " && " + ToolPath("trainer") + " train --solver=" + dir +
                                "/lenet_solver.prototxt");
  EXPECT_EQ(train.exit_code, 0) << train.err;
  if (train.exit_code == 0) weights = dir + "/lenet_iter_200.caffemodel";
  return weights;
}

// The deploy LeNet's softmax for one image, computed here: batch 1, pixels × 1/256, on the CPU.
std::vector<float> LeNetForward(const std::string& weights, const std::vector<uint8_t>& pixels) {
  const std::string deploy = SourceDir() + "/models/mnist/lenet.prototxt";
  NetParameter param;
  ReadProtoFromTextFile(deploy, &param);
  param.mutable_state()->set_phase(TEST);
  SetBatchSize(&param, 1);
  Context ctx(Device::kCPU, 1);
  Net net(param, ctx, deploy);
  net.AllocateOwnArena();
  net.LoadWeightsFile(weights);
  std::vector<float> input;
  for (uint8_t p : pixels) input.push_back(p * 0.00390625f);
  net.blob_by_name("data")->WriteData(input);
  net.Forward();
  return net.output_blobs()[0]->ReadData();
}

// One MNIST test image of each digit, among those the briefly trained LeNet names with probability
// above 0.9 (some of the first of each digit, as images 8 and 18, it may miss).
const int kMnistIndices[kDigits] = {3, 2, 35, 30, 19, 23, 21, 0, 84, 12};

std::string WriteDigitLabels(const std::string& dir) {
  std::string labels;
  for (int d = 0; d < kDigits; ++d) labels += "digit " + std::to_string(d) + "\n";
  WriteFile(dir + "/labels.txt", labels);
  return dir + "/labels.txt";
}

// ---- a net that shows its input ----------------------------------------------------------------------

constexpr int kChannels = 3, kHeight = 2, kWidth = 2, kValues = kChannels * kHeight * kWidth;

// dir/identity.prototxt (Input "data" 2×3×2×2, batch 2 so that classify must make it 1; InnerProduct
// "ip" to 12 outputs), dir/identity.caffemodel (ip = the identity, bias 0) and dir/identity_labels.txt
// ("c<channel> y<row> x<column>" for output i, in C×H×W order).
void WriteIdentityNet(const std::string& dir) {
  WriteFile(dir + "/identity.prototxt", R"(name: "identity"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 2 dim: 3 dim: 2 dim: 2 } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 12 } }
)");
  NetParameter weights;
  LayerParameter* ip = weights.add_layer();
  ip->set_name("ip");
  ip->set_type("InnerProduct");
  BlobProto* w = ip->add_blobs();
  w->mutable_shape()->add_dim(kValues);
  w->mutable_shape()->add_dim(kValues);
  for (int o = 0; o < kValues; ++o)
    for (int i = 0; i < kValues; ++i) w->add_data(o == i ? 1.0f : 0.0f);
  BlobProto* b = ip->add_blobs();
  b->mutable_shape()->add_dim(kValues);
  for (int o = 0; o < kValues; ++o) b->add_data(0.0f);
  WriteProtoToBinaryFile(weights, dir + "/identity.caffemodel");
  std::string labels;
  for (int c = 0; c < kChannels; ++c)
    for (int y = 0; y < kHeight; ++y)
      for (int x = 0; x < kWidth; ++x) labels += "c" + std::to_string(c) + " y" + std::to_string(y) + " x" + std::to_string(x) + "\n";
  WriteFile(dir + "/identity_labels.txt", labels);
}

std::string IdentityArgs(const std::string& dir, const std::string& mean, const std::string& images) {
  return dir + "/identity.prototxt " + dir + "/identity.caffemodel " + mean + " " + dir + "/identity_labels.txt " +
         images;
}

// What the identity net prints for planar BGR `pixels`: every value (pixel − mean of its channel) ×
// scale with its label, highest first, as text.
std::vector<std::pair<std::string, std::string>> Expected(const std::vector<uint8_t>& pixels,
                                                          const std::vector<float>& means, float scale) {
  std::vector<std::pair<float, int>> values;
  for (int i = 0; i < kValues; ++i) values.push_back({(float(pixels[i]) - means[i / (kHeight * kWidth)]) * scale, i});
  std::stable_sort(values.begin(), values.end(), [](const auto& a, const auto& b) { return a.first > b.first; });
  std::vector<std::pair<std::string, std::string>> expected;
  for (const auto& [value, i] : values) {
    const int c = i / (kHeight * kWidth), y = i / kWidth % kHeight, x = i % kWidth;
    expected.push_back({Fixed4(value), "c" + std::to_string(c) + " y" + std::to_string(y) + " x" + std::to_string(x)});
  }
  return expected;
}

std::vector<std::pair<std::string, std::string>> Printed(const Block& block) {
  std::vector<std::pair<std::string, std::string>> printed;
  for (const auto& p : block.predictions) printed.push_back({Fixed4(float(p.probability)), p.label});
  return printed;
}

// A 2×2 BGR image whose every value differs: channel c, position i has 40·c + 7·i + 100.
std::vector<uint8_t> ColourPixels() {
  std::vector<uint8_t> pixels;
  for (int i = 0; i < kValues; ++i) pixels.push_back(static_cast<uint8_t>(40 * (i / 4) + 7 * (i % 4) + 100));
  return pixels;
}

}  // namespace

// ---- tests -------------------------------------------------------------------------------------------

TEST(Classify, LeNetNamesMnistDigitsWithTheProbabilitiesOfAForward) {
  SKIP_WITHOUT_OPENCV();
  SKIP_WITHOUT_MNIST();
  const std::string& weights = TrainedLeNet();
  ASSERT_FALSE(weights.empty());
  const std::string dir = NewTempDir();
  const std::string labels = WriteDigitLabels(dir);
  std::string images;
  std::vector<MnistImage> digits;
  for (int index : kMnistIndices) {
    digits.push_back(ReadMnistTest(SourceDir(), index));
    ASSERT_EQ(digits.back().pixels.size(), size_t(kMnistSize * kMnistSize));
    const std::string png = dir + "/mnist_" + std::to_string(index) + ".png";
    WritePng(png, 1, kMnistSize, kMnistSize, digits.back().pixels);
    images += " " + png;
  }

  // Caffe's command line, with LeNet's input scale.
  std::string err;
  const std::string out = Classify(std::string("--scale=") + kLeNetScale + " models/mnist/lenet.prototxt " +
                                       weights + " none " + labels + images,
                                   &err);
  const std::vector<Block> blocks = ParseOutput(out);
  ASSERT_EQ(blocks.size(), size_t(kDigits)) << out;
  for (int d = 0; d < kDigits; ++d) {
    const Block& block = blocks[d];
    const int index = kMnistIndices[d];
    SCOPED_TRACE("MNIST test image " + std::to_string(index) + " (a " + std::to_string(digits[d].label) + ")");
    EXPECT_EQ(block.image, dir + "/mnist_" + std::to_string(index) + ".png");
    ASSERT_EQ(block.predictions.size(), 5u) << out;  // Caffe's top 5
    EXPECT_EQ(block.predictions[0].label, "digit " + std::to_string(digits[d].label)) << out;
    const std::vector<float> softmax = LeNetForward(weights, digits[d].pixels);
    ASSERT_EQ(softmax.size(), size_t(kDigits));
    for (size_t k = 0; k < block.predictions.size(); ++k) {
      const Prediction& p = block.predictions[k];
      if (k > 0) EXPECT_LE(p.probability, block.predictions[k - 1].probability) << out;
      const int digit = p.label.back() - '0';
      // The printed value is the forward's, rounded to 4 decimals (either way, should the tool's
      // threads have summed in another order).
      EXPECT_NEAR(p.probability, softmax[digit], 0.5e-4 + 1e-6) << p.label << "\n" << out;
      // Ranked as the forward ranks them: no class outside the top k scores higher.
      for (int other = 0; other < kDigits; ++other) {
        const bool listed = std::any_of(block.predictions.begin(), block.predictions.end(),
                                        [&](const Prediction& q) { return q.label.back() - '0' == other; });
        if (!listed) EXPECT_LE(softmax[other], softmax[digit]) << other << " vs " << p.label;
      }
    }
  }
  // The log on stderr, the predictions alone on stdout.
  EXPECT_TRUE(Has(err, "Copying source layer conv1")) << err;

  // --top_k, capped at the number of labels; flags after the arguments work too.
  const std::string first = dir + "/mnist_" + std::to_string(kMnistIndices[0]) + ".png";
  const auto three = ParseOutput(Classify("models/mnist/lenet.prototxt " + weights + " '' " + labels + " " + first +
                                          " --top_k=3 --scale=" + kLeNetScale));
  ASSERT_EQ(three.size(), 1u);
  ASSERT_EQ(three[0].predictions.size(), 3u);
  for (int k = 0; k < 3; ++k) EXPECT_EQ(three[0].predictions[k].label, blocks[0].predictions[k].label);
  const auto all = ParseOutput(Classify(std::string("--top_k=50 --scale=") + kLeNetScale +
                                        " models/mnist/lenet.prototxt " + weights + " none " + labels + " " + first));
  ASSERT_EQ(all.size(), 1u);
  EXPECT_EQ(all[0].predictions.size(), size_t(kDigits));
  double sum = 0;
  for (const auto& p : all[0].predictions) sum += p.probability;
  EXPECT_NEAR(sum, 1.0, 6e-4);  // ten values rounded to 4 decimals
}

TEST(Classify, PrintsExactlyCaffesFormat) {
  SKIP_WITHOUT_OPENCV();
  const std::string dir = NewTempDir();
  WriteIdentityNet(dir);
  // Labels with spaces and quotes are printed as they are; Windows line ends are dropped.
  std::string labels;
  for (int i = 0; i < kValues; ++i) labels += (i == 11 ? "say \"hi\"" : "class " + std::to_string(i)) + "\r\n";
  WriteFile(dir + "/identity_labels.txt", labels);
  std::vector<uint8_t> pixels(kValues, 0);
  pixels[11] = 200, pixels[3] = 100, pixels[7] = 1;
  WritePng(dir + "/a.png", 3, kHeight, kWidth, pixels);
  const std::string out = Classify(IdentityArgs(dir, "none", dir + "/a.png") + " --top_k=4");
  EXPECT_EQ(out, "---------- Prediction for " + dir + "/a.png (raw scores of 'ip', not probabilities) ----------\n"
                 "200.0000 - \"say \"hi\"\"\n"
                 "100.0000 - \"class 3\"\n"
                 "1.0000 - \"class 7\"\n"
                 "0.0000 - \"class 0\"\n");  // ties: the first class first
}

// Caffe's example prints its net's output as probabilities. The output of a net that ends without a
// Softmax is printed as what it is, raw scores, which the header of each image and a warning say; with
// a Softmax, the header is Caffe's and the values are the softmax of those scores.
TEST(Classify, RawScoresAreNotCalledProbabilities) {
  SKIP_WITHOUT_OPENCV();
  const std::string dir = NewTempDir();
  WriteIdentityNet(dir);
  std::vector<uint8_t> pixels(kValues, 0);
  pixels[5] = 2, pixels[9] = 1;
  WritePng(dir + "/a.png", 3, kHeight, kWidth, pixels);
  std::string err;
  const std::string raw = Classify(IdentityArgs(dir, "none", dir + "/a.png") + " --top_k=2", &err);
  EXPECT_EQ(raw, "---------- Prediction for " + dir + "/a.png (raw scores of 'ip', not probabilities) ----------\n"
                 "2.0000 - \"c1 y0 x1\"\n"
                 "1.0000 - \"c2 y0 x1\"\n");
  EXPECT_TRUE(Has(err, "The output 'ip' is made by ip (InnerProduct), not a Softmax: the values printed are its raw "
                       "scores, not probabilities")) << err;

  WriteFile(dir + "/identity.prototxt", ReadFile(dir + "/identity.prototxt") +
                                            "layer { name: \"prob\" type: \"Softmax\" bottom: \"ip\" top: \"prob\" }\n");
  const std::string probabilities = Classify(IdentityArgs(dir, "none", dir + "/a.png") + " --top_k=2", &err);
  const double total = std::exp(2.0) + std::exp(1.0) + (kValues - 2);  // the other 10 scores are 0
  EXPECT_EQ(probabilities, "---------- Prediction for " + dir + "/a.png ----------\n" +
                               Fixed4(float(std::exp(2.0) / total)) + " - \"c1 y0 x1\"\n" +
                               Fixed4(float(std::exp(1.0) / total)) + " - \"c2 y0 x1\"\n");
  EXPECT_FALSE(Has(err, "not a Softmax")) << err;
}

TEST(Classify, SubtractsTheChannelMeansOfAComputeImageMeanFileInBgrOrder) {
  SKIP_WITHOUT_OPENCV();
  const std::string dir = NewTempDir();
  WriteIdentityNet(dir);
  // A mean from compute_image_mean: records i = 0..2 with pixel j = i + j, so the mean image's pixel
  // j is j + 1 and channel c's mean is 4c + 2.5 (the mean of 4c+1 .. 4c+4).
  WriteDatumLmdb(dir + "/db", kChannels, kHeight, kWidth, {0, 0, 0});
  const auto mean_run = RunCommand(ToolPath("compute_image_mean") + " " + dir + "/db " + dir + "/mean.binaryproto");
  ASSERT_EQ(mean_run.exit_code, 0) << mean_run.err;
  const std::vector<float> means = {2.5f, 6.5f, 10.5f};

  const std::vector<uint8_t> pixels = ColourPixels();
  WritePng(dir + "/colour.png", 3, kHeight, kWidth, pixels);
  // A grey image of another size: made BGR (three equal channels) and resized (a constant stays so).
  const std::vector<uint8_t> grey(3 * 5, 77);
  WritePng(dir + "/grey.png", 1, 3, 5, grey);

  const auto blocks = ParseOutput(
      Classify("--top_k=12 --scale=0.5 " + IdentityArgs(dir, dir + "/mean.binaryproto", dir + "/colour.png " + dir + "/grey.png")));
  ASSERT_EQ(blocks.size(), 2u);
  EXPECT_EQ(Printed(blocks[0]), Expected(pixels, means, 0.5f));
  EXPECT_EQ(Printed(blocks[1]), Expected(std::vector<uint8_t>(kValues, 77), means, 0.5f));

  // Without a mean ("none" or ""), the pixels themselves; the default scale is 1.
  for (const char* none : {"none", "''"}) {
    const auto raw = ParseOutput(Classify("--top_k=12 " + IdentityArgs(dir, none, dir + "/colour.png")));
    ASSERT_EQ(raw.size(), 1u);
    EXPECT_EQ(Printed(raw[0]), Expected(pixels, {0, 0, 0}, 1.0f)) << none;
  }

  // A mean image of another size and in the shape field: only its channel means count (as Caffe's).
  BlobProto big;
  for (int d : {1, 3, 4, 4}) big.mutable_shape()->add_dim(d);
  for (int c = 0; c < 3; ++c)
    for (int i = 0; i < 16; ++i) big.add_data(20.0f * c + 0.5f * i);  // means 3.75, 23.75, 43.75
  WriteProtoToBinaryFile(big, dir + "/big_mean.binaryproto");
  const auto shifted = ParseOutput(Classify("--top_k=12 " + IdentityArgs(dir, dir + "/big_mean.binaryproto", dir + "/colour.png")));
  ASSERT_EQ(shifted.size(), 1u);
  EXPECT_EQ(Printed(shifted[0]), Expected(pixels, {3.75f, 23.75f, 43.75f}, 1.0f));
}

TEST(Classify, GpuFlagWithoutAGpuRunsOnTheCpuAndSaysSo) {
  SKIP_WITHOUT_OPENCV();
  if (GpuCount() > 0) GTEST_SKIP() << "this machine has a GPU";
  const std::string dir = NewTempDir();
  WriteIdentityNet(dir);
  WritePng(dir + "/colour.png", 3, kHeight, kWidth, ColourPixels());
  std::string err;
  const auto blocks = ParseOutput(Classify("--gpu=0 --top_k=12 " + IdentityArgs(dir, "none", dir + "/colour.png"), &err));
  EXPECT_TRUE(Has(err, BuiltWithCuda() ? "--gpu=0 but no GPU was found; running on the CPU"
                                       : "--gpu=0 but this build has no CUDA support; running on the CPU"))
      << err;
  ASSERT_EQ(blocks.size(), 1u);
  EXPECT_EQ(Printed(blocks[0]), Expected(ColourPixels(), {0, 0, 0}, 1.0f));
}

TEST(Classify, GpuPrintsWhatTheCpuPrints) {
  SKIP_WITHOUT_GPU();
  SKIP_WITHOUT_OPENCV();
  const std::string dir = NewTempDir();
  WriteIdentityNet(dir);
  WritePng(dir + "/colour.png", 3, kHeight, kWidth, ColourPixels());
  WriteDatumLmdb(dir + "/db", kChannels, kHeight, kWidth, {0, 0, 0});
  ASSERT_EQ(RunCommand(ToolPath("compute_image_mean") + " " + dir + "/db " + dir + "/mean.binaryproto").exit_code, 0);
  const std::string args = "--top_k=12 --scale=0.5 " + IdentityArgs(dir, dir + "/mean.binaryproto", dir + "/colour.png");
  std::string err;
  const std::string gpu = Classify("--gpu=0 " + args, &err);
  EXPECT_TRUE(Has(err, "Use GPU with device ID 0")) << err;
  EXPECT_EQ(gpu, Classify(args));
}

TEST(Classify, MistakesAreOneLineAndExitCode1) {
  const std::string dir = NewTempDir();
  WriteIdentityNet(dir);
  if (!BuiltWithImageSupport()) {
    WriteFile(dir + "/a.png", "not read");
    const std::string line = ToolError("classify", IdentityArgs(dir, "none", dir + "/a.png"));
    EXPECT_TRUE(Has(line, "this build has no OpenCV, which classify needs to read images")) << line;
    GTEST_SKIP() << "this build has no OpenCV: only its message is tested";
  }
  WritePng(dir + "/colour.png", 3, kHeight, kWidth, ColourPixels());
  const std::string image = dir + "/colour.png";

  // The argument count.
  std::string line = ToolError("classify", dir + "/identity.prototxt " + dir + "/identity.caffemodel none " + dir +
                                               "/identity_labels.txt");
  EXPECT_TRUE(Has(line, "expected at least 5 arguments, got 4; usage: classify")) << line;
  line = ToolError("classify", "");
  EXPECT_TRUE(Has(line, "expected at least 5 arguments, got 0")) << line;

  // Missing files, each named.
  line = ToolError("classify", IdentityArgs(dir, "none", dir + "/missing.png"));
  EXPECT_TRUE(Has(line, "image '" + dir + "/missing.png' does not exist")) << line;
  line = ToolError("classify", dir + "/identity.prototxt " + dir + "/missing.caffemodel none " + dir +
                                   "/identity_labels.txt " + image);
  EXPECT_TRUE(Has(line, "weights file '" + dir + "/missing.caffemodel' does not exist")) << line;
  line = ToolError("classify", dir + "/missing.prototxt " + dir + "/identity.caffemodel none " + dir +
                                   "/identity_labels.txt " + image);
  EXPECT_TRUE(Has(line, dir + "/missing.prototxt")) << line;
  line = ToolError("classify", IdentityArgs(dir, dir + "/missing.binaryproto", image));
  EXPECT_TRUE(Has(line, "mean file '" + dir + "/missing.binaryproto' does not exist")) << line;
  line = ToolError("classify", dir + "/identity.prototxt " + dir + "/identity.caffemodel none " + dir +
                                   "/missing.txt " + image);
  EXPECT_TRUE(Has(line, "labels file '" + dir + "/missing.txt' does not exist")) << line;

  // An image OpenCV cannot read, after the earlier images' predictions.
  WriteFile(dir + "/text.png", "not an image\n");
  const std::string out = dir + "/stdout.txt";
  const CommandResult r = RunCommand("(" + ToolPath("classify") + " " + IdentityArgs(dir, "none", image + " " + dir + "/text.png") + " >" + out + ")");
  EXPECT_EQ(r.exit_code, 1) << r.err;
  EXPECT_TRUE(Has(LastLine(r.err), "classify: error: cannot read image '" + dir + "/text.png'")) << r.err;
  EXPECT_EQ(ParseOutput(ReadFile(out)).size(), 1u);

  // Labels: one fewer than the output's values, or none.
  std::string labels = ReadFile(dir + "/identity_labels.txt");
  WriteFile(dir + "/eleven.txt", labels.substr(0, labels.rfind('c')));
  line = ToolError("classify", dir + "/identity.prototxt " + dir + "/identity.caffemodel none " + dir + "/eleven.txt " + image);
  EXPECT_TRUE(Has(line, "labels file '" + dir + "/eleven.txt' has 11 labels (one per line) but the net's output 'ip' "
                        "has 12 values per image")) << line;
  line = ToolError("classify", dir + "/identity.prototxt " + dir + "/identity.caffemodel none " + dir + " " + image);
  EXPECT_TRUE(Has(line, "labels file '" + dir + "' is a directory")) << line;
  WriteFile(dir + "/empty.txt", "");
  line = ToolError("classify", dir + "/identity.prototxt " + dir + "/identity.caffemodel none " + dir + "/empty.txt " + image);
  EXPECT_TRUE(Has(line, "has 0 labels")) << line;

  // A mean of another channel count, and a file that is no BlobProto.
  BlobProto grey;
  grey.set_num(1), grey.set_channels(1), grey.set_height(2), grey.set_width(2);
  for (int i = 0; i < 4; ++i) grey.add_data(1.0f);
  WriteProtoToBinaryFile(grey, dir + "/grey_mean.binaryproto");
  line = ToolError("classify", IdentityArgs(dir, dir + "/grey_mean.binaryproto", image));
  EXPECT_TRUE(Has(line, "mean file '" + dir + "/grey_mean.binaryproto' has 1 channel but the net's input has 3")) << line;
  WriteFile(dir + "/junk.binaryproto", "\xff\xff\xff junk");
  line = ToolError("classify", IdentityArgs(dir, dir + "/junk.binaryproto", image));
  EXPECT_TRUE(Has(line, dir + "/junk.binaryproto")) << line;

  // Weights of another net, a net that is no deploy net, flags out of range.
  NetParameter other;
  other.add_layer()->set_name("fc");
  other.mutable_layer(0)->set_type("InnerProduct");
  WriteProtoToBinaryFile(other, dir + "/other.caffemodel");
  line = ToolError("classify", dir + "/identity.prototxt " + dir + "/other.caffemodel none " + dir +
                                   "/identity_labels.txt " + image);
  EXPECT_TRUE(Has(line, dir + "/other.caffemodel")) << line;
  WriteFile(dir + "/two_inputs.prototxt", R"(name: "two"
layer { name: "a" type: "Input" top: "a" top: "b" input_param { shape { dim: 1 dim: 3 dim: 2 dim: 2 } } }
layer { name: "ip" type: "InnerProduct" bottom: "a" top: "ip" inner_product_param { num_output: 12 } }
layer { name: "silence" type: "Silence" bottom: "b" }
)");
  line = ToolError("classify", dir + "/two_inputs.prototxt " + dir + "/identity.caffemodel none " + dir +
                                   "/identity_labels.txt " + image);
  EXPECT_TRUE(Has(line, "the net has 2 inputs ('a', 'b')")) << line;
  WriteFile(dir + "/flat.prototxt", R"(name: "flat"
layer { name: "data" type: "Input" top: "data" input_param { shape { dim: 1 dim: 12 } } }
layer { name: "ip" type: "InnerProduct" bottom: "data" top: "ip" inner_product_param { num_output: 12 } }
)");
  line = ToolError("classify", dir + "/flat.prototxt " + dir + "/identity.caffemodel none " + dir +
                                   "/identity_labels.txt " + image);
  EXPECT_TRUE(Has(line, "input 'data' has shape 1 12 (12); classify needs N×C×H×W with 1 (grey) or 3 (BGR) channels"))
      << line;
  line = ToolError("classify", "--top_k=0 " + IdentityArgs(dir, "none", image));
  EXPECT_EQ(line, "--top_k=0 is out of range: it must be at least 1");
  line = ToolError("classify", "--top_kk=3 " + IdentityArgs(dir, "none", image));
  EXPECT_TRUE(Has(line, "did you mean --top_k?")) << line;
}

TEST(Classify, HelpShowsTheUsageAndFlags) {
  const std::string out = NewTempDir() + "/help.txt";
  const CommandResult r = RunCommand("(" + ToolPath("classify") + " --help >" + out + ")");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const std::string help = ReadFile(out);
  EXPECT_TRUE(Has(help, "Usage: classify [FLAGS] deploy.prototxt network.caffemodel mean.binaryproto labels.txt "
                        "img.jpg")) << help;
  for (const char* flag : {"--top_k", "--scale", "--gpu"}) EXPECT_TRUE(Has(help, flag)) << flag << "\n" << help;
}

}  // namespace cortado::test
