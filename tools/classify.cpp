// classify.cpp — Caffe's C++ classification example as a tool, with its command line:
//   classify [FLAGS] deploy.prototxt network.caffemodel mean.binaryproto labels.txt img.jpg [img2.png ...]
// Builds the deploy net in the TEST phase with its one input at batch 1 (channels, height and width
// kept; 1 or 3 channels), copies the weights, and for each image prints the top classes of the net's
// first output, highest first, in Caffe's format:
//   ---------- Prediction for img.jpg ----------
//   0.9876 - "label text"
// An image is read as OpenCV reads it (grey for a 1-channel input, BGR for 3), resized (bilinear) to
// the input's height×width, converted to float; the mean of each channel of the mean image is
// subtracted (mean "none" or "": nothing), then the values are multiplied by --scale (default 1, as
// Caffe, which has no scale). The labels file has one label per line, as many as the output has values.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <iomanip>
#include <iostream>
#include <numeric>
#include <string>
#include <utility>
#include <vector>

#include "cortado/batch_size.hpp"  // SetBatchSize
#include "cortado/cortado.pb.h"    // NetParameter, Datum
#include "cortado/data/transformer.hpp"  // ReadMeanImage
#include "cortado/error.hpp"
#include "cortado/gpu.hpp"         // GpuCount, BuiltWithCuda
#include "cortado/image.hpp"       // ReadImageToDatum, BuiltWithImageSupport
#include "cortado/io.hpp"          // ReadProtoFromTextFile, FileExists
#include "cortado/net.hpp"
#include "cortado/tool.hpp"
#include "cortado/upgrade.hpp"     // NetNeedsUpgrade, UpgradeNet

DEFINE_int32(top_k, 5, "How many classes to print per image, highest first (at most the number of labels)");
DEFINE_double(scale, 1.0, "Multiply the input by this after the mean subtraction (e.g. 0.00390625 for a net "
              "trained with transform_param scale: 0.00390625, as LeNet)");
DEFINE_int32(gpu, -1, "Run on this GPU (strict FP32, as Caffe computes); -1: the CPU. Without a GPU, runs on "
             "the CPU");

