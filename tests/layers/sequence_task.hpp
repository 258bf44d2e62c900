// sequence_task.hpp — the small sequence task the RNN and LSTM tests train: 6 time steps × 4 streams
// of ±0.5 inputs (random, seeded; cont 0 at t = 0), the layer's 3 outputs per step regressed onto
// target(t, n, x) with a Euclidean loss, and plain SGD at `rate`. Gives the first and last losses.
#pragma once

#include <functional>
#include <random>
#include <string>

#include "cortado/io.hpp"
#include "cortado/net.hpp"

namespace cortado::test {

struct SequenceTaskLosses {
  float first = 0, last = 0;
};

// x is laid out (T = 6, N = 4): x[t * 4 + n].
inline SequenceTaskLosses TrainSequenceTask(const std::string& type, int iterations, float rate,
                                            const std::function<float(int t, int n, const float* x)>& target) {
  const std::string text = R"(
name: "delay"
layer { name: "in" type: "Input" top: "x" top: "cont" top: "target"
        input_param { shape { dim: 6 dim: 4 dim: 1 } shape { dim: 6 dim: 4 } shape { dim: 6 dim: 4 dim: 3 } } }
layer { name: "recurrent" type: ")" + type + R"(" bottom: "x" bottom: "cont" top: "y"
        recurrent_param { num_output: 3 weight_filler { type: "uniform" min: -0.3 max: 0.3 } } }
layer { name: "loss" type: "EuclideanLoss" bottom: "y" bottom: "target" top: "loss" }
)";
  NetParameter param;
  ReadProtoFromTextString(text, &param, "delay.prototxt");
  param.mutable_state()->set_phase(TRAIN);
  Context ctx(Device::kCPU, 5);
  Net net(param, ctx, "delay.prototxt");
  net.AllocateOwnArena();
  std::mt19937 rng(3);
  float* x = net.blob_by_name("x")->data();
  float* cont = net.blob_by_name("cont")->data();
  float* y = net.blob_by_name("target")->data();
  for (int t = 0; t < 6; ++t)
    for (int n = 0; n < 4; ++n) {
      x[t * 4 + n] = (rng() % 2) ? 0.5f : -0.5f;
      cont[t * 4 + n] = t > 0;
      for (int j = 0; j < 3; ++j) y[(t * 4 + n) * 3 + j] = target(t, n, x);
    }
  SequenceTaskLosses losses;
  for (int iter = 0; iter < iterations; ++iter) {
    const float loss = net.Forward();
    if (iter == 0) losses.first = loss;
    losses.last = loss;
    net.ClearParamDiffs();
    net.Backward();
    for (int64_t i = 0; i < net.param_count(); ++i) net.param_data()[i] -= rate * net.param_diff()[i];
  }
  return losses;
}

}  // namespace cortado::test
