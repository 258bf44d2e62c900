// dummy_data.cpp — DummyData: tops filled by fillers, for tests and benchmarks without a dataset.
// DummyDataParameter gives 0, 1 or one-per-top data_filler (default: constant 0) and 1 or
// one-per-top shapes (`shape`, or the legacy num/channels/height/width, each 1 or one per top).
// As in Caffe, a top with a constant filler is filled once, at the first Forward; a random filler is
// drawn again (from the context's RNG) on every Forward — or, with refill: false, once too, which
// gives a fixed batch of random values. The tops keep what they were given between passes: a data
// layer's tops have memory of their own in the net's plan (net_memory.cpp).
// GPU: constant fillers are a gpu_set; the others fill a host buffer with the same draws as the CPU
// (so both devices give the same values from the same seed), copied to the top in stream order
// (UploadAndWait, dummy_data_gpu.hpp). A layer that refills nothing after its first Forward queues
// nothing then, so CUDA graphs capture it (the first pass runs before any capture).
#include <vector>

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
  bool IsCapturable() const override { return !refills_; }  // not when it draws on the host every pass
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
    refill_.assign(tops, false);
    refills_ = false;
    for (int i = 0; i < tops; ++i) {
      refill_[i] = p.refill() && fillers_[i].type() != "constant";
      refills_ = refills_ || refill_[i];
    }
    filled_.assign(tops, Filled());

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
      for (size_t i = 0; i < top.size(); ++i) {
        if (!NeedsFill(i, *top[i])) continue;
        FillBlob(fillers_[i], top[i], ctx_.rng());
        MarkFilled(i, *top[i]);
      }
    } catch (const Error& e) {
      Fail(Describe(), ": ", e.what());  // e.g. an unknown filler type
    }
  }
  void Backward_cpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}

  void Forward_gpu(const BlobVec&, const BlobVec& top) override {
    for (size_t i = 0; i < top.size(); ++i) {
      Blob* t = top[i];
      if (!NeedsFill(i, *t)) continue;  // the values it was given are still there: nothing to check again
      if (fillers_[i].type() == "constant") {  // draws nothing from the RNG on the CPU either
        const float value = fillers_[i].value();
        CheckLabelsOnHost(static_cast<int>(i), &value, t->count() > 0 ? 1 : 0);  // every position holds it
        gpu_set(ctx_, t->count(), value, t->data());
        MarkFilled(i, *t);
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
      MarkFilled(i, *t);
    }
    if (!refills_) std::vector<float>().swap(host_);  // nothing more to draw: give the staging memory back
  }
  void Backward_gpu(const BlobVec&, const std::vector<bool>&, const BlobVec&) override {}

 private:
  // Where top i was last filled, and with how many values (a top is filled again if it has moved or
  // changed size since, which a net's tops do not: they are bound once).
  struct Filled {
    const float* data = nullptr;
    int64_t count = -1;
  };
  bool NeedsFill(size_t i, const Blob& top) const {
    return refill_[i] || filled_[i].data != top.data() || filled_[i].count != top.count();
  }
  void MarkFilled(size_t i, const Blob& top) { filled_[i] = {top.data(), top.count()}; }

  std::vector<float> host_;               // GPU: a random filler's values on their way to a top
  std::vector<FillerParameter> fillers_;  // one per top
  std::vector<std::vector<int>> shapes_;  // one per top
  std::vector<bool> refill_;              // per top: drawn again on every Forward (random, refill: true)
  bool refills_ = false;                  // some top is
  std::vector<Filled> filled_;            // per top
};

CORTADO_REGISTER_LAYER(DummyData, DummyDataLayer);

}  // namespace cortado