namespace {

using cortado::Fail;

const char* const kUsageLine =
    "classify [FLAGS] deploy.prototxt network.caffemodel mean.binaryproto labels.txt img.jpg [img2.jpg ...]";

struct Args {
  std::string net, weights, mean, labels;
  std::vector<std::string> images;
};

// The net's input: its name and legacy 4-D shape.
struct Input {
  cortado::Blob* blob = nullptr;
  std::string name;
  int channels = 0, height = 0, width = 0;
};

bool NoMean(const std::string& mean) { return mean.empty() || mean == "none"; }

Args ParseArgs(int argc, char** argv) {
  CORTADO_REQUIRE(argc >= 6, "expected at least 5 arguments, got ", argc - 1, "; usage: ", kUsageLine,
                  " (see --help)");
  Args args{argv[1], argv[2], argv[3], argv[4], {}};
  for (int i = 5; i < argc; ++i) args.images.push_back(argv[i]);
  cortado::CheckFlags({{"top_k", 1}, {"gpu", -1}});  // --scale: any finite number (RunTool checks it is one)
  CORTADO_REQUIRE(cortado::BuiltWithImageSupport(),
                  "this build has no OpenCV, which classify needs to read images (rebuild with OpenCV)");
  // Every named file is there before the net is built (which may take a while).
  CORTADO_REQUIRE(cortado::FileExists(args.net), "net prototxt '", args.net, "' does not exist");
  CORTADO_REQUIRE(cortado::FileExists(args.weights), "weights file '", args.weights, "' does not exist");
  CORTADO_REQUIRE(NoMean(args.mean) || cortado::FileExists(args.mean), "mean file '", args.mean,
                  "' does not exist (give none for no mean subtraction)");
  CORTADO_REQUIRE(cortado::FileExists(args.labels), "labels file '", args.labels, "' does not exist");
  for (const auto& image : args.images)
    CORTADO_REQUIRE(cortado::FileExists(image), "image '", image, "' does not exist");
  return args;
}

// --gpu's device where there is a GPU (an id it lacks is refused), else the CPU (saying so).
std::pair<cortado::Device, int> DeviceFromFlag() {
  const int count = cortado::GpuCount();
  CORTADO_REQUIRE(FLAGS_gpu < 0 || count == 0 || FLAGS_gpu < count, "--gpu=", FLAGS_gpu, ": there is no such GPU "
                  "(this machine has ", count, " GPU", count == 1 ? "" : "s", ", ids 0 to ", count - 1, ")");
  return cortado::DeviceForGpuFlag(FLAGS_gpu, std::to_string(FLAGS_gpu));
}

// The one input of the net (the tops of its Input layers), which must be N×C×H×W with C 1 or 3.
Input FindInput(cortado::Net& net, const std::string& net_path) {
  std::vector<int> ids;
  for (size_t i = 0; i < net.layers().size(); ++i)
    if (std::string(net.layers()[i]->type()) == "Input")
      ids.insert(ids.end(), net.top_ids()[i].begin(), net.top_ids()[i].end());
  CORTADO_REQUIRE(!ids.empty(), net_path, ": the net has no input (an Input layer or net-level input); "
                  "classify needs a deploy prototxt whose one input takes the image");
  std::string names;
  for (int id : ids) names += (names.empty() ? "'" : ", '") + net.blob_names()[id] + "'";
  CORTADO_REQUIRE(ids.size() == 1, net_path, ": the net has ", ids.size(), " inputs (", names,
                  "); classify feeds one image to a net with exactly one input");
  Input input;
  input.name = net.blob_names()[ids[0]];
  input.blob = net.blob_by_name(input.name);
  const cortado::Blob& blob = *input.blob;
  CORTADO_REQUIRE(blob.num_axes() == 4 && (blob.shape(1) == 1 || blob.shape(1) == 3) && blob.shape(2) > 0 &&
                      blob.shape(3) > 0,
                  net_path, ": input '", input.name, "' has shape ", blob.shape_string(),
                  "; classify needs N×C×H×W with 1 (grey) or 3 (BGR) channels");
  input.channels = blob.shape(1);
  input.height = blob.shape(2);
  input.width = blob.shape(3);
  return input;
}

// The mean of each channel of the mean image in `path` (cortado/data/transformer.hpp, ReadMeanImage), as Caffe's
// example subtracts it: summed in double, stored as float.
std::vector<float> ChannelMeans(const std::string& path, int channels) {
  const cortado::MeanImage mean = cortado::ReadMeanImage(path);
  CORTADO_REQUIRE(mean.shape[0] == channels, "mean file '", path, "' has ", mean.shape[0], " channel",
                  mean.shape[0] == 1 ? "" : "s", " but the net's input has ", channels);
  const int64_t plane = int64_t{mean.shape[1]} * mean.shape[2];
  std::vector<float> means;
  for (int c = 0; c < channels; ++c) {
    const auto begin = mean.values.begin() + c * plane;
    means.push_back(static_cast<float>(std::accumulate(begin, begin + plane, 0.0) / double(plane)));
  }
  return means;
}

// One label per line (a Windows line end's '\r' dropped), as many as the net's output has values.
std::vector<std::string> ReadLabels(const std::string& path) {
  CORTADO_REQUIRE(!std::filesystem::is_directory(path), "labels file '", path, "' is a directory; give a file "
                  "with one label per line");
  std::ifstream in(path);
  CORTADO_REQUIRE(in.good(), "cannot read labels file '", path, "'");
  std::vector<std::string> labels;
  for (std::string line; std::getline(in, line);) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    labels.push_back(line);
  }
  CORTADO_REQUIRE(!in.bad(), "cannot read labels file '", path, "'");
  return labels;
}

// The image as the net's input values: read in the input's colour mode, resized to its size, minus
// the channel means, times --scale.
std::vector<float> Preprocess(const std::string& path, const Input& input, const std::vector<float>& means) {
  cortado::Datum datum;
  const cortado::ColorMode mode = input.channels == 1 ? cortado::ColorMode::kGray : cortado::ColorMode::kColor;
  cortado::ReadImageToDatum(path, 0, input.height, input.width, mode, "", &datum);
  const size_t plane = size_t(input.height) * input.width;
  CHECK(datum.channels() == input.channels && size_t(datum.height()) * datum.width() == plane &&
        datum.data().size() == input.channels * plane)
      << "the image reader returned " << datum.channels() << "×" << datum.height() << "×" << datum.width();
  const auto* pixels = reinterpret_cast<const uint8_t*>(datum.data().data());
  const float scale = static_cast<float>(FLAGS_scale);
  std::vector<float> values(input.channels * plane);
  for (int c = 0; c < input.channels; ++c) {
    const float mean = means.empty() ? 0.0f : means[c];
    for (size_t i = c * plane; i < (c + 1) * plane; ++i) values[i] = (static_cast<float>(pixels[i]) - mean) * scale;
  }
  return values;
}

