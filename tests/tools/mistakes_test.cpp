// mistakes_test.cpp — the inputs that fuzzing and a new user's mistakes found crashing the tools or
// accepted without a word, run end to end: each now fails with exit code 1 and one line naming the
// file, record, layer or field, no trace, and nothing left behind or overwritten (an earlier snapshot
// planted where the run would write stays as it was; a conversion leaves no database).
#include <filesystem>
#include <string>

#include "cortado/cortado.pb.h"
#include "cortado/data/lmdb.hpp"
#include "cortado/error.hpp"
#include "cortado/image.hpp"
#include "cortado/io.hpp"
#include "tools/bad_input.hpp"

namespace cortado::test {

namespace fs = std::filesystem;

namespace {

// The solver Workspace writes, with `fields` in place of its max_iter line.
void RewriteSolver(const Workspace& ws, const std::string& fields) {
  std::string text = ReadFile(ws.solver);
  text.replace(text.find("max_iter: 2\n"), 12, fields);
  WriteFile(ws.solver, text);
}

// An LMDB of 400 random 1×28×28 images: data.mdb spans many pages. Returns its path.
std::string ManyPageLmdb() { return WriteRandomImageLmdb(NewTempDir() + "/db", 400, 1, 28, 10, 7); }

// An IDX image file of `count` images (rows×cols) whose header claims `claimed`, and its label file.
void WriteMnist(const std::string& dir, uint32_t claimed, uint32_t count, uint32_t rows, uint32_t cols) {
  auto word = [](std::string* out, uint32_t v) {
    for (int shift = 24; shift >= 0; shift -= 8) out->push_back(static_cast<char>(v >> shift));
  };
  std::string images, labels;
  word(&images, 2051), word(&images, claimed), word(&images, rows), word(&images, cols);
  images.append(size_t(count) * rows * cols, '\x7f');
  word(&labels, 2049), word(&labels, claimed);
  labels.append(count, '\x03');
  WriteFile(dir + "/images", images);
  WriteFile(dir + "/labels", labels);
}

}  // namespace

// ---- crashes -------------------------------------------------------------------------------------

// test_iter 0 made the first test index an empty score list: SIGSEGV.
TEST(Mistakes, TestIterZeroOrNegativeNamesTheField) {
  for (const int iters : {0, -3}) {
    Workspace ws(TinyNet(), "test_iter: " + std::to_string(iters) + "\ntest_interval: 1\n");
    ws.PlantSnapshot();
    EXPECT_EQ(TrainerError(ws.Train()), ws.solver + ": test_iter is " + std::to_string(iters) +
                                            "; it is the number of batches each test runs and must be positive");
    ws.ExpectPlantedSnapshotUntouched();
  }
}

// A copy of data.mdb cut short raised SIGBUS in the trainer and in compute_image_mean.
TEST(Mistakes, TruncatedLmdbNamesTheDatabase) {
  const std::string db = ManyPageLmdb();
  const std::string bytes = ReadFile(db + "/data.mdb");
  WriteFile(db + "/data.mdb", bytes.substr(0, bytes.size() / 2));
  const std::string truncated = "LMDB '" + db + "' is truncated: data.mdb holds " + std::to_string(bytes.size() / 2) +
                                " bytes but its header counts ";
  Workspace ws(ClassifierNet(LmdbSource(db)));
  ws.PlantSnapshot();
  const std::string error = TrainerError(ws.Train());
  EXPECT_EQ(error.rfind(ws.net + ": layer data (Data): " + truncated, 0), 0u) << error;
  ws.ExpectPlantedSnapshotUntouched();
  const std::string mean = ws.dir + "/mean.binaryproto";
  const std::string tool_error = ToolError("compute_image_mean", db + " " + mean);
  EXPECT_EQ(tool_error.rfind(truncated, 0), 0u) << tool_error;
  EXPECT_FALSE(fs::exists(mean));
}

// A leaf page marked as a branch trips LMDB's assertion in mdb_cursor_next, which aborted the process.
TEST(Mistakes, CorruptLmdbPageNamesTheDatabase) {
  const std::string db = ManyPageLmdb();
  std::string bytes = ReadFile(db + "/data.mdb");
  constexpr size_t kPage = 4096;  // page flags at byte 10: P_BRANCH 1, P_LEAF 2
  int leaves = 0;
  for (size_t page = 2; page < bytes.size() / kPage && leaves < 2; ++page) {
    if (bytes[page * kPage + 10] == 2 && bytes[page * kPage + 11] == 0 && ++leaves == 2) bytes[page * kPage + 10] = 1;
  }
  ASSERT_EQ(leaves, 2);
  WriteFile(db + "/data.mdb", bytes);
  const std::string corrupt = "LMDB '" + db + "' is corrupt: reading record ";
  Workspace ws(ClassifierNet(LmdbSource(db)));
  ws.PlantSnapshot();
  const std::string error = TrainerError(ws.Train());
  EXPECT_EQ(error.rfind(ws.net + ": layer data (Data): " + corrupt, 0), 0u) << error;
  ws.ExpectPlantedSnapshotUntouched();
  const std::string tool_error = ToolError("compute_image_mean", db);
  EXPECT_EQ(tool_error.rfind(corrupt, 0), 0u) << tool_error;
}

// Flipped bytes in a page made LMDB follow a wild pointer: SIGSEGV. The flip is searched for here (the
// pages' layout is LMDB's), each candidate opened in this process under the same guard.
TEST(Mistakes, LmdbPageMakingLmdbReadAWildPointerNamesTheDatabase) {
  const std::string db = ManyPageLmdb();
  const std::string bytes = ReadFile(db + "/data.mdb");
  const std::string probe = NewTempDir() + "/probe";
  fs::create_directories(probe);
  fs::copy_file(db + "/lock.mdb", probe + "/lock.mdb");
  std::string wild;
  for (size_t at = 2 * 4096; at < bytes.size() && wild.empty(); at += 2) {  // node offsets and sizes
    std::string damaged = bytes;
    damaged[at] = static_cast<char>(damaged[at] ^ 0x80);
    WriteFile(probe + "/data.mdb", damaged);
    try {
      LmdbRecords records(probe, "probe");
    } catch (const Error& e) {
      if (std::string(e.what()).find(": SIGSEGV at address") != std::string::npos) wild = damaged;
    }
  }
  if (wild.empty()) GTEST_SKIP() << "no single flip makes this LMDB version read a wild pointer";
  WriteFile(db + "/data.mdb", wild);
  Workspace ws(ClassifierNet(LmdbSource(db)));
  ws.PlantSnapshot();
  const std::string error = TrainerError(ws.Train());
  EXPECT_EQ(error.rfind(ws.net + ": layer data (Data): LMDB '" + db + "' is corrupt: reading record ", 0), 0u)
      << error;
  EXPECT_NE(error.find(": SIGSEGV at address 0x"), std::string::npos) << error;
  ws.ExpectPlantedSnapshotUntouched();
}

// ---- silent acceptance ---------------------------------------------------------------------------

// Caffe builds no test net without test_iter and so never tests; the TEST-phase layers never run.
TEST(Mistakes, TestPhaseLayersWithoutTestIterAreNamed) {
  Workspace ws(TinyNet() + "layer { name: \"test_loss\" type: \"EuclideanLoss\" bottom: \"z\" bottom: \"y\" "
                           "top: \"tl\" include { phase: TEST } }\n",
               "test_interval: 1\n");
  ws.PlantSnapshot();
  EXPECT_EQ(TrainerError(ws.Train()),
            ws.solver + ": test_interval is 1 but no test_iter is given, so the net's 1 TEST-phase layer (test_loss) "
                        "would never run; add test_iter: N (the batches each test runs) or remove test_interval");
  ws.ExpectPlantedSnapshotUntouched();
}

TEST(Mistakes, NegativeMaxIterNamesTheField) {
  Workspace ws(TinyNet());
  RewriteSolver(ws, "max_iter: -1\n");
  ws.PlantSnapshot();
  EXPECT_EQ(TrainerError(ws.Train()),
            ws.solver + ": max_iter is -1; it is the iteration training stops at and cannot be negative");
  ws.ExpectPlantedSnapshotUntouched();
}

TEST(Mistakes, SolverstateWithNegativeIterNamesTheFile) {
  Workspace ws(TinyNet());
  TrainedTinyModel(ws);
  SolverState state;
  ReadProtoFromBinaryFile(ws.snap + "/tiny_iter_2.solverstate", &state);
  state.set_iter(-2);
  const std::string damaged = ws.dir + "/damaged.solverstate";
  WriteProtoToBinaryFile(state, damaged);
  const std::string model = ReadFile(ws.snap + "/tiny_iter_2.caffemodel");
  EXPECT_EQ(TrainerError(ws.Train("--snapshot=" + damaged)),
            damaged + ": iter is -2; a snapshot's iteration is never negative (a damaged or hand-edited solver state?)");
  EXPECT_EQ(ReadFile(ws.snap + "/tiny_iter_2.caffemodel"), model);
}

TEST(Mistakes, MeanFileWithAZeroAxisNamesTheFile) {
  const std::string dir = NewTempDir();
  const std::string db = WriteDatumLmdb(dir + "/db", 1, 4, 4, {1, 2});
  BlobProto mean;
  for (int d : {1, 0, 4, 4}) mean.mutable_shape()->add_dim(d);
  const std::string mean_path = dir + "/mean.binaryproto";
  WriteProtoToBinaryFile(mean, mean_path);
  Workspace ws(ClassifierNet(LmdbSource(db), "mean_file: '" + mean_path + "'"));
  ws.PlantSnapshot();
  EXPECT_EQ(TrainerError(ws.Train()), ws.net + ": layer data (Data): mean file '" + mean_path +
                                          "' has shape 1×0×4×4; every axis must be positive (an empty or damaged "
                                          "mean file?)");
  ws.ExpectPlantedSnapshotUntouched();
}

// Weights are copied by layer name: a file of another net scored (or fine-tuned) random weights.
TEST(Mistakes, WeightsMatchingNoLearnableLayerNameTheFile) {
  Workspace trained(TinyNet());
  const std::string model = TrainedTinyModel(trained);
  std::string renamed = TinyNet();
  renamed.replace(renamed.find("name: \"ip\""), 10, "name: \"fc\"");
  Workspace ws(renamed);
  const std::string expected = model + ": none of its layers matches a learnable layer of " + ws.net +
                               " (fc), so every weight would stay random; weights are copied by layer name: is it "
                               "the weights file of this net?";
  EXPECT_EQ(TrainerError("test --model=" + ws.net + " --weights=" + model + " --iterations=1"), expected);
  ws.PlantSnapshot();
  EXPECT_EQ(TrainerError(ws.Train("--weights=" + model)), expected);
  ws.ExpectPlantedSnapshotUntouched();
}

// ---- found too late ------------------------------------------------------------------------------

// A snapshot directory that is missing or read-only was found when the first snapshot was written,
// after the training; now before the first iteration.
TEST(Mistakes, SnapshotDirectoryIsCheckedBeforeTraining) {
  Workspace ws(TinyNet());
  fs::remove_all(ws.snap);
  const std::string missing = TrainerError(ws.Train());
  EXPECT_EQ(missing, ws.solver + ": snapshot_prefix '" + ws.snap + "/tiny': directory '" + ws.snap +
                         "' does not exist; create it first");
  const CommandResult r = RunCommand(ToolPath("trainer") + " " + ws.Train());
  EXPECT_FALSE(Has(r.err, "Iteration 0")) << r.err;  // not a single step
  EXPECT_FALSE(fs::exists(ws.snap));
  if (!RunningAsRoot()) {  // root writes into read-only directories
    fs::create_directories(ws.snap);
    chmod(ws.snap.c_str(), 0555);
    EXPECT_EQ(TrainerError(ws.Train()), ws.solver + ": snapshot_prefix '" + ws.snap + "/tiny': cannot write in "
                                                    "directory '" + ws.snap + "': Permission denied");
    chmod(ws.snap.c_str(), 0755);
  }
}

// ---- left behind, and unclear --------------------------------------------------------------------

// A header claiming more images than the file holds was a std::bad_alloc, or a partial database.
TEST(Mistakes, IdxFileShorterThanItsHeaderLeavesNoDatabase) {
  const std::string dir = NewTempDir();
  WriteMnist(dir, 60000, 3, 28, 28);
  const std::string error = ToolError("convert_mnist_data", dir + "/images " + dir + "/labels " + dir + "/db");
  EXPECT_EQ(error, "'" + dir + "/images' is truncated: its header counts 60000 images of 28×28 (47040016 bytes "
                   "with the header) but the file holds " + std::to_string(16 + 3 * 784) + " bytes");
  EXPECT_FALSE(fs::exists(dir + "/db"));
  WriteMnist(dir, 4000000000u, 1, 1000, 1000);  // 4·10^15 bytes claimed: no attempt to hold them
  EXPECT_EQ(ToolError("convert_mnist_data", dir + "/images " + dir + "/labels " + dir + "/db").rfind(
                "'" + dir + "/images' is truncated: its header counts 4000000000 images of 1000×1000", 0),
            0u);
  EXPECT_FALSE(fs::exists(dir + "/db"));
}

// An undecodable encoded record named neither the layer, the database nor the key.
TEST(Mistakes, UndecodableEncodedRecordNamesLayerDatabaseAndKey) {
  if (!BuiltWithImageSupport()) GTEST_SKIP() << "this build has no OpenCV";
  const std::string dir = NewTempDir();
  std::string pgm = "P5\n4 4\n255\n";
  for (int i = 0; i < 16; ++i) pgm.push_back(static_cast<char>(16 * i));
  WriteFile(dir + "/image.pgm", pgm);
  Datum good;
  ReadImageToDatum(dir + "/image.pgm", 1, 0, 0, ColorMode::kKeep, "png", &good);
  ASSERT_TRUE(good.encoded());
  Datum bad = good;
  bad.set_data("not an image");
  const std::string db = dir + "/db";
  {
    LmdbWriter writer(db, "test");
    for (int i = 0; i < 4; ++i) writer.Put("0000000" + std::to_string(i), (i == 1 ? bad : good).SerializeAsString());
    writer.Finish();
  }
  Workspace ws(ClassifierNet(LmdbSource(db)));
  ws.PlantSnapshot();
  EXPECT_EQ(TrainerError(ws.Train()),
            ws.net + ": layer data (Data): record '00000001' of LMDB '" + db + "': the encoded image (12 bytes) is not "
                     "a JPEG, PNG, BMP, PNM, TIFF or WebP image OpenCV can decode (damaged or of another format)");
  ws.ExpectPlantedSnapshotUntouched();
}

// An Input layer without a shape was blamed on the next layer.
TEST(Mistakes, InputLayerWithoutShapeIsNamed) {
  std::string net = TinyNet();
  net.replace(net.find("layer { name: \"ip\""), 0,
              "layer { name: \"data\" type: \"Input\" top: \"image\" }\n"
              "layer { name: \"silence\" type: \"Silence\" bottom: \"image\" }\n");
  Workspace ws(net);
  EXPECT_EQ(TrainerError(ws.Train()), ws.net + ": layer data (Input): input_param gives no shape for its top "
                                               "'image'; add input_param { shape { dim: N dim: C dim: H dim: W } }");
}

// ---- foreign layers ------------------------------------------------------------------------------

// A Caffe fork's layer failed on its unknown parameter field, never saying that the type is the
// problem.
TEST(Mistakes, ForeignLayerTypesAreNamedWithTheirFork) {
  const std::string priorbox = TinyNet() + R"(layer {
  name: "conv4_3_norm_mbox_priorbox"
  type: "PriorBox"
  bottom: "x"
  top: "prior"
  prior_box_param { min_size: 30.0 aspect_ratio: 2 flip: true clip: false }
}
)";
  Workspace ssd(priorbox);
  ssd.PlantSnapshot();
  EXPECT_EQ(TrainerError(ssd.Train()), ssd.net + ": layer conv4_3_norm_mbox_priorbox (line 8): type 'PriorBox' is "
                                                 "not a Cortado layer; it comes from a Caffe fork: SSD (weiliu89/caffe)");
  ssd.ExpectPlantedSnapshotUntouched();
  // A real SSD head: every fork type is named in the one line, the first with its fork.
  Workspace head(TinyNet() + R"(layer {
  name: "conv4_3_norm"
  type: "Normalize"
  bottom: "x"
  top: "n"
  norm_param { across_spatial: false scale_filler { type: "constant" value: 20 } channel_shared: false }
}
layer { name: "loc_perm" type: "Permute" bottom: "n" top: "p" permute_param { order: 0 order: 2 order: 3 order: 1 } }
)" + priorbox.substr(TinyNet().size()) + R"(layer { name: "perm2" type: "Permute" bottom: "p" top: "p2" }
)");
  EXPECT_EQ(TrainerError(head.Train()),
            head.net + ": layer conv4_3_norm (line 8): type 'Normalize' is not a Cortado layer; it comes from a Caffe "
                       "fork: SSD (weiliu89/caffe); the net also has Permute (layer loc_perm, line 15), PriorBox "
                       "(layer conv4_3_norm_mbox_priorbox, line 16)");
  // Without its parameter the prototxt parses; the type is still named, with its line.
  Workspace permute(TinyNet() + "layer { name: \"perm\" type: \"Permute\" bottom: \"x\" top: \"p\" }\n");
  EXPECT_EQ(TrainerError(permute.Train()), permute.net + ": layer perm (line 8): type 'Permute' is not a Cortado "
                                                         "layer; it comes from a Caffe fork: SSD (weiliu89/caffe)");
  // The BN forks' layer, with what to use instead; in trainer test too.
  Workspace bn(TinyNet() + "layer { name: \"bn1\" type: \"BN\" bottom: \"z\" top: \"z\"\n"
                           "  bn_param { scale_filler { type: \"constant\" value: 1 } } }\n");
  const std::string bn_error = bn.net + ": layer bn1 (line 8): type 'BN' is not a Cortado layer; it comes from a "
                                        "Caffe fork: the batch-normalisation forks (bn_param: SegNet's caffe-segnet, "
                                        "yjxiong/caffe); use BatchNorm followed by Scale (bias_term: true)";
  EXPECT_EQ(TrainerError(bn.Train()), bn_error);
  EXPECT_EQ(TrainerError("test --model=" + bn.net + " --weights=unused.caffemodel"), bn_error);
  // Inside a solver's net_param: the line is the solver's.
  Workspace inline_net(TinyNet());
  WriteFile(inline_net.solver, "base_lr: 0.01\nmax_iter: 1\nnet_param {\n  name: 'n'\n"
                               "  layer { name: 'shuffle' type: 'ShuffleChannel' shuffle_channel_param { group: 3 } }\n"
                               "}\n");
  EXPECT_EQ(TrainerError(inline_net.Train()),
            inline_net.solver + ": layer shuffle (line 5): type 'ShuffleChannel' is not a Cortado layer; it comes "
                                "from a Caffe fork: ShuffleNet's Caffe forks (farmingyard/ShuffleNet)");
  // A type nobody knows, with a parameter field of its own: the type is named, with the closest.
  Workspace typo(TinyNet() + "layer { name: \"c\" type: \"Convolutoin\" bottom: \"x\" top: \"c\"\n"
                             "  convolutoin_param { num_output: 2 } }\n");
  const std::string typo_error = TrainerError(typo.Train());
  EXPECT_EQ(typo_error.rfind(typo.net + ": layer c (line 8): unknown layer type Convolutoin (known types: ", 0), 0u)
      << typo_error;
  EXPECT_TRUE(Has(typo_error, "; did you mean Convolution?")) << typo_error;
}

}  // namespace cortado::test
