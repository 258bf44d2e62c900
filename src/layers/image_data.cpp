// image_data.cpp — the ImageData layer: image files named in a list file ("path label" per line, split
// at the last space so paths may hold spaces), read, resized and transformed by the BatchPipeline's
// workers. image_data_param: source, root_folder, batch_size, rand_skip, shuffle (a new seeded order
// each epoch), new_height/new_width (bilinear resize when both are set), is_color.
#include <glog/logging.h>

#include <fstream>
#include <utility>

#include "cortado/data/image_list.hpp"
#include "cortado/data/transformer.hpp"
#include "cortado/error.hpp"
#include "cortado/image.hpp"
#include "cortado/layer_registry.hpp"
#include "pipeline_data_layer.hpp"

namespace cortado {

namespace {

class ImageDataLayer : public PipelineDataLayer {
 public:
  using PipelineDataLayer::PipelineDataLayer;
  ~ImageDataLayer() override { StopPipeline(); }
  const char* type() const override { return "ImageData"; }
  bool BackwardReadsTopData(int) const override { return false; }  // no backward pass

 protected:
  Source Open(bool has_label) override;
  uint64_t num_records() const override { return images_.size(); }
  void PrepareWorkers(int count) override { scratch_.resize(count); }
  void Load(uint64_t index, int worker, float* out, float* label, RecordRng& rng) override;

 private:
  void ReadList(const std::string& path);
  void Read(uint64_t index, Datum* datum) const;

  std::vector<std::pair<std::string, int>> images_;  // path (root_folder prepended), label
  std::unique_ptr<DataTransformer> transformer_;
  std::vector<int> record_shape_;
  std::vector<Datum> scratch_;  // one per worker
};

void ImageDataLayer::ReadList(const std::string& path) {
  const std::string& root = param_.image_data_param().root_folder();
  try {
    for (const ImageListEntry& entry : ReadImageList(path)) images_.emplace_back(root + entry.path, entry.label);
  } catch (const Error& e) {
    Fail(Describe(), ": ", e.what());
  }
  CORTADO_REQUIRE(!images_.empty(), Describe(), ": the image list '", path, "' names no images");
  LOG(INFO) << "A total of " << images_.size() << " images.";
}

void ImageDataLayer::Read(uint64_t index, Datum* datum) const {
  const ImageDataParameter& p = param_.image_data_param();
  ReadImageToDatum(images_[index].first, images_[index].second, static_cast<int>(p.new_height()),
                   static_cast<int>(p.new_width()), p.is_color() ? ColorMode::kColor : ColorMode::kGray, "",
                   datum);
}

PipelineDataLayer::Source ImageDataLayer::Open(bool has_label) {
  const ImageDataParameter& p = param_.image_data_param();
  CORTADO_REQUIRE(!p.source().empty(), Describe(), ": image_data_param.source is empty; give the list file");
  CORTADO_REQUIRE((p.new_height() > 0) == (p.new_width() > 0), Describe(),
                  ": set both new_height and new_width, or neither");
  CORTADO_REQUIRE(!p.has_scale() && !p.has_mean_file() && !p.has_crop_size() && !p.has_mirror(), Describe(),
                  ": image_data_param.scale/mean_file/crop_size/mirror are legacy; move them to transform_param");
  images_.clear();
  ReadList(p.source());
  transformer_ = std::make_unique<DataTransformer>(param_.transform_param(), param_.phase(), Describe());
  Datum first;
  Read(0, &first);
  record_shape_ = {first.channels(), first.height(), first.width()};
  Source source;
  source.batch_size = static_cast<int>(p.batch_size());
  source.rand_skip = p.rand_skip();
  source.shuffle = p.shuffle();
  source.item_shape = transformer_->OutputShape(first);
  return source;
}

void ImageDataLayer::Load(uint64_t index, int worker, float* out, float* label, RecordRng& rng) {
  Datum& datum = scratch_[worker];
  Read(index, &datum);
  CORTADO_REQUIRE(datum.channels() == record_shape_[0] && datum.height() == record_shape_[1] &&
                      datum.width() == record_shape_[2],
                  Describe(), ": image '", images_[index].first, "' is ", datum.channels(), "×", datum.height(),
                  "×", datum.width(), " but the first is ", record_shape_[0], "×", record_shape_[1], "×",
                  record_shape_[2], "; set new_height and new_width to resize them all");
  transformer_->Transform(datum, out, rng);
  if (label != nullptr) *label = static_cast<float>(datum.label());
}

}  // namespace

CORTADO_REGISTER_LAYER(ImageData, ImageDataLayer);

}  // namespace cortado
