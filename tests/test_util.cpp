// test_util.cpp — the layer fixture, the gradient checker, and helpers for files, LMDBs and tool runs.
#include "test_util.hpp"

#include <google/protobuf/text_format.h>
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <thread>
#include <sys/wait.h>

#include "cortado/data/lmdb.hpp"
#include "cortado/error.hpp"
#include "cortado/io.hpp"
#include "cortado/layer_registry.hpp"
#include "cortado/math.hpp"
#include "cortado/step_inputs.hpp"

namespace cortado::test {

LayerParameter ParseLayer(const std::string& text) {
  LayerParameter param;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &param)) << text;
  return param;
}

NetParameter ParseNet(const std::string& text) {
  NetParameter param;
  ReadProtoFromTextString(text, &param, "test.prototxt");
  return param;
}

SolverParameter ParseSolver(const std::string& text) {
  SolverParameter param;
  EXPECT_TRUE(google::protobuf::TextFormat::ParseFromString(text, &param)) << text;
  return param;
}

// Where the tests were built, unless the environment says otherwise (a bundle run on another machine).
std::string SourceDir() {
  const char* dir = std::getenv("CORTADO_SOURCE_DIR");
  return dir != nullptr && *dir != '\0' ? dir : CORTADO_SOURCE_DIR;
}

namespace {
std::string TestDirName() {
  const auto* info = testing::UnitTest::GetInstance()->current_test_info();
  std::string name = std::string("/tmp/cortado_test_") + std::to_string(getpid()) + "_" +
                     (info ? std::string(info->test_suite_name()) + "." + info->name() : "x");
  std::replace(name.begin() + 5, name.end(), '/', '_');
  return name;
}

std::string EmptyDir(const std::string& name) {
  std::filesystem::remove_all(name);
  std::filesystem::create_directories(name);
  return name;
}
}  // namespace

std::string TempDir() { return EmptyDir(TestDirName()); }

std::string NewTempDir() {
  static int counter = 0;
  return EmptyDir(TestDirName() + "_" + std::to_string(++counter));
}

std::string ErrorOf(const std::function<void()>& body) {
  try {
    body();
  } catch (const Error& e) {
    return e.what();
  }
  ADD_FAILURE() << "no cortado::Error thrown";
  return "";
}

CommandResult RunCommand(const std::string& command) {
  static int counter = 0;
  const std::string err_path =
      "/tmp/cortado_stderr_" + std::to_string(getpid()) + "_" + std::to_string(counter++) + ".txt";
  const int status = std::system((command + " 2>" + err_path + " >/dev/null").c_str());
  std::ifstream in(err_path);
  std::stringstream err;
  err << in.rdbuf();
  std::filesystem::remove(err_path);
  return {WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status), err.str()};
}

std::string ToolPath(const std::string& tool) {
  const char* dir = std::getenv("CORTADO_TOOLS_DIR");
  return (dir != nullptr && *dir != '\0' ? std::string(dir) : std::string(CORTADO_BINARY_DIR) + "/tools") + "/" + tool;
}

BackgroundCommand::BackgroundCommand(const std::string& command, const std::string& log_path) : log_path_(log_path) {
  pid_ = fork();
  if (pid_ == 0) {
    const std::string line = "exec " + command + " 2>" + log_path + " >/dev/null";
    execl("/bin/sh", "sh", "-c", line.c_str(), static_cast<char*>(nullptr));
    _exit(127);
  }
}

BackgroundCommand::~BackgroundCommand() {
  if (pid_ > 0 && !waited_) {
    kill(pid_, SIGKILL);
    Wait();
  }
}

