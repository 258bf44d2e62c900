// loss_math.cpp — reading back the first bad label a loss's terms flagged (loss_math.hpp), on either
// device.
#include "loss_math.hpp"

namespace cortado::loss {

int64_t FirstFlagged(Context& ctx, float* work, const float* labels, float* value_host) {
  if (value_host == nullptr) return -1;
  if (ctx.device() == Device::kGPU) return FirstBadLabelGpu(ctx, work + kFlag, labels, value_host);
  const unsigned first = *FlagOf(work);
  if (first == kNoBadLabel) return -1;
  *value_host = labels[first];
  return first;
}

}  // namespace cortado::loss
