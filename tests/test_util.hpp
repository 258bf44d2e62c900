// test_util.hpp — what tests share: a fixture that builds one layer on blobs of given shapes
// and binds all its memory, random fills, a finite-difference gradient checker, and helpers for
// files, small LMDBs and end-to-end runs of the built tools.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <memory>
#include <string>
#include <vector>

#include "cortado/blob.hpp"
#include "cortado/layer.hpp"
#include "cortado/net.hpp"
#include "cortado/memory.hpp"

namespace cortado::test {

// Parses a text-format LayerParameter; a parse error fails the test.
LayerParameter ParseLayer(const std::string& text);
NetParameter ParseNet(const std::string& text);  // a net prototxt's text (errors name test.prototxt)
SolverParameter ParseSolver(const std::string& text);
std::string SourceDir();      // the repository root ($CORTADO_SOURCE_DIR overrides the built-in path)
std::string TempDir();        // a fresh directory for this test, removed by nobody (under /tmp)
// Another fresh directory for this test on each call (TempDir() empties the same one every call).
std::string NewTempDir();

// The message of the cortado::Error that body throws; "" (and a test failure) when it throws none.
std::string ErrorOf(const std::function<void()>& body);

// Runs a shell command; returns its exit code and what it wrote to stderr (where the tools log).
struct CommandResult {
  int exit_code;
  std::string err;
};
CommandResult RunCommand(const std::string& command);
std::string ToolPath(const std::string& tool);

// A shell command running in the background, its stderr going to log_path; killed (SIGKILL) and
// waited for on destruction if still running.
class BackgroundCommand {
 public:
  BackgroundCommand(const std::string& command, const std::string& log_path);
  ~BackgroundCommand();
  // Polls until `ready` holds (checked every millisecond) or `seconds` pass.
  bool WaitFor(const std::function<bool()>& ready, double seconds = 60) const;
  std::string Log() const;  // what it has written so far ("" before anything)
  bool LogHas(const std::string& text) const { return Log().find(text) != std::string::npos; }
  void Signal(int sig) const;
  // The exit code, or 128 + the signal that ended it.
  int Wait();
  // Wait, for at most `seconds`: -1 if it is still running then.
  int WaitAtMost(double seconds);
  int pid() const { return pid_; }