// The layer that last writes blob `id` (in place or not), as "name (Type)"; its type in *type.
std::string Producer(const cortado::Net& net, int id, std::string* type) {
  for (size_t i = net.layers().size(); i-- > 0;) {
    const auto& tops = net.top_ids()[i];
    if (std::find(tops.begin(), tops.end(), id) == tops.end()) continue;
    *type = net.layers()[i]->type();
    return net.layer_names()[i] + " (" + *type + ")";
  }
  *type = "";
  return "no layer";
}

// The indices of the k largest scores, highest first (ties: the lower index first).
std::vector<int> TopK(const std::vector<float>& scores, int k) {
  std::vector<int> order(scores.size());
  std::iota(order.begin(), order.end(), 0);
  std::partial_sort(order.begin(), order.begin() + k, order.end(),
                    [&](int a, int b) { return scores[a] > scores[b] || (scores[a] == scores[b] && a < b); });
  order.resize(k);
  return order;
}

int Run(int argc, char** argv) {
  const Args args = ParseArgs(argc, argv);
  const auto [device, gpu] = DeviceFromFlag();

  cortado::NetParameter param;
  cortado::ReadProtoFromTextFile(args.net, &param);
  if (cortado::NetNeedsUpgrade(param)) cortado::UpgradeNet(&param, args.net);
  param.mutable_state()->set_phase(cortado::TEST);
  cortado::SetBatchSize(&param, 1);  // one image per pass, as Caffe reshapes its input to 1×C×H×W
  cortado::Context ctx(device, -1, gpu);
  if (device == cortado::Device::kGPU) {
    cortado::GpuSettings settings;
    settings.strict_fp32 = true;  // Caffe's FP32 arithmetic, so that the printed probabilities agree
    ctx.SetGpuSettings(settings);
  }
  cortado::Net net(param, ctx, args.net);
  const Input input = FindInput(net, args.net);
  CORTADO_REQUIRE(!net.output_blobs().empty(), args.net, ": the net has no output to read class scores from");
  const std::string output_name = net.blob_names()[net.output_blob_indices()[0]];
  if (net.output_blobs().size() > 1)
    LOG(INFO) << "The net has " << net.output_blobs().size() << " outputs; the class scores are the first, '"
              << output_name << "'";
  net.AllocateOwnArena();
  net.LoadWeightsFile(args.weights);

  const std::vector<float> means = NoMean(args.mean) ? std::vector<float>() : ChannelMeans(args.mean, input.channels);
  const std::vector<std::string> labels = ReadLabels(args.labels);
  const cortado::Blob& output = *net.output_blobs()[0];
  CORTADO_REQUIRE(int64_t(labels.size()) == output.count(), "labels file '", args.labels, "' has ", labels.size(),
                  " label", labels.size() == 1 ? "" : "s", " (one per line) but the net's output '", output_name,
                  "' has ", output.count(), " values per image (", args.net, ")");
  const int k = std::min<int>(FLAGS_top_k, static_cast<int>(labels.size()));
  // Caffe's example prints probabilities: what a Softmax makes. Any other output's values are printed as
  // what they are, raw scores, and the header of each image says so.
  std::string producer_type;
  const std::string producer = Producer(net, net.output_blob_indices()[0], &producer_type);
  const bool probabilities = producer_type == "Softmax";
  if (!probabilities)
    LOG(WARNING) << "The output '" << output_name << "' is made by " << producer << ", not a Softmax: the values "
                 << "printed are its raw scores, not probabilities (end the deploy net with a Softmax layer "
                 << "for probabilities)";
  const std::string kind = probabilities ? "" : " (raw scores of '" + output_name + "', not probabilities)";

  std::cout << std::fixed << std::setprecision(4);
  for (const std::string& image : args.images) {
    input.blob->WriteData(Preprocess(image, input, means));
    net.Forward();
    const std::vector<float> scores = output.ReadData();  // a GPU's after its queued work
    std::cout << "---------- Prediction for " << image << kind << " ----------\n";
    for (int index : TopK(scores, k)) std::cout << scores[index] << " - \"" << labels[index] << "\"\n";
    std::cout.flush();
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string usage = std::string(
      "Classifies images with a trained net, as Caffe's C++ classification example: for each image, the\n"
      "top classes of the net's first output, highest first, as 'probability - \"label\"' lines (when the\n"
      "output is not a Softmax's, its raw scores, and each image's header line says so).\n"
      "Usage: ") + kUsageLine + "\n"
      "The net (TEST phase) has one input, N×C×H×W with C 1 (grey) or 3 (BGR); it runs one image at a time.\n"
      "Each image is converted to the input's channels, resized to its height×width, and the mean of each\n"
      "channel of mean.binaryproto is subtracted (give none for no mean); then the values are multiplied\n"
      "by --scale. labels.txt has one label per line, one per output value.";
  return cortado::RunTool(argc, argv, usage.c_str(), Run);
}
