// net_prototxt_fuzzer.cpp — a net prototxt, as trainer train, test and time read one: parsed (layer
// types checked, V0/V1 nets upgraded), built in the TRAIN and the TEST phase on a planning context
// (every shape checked, memory planned, nothing allocated), and, when the plan is small (1 MiB), built
// for real and run forward and backward once.
#include <string>

#include "cortado/io.hpp"
#include "cortado/net.hpp"
#include "fuzz_util.hpp"

namespace {

void BuildAndRun(cortado::NetParameter param, cortado::Phase phase) {
  param.mutable_state()->set_phase(phase);
  const size_t bytes = cortado::fuzz::PlannedBytes(param, "net.prototxt");
  if (bytes > (size_t{1} << 20) || !cortado::fuzz::SafeToRun(param)) return;
  cortado::Context ctx(cortado::Device::kCPU, 1);
  cortado::Net net(param, ctx, "net.prototxt");
  net.AllocateOwnArena();
  net.Forward();
  if (phase == cortado::TRAIN || param.force_backward()) net.Backward();
}

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  cortado::NetParameter param;
  const std::string text(reinterpret_cast<const char*>(data), size);
  cortado::fuzz::Run([&] { cortado::ReadProtoFromTextString(text, &param, "net.prototxt"); });
  if (param.layer_size() == 0 && param.layers_size() == 0) return 0;
  cortado::fuzz::Run([&] { BuildAndRun(param, cortado::TRAIN); });
  cortado::fuzz::Run([&] { BuildAndRun(param, cortado::TEST); });
  return 0;
}
