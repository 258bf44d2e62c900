// batch_uploader.cpp — the part of BatchUploader (data/batch_uploader.hpp) that every build has: the
// device staging blobs, added and shaped as the layer's scratch, which is all a memory plan needs.
#include "cortado/data/batch_uploader.hpp"

#include <glog/logging.h>

namespace cortado {

BatchUploader::BatchUploader(Context& ctx, const std::vector<int64_t>& floats,
                             const std::function<Blob*()>& add_scratch)
    : floats_(floats) {
  for (std::vector<Blob*>& slot : staging_)
    for (size_t i = 0; i < floats.size(); ++i) slot.push_back(add_scratch());
  if (!ctx.plan_only()) state_ = StartCopies(ctx, floats);
}

void BatchUploader::Reshape(const BlobVec& top) {
  CHECK_EQ(top.size(), floats_.size()) << "BatchUploader: one staging buffer per top";
  for (size_t i = 0; i < top.size(); ++i) {
    CHECK_EQ(top[i]->count(), floats_[i]) << "BatchUploader: top " << i << " holds a batch of another size";
    for (std::vector<Blob*>& slot : staging_) slot[i]->ReshapeLike(*top[i]);
  }
}

}  // namespace cortado
