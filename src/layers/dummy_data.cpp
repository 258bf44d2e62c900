// dummy_data.cpp — DummyData: tops filled by fillers, for tests and benchmarks without a dataset.
// DummyDataParameter gives 0, 1 or one-per-top data_filler (default: constant 0) and 1 or
// one-per-top shapes (`shape`, or the legacy num/channels/height/width, each 1 or one per top).
// Every Forward refills the tops, drawing random fillers from the context's RNG.
// GPU: constant fillers are a gpu_set; the others fill a host buffer with the same draws as the CPU
// (so both devices give the same values from the same seed), copied to the top in stream order
// (UploadAndWait, dummy_data_gpu.hpp).
#include "cortado/error.hpp"
#include "cortado/filler.hpp"
#include "cortado/layer_registry.hpp"
#include "cortado/math_gpu.hpp"
#include "dummy_data_gpu.hpp"

namespace cortado {

class DummyDataLayer : public Layer {
 public:
  using Layer::Layer;
  const char* type() const override { return "DummyData"; }
  bool IsCapturable() const override { return false; }  // random fillers are drawn on the host
  // GPU nets: every top's values are known on the host (a constant, or the draws before their upload),
  // so class labels are checked there and the loss that reads them neither waits nor blocks graphs.
  bool CanCheckLabels() const override { return true; }
  int ExactNumBottomBlobs() const override { return 0; }
  int MinTopBlobs() const override { return 1; }
  bool BackwardReadsTopData(int) const override { return false; }

  void LayerSetUp(const BlobVec&, const BlobVec& top) override {
    const DummyDataParameter& p = param_.dummy_data_param();
    const int tops = static_cast<int>(top.size());
    auto one_or_per_top = [&](int n, const char* field) {
      CORTADO_REQUIRE(n == 1 || n == tops, Describe(), ": has ", tops, " tops but ", n, " ", field,
                      " values; give one, or one per top");
    };
    const int fillers = p.data_filler_size();
    if (fillers > 0) one_or_per_top(fillers, "data_filler");
    fillers_.assign(tops, FillerParameter());  // constant 0 by default
    for (int i = 0; i < tops && fillers > 0; ++i) fillers_[i] = p.data_filler(fillers == 1 ? 0 : i);

    const bool legacy = p.num_size() || p.channels_size() || p.height_size() || p.width_size();
    shapes_.assign(tops, {});
    if (legacy) {
      CORTADO_REQUIRE(p.shape_size() == 0, Describe(),
                      ": give either shape or the legacy num/channels/height/width, not both");
      one_or_per_top(p.num_size(), "num");
      one_or_per_top(p.channels_size(), "channels");
      one_or_per_top(p.height_size(), "height");
      one_or_per_top(p.width_size(), "width");
      auto pick = [](const auto& field, int i) { return static_cast<int>(field.size() == 1 ? field[0] : field[i]); };
      for (int i = 0; i < tops; ++i)
        shapes_[i] = {pick(p.num(), i), pick(p.channels(), i), pick(p.height(), i), pick(p.width(), i)};
    } else {
      one_or_per_top(p.shape_size(), "shape");
      for (int i = 0; i < tops; ++i) {
        const BlobShape& s = p.shape(p.shape_size() == 1 ? 0 : i);
        shapes_[i].assign(s.dim().begin(), s.dim().end());
      }
    }
  }

  void Reshape(const BlobVec&, const BlobVec& top) override {
    for (size_t i = 0; i < top.size(); ++i) top[i]->Reshape(shapes_[i]);
  }

 protected:
  void Forward_cpu(const BlobVec&, const BlobVec& top) override {
    try {
      for (size_t i = 0; i < top.size(); ++i) FillBlob(fillers_[i], top[i], ctx_.rng());
    } catch (const Error& e) {
      Fail(Describe(), ": ", e.what());  // e.g. an unknown filler type
    }
  }
  void Backward_cpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}

  void Forward_gpu(const BlobVec&, const BlobVec& top) override {
    for (size_t i = 0; i < top.size(); ++i) {
      Blob* t = top[i];
      if (fillers_[i].type() == "constant") {  // draws nothing from the RNG on the CPU either
        const float value = fillers_[i].value();
        CheckLabelsOnHost(static_cast<int>(i), &value, t->count() > 0 ? 1 : 0);  // every position holds it
        gpu_set(ctx_, t->count(), value, t->data());
        continue;
      }
      host_.assign(static_cast<size_t>(t->count()), 0.0f);
      Blob staging(t->shape());
      staging.Bind(Device::kCPU, host_.data(), nullptr, t->count());
      try {
        FillBlob(fillers_[i], &staging, ctx_.rng());
      } catch (const Error& e) {
        Fail(Describe(), ": ", e.what());  // e.g. an unknown filler type
      }
      CheckLabelsOnHost(static_cast<int>(i), host_.data(), t->count());
      UploadAndWait(ctx_, t->count(), host_.data(), t->data());
    }
  }
  void Backward_gpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}

 private:
  std::vector<float> host_;               // GPU: a random filler's values on their way to a top
  std::vector<FillerParameter> fillers_;  // one per top
  std::vector<std::vector<int>> shapes_;  // one per top
};

CORTADO_REGISTER_LAYER(DummyData, DummyDataLayer);

}  // namespace cortado
