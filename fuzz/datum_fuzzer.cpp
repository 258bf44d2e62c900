// datum_fuzzer.cpp — one database record (a Datum: raw uint8 or float pixels, or an encoded image),
// as the Data layer's workers read one: parsed, decoded by OpenCV when encoded, and transformed into
// floats. The first byte chooses the transformation (crop, mirror, per-channel means, scale, phase),
// so that one input exercises every path of DataTransformer.
#include <vector>

#include "cortado/data/transformer.hpp"
#include "cortado/image.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  if (size == 0) return 0;
  const uint8_t choice = data[0];
  return cortado::fuzz::Run([&] {
    cortado::Datum datum;
    if (!datum.ParseFromArray(data + 1, static_cast<int>(size - 1))) return;
    cortado::Datum decoded;
    const cortado::Datum* pixels = &datum;
    if (datum.encoded()) {
      cortado::DecodeDatum(datum, static_cast<cortado::ColorMode>(choice % 3), &decoded);
      pixels = &decoded;
    }
    cortado::TransformationParameter param;
    if (choice & 0x04) param.set_crop_size(choice >> 6);
    param.set_mirror(choice & 0x08);
    if (choice & 0x10) param.add_mean_value(104);
    if (choice & 0x20) param.set_scale(0.00390625f);
    const cortado::Phase phase = choice & 0x80 ? cortado::TEST : cortado::TRAIN;
    const cortado::DataTransformer transformer(param, phase, "layer data (Data)");
    const std::vector<int> shape = transformer.OutputShape(*pixels);
    size_t count = 1;
    for (int d : shape) count *= static_cast<size_t>(d);
    if (count > (size_t{1} << 24)) return;  // a shape this large is allowed; not worth the fuzzer's time
    std::vector<float> out(count);
    cortado::RecordRng rng(choice);
    transformer.Transform(*pixels, out.data(), rng);
  });
}
