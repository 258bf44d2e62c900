// typed_pooling.hpp — a Pooling layer built directly on blobs of one storage type (float, bf16, fp16)
// and layout (NCHW, or NHWC on the GPU), as the net's storage plan gives them to it without Casts, run
// forward and backward on values given in NCHW order; for the tests of 16-bit and channels-last
// pooling (tests/layers/pooling_test.cpp on the CPU, pooling_typed_gpu_test.cpp on the GPU).
#pragma once

#include <memory>
#include <random>
#include <string>
#include <vector>

#include "cortado/layer_registry.hpp"
#include "cortado/memory.hpp"
#include "test_util.hpp"

namespace cortado::test {

// The values of an N×C×H×W blob in NCHW order put in NHWC order (to_nhwc), or back.
inline std::vector<float> Transposed(const std::vector<float>& v, const std::vector<int>& shape, bool to_nhwc) {
  const int64_t channels = shape[1], spatial = static_cast<int64_t>(shape[2]) * shape[3];
  std::vector<float> out(v.size());
  for (int64_t n = 0; n < shape[0]; ++n)
    for (int64_t c = 0; c < channels; ++c)
      for (int64_t s = 0; s < spatial; ++s) {
        const int64_t nchw = (n * channels + c) * spatial + s, nhwc = (n * spatial + s) * channels + c;
        if (to_nhwc) {
          out[nhwc] = v[nchw];
        } else {
          out[nchw] = v[nhwc];
        }
      }
  return out;
}

// n Gaussian values, each a value of `type` (rounded to it), from a generator seeded with `seed`.
inline std::vector<float> GaussianIn(DataType type, int64_t n, uint32_t seed) {
  std::mt19937 rng(seed);
  std::normal_distribution<float> normal;
  std::vector<float> v(static_cast<size_t>(n));
  for (float& value : v) value = RoundedTo(type, normal(rng));
  return v;
}

class TypedPooling {
 public:
  // `text`: the layer's prototxt; a bottom of `shape` and `tops` tops, data and diff of storage type
  // `type`, channels-last when `nhwc`, all bound in one arena on `device`. Set-up errors (cortado::Error)
  // propagate.
  TypedPooling(const std::string& text, const std::vector<int>& shape, DataType type, bool nhwc = false,
               Device device = Device::kCPU, int tops = 1)
      : ctx_(device, 1701), x_(shape) {
    LayerParameter param = ParseLayer(text);
    if (!param.has_name()) param.set_name("pool");
    for (int i = 0; i < tops; ++i) {
      tops_.push_back(std::make_unique<Blob>());
      top_.push_back(tops_.back().get());
    }
    for (Blob* b : {&x_, top_[0]}) {
      b->set_types(type, type);
      if (nhwc) b->set_layout(MemoryLayout::kNHWC);
    }
    layer_ = LayerRegistry::Create(param, ctx_);
    layer_->SetUp({&x_}, top_);
    std::vector<Blob*> blobs{&x_};
    blobs.insert(blobs.end(), top_.begin(), top_.end());
    for (const auto& s : layer_->scratch_buffers()) blobs.push_back(s.blob);
    arena_ = AllocateBlobs(blobs, true, device);
  }

  const Layer& layer() const { return *layer_; }
  const Blob& top() const { return *top_[0]; }

  // Forward on x, then Backward from dy (top 0's gradient), both in NCHW order and values of the
  // blobs' type; y (top 0) and dx read back in NCHW order.
  void Run(const std::vector<float>& x, const std::vector<float>& dy) {
    x_.WriteData(InMemoryOrder(x_, x, true));
    layer_->Forward({&x_}, top_);
    top_[0]->WriteDiff(InMemoryOrder(*top_[0], dy, true));
    layer_->Backward(top_, {true}, {&x_});
    if (ctx_.device() == Device::kGPU) ctx_.Synchronize();
    y = InMemoryOrder(*top_[0], top_[0]->ReadData(), false);
    dx = InMemoryOrder(x_, x_.ReadDiff(), false);
  }

  std::vector<float> y, dx;  // Run's results

 private:
  // NCHW-ordered values in `blob`'s memory order (to_memory), or its memory's values in NCHW order.
  static std::vector<float> InMemoryOrder(const Blob& blob, const std::vector<float>& v, bool to_memory) {
    return blob.channels_last() ? Transposed(v, blob.shape(), to_memory) : v;
  }

  Context ctx_;
  Blob x_;
  std::vector<std::unique_ptr<Blob>> tops_;
  BlobVec top_;
  std::unique_ptr<Layer> layer_;
  std::unique_ptr<Arena> arena_;
};

}  // namespace cortado::test
