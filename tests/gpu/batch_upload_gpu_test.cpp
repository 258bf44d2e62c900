// batch_upload_gpu_test.cpp — the data layers' double-buffered copies to the GPU (BatchUploader,
// data/batch_uploader.hpp). A GPU net holding only a data layer runs kForwards forwards queued without any host
// wait, as the GPU stepper runs them; after each, the batch in its tops is copied aside on the compute
// stream, and heavy work queued behind it keeps the compute stream far behind the host and the copy
// stream. After one synchronisation the kForwards batches must equal a CPU net's over the same data
// and seed, in order: a copy that overwrote a device slot before the compute stream had read it, or
// a batch skipped or repeated, shows as a batch that differs. Data (LMDB) and HDF5Data.
#include <cstddef>
#include <memory>
#include <string>
#include <vector>

#include "cortado/hdf5.hpp"  // HaveHdf5Support
#include "cortado/io.hpp"    // ReadProtoFromTextString
#include "cortado/math.hpp"  // Trans
#include "cortado/math_gpu.hpp"
#include "cortado/net.hpp"
#include "gpu_compare.hpp"

namespace cortado::test {

namespace {

constexpr int kForwards = 8;
constexpr uint32_t kSeed = 23;

// Every forward's `data` and `label` tops, concatenated in forward order, and where the reader was.
struct Batches {
  std::vector<float> data, label;
  uint64_t position = 0;
};

std::unique_ptr<Net> DataOnlyNet(const std::string& layer_text, Context& ctx) {
  NetParameter param;
  ReadProtoFromTextString("name: 'data_only' layer { " + layer_text + " }", &param, "data_only.prototxt");
  param.mutable_state()->set_phase(TRAIN);
  auto net = std::make_unique<Net>(param, ctx, "data_only.prototxt");
  net->AllocateOwnArena();
  return net;
}

Batches CpuBatches(const std::string& layer_text) {
  Context ctx(Device::kCPU, kSeed);
  std::unique_ptr<Net> net = DataOnlyNet(layer_text, ctx);
  Batches out;
  for (int k = 0; k < kForwards; ++k) {
    net->Forward();
    const std::vector<float> data = net->blob_by_name("data")->ReadData();
    const std::vector<float> label = net->blob_by_name("label")->ReadData();
    out.data.insert(out.data.end(), data.begin(), data.end());
    out.label.insert(out.label.end(), label.begin(), label.end());
  }
  out.position = net->layers()[0]->reader_state().position;
  return out;
}

Batches GpuBatchesQueuedWithoutWaiting(const std::string& layer_text) {
  Context ctx(Device::kGPU, kSeed);
  std::unique_ptr<Net> net = DataOnlyNet(layer_text, ctx);
  Blob* data = net->blob_by_name("data");
  Blob* label = net->blob_by_name("label");
  // Slot k of each store receives forward k's batch; a, b, c are the operands of the busy work.
  constexpr int kN = 2048;
  Blob data_store({kForwards, static_cast<int>(data->count())});
  Blob label_store({kForwards, static_cast<int>(label->count())});
  Blob a({kN, kN}), b({kN, kN}), c({kN, kN});
  const std::unique_ptr<Arena> arena = AllocateBlobs({&data_store, &label_store, &a, &b, &c}, false, Device::kGPU);
  const int last = static_cast<int>(net->layers().size()) - 1;
  for (int k = 0; k < kForwards; ++k) {
    net->ForwardOnDevice(0, last);
    gpu_copy(ctx, data->count(), data->data(), data_store.data() + k * data->count());
    gpu_copy(ctx, label->count(), label->data(), label_store.data() + k * label->count());
    // About 100 GFLOP on the compute stream: the host queues the next forwards long before the
    // compute stream reaches them, and the copy stream may run ahead as far as the events let it.
    for (int r = 0; r < 6; ++r)
      gpu_gemm(ctx, Trans::kNo, Trans::kNo, kN, kN, kN, 1.0f, a.data(), b.data(), 0.0f, c.data());
  }
  ctx.Synchronize();  // the only wait
  return {data_store.ReadData(), label_store.ReadData(), net->layers()[0]->reader_state().position};
}

// Compares forward by forward, so that a failure names the batch.
void ExpectSameBatches(const std::vector<float>& gpu, const std::vector<float>& cpu, const char* top) {
  ASSERT_EQ(gpu.size(), cpu.size()) << top;
  const size_t per_batch = cpu.size() / kForwards;
  for (int k = 0; k < kForwards; ++k) {
    const auto begin = static_cast<std::ptrdiff_t>(k * per_batch), end = begin + static_cast<std::ptrdiff_t>(per_batch);
    EXPECT_EQ(std::vector<float>(gpu.begin() + begin, gpu.begin() + end),
              std::vector<float>(cpu.begin() + begin, cpu.begin() + end))
        << top << " of forward " << k;
  }
}

void ExpectQueuedForwardsGiveTheCpusBatches(const std::string& layer_text) {
  const Batches cpu = CpuBatches(layer_text);
  const Batches gpu = GpuBatchesQueuedWithoutWaiting(layer_text);
  ExpectSameBatches(gpu.data, cpu.data, "data");
  ExpectSameBatches(gpu.label, cpu.label, "label");
  EXPECT_EQ(gpu.position, cpu.position) << "the reader handed out another number of records";
}

}  // namespace

TEST(BatchUploadGpu, DataBatchesQueuedWithoutWaitingEqualTheCpus) {
  SKIP_WITHOUT_GPU();
  // 10 records, each with its own pixels ((i + j) % 256) and label; batches of 3 wrap the epoch
  // inside a batch, and 8 forwards use each of the two staging slots four times.
  const std::string lmdb = WriteDatumLmdb(TempDir() + "/lmdb", 2, 3, 3, {7, 2, 9, 0, 4, 8, 1, 6, 3, 5});
  ExpectQueuedForwardsGiveTheCpusBatches("name: 'data' type: 'Data' top: 'data' top: 'label' "
                                         "transform_param { scale: 0.5 } "
                                         "data_param { source: '" + lmdb + "' batch_size: 3 backend: LMDB }");
}

TEST(BatchUploadGpu, Hdf5DataBatchesQueuedWithoutWaitingEqualTheCpus) {
  SKIP_WITHOUT_GPU();
  if (!HaveHdf5Support()) GTEST_SKIP() << "this build has no HDF5";
  if (RunCommand("/usr/bin/python3 -c 'import h5py'").exit_code != 0) GTEST_SKIP() << "no h5py";
  const std::string dir = TempDir();
  const auto made = RunCommand("/usr/bin/python3 " + SourceDir() + "/tests/layers/hdf5_data_files.py " + dir +
                               "/a.h5 data:f4:5x3:0 label:f4:5:100 " + dir + "/b.h5 data:f4:4x3:50 label:f4:4:200");
  ASSERT_EQ(made.exit_code, 0) << made.err;
  WriteFile(dir + "/list.txt", dir + "/a.h5\n" + dir + "/b.h5\n");
  // 9 rows in batches of 4, shuffled: both files and several passes.
  ExpectQueuedForwardsGiveTheCpusBatches("name: 'd' type: 'HDF5Data' top: 'data' top: 'label' "
                                         "hdf5_data_param { source: '" + dir + "/list.txt' batch_size: 4 shuffle: true }");
}

}  // namespace cortado::test
