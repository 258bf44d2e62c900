// make_seeds.cpp — writes the harnesses' generated seed inputs into fuzz/corpus/<harness>/ (run by
// scripts/fuzz.sh --make-seeds; the results are committed): weights and snapshots of SmallNet in both
// formats, Datums, databases, IDX files, mean files, image lists, SmallNet as an ONNX model, and copies
// of the shipped model and solver prototxts. The hand-written seeds (fuzz/corpus/net_prototxt/zoo_*.prototxt) are left alone.
//
// Usage: fuzz_make_seeds REPO_ROOT
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "cortado/data/leveldb.hpp"
#include "cortado/data/lmdb.hpp"
#include "cortado/error.hpp"
#include "cortado/hdf5.hpp"
#include "cortado/image.hpp"
#include "cortado/io.hpp"
#include "cortado/net.hpp"
#include "cortado/onnx.hpp"
#include "cortado/solver.hpp"
#include "fuzz_util.hpp"

namespace fs = std::filesystem;
using cortado::Datum;

namespace {

std::string g_corpus;  // <repo>/fuzz/corpus

std::string ReadAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void Seed(const std::string& harness, const std::string& name, const std::string& bytes) {
  fs::create_directories(g_corpus + "/" + harness);
  std::ofstream(g_corpus + "/" + harness + "/" + name, std::ios::binary) << bytes;
}

std::string Hex8(size_t n) {
  char text[16];
  std::snprintf(text, sizeof text, "%08zx", n);
  return text;
}

Datum RawDatum(int channels, int height, int width, int label) {
  Datum d;
  d.set_channels(channels), d.set_height(height), d.set_width(width), d.set_label(label);
  std::string pixels;
  for (int i = 0; i < channels * height * width; ++i) pixels.push_back(static_cast<char>(i * 7));
  d.set_data(pixels);
  return d;
}

// SmallNet's weights and its solver's snapshots, both formats. The states name their weights
// "weights.caffemodel", which fuzz_util's RestoreAndStep writes beside them.
void WeightsAndSnapshots(const std::string& work) {
  cortado::Solver solver(cortado::fuzz::SmallSolver(work + "/s"), work + "/solver.prototxt");
  solver.Step(2);
  cortado::NetParameter weights;
  solver.net()->ToProto(&weights);
  Seed("caffemodel", "small.caffemodel", weights.SerializeAsString());
  cortado::WriteNetParameterToHdf5(weights, work + "/small.caffemodel.h5");
  Seed("caffemodel_h5", "small.caffemodel.h5", ReadAll(work + "/small.caffemodel.h5"));
  cortado::SolverState state;
  cortado::ReadProtoFromBinaryFile(solver.Snapshot(), &state);
  state.set_learned_net("weights.caffemodel");
  Seed("solverstate", "small.solverstate", state.SerializeAsString());
  state.clear_learned_net();
  Seed("solverstate", "small_without_weights.solverstate", state.SerializeAsString());
  state.set_learned_net("weights.caffemodel");
  cortado::WriteSolverStateToHdf5(state, work + "/small.solverstate.h5");
  Seed("solverstate_h5", "small.solverstate.h5", ReadAll(work + "/small.solverstate.h5"));
}

void Datums(const std::string& work) {
  const std::string raw = RawDatum(3, 8, 8, 2).SerializeAsString();
  for (const char choice : {'\x00', '\x5c', '\xff'}) Seed("datum", "raw_" + Hex8(uint8_t(choice)), choice + raw);
  Datum floats;
  floats.set_channels(1), floats.set_height(4), floats.set_width(4), floats.set_label(1);
  for (int i = 0; i < 16; ++i) floats.add_float_data(0.25f * i);
  Seed("datum", "float", '\x14' + floats.SerializeAsString());
  std::string grey = "P5\n5 4\n255\n", colour = "P6\n3 3\n255\n";
  for (int i = 0; i < 20; ++i) grey.push_back(static_cast<char>(12 * i));
  for (int i = 0; i < 27; ++i) colour.push_back(static_cast<char>(9 * i));
  std::ofstream(work + "/grey.pgm", std::ios::binary) << grey;
  std::ofstream(work + "/colour.ppm", std::ios::binary) << colour;
  Datum encoded;
  cortado::ReadImageToDatum(work + "/grey.pgm", 3, 0, 0, cortado::ColorMode::kKeep, "png", &encoded);
  Seed("datum", "png", '\x00' + encoded.SerializeAsString());
  cortado::ReadImageToDatum(work + "/colour.ppm", 4, 0, 0, cortado::ColorMode::kColor, "jpg", &encoded);
  Seed("datum", "jpg", '\x45' + encoded.SerializeAsString());
}

void Databases(const std::string& work) {
  {
    cortado::LmdbWriter small(work + "/small_lmdb", "");
    for (int i = 0; i < 20; ++i)
      small.Put("0000000" + std::to_string(i), RawDatum(1, 4, 4, i % 10).SerializeAsString());
    small.Finish();
    cortado::LmdbWriter overflow(work + "/overflow_lmdb", "");  // values on overflow pages, three leaves
    for (int i = 0; i < 40; ++i)
      overflow.Put("000000" + std::to_string(10 + i), RawDatum(3, i % 5 == 0 ? 40 : 8, 40, i).SerializeAsString());
    overflow.Finish();
  }
  Seed("lmdb", "small.mdb", ReadAll(work + "/small_lmdb/data.mdb"));
  Seed("lmdb", "overflow.mdb", ReadAll(work + "/overflow_lmdb/data.mdb"));
  {
    cortado::LeveldbWriter leveldb(work + "/leveldb", "");
    for (int i = 0; i < 20; ++i)
      leveldb.Put("0000000" + std::to_string(i), RawDatum(1, 4, 4, i % 10).SerializeAsString());
    leveldb.Finish();
  }
  std::string archive;  // leveldb_fuzzer's "<name>\n<size>\n<bytes>" sequence
  for (const auto& entry : fs::directory_iterator(work + "/leveldb")) {
    const std::string name = entry.path().filename().string();
    if (name == "LOCK" || name.rfind("LOG", 0) == 0) continue;  // made by LevelDB itself at open
    const std::string bytes = ReadAll(entry.path().string());
    archive += name + "\n" + Hex8(bytes.size()) + "\n" + bytes;
  }
  Seed("leveldb", "small", archive);
}

void MnistFiles() {
  auto word = [](std::string* out, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
  };
  std::string images, labels;
  word(&images, 2051), word(&images, 5), word(&images, 4), word(&images, 4);
  for (int i = 0; i < 5 * 16; ++i) images.push_back(static_cast<char>(i * 3));
  word(&labels, 2049), word(&labels, 5);
  for (int i = 0; i < 5; ++i) labels.push_back(static_cast<char>(i));
  Seed("mnist_idx", "five", Hex8(images.size()) + "\n" + images + Hex8(labels.size()) + "\n" + labels);
}

void MeansAndLists() {
  cortado::BlobProto mean;
  for (int d : {1, 3, 4, 4}) mean.mutable_shape()->add_dim(d);
  for (int i = 0; i < 48; ++i) mean.add_data(0.5f * i);
  Seed("binaryproto_mean", "shape", mean.SerializeAsString());
  mean.clear_shape();
  mean.set_num(1), mean.set_channels(3), mean.set_height(4), mean.set_width(4);
  Seed("binaryproto_mean", "legacy", mean.SerializeAsString());
  Seed("image_list", "two", "a.pgm 1\nb.ppm 2\n");
  Seed("image_list", "windows", "a.pgm 0\r\n\r\nb.ppm\t7\r\n");
}

// The shipped prototxts: nets for net_prototxt, solvers for solver_prototxt.
void Prototxts(const std::string& repo) {
  for (const auto& entry : fs::recursive_directory_iterator(repo + "/models")) {
    const std::string path = entry.path().string();
    if (entry.path().extension() != ".prototxt") continue;
    const std::string name = entry.path().filename().string();
    const bool solver = name.find("solver") != std::string::npos;
    // googlenet/deploy.prototxt and alexnet/deploy.prototxt: the folder keeps them apart.
    const std::string folder = entry.path().parent_path().filename().string();
    Seed(solver ? "solver_prototxt" : "net_prototxt", folder + "_" + name, ReadAll(path));
  }
}

// SmallNet exported (its DummyData an input, its loss left out), as import_onnx reads a model.
void OnnxModels() {
  if (!cortado::BuiltWithOnnx()) return;
  Seed("onnx_model", "small_net.onnx",
       cortado::ExportOnnxModel(cortado::fuzz::SmallNet(), "", cortado::OnnxExportOptions(), "small_net"));
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: fuzz_make_seeds REPO_ROOT\n");
    return 1;
  }
  const std::string repo = fs::absolute(argv[1]).string();
  g_corpus = repo + "/fuzz/corpus";
  const std::string work = cortado::fuzz::Setup();
  try {
    WeightsAndSnapshots(work);
    Datums(work);
    Databases(work);
    MnistFiles();
    MeansAndLists();
    Prototxts(repo);
    OnnxModels();
  } catch (const cortado::Error& e) {
    std::fprintf(stderr, "fuzz_make_seeds: error: %s\n", e.what());
    return 1;
  }
  std::fprintf(stderr, "seeds written under %s\n", g_corpus.c_str());
  return 0;
}
