// window_data.cpp — the WindowData layer (Caffe's, for R-CNN fine-tuning): windows of images listed in a
// window file (window_file.hpp), warped to crop_size × crop_size. Each batch holds batch_size −
// int(batch_size · fg_fraction) background windows (label 0) and then int(batch_size · fg_fraction)
// foreground windows (label: the class index), each drawn at random from its list, in Caffe's order.
//
// Geometry, as Caffe's WindowDataLayer: with context_pad 0 in "warp" mode the window is resized to the
// crop. Otherwise ("square" makes the window square about its centre first) the window is grown about
// its centre by crop_size / (crop_size − 2·context_pad), clipped to the image, and the clipped part is
// resized to the share of the crop it covers and placed there; the rest of the crop is 0 (neither mean
// nor scale applied). transform_param: crop_size (required), mirror (a random horizontal flip per
// window, in every phase, as Caffe), scale, and mean_file (its central crop_size square, at offset
// (mean width − crop_size) / 2 on both axes, as Caffe) or mean_value, subtracted at the matching pixel
// of the crop. window_data_param: source, root_folder, batch_size, fg/bg_threshold, fg_fraction,
// context_pad, crop_mode, cache_images (every image decoded once at setup and kept). The legacy
// window_data_param scale/mean_file/crop_size/mirror are refused: V0/V1 nets have them moved into
// transform_param when upgraded.
//
// Batches come through the BatchPipeline: place i of every batch is record i of a stream with no
// epochs, and record g's generator (seeded by the layer's seed and g) draws its window, then its flip;
// a fixed random_seed repeats the batches, whatever the number of threads.
#include <glog/logging.h>

#include <algorithm>
#include <cmath>
#include <map>

#include "cortado/window_file.hpp"
#include "cortado/data/transformer.hpp"
#include "cortado/error.hpp"
#include "cortado/image.hpp"  // BuiltWithImageSupport
#include "cortado/layer_registry.hpp"
#include "pipeline_data_layer.hpp"

namespace cortado {

namespace {

// Where a window's pixels come from and where they land in the crop.
struct Warp {
  int x1, y1, x2, y2;   // the source region inside the image, inclusive
  int width, height;    // its size once warped
  int pad_x, pad_y;     // its top-left corner in the crop
};

// Caffe's arithmetic, in float as Caffe's float nets do it.
Warp PlanWarp(const Window& w, int image_width, int image_height, int crop, int context_pad, bool square,
              bool mirror) {
  Warp warp{w.x1, w.y1, w.x2, w.y2, crop, crop, 0, 0};
  if (context_pad == 0 && !square) return warp;
  const float grow = static_cast<float>(crop) / static_cast<float>(crop - 2 * context_pad);
  float half_w = static_cast<float>(w.x2 - w.x1 + 1) / 2, half_h = static_cast<float>(w.y2 - w.y1 + 1) / 2;
  const float centre_x = static_cast<float>(w.x1) + half_w, centre_y = static_cast<float>(w.y1) + half_h;
  if (square) half_w = half_h = std::max(half_w, half_h);
  const int x1 = static_cast<int>(std::round(centre_x - half_w * grow));
  const int x2 = static_cast<int>(std::round(centre_x + half_w * grow));
  const int y1 = static_cast<int>(std::round(centre_y - half_h * grow));
  const int y2 = static_cast<int>(std::round(centre_y + half_h * grow));
  // Clip to the image; what was cut off becomes zero padding in the crop, scaled as the rest.
  const int cut_left = std::max(0, -x1), cut_top = std::max(0, -y1);
  const int cut_right = std::max(0, x2 - image_width + 1), cut_bottom = std::max(0, y2 - image_height + 1);
  warp = {x1 + cut_left, y1 + cut_top, x2 - cut_right, y2 - cut_bottom, 0, 0, 0, 0};
  const float scale_x = static_cast<float>(crop) / static_cast<float>(x2 - x1 + 1);
  const float scale_y = static_cast<float>(crop) / static_cast<float>(y2 - y1 + 1);
  auto scaled = [](int length, float scale) { return static_cast<int>(std::round(static_cast<float>(length) * scale)); };
  warp.width = scaled(warp.x2 - warp.x1 + 1, scale_x);
  warp.height = scaled(warp.y2 - warp.y1 + 1, scale_y);
  warp.pad_y = scaled(cut_top, scale_y);
  warp.pad_x = mirror ? scaled(cut_right, scale_x) : scaled(cut_left, scale_x);  // the padding flips too
  // Rounding may overshoot the crop by a pixel: the warped part gives way.
  warp.width = std::min(warp.width, crop - warp.pad_x);
  warp.height = std::min(warp.height, crop - warp.pad_y);
  return warp;
}

class WindowDataLayer : public PipelineDataLayer {
 public:
  using PipelineDataLayer::PipelineDataLayer;
  ~WindowDataLayer() override { StopPipeline(); }
  const char* type() const override { return "WindowData"; }

