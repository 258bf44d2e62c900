// caffemodel_fuzzer.cpp — a .caffemodel (binary NetParameter), as trainer --weights, trainer test and
// extract_features read one: copied by layer name into SmallNet (fuzz_util.hpp; the seeds are its
// weights), which then runs forward; and, as trainer upgrade reads one, upgraded when it is a V0/V1
// net and built as a net on a planning context (a .caffemodel holds its net's definition).
#include "cortado/io.hpp"
#include "cortado/upgrade.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string path = cortado::fuzz::WriteInput("weights.caffemodel", data, size);
  cortado::fuzz::Run([&] { cortado::fuzz::LoadIntoSmallNet(path); });
  cortado::fuzz::Run([&] {
    cortado::NetParameter param;
    cortado::ReadProtoFromBinaryFile(path, &param);
    if (cortado::NetNeedsUpgrade(param)) cortado::UpgradeNet(&param, path);
    cortado::fuzz::PlannedBytes(param, path);
  });
  return 0;
}