 private:
  std::string log_path_;
  int pid_ = -1;
  bool waited_ = false;
};  // a built tool: <build>/tools/<tool> ($CORTADO_TOOLS_DIR/<tool>)
int CountLines(const std::string& text);
std::string LastLine(const std::string& text);  // the last non-empty line, without its newline

// Whole files as bytes: WriteFile creates or replaces; ReadFile fails the test when it cannot open.
void WriteFile(const std::string& path, const std::string& bytes);
std::string ReadFile(const std::string& path);

// Creates an LMDB of Datum records, key "%08d" of i: C×H×W uint8 pixels (i + j) % 256 and label
// labels[i]. Returns path.
std::string WriteDatumLmdb(const std::string& path, int channels, int height, int width,
                           const std::vector<int>& labels);

// An LMDB of `count` random channels×size×size byte images (generator seeded with `seed`) with labels
// i % classes, keys "%08d". Returns path.
std::string WriteRandomImageLmdb(const std::string& path, int count, int channels, int size, int classes,
                                 uint32_t seed);

// A small net for data-parallel tests on an LMDB of 1×12×12 images with 5 classes (WriteRandomImageLmdb):
// Data (batch, rand_skip 7, crop 10 with mirror), Convolution, average Pooling, InnerProduct, TanH,
// optionally Dropout, InnerProduct, SoftmaxWithLoss. No max over exact ties, whose side a reordered
// float sum could flip, so N ranks and one process of the N-fold batch train the same weights up to
// float rounding. Returns the prototxt's path (dir/<name>.prototxt).
std::string WriteSmallImageNet(const std::string& dir, const std::string& name, const std::string& lmdb, int batch,
                               bool dropout);

// The value in the last line of `log` that reads "<name> = <value>" after `prefix` (e.g. "] " for
// trainer test's "accuracy = 0.98", or "Test net output #[0-9]+: " for the solver's test lines; a
// regex); -1 when there is none.
double LastLoggedValue(const std::string& log, const std::string& name, const std::string& prefix = "\\] ");

void FillGaussian(Blob* blob, std::mt19937& rng, float mean = 0.0f, float std = 1.0f);
// The solver tests' regression: blob "x" (8×4) Gaussian from a generator seeded 77, and "y" (8×2) =
// x·Wᵀ for a fixed W, a fit an InnerProduct can reach exactly; on either device.
void FillLinearFit(Net* net);
// How many of a net's layers have this type ("Cast", "Split", ...).
int CountLayers(const Net& net, const std::string& type);
void FillUniform(Blob* blob, std::mt19937& rng, float lo, float hi);

// Gives a whole net weights of a trained net's scale, so that a hundred layers neither vanish nor
// overflow: Gaussian weights with std 1/√fan_in, Scale layers' factors near 1, and batch-norm blobs
// holding statistics (mean ~ N(0, 0.1), variance in [0.5, 1.5]) multiplied by a scale factor of 2,
// which Caffe's BatchNorm divides out (with scale_bias, γ near 1 and β ~ N(0, 0.5)). Same seed, same
// values, on either device.
void FillTrainedLikeWeights(Net& net, uint32_t seed);

// One layer with its bottoms and tops, set up and bound in a single arena. The layer's learnable
// blobs are filled by InitParams().
// GPU settings without TF32: results within float rounding of the CPU's.
inline GpuSettings StrictFp32() {
  GpuSettings settings;
  settings.strict_fp32 = true;
  return settings;
}

class LayerFixture {
 public:
  // device kGPU builds the layer on GPU 0 (its blobs in a GPU arena); bottoms are then filled and read
  // through Blob::WriteData / ReadData.
  // GPU fixtures compute in strict FP32 unless `gpu_settings` allows TF32 (then compare with
  // ExpectGpuClose, which scales the tolerance).
  LayerFixture(const std::string& layer_text, const std::vector<std::vector<int>>& bottom_shapes,
               int num_tops = 1, uint32_t seed = 1701, Device device = Device::kCPU,
               const GpuSettings& gpu_settings = StrictFp32());

  Layer& layer() { return *layer_; }
  Context& ctx() { return ctx_; }
  std::mt19937& rng() { return ctx_.rng(); }
  const BlobVec& bottom() { return bottom_; }
  const BlobVec& top() { return top_; }
  Blob& bottom(int i) { return *bottom_[i]; }
  Blob& top(int i) { return *top_[i]; }

  // Gaussian bottoms (every bottom, or one).
  void FillBottoms(float std = 1.0f);  // CPU fixtures
  // On a GPU the layer first draws its step's numbers (PrepareStep) and they are uploaded, as a Net
  // does before each step.
  float Forward();
  void Backward();  // every bottom propagates down; param diffs zeroed first

 private:
  Context ctx_;
  std::unique_ptr<Layer> layer_;
  std::vector<std::unique_ptr<Blob>> bottoms_, tops_;
  BlobVec bottom_, top_;
  std::unique_ptr<Arena> arena_;
};

struct GradientCheckOptions {
  float step = 1e-2f;        // finite-difference step
  float threshold = 1e-2f;   // allowed |analytic − numeric| / max(|analytic|, |numeric|, 1)
  float kink = 0.0f;         // inputs within kink_range of kink are skipped (non-smooth points)
  float kink_range = -1.0f;
  int check_bottom = -1;     // -1: every bottom; else only this one
  bool check_params = true;  // also check learnable blobs
  std::vector<int> skip_bottoms;  // bottoms without a gradient (labels)
};

// Checks d(objective)/d(input) for every bottom element and learnable-blob element against central
// differences, with objective = Σ r_i · top_i (fixed random r), or the loss for loss layers.
void CheckGradient(LayerFixture& fixture, const GradientCheckOptions& options = {});

}  // namespace cortado::test
