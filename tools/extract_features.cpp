// extract_features.cpp — Caffe's feature extractor, with its command line:
//   extract_features WEIGHTS NET.prototxt BLOB1[,BLOB2...] DB1[,DB2...] NUM_MINI_BATCHES lmdb|leveldb [CPU|GPU] [DEVICE_ID]
// Builds NET in the TEST phase, copies the trained layers from WEIGHTS (.caffemodel, or .caffemodel.h5),
// runs NUM_MINI_BATCHES forward passes and writes, for each named blob, one Datum per item (row of axis
// 0) into its own new database (LMDB or LevelDB): channels = count / num, height = width = 1, float_data = the item's values,
// keys "%010d" of the item's running index (as Caffe's format_int(i, 10)), committed every 1000 items.
// Everything is checked before the first database is created; a database made by a run that then
// fails is removed again.
#include <glog/logging.h>

#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <memory>
#include <set>
#include <string>
#include <vector>

#include "cortado/cortado.pb.h"  // Datum, NetParameter
#include "cortado/data/db_writer.hpp"  // CreateDbWriter
#include "cortado/error.hpp"
#include "cortado/gpu.hpp"       // BuiltWithCuda, GpuCount
#include "cortado/io.hpp"        // ReadProtoFromTextFile, FileExists
#include "cortado/net.hpp"
#include "cortado/suggest.hpp"   // ClosestMatch
#include "cortado/tool.hpp"