 protected:
  Source Open(bool has_label) override;
  // Place i of every batch is record i: a stream of 2^32 batches per "epoch" never wraps.
  uint64_t num_records() const override { return uint64_t(batch_size_) << 32; }
  void PrepareWorkers(int count) override { scratch_.resize(count); }
  void Load(uint64_t index, int worker, float* out, float* label, RecordRng& rng) override;

 private:
  void CheckParameters() const;
  void ReadWindows();
  void PrepareMean();
  void ReadImage(int index, Image8* image) const;
  std::string Where(int line) const { return param_.window_data_param().source() + ":" + std::to_string(line); }

  WindowFile file_;
  int batch_size_ = 1, num_background_ = 0, channels_ = 0, crop_ = 0;
  std::vector<float> mean_;    // C×crop×crop: what is subtracted at each pixel of the crop
  std::vector<Image8> cache_;  // every image, with cache_images
  struct Scratch {
    Image8 image, warped;
  };
  std::vector<Scratch> scratch_;  // one per worker
};

void WindowDataLayer::CheckParameters() const {
  const WindowDataParameter& p = param_.window_data_param();
  const TransformationParameter& t = param_.transform_param();
  CORTADO_REQUIRE(!p.source().empty(), Describe(), ": window_data_param.source is empty; give the window file");
  CORTADO_REQUIRE(!p.has_scale() && !p.has_mean_file() && !p.has_crop_size() && !p.has_mirror(), Describe(),
                  ": window_data_param.scale/mean_file/crop_size/mirror are legacy; move them to transform_param");
  CORTADO_REQUIRE(BuiltWithImageSupport(), Describe(), ": this build of Cortado has no image support, which "
                  "WindowData needs to read its images (install libopencv-dev and rebuild)");
  CORTADO_REQUIRE(p.batch_size() > 0, Describe(), ": window_data_param.batch_size must be positive");
  CORTADO_REQUIRE(t.crop_size() > 0, Describe(), ": set transform_param.crop_size: windows are warped to a "
                  "crop_size × crop_size square");
  CORTADO_REQUIRE(t.crop_size() > 2 * uint64_t{p.context_pad()}, Describe(), ": context_pad ", p.context_pad(),
                  " leaves nothing of crop_size ", t.crop_size(), " for the window (crop_size must exceed 2·context_pad)");
  CORTADO_REQUIRE(p.crop_mode() == "warp" || p.crop_mode() == "square", Describe(), ": crop_mode is '",
                  p.crop_mode(), "'; expected \"warp\" or \"square\"");
  CORTADO_REQUIRE(p.fg_fraction() >= 0 && p.fg_fraction() <= 1, Describe(), ": fg_fraction ", p.fg_fraction(),
                  " is outside [0, 1]");
  CORTADO_REQUIRE(!(t.has_mean_file() && t.mean_value_size() > 0), Describe(),
                  ": transform_param gives both mean_file and mean_value; keep one");
}

void WindowDataLayer::ReadWindows() {
  const WindowDataParameter& p = param_.window_data_param();
  try {
    file_ = ReadWindowFile(p.source(), p.root_folder(), p.fg_threshold(), p.bg_threshold());
  } catch (const Error& e) {
    Fail(Describe(), ": ", e.what());
  }
  const int num_foreground = static_cast<int>(static_cast<float>(batch_size_) * p.fg_fraction());
  num_background_ = batch_size_ - num_foreground;
  CORTADO_REQUIRE(num_foreground == 0 || !file_.foreground.empty(), Describe(), ": window file '", p.source(),
                  "' holds no foreground windows (overlap ≥ fg_threshold ", p.fg_threshold(), ") but each batch takes ",
                  num_foreground);
  CORTADO_REQUIRE(num_background_ == 0 || !file_.background.empty(), Describe(), ": window file '", p.source(),
                  "' holds no background windows (overlap < bg_threshold ", p.bg_threshold(), ") but each batch takes ",
                  num_background_);
  channels_ = file_.images[0].channels;
  LOG(INFO) << "Number of images: " << file_.images.size();
  std::map<int, size_t> classes = {{0, file_.background.size()}};
  for (const Window& w : file_.foreground) ++classes[w.label];
  for (const auto& [label, count] : classes) LOG(INFO) << "class " << label << " has " << count << " samples";
  if (file_.dropped > 0) LOG(INFO) << file_.dropped << " windows are neither foreground nor background";
}

void WindowDataLayer::PrepareMean() {
  const TransformationParameter& t = param_.transform_param();
  const int k = crop_, plane = crop_ * crop_;
  mean_.assign(static_cast<size_t>(channels_) * plane, 0.0f);
  const int n = t.mean_value_size();
  CORTADO_REQUIRE(n <= 1 || n == channels_, Describe(), ": transform_param has ", n,
                  " mean_value entries; give 1 or one per channel (", channels_, ")");
  for (int c = 0; c < channels_ && n > 0; ++c)
    std::fill_n(mean_.begin() + static_cast<ptrdiff_t>(c) * plane, plane, t.mean_value(n == 1 ? 0 : c));
  if (!t.has_mean_file()) return;
  MeanImage mean;
  try {
    mean = ReadMeanImage(t.mean_file());
  } catch (const Error& e) {
    Fail(Describe(), ": ", e.what());
  }
  const int64_t mc = mean.shape[0], mh = mean.shape[1], mw = mean.shape[2], offset = (mw - k) / 2;
  CORTADO_REQUIRE(mc == channels_ && mw >= k && offset + k <= mh, Describe(), ": mean file '", t.mean_file(),
                  "' has shape ", mean.given, "; WindowData takes the central ", k, "×", k,
                  " (crop_size) square, at offset (W − crop_size) / 2 on both axes as Caffe, of a 1×", channels_,
                  "×H×W mean");
  for (int c = 0; c < channels_; ++c)
    for (int y = 0; y < k; ++y)
      for (int x = 0; x < k; ++x)
        mean_[(static_cast<size_t>(c) * k + y) * k + x] = mean.values[(c * mh + y + offset) * mw + x + offset];
}

void WindowDataLayer::ReadImage(int index, Image8* image) const {
  const WindowImage& declared = file_.images[index];
  try {
    ReadImage8(declared.path, channels_ == 1 ? ColorMode::kGray : ColorMode::kColor, image);
  } catch (const Error& e) {
    Fail(Describe(), ": ", Where(declared.line), ": ", e.what());
  }
  CORTADO_REQUIRE(image->height == declared.height && image->width == declared.width, Describe(), ": ",
                  Where(declared.line), ": image '", declared.path, "' is ", image->height, "×", image->width,
                  " (height × width) but the window file declares ", declared.height, "×", declared.width);
}

PipelineDataLayer::Source WindowDataLayer::Open(bool has_label) {
  CheckParameters();
  const WindowDataParameter& p = param_.window_data_param();
  LOG(INFO) << "Window data layer: foreground (object) overlap threshold: " << p.fg_threshold()
            << ", background (non-object) overlap threshold: " << p.bg_threshold()
            << ", foreground sampling fraction: " << p.fg_fraction() << ", cache_images: " << p.cache_images()
            << ", root_folder: " << p.root_folder();
  batch_size_ = static_cast<int>(p.batch_size());
  crop_ = static_cast<int>(param_.transform_param().crop_size());
  ReadWindows();
  LOG(INFO) << "Amount of context padding: " << p.context_pad();
  LOG(INFO) << "Crop mode: " << p.crop_mode();
  PrepareMean();
  cache_.clear();
  if (p.cache_images() && !ctx_.plan_only()) {
    cache_.resize(file_.images.size());
    size_t bytes = 0;
    for (size_t i = 0; i < cache_.size(); ++i) {
      ReadImage(static_cast<int>(i), &cache_[i]);
      bytes += cache_[i].pixels.size();
    }
    LOG(INFO) << "Cached " << cache_.size() << " images (" << (bytes >> 20) << " MiB decoded)";
  }
  Source source;
  source.batch_size = batch_size_;
  source.item_shape = {channels_, crop_, crop_};
  return source;
}

void WindowDataLayer::Load(uint64_t index, int worker, float* out, float* label, RecordRng& rng) {
  const WindowDataParameter& p = param_.window_data_param();
  const TransformationParameter& t = param_.transform_param();
  const bool foreground = static_cast<int>(index % batch_size_) >= num_background_;
  const std::vector<Window>& windows = foreground ? file_.foreground : file_.background;
  const Window& window = windows[rng() % windows.size()];
  const bool flip = t.mirror() && rng() % 2;
  Scratch& scratch = scratch_[worker];
  if (cache_.empty()) ReadImage(window.image, &scratch.image);
  const Image8& image = cache_.empty() ? scratch.image : cache_[window.image];

  const int k = crop_, plane = crop_ * crop_, channels = channels_;
  const Warp warp = PlanWarp(window, image.width, image.height, k, static_cast<int>(p.context_pad()),
                             p.crop_mode() == "square", flip);
  CORTADO_REQUIRE(warp.width > 0 && warp.height > 0, Describe(), ": ", Where(window.line),
                  ": the window warps to nothing in the crop (context_pad too large for crop_size?)");
  ResizeRegion(image, warp.x1, warp.y1, warp.x2 - warp.x1 + 1, warp.y2 - warp.y1 + 1, warp.width, warp.height,
               &scratch.warped);
  std::fill(out, out + static_cast<size_t>(channels) * plane, 0.0f);
  const float scale = t.scale();
  for (int y = 0; y < warp.height; ++y) {
    const uint8_t* row = scratch.warped.pixels.data() + static_cast<size_t>(y) * warp.width * channels;
    for (int x = 0; x < warp.width; ++x) {
      const uint8_t* pixel = row + static_cast<size_t>(flip ? warp.width - 1 - x : x) * channels;
      const int at = (warp.pad_y + y) * k + warp.pad_x + x;
      for (int c = 0; c < channels; ++c)
        out[c * plane + at] = (static_cast<float>(pixel[c]) - mean_[c * plane + at]) * scale;
    }
  }
  if (label != nullptr) *label = static_cast<float>(window.label);
}

}  // namespace

CORTADO_REGISTER_LAYER(WindowData, WindowDataLayer);

}  // namespace cortado