bool BackgroundCommand::WaitFor(const std::function<bool()>& ready, double seconds) const {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  while (std::chrono::steady_clock::now() < deadline) {
    if (ready()) return true;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return false;
}

std::string BackgroundCommand::Log() const {
  std::ifstream in(log_path_, std::ios::binary);
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

void BackgroundCommand::Signal(int sig) const { kill(pid_, sig); }

int BackgroundCommand::Wait() {
  int status = 0;
  waitpid(pid_, &status, 0);
  waited_ = true;
  return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
}

int BackgroundCommand::WaitAtMost(double seconds) {
  const auto deadline = std::chrono::steady_clock::now() + std::chrono::duration<double>(seconds);
  for (;;) {
    int status = 0;
    if (waitpid(pid_, &status, WNOHANG) == pid_) {
      waited_ = true;
      return WIFEXITED(status) ? WEXITSTATUS(status) : 128 + WTERMSIG(status);
    }
    if (std::chrono::steady_clock::now() > deadline) return -1;
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
}

int CountLines(const std::string& text) { return static_cast<int>(std::count(text.begin(), text.end(), '\n')); }

std::string LastLine(const std::string& text) {
  const size_t end = text.find_last_not_of('\n');
  if (end == std::string::npos) return "";
  const size_t newline = text.rfind('\n', end);
  const size_t start = newline == std::string::npos ? 0 : newline + 1;
  return text.substr(start, end + 1 - start);
}

void WriteFile(const std::string& path, const std::string& bytes) {
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << bytes;
  EXPECT_TRUE(out.good()) << "cannot write " << path;
}

std::string ReadFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  EXPECT_TRUE(in.good()) << "cannot open " << path;
  std::stringstream bytes;
  bytes << in.rdbuf();
  return bytes.str();
}

std::string WriteDatumLmdb(const std::string& path, int channels, int height, int width,
                           const std::vector<int>& labels) {
  LmdbWriter writer(path, "test");
  Datum datum;
  datum.set_channels(channels), datum.set_height(height), datum.set_width(width);
  for (size_t i = 0; i < labels.size(); ++i) {
    std::string pixels;
    for (int j = 0; j < channels * height * width; ++j) pixels.push_back(static_cast<char>((i + j) % 256));
    datum.set_data(pixels);
    datum.set_label(labels[i]);
    char key[16];
    std::snprintf(key, sizeof(key), "%08d", static_cast<int>(i));
    writer.Put(key, datum.SerializeAsString());
  }
  writer.Finish();
  return path;
}

std::string WriteRandomImageLmdb(const std::string& path, int count, int channels, int size, int classes,
                                 uint32_t seed) {
  LmdbWriter db(path, "test");
  std::mt19937 rng(seed);
  for (int i = 0; i < count; ++i) {
    Datum datum;
    datum.set_channels(channels);
    datum.set_height(size);
    datum.set_width(size);
    std::string pixels(static_cast<size_t>(channels) * size * size, '\0');
    for (char& p : pixels) p = static_cast<char>(rng() % 256);
    datum.set_data(pixels);
    datum.set_label(i % classes);
    char key[16];
    std::snprintf(key, sizeof(key), "%08d", i);
    db.Put(key, datum.SerializeAsString());
  }
  db.Finish();
  return path;
}

double LastLoggedValue(const std::string& log, const std::string& name, const std::string& prefix) {
  const std::regex line(prefix + name + " = ([0-9.eE+-]+)");
  double value = -1;
  for (auto it = std::sregex_iterator(log.begin(), log.end(), line); it != std::sregex_iterator(); ++it)
    value = std::stod((*it)[1].str());
  return value;
}

int CountLayers(const Net& net, const std::string& type) {
  int n = 0;
  for (const auto& layer : net.layers()) n += type == layer->type();
  return n;
}

void FillLinearFit(Net* net) {
  const float w[2][4] = {{0.5f, -1.0f, 0.25f, 2.0f}, {-0.75f, 0.5f, 1.5f, -0.5f}};
  std::mt19937 same(77);
  std::normal_distribution<float> normal(0.0f, 1.0f);
  std::vector<float> x(32), y(16);
  for (float& v : x) v = normal(same);
  for (int n = 0; n < 8; ++n)
    for (int o = 0; o < 2; ++o) {
      float z = 0;
      for (int k = 0; k < 4; ++k) z += w[o][k] * x[n * 4 + k];
      y[n * 2 + o] = z;
    }
  net->blob_by_name("x")->WriteData(x);  // through a copy: a GPU net's too
  net->blob_by_name("y")->WriteData(y);
}

void FillGaussian(Blob* blob, std::mt19937& rng, float mean, float std) {
  std::normal_distribution<float> dist(mean, std);
  for (int64_t i = 0; i < blob->count(); ++i) blob->data()[i] = dist(rng);
}

void FillUniform(Blob* blob, std::mt19937& rng, float lo, float hi) {
  std::uniform_real_distribution<float> dist(lo, hi);
  for (int64_t i = 0; i < blob->count(); ++i) blob->data()[i] = dist(rng);
}

void FillTrainedLikeWeights(Net& net, uint32_t seed) {
  std::mt19937 rng(seed);
  constexpr float kBatchNormFactor = 2.0f;
  for (const auto& layer : net.layers()) {
    const std::string type = layer->type();
    for (size_t j = 0; j < layer->blobs().size(); ++j) {
      Blob& blob = *layer->blobs()[j];
      std::vector<float> values(blob.count());
      if (type == "BatchNorm" && j >= 3) {  // scale_bias: γ as a Scale's, β as a bias
        std::uniform_real_distribution<float> factor(0.8f, 1.2f);
        std::normal_distribution<float> shift(0.0f, 0.5f);
        for (float& v : values) v = j == 3 ? factor(rng) : shift(rng);
      } else if (type == "BatchNorm") {
        std::normal_distribution<float> mean(0.0f, 0.1f);
        std::uniform_real_distribution<float> variance(0.5f, 1.5f);
        for (float& v : values) v = j == 0 ? kBatchNormFactor * mean(rng) : j == 1 ? kBatchNormFactor * variance(rng) : kBatchNormFactor;
      } else if (type == "Scale" && j == 0) {
        std::uniform_real_distribution<float> factor(0.8f, 1.2f);
        for (float& v : values) v = factor(rng);
      } else {
        const int64_t fan_in = blob.num_axes() > 1 ? blob.count() / blob.shape(0) : 1;
        std::normal_distribution<float> gauss(0.0f, 1.0f / std::sqrt(static_cast<float>(fan_in)));
        for (float& v : values) v = gauss(rng);
      }
      blob.WriteData(values);
    }
  }
}

LayerFixture::LayerFixture(const std::string& layer_text,
                           const std::vector<std::vector<int>>& bottom_shapes, int num_tops,
                           uint32_t seed, Device device, const GpuSettings& gpu_settings)
    : ctx_(device, seed) {
  if (device == Device::kGPU) ctx_.SetGpuSettings(gpu_settings);
  LayerParameter param = ParseLayer(layer_text);
  if (!param.has_name()) param.set_name("under_test");
  for (const auto& shape : bottom_shapes) {
    bottoms_.push_back(std::make_unique<Blob>(shape));
    bottom_.push_back(bottoms_.back().get());
  }
  for (int i = 0; i < num_tops; ++i) {
    tops_.push_back(std::make_unique<Blob>());
    top_.push_back(tops_.back().get());
  }
  layer_ = LayerRegistry::Create(param, ctx_);
  layer_->SetUp(bottom_, top_);
  MemoryPlan plan(device);
  for (Blob* b : bottom_) plan.RequestBlob(b, true);
  for (int i = 0; i < num_tops; ++i) {
    const int alias = layer_->TopAliasesBottom(i);
    if (alias < 0) plan.RequestBlob(top_[i], true);
  }
  for (auto& p : layer_->blobs()) plan.RequestBlob(p.get(), true);
  for (const auto& s : layer_->scratch_buffers()) plan.RequestBlob(s.blob, s.with_diff);
  arena_ = plan.Allocate();
  for (int i = 0; i < num_tops; ++i) {
    const int alias = layer_->TopAliasesBottom(i);
    if (alias >= 0) {
      top_[i]->ShareData(*bottom_[alias]);
      top_[i]->ShareDiff(*bottom_[alias]);
    }
  }
  for (int i = 0; i < num_tops; ++i)
    if (layer_->loss(i) != 0)
      top_[i]->WriteDiff(std::vector<float>(static_cast<size_t>(top_[i]->count()), layer_->loss(i)));
  layer_->InitParams();
}

void LayerFixture::FillBottoms(float std) {
  for (Blob* b : bottom_) FillGaussian(b, ctx_.rng(), 0.0f, std);
}

float LayerFixture::Forward() {
  if (ctx_.device() == Device::kGPU) {
    layer_->PrepareStep();
    StepInputsOf(ctx_).Upload(ctx_);
  }
  return layer_->Forward(bottom_, top_);
}

void LayerFixture::Backward() {
  for (auto& p : layer_->blobs()) p->WriteDiff(std::vector<float>(static_cast<size_t>(p->count()), 0.0f));
  layer_->Backward(top_, std::vector<bool>(bottom_.size(), true), bottom_);
}

namespace {

// Objective Σ r·top with r fixed; its gradient w.r.t. the tops is r. Loss tops use their weights.
double Objective(LayerFixture& f, const std::vector<std::vector<float>>& r) {
  f.Forward();
  double total = 0;
  for (size_t t = 0; t < f.top().size(); ++t) {
    const Blob& top = *f.top()[t];
    for (int64_t i = 0; i < top.count(); ++i) total += static_cast<double>(r[t][i]) * top.data()[i];
  }
  return total;
}

void CompareAt(const char* what, int index, int64_t i, float analytic, double numeric,
               const GradientCheckOptions& o) {
  const double scale = std::max({std::fabs(static_cast<double>(analytic)), std::fabs(numeric), 1.0});
  EXPECT_NEAR(analytic, numeric, o.threshold * scale)
      << what << " " << index << " element " << i << ": analytic " << analytic << " numeric " << numeric;
}

}  // namespace

void CheckGradient(LayerFixture& f, const GradientCheckOptions& o) {
  Layer& layer = f.layer();
  // Weights of the objective: loss weights for loss tops, random otherwise.
  std::vector<std::vector<float>> r(f.top().size());
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  std::mt19937 rng(4242);
  f.Forward();
  for (size_t t = 0; t < f.top().size(); ++t) {
    Blob& top = *f.top()[t];
    r[t].resize(top.count());
    for (auto& v : r[t]) v = layer.loss(static_cast<int>(t)) != 0 ? layer.loss(static_cast<int>(t)) : dist(rng);
  }
  // Analytic gradients: one forward, then backward with top diffs = r.
  auto set_top_diffs = [&] {
    for (size_t t = 0; t < f.top().size(); ++t)
      std::copy(r[t].begin(), r[t].end(), f.top()[t]->diff());
  };
  f.Forward();
  set_top_diffs();
  f.Backward();
  std::vector<std::vector<float>> bottom_grads, param_grads;
  for (Blob* b : f.bottom()) bottom_grads.emplace_back(b->diff(), b->diff() + b->count());
  for (auto& p : layer.blobs()) param_grads.emplace_back(p->diff(), p->diff() + p->count());

  auto numeric_at = [&](float* value) {
    const float saved = *value;
    *value = saved + o.step;
    const double plus = Objective(f, r);
    *value = saved - o.step;
    const double minus = Objective(f, r);
    *value = saved;
    return (plus - minus) / (2.0 * o.step);
  };
  for (size_t b = 0; b < f.bottom().size(); ++b) {
    if (o.check_bottom >= 0 && static_cast<int>(b) != o.check_bottom) continue;
    if (std::count(o.skip_bottoms.begin(), o.skip_bottoms.end(), static_cast<int>(b))) continue;
    Blob& blob = *f.bottom()[b];
    for (int64_t i = 0; i < blob.count(); ++i) {
      if (o.kink_range > 0 && std::fabs(blob.data()[i] - o.kink) < o.kink_range) continue;
      CompareAt("bottom", static_cast<int>(b), i, bottom_grads[b][i], numeric_at(blob.data() + i), o);
    }
  }
  if (!o.check_params) return;
  for (size_t p = 0; p < layer.blobs().size(); ++p) {
    Blob& blob = *layer.blobs()[p];
    for (int64_t i = 0; i < blob.count(); ++i)
      CompareAt("param", static_cast<int>(p), i, param_grads[p][i], numeric_at(blob.data() + i), o);
  }
}

std::string WriteSmallImageNet(const std::string& dir, const std::string& name, const std::string& lmdb, int batch,
                               bool dropout) {
  const std::string path = dir + "/" + name + ".prototxt";
  std::ofstream(path) << "name: '" << name << "'\n"
                      << "layer { name: 'data' type: 'Data' top: 'data' top: 'label'\n"
                      << "  transform_param { scale: 0.00390625 crop_size: 10 mirror: true }\n"
                      << "  data_param { source: '" << lmdb << "' batch_size: " << batch
                      << " backend: LMDB rand_skip: 7 } }\n"
                      << R"(
layer { name: "conv" type: "Convolution" bottom: "data" top: "conv"
        convolution_param { num_output: 4 kernel_size: 3 weight_filler { type: "xavier" } bias_filler { type: "constant" value: 0.1 } } }
layer { name: "pool" type: "Pooling" bottom: "conv" top: "pool" pooling_param { pool: AVE kernel_size: 2 stride: 2 } }
layer { name: "ip1" type: "InnerProduct" bottom: "pool" top: "ip1" inner_product_param { num_output: 12 weight_filler { type: "xavier" } } }
layer { name: "tanh" type: "TanH" bottom: "ip1" top: "ip1" }
)" << (dropout ? "layer { name: 'drop' type: 'Dropout' bottom: 'ip1' top: 'ip1' dropout_param { dropout_ratio: 0.3 } }\n" : "")
                      << R"(layer { name: "ip2" type: "InnerProduct" bottom: "ip1" top: "ip2" inner_product_param { num_output: 5 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "SoftmaxWithLoss" bottom: "ip2" bottom: "label" top: "loss" }
)";
  return path;
}

}  // namespace cortado::test