namespace {

using cortado::Fail;

const char* const kUsageLine =
    "extract_features WEIGHTS NET.prototxt BLOB1[,BLOB2...] DB1[,DB2...] NUM_MINI_BATCHES lmdb|leveldb "
    "[CPU|GPU] [DEVICE_ID=0]";

struct Args {
  std::string weights, net;
  std::vector<std::string> blobs, dbs;
  int batches = 0;
  cortado::Device device = cortado::Device::kCPU;
  int gpu = 0;
  cortado::DataParameter::DB backend = cortado::DataParameter::LMDB;
};

// "a,b" → {a, b}; an empty name ("a,,b", "a,") is an Error naming `what` and the list.
std::vector<std::string> SplitNames(const std::string& list, const char* what) {
  std::vector<std::string> names;
  size_t start = 0;
  for (;;) {
    const size_t comma = list.find(',', start);
    names.push_back(list.substr(start, comma == std::string::npos ? std::string::npos : comma - start));
    CORTADO_REQUIRE(!names.back().empty(), "the ", what, " list '", list,
                    "' has an empty name (separate names with single commas)");
    if (comma == std::string::npos) return names;
    start = comma + 1;
  }
}

std::string Joined(const std::vector<std::string>& names) {
  std::string text;
  for (const auto& name : names) text += (text.empty() ? "" : ", ") + name;
  return text;
}

// A whole decimal integer in [min, INT_MAX]; an Error naming `what` otherwise.
int ParseInt(const std::string& text, int min, const char* what) {
  char* end = nullptr;
  errno = 0;
  const long value = std::strtol(text.c_str(), &end, 10);
  CORTADO_REQUIRE(!text.empty() && *end == '\0' && errno == 0 && value >= min && value <= INT_MAX, what,
                  " must be ", min > 0 ? "a positive" : "a non-negative", " integer, got '", text, "'");
  return static_cast<int>(value);
}

Args ParseArgs(int argc, char** argv) {
  CORTADO_REQUIRE(argc >= 7 && argc <= 9, "expected 6 to 8 arguments, got ", argc - 1, "; usage: ",
                  kUsageLine);
  Args args;
  args.weights = argv[1];
  args.net = argv[2];
  args.blobs = SplitNames(argv[3], "feature blob name");
  args.dbs = SplitNames(argv[4], "dataset name");
  CORTADO_REQUIRE(args.blobs.size() == args.dbs.size(), "the number of blob names (", args.blobs.size(),
                  ": ", argv[3], ") and dataset names (", args.dbs.size(), ": ", argv[4],
                  ") must be equal");
  args.batches = ParseInt(argv[5], 1, "num_mini_batches");
  const std::string db_type = argv[6];
  CORTADO_REQUIRE(db_type == "lmdb" || db_type == "leveldb", "unknown db_type '", db_type,
                  "' (use lmdb or leveldb)");
  args.backend = db_type == "leveldb" ? cortado::DataParameter::LEVELDB : cortado::DataParameter::LMDB;
  const std::string mode = argc > 7 ? argv[7] : "CPU";
  CORTADO_REQUIRE(mode == "CPU" || mode == "GPU", "the device argument must be CPU or GPU, got '", mode, "'");
  const int id = argc > 8 ? ParseInt(argv[8], 0, "DEVICE_ID") : 0;
  if (mode == "GPU") {
    CORTADO_REQUIRE(cortado::BuiltWithCuda(), "GPU requested but this build has no CUDA support "
                    "(run with CPU, or rebuild with CUDA)");
    const int count = cortado::GpuCount();
    CORTADO_REQUIRE(count > 0, "GPU requested but no GPU was found (run with CPU)");
    CORTADO_REQUIRE(id < count, "GPU ", id, " does not exist (this machine has ", count, " GPU",
                    count == 1 ? "" : "s", ", ids 0 to ", count - 1, ")");
    args.device = cortado::Device::kGPU;
    args.gpu = id;
  }
  std::set<std::string> seen;
  for (const auto& db : args.dbs) {
    CORTADO_REQUIRE(seen.insert(std::filesystem::path(db).lexically_normal().string()).second,
                    "dataset '", db, "' is named twice; give each blob its own dataset");
    CORTADO_REQUIRE(!std::filesystem::exists(db), "dataset '", db,
                    "' already exists; remove it or choose another name");
  }
  CORTADO_REQUIRE(cortado::FileExists(args.weights), "weights file '", args.weights, "' does not exist");
  return args;
}

// Runs the net and writes the databases, which must not exist yet; each one is added to `created` as
// soon as it exists.
void Extract(const Args& args, cortado::Net& net, cortado::Context& ctx, std::vector<std::string>* created) {
  const size_t features = args.blobs.size();
  std::vector<const cortado::Blob*> blobs;
  std::vector<std::unique_ptr<cortado::DbWriter>> dbs;
  for (size_t i = 0; i < features; ++i) {
    blobs.push_back(net.blob_by_name(args.blobs[i]));
    LOG(INFO) << "Opening dataset " << args.dbs[i];
    dbs.push_back(cortado::CreateDbWriter(args.backend, args.dbs[i], ""));
    created->push_back(args.dbs[i]);
  }
  LOG(INFO) << "Extracting Features";
  cortado::Datum datum;
  datum.set_height(1);
  datum.set_width(1);
  std::string value;
  std::vector<int> indices(features, 0);
  for (int batch = 0; batch < args.batches; ++batch) {
    net.Forward();
    if (args.device == cortado::Device::kGPU) ctx.Synchronize();
    for (size_t i = 0; i < features; ++i) {
      const cortado::Blob& blob = *blobs[i];
      if (blob.count() == 0) continue;
      std::vector<float> host;
      const float* values = blob.data();
      if (blob.device() == cortado::Device::kGPU) {
        host = blob.ReadData();
        values = host.data();
      }
      const int num = blob.num_axes() > 0 ? blob.shape(0) : 1;  // Caffe's num(), for any axes
      const int64_t dim = blob.count() / num;
      CORTADO_REQUIRE(dim <= INT_MAX, "blob ", args.blobs[i], " has ", dim,
                      " values per item, more than a Datum's channels can hold");
      datum.set_channels(static_cast<int>(dim));
      for (int n = 0; n < num; ++n) {
        datum.clear_float_data();
        datum.mutable_float_data()->Add(values + n * dim, values + (n + 1) * dim);
        CORTADO_REQUIRE(datum.SerializeToString(&value), "cannot serialise a Datum of blob ", args.blobs[i]);
        char key[16];
        std::snprintf(key, sizeof(key), "%010d", indices[i]);
        dbs[i]->Put(key, value);  // commits every DbWriter::kPutsPerCommit (1000) puts
        if (++indices[i] % 1000 == 0)
          LOG(INFO) << "Extracted features of " << indices[i] << " query images for feature blob "
                    << args.blobs[i];
      }
    }
  }
  for (size_t i = 0; i < features; ++i) {
    dbs[i]->Finish();
    LOG(INFO) << "Extracted features of " << indices[i] << " query images for feature blob " << args.blobs[i];
  }
  LOG(INFO) << "Successfully extracted the features!";
}

int Run(int argc, char** argv) {
  const Args args = ParseArgs(argc, argv);
  LOG(INFO) << (args.device == cortado::Device::kGPU ? "Using GPU" : "Using CPU");
  if (args.device == cortado::Device::kGPU) LOG(INFO) << "Using Device_id=" << args.gpu;
  cortado::NetParameter param;
  cortado::ReadProtoFromTextFile(args.net, &param);
  param.mutable_state()->set_phase(cortado::TEST);
  cortado::Context ctx(args.device, -1, args.gpu);
  cortado::Net net(param, ctx, args.net);
  for (const auto& name : args.blobs) {
    if (net.has_blob(name)) continue;
    const std::string closest = cortado::ClosestMatch(name, net.blob_names());
    Fail("unknown feature blob name '", name, "' in the network ", args.net, " (its blobs: ",
         Joined(net.blob_names()), ")", closest.empty() ? "" : "; did you mean '" + closest + "'?");
  }
  net.KeepReadable(args.blobs);  // the memory plan must not reuse what is extracted after each forward
  net.AllocateOwnArena();
  net.LoadWeightsFile(args.weights);

  std::vector<std::string> created;  // removed again when the run fails
  try {
    Extract(args, net, ctx, &created);
  } catch (...) {
    for (const auto& db : created) std::filesystem::remove_all(db);
    throw;
  }
  return 0;
}

// gflags would read a negative number ("-1") as a flag. When there is one, a "--" before the first
// argument that is not a flag ends the flags there (gflags keeps the arguments after it in order), so
// that the argument checks can say what is wrong with the number.
std::vector<char*> NegativeNumbersAsArguments(int argc, char** argv) {
  static char separator[] = "--";
  const auto is_number = [](const char* arg) {
    return arg[0] == '-' && std::isdigit(static_cast<unsigned char>(arg[1]));
  };
  std::vector<char*> args(argv, argv + argc);
  for (size_t i = 1; i < args.size() && std::strcmp(args[i], "--") != 0; ++i) {
    if (!is_number(args[i])) continue;
    size_t first = 1;  // the first argument that is not a flag
    while (args[first][0] == '-' && !is_number(args[first])) ++first;
    args.insert(args.begin() + static_cast<std::ptrdiff_t>(first), separator);
    break;
  }
  args.push_back(nullptr);
  return args;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string usage = std::string(
      "Runs a trained net in the TEST phase and saves the values of named blobs, one Datum (float_data,\n"
      "channels = values per item, height = width = 1) per item, in new databases.\n"
      "Usage: ") + kUsageLine + "\n"
      "Give several blobs and as many datasets as comma-separated lists. WEIGHTS is a .caffemodel or\n"
      ".caffemodel.h5.";
  std::vector<char*> args = NegativeNumbersAsArguments(argc, argv);
  return cortado::RunTool(static_cast<int>(args.size()) - 1, args.data(), usage.c_str(), Run);
}
