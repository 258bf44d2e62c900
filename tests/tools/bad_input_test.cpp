// bad_input_test.cpp — the trainer's answer to each user mistake, run end to end: exit code 1 and one
// line on stderr, "trainer: error: ...", that names the file:line:column or the layer and says what to
// fix; no CHECK failure, abort or stack trace; and no existing snapshot overwritten.
#include <sys/stat.h>

#include <filesystem>

#include "cortado/cortado.pb.h"
#include "cortado/io.hpp"
#include "tools/bad_input.hpp"

namespace cortado::test {

namespace fs = std::filesystem;

TEST(BadInput, CommandLineMistakes) {
  const std::string dir = NewTempDir();
  const std::vector<std::pair<std::string, std::string>> cases = {
      {"frobnicate", "valid commands: train, test, time, device_query"},
      {"train", "--solver"},
      {"test --model=" + dir + "/missing.prototxt --weights=w",
       "cannot open '" + dir + "/missing.prototxt': No such file or directory"},
  };
  for (const auto& [args, expected] : cases) {
    const std::string error = TrainerError(args);
    EXPECT_TRUE(Has(error, expected)) << args << ": " << error;
  }
}

// Case 1. Lines and columns count from 1; the column is the offending token's first character.
TEST(BadInput, PrototxtSyntaxErrorNamesFileLineAndColumn) {
  const std::string dir = NewTempDir();
  WriteFile(dir + "/solver.prototxt", "base_lr: 0.1\nmax_iter: {\n");
  EXPECT_EQ(TrainerError("train --solver=" + dir + "/solver.prototxt"),
            dir + "/solver.prototxt:2:11: Expected integer, got: {");
  Workspace ws("name: \"tiny\"\nlayer {\n  name: \"in\"\n  type \"DummyData\"\n}\n");
  EXPECT_EQ(TrainerError(ws.Train()), ws.net + ":4:8: Expected \":\", found \"\"DummyData\"\".");
}

// Case 2.
TEST(BadInput, UnknownLayerTypeListsKnownTypesAndTheClosest) {
  std::string net = TinyNet();
  net.replace(net.find("\"InnerProduct\""), 14, "\"InnerProdcut\"");
  Workspace ws(net);
  const std::string error = TrainerError(ws.Train());
  EXPECT_EQ(error.rfind(ws.net + ": layer ip: unknown layer type InnerProdcut (known types: ", 0), 0u) << error;
  for (const char* known : {"Convolution", "Data", "EuclideanLoss", "InnerProduct", "SoftmaxWithLoss"})
    EXPECT_TRUE(Has(error, std::string(known) + ",") || Has(error, std::string(known) + ")")) << known;
  EXPECT_TRUE(Has(error, "; did you mean InnerProduct?")) << error;
  // A name close to none is not given a misleading suggestion.
  net.replace(net.find("\"InnerProdcut\""), 14, "\"Frobnicator\"");
  WriteFile(ws.net, net);
  const std::string far = TrainerError(ws.Train());
  EXPECT_TRUE(Has(far, "unknown layer type Frobnicator (known types: ")) << far;
  EXPECT_FALSE(Has(far, "did you mean")) << far;
}

// Case 3.
TEST(BadInput, UnknownFieldNamesFileLineColumnAndTheField) {
  Workspace ws(TinyNet() +
               "layer { name: \"conv\" type: \"Convolution\" bottom: \"x\" top: \"c\"\n"
               "        convolution_param { num_output: 2 kernel: 3 } }\n");
  // TinyNet has 7 lines; "kernel" starts at column 43 of line 9 (protobuf reports the ':' after it).
  EXPECT_EQ(TrainerError(ws.Train()),
            ws.net + ":9:43: Message type \"cortado.ConvolutionParameter\" has no field named \"kernel\".");
  // Columns count characters: a tab is one.
  WriteFile(ws.net, "layer {\n\tname: \"r\" type: \"ReLU\"\n\trelu_param {\tnegative_slop: 1 }\n}\n");
  EXPECT_EQ(TrainerError(ws.Train()),
            ws.net + ":3:15: Message type \"cortado.ReLUParameter\" has no field named \"negative_slop\".");
}

// Case 4.
TEST(BadInput, BottomNobodyProducesNamesLayerAndBlob) {
  std::string net = TinyNet();
  net.replace(net.find("bottom: \"x\""), 11, "bottom: \"features\"");
  Workspace ws(net);
  EXPECT_EQ(TrainerError(ws.Train()),
            ws.net + ": layer ip (InnerProduct): bottom 'features' is not produced by any earlier layer");
}

// Case 5.
TEST(BadInput, TopProducedTwiceNamesBothLayers) {
  Workspace ws(TinyNet() + "layer { name: \"ip2\" type: \"InnerProduct\" bottom: \"x\" top: \"z\" "
                           "inner_product_param { num_output: 2 } }\n");
  const std::string error = TrainerError(ws.Train());
  EXPECT_EQ(error.rfind(ws.net + ": layer ip2 (InnerProduct): top 'z' is already produced by layer ip; "
                                 "rename one of the two tops", 0),
            0u)
      << error;
}

// Case 6: each input file missing, a directory where a file belongs, or unreadable (chmod 000).
TEST(BadInput, MissingOrUnreadableSolverOrNet) {
  Workspace ws(TinyNet());
  const std::string missing = ws.dir + "/none.prototxt";
  EXPECT_EQ(TrainerError("train --solver=" + missing),
            "cannot open '" + missing + "': No such file or directory");
  fs::create_directories(ws.dir + "/folder.prototxt");
  EXPECT_EQ(TrainerError("train --solver=" + ws.dir + "/folder.prototxt"),
            "cannot read '" + ws.dir + "/folder.prototxt': it is a directory; give the path of a file");
  if (!RunningAsRoot()) {
    chmod(ws.solver.c_str(), 0);
    EXPECT_EQ(TrainerError(ws.Train()), "cannot open '" + ws.solver + "': Permission denied");
    chmod(ws.solver.c_str(), 0644);
  }
  // The solver's net: path.
  const std::vector<std::pair<std::string, std::string>> nets = {
      {missing, "cannot open '" + missing + "': No such file or directory"},
      {ws.dir + "/folder.prototxt",
       "cannot read '" + ws.dir + "/folder.prototxt': it is a directory; give the path of a file"}};
  for (const auto& [net, expected] : nets) {
    Workspace other("unused");
    WriteFile(other.solver, "net: \"" + net + "\"\nbase_lr: 0.01\nlr_policy: \"fixed\"\nmax_iter: 1\n");
    EXPECT_EQ(TrainerError(other.Train()), expected);
  }
  if (!RunningAsRoot()) {
    chmod(ws.net.c_str(), 0);
    EXPECT_EQ(TrainerError(ws.Train()), "cannot open '" + ws.net + "': Permission denied");
  }
}

TEST(BadInput, MissingOrUnreadableWeightsOrSolverstate) {
  Workspace ws(TinyNet());
  const std::string model = TrainedTinyModel(ws);
  const std::string state = ws.snap + "/tiny_iter_2.solverstate";
  EXPECT_EQ(TrainerError(ws.Train("--weights=" + ws.dir + "/none.caffemodel")),
            "weights file '" + ws.dir + "/none.caffemodel' does not exist");
  EXPECT_EQ(TrainerError(ws.Train("--snapshot=" + ws.dir + "/none.solverstate")),
            "snapshot '" + ws.dir + "/none.solverstate' does not exist");
  fs::create_directories(ws.dir + "/folder.caffemodel");
  EXPECT_EQ(TrainerError(ws.Train("--weights=" + ws.dir + "/folder.caffemodel")),
            "cannot read '" + ws.dir + "/folder.caffemodel': it is a directory; give the path of a file");
  EXPECT_EQ(TrainerError(ws.Train("--snapshot=" + ws.dir + "/folder.caffemodel")),
            "cannot read '" + ws.dir + "/folder.caffemodel': it is a directory; give the path of a file");
  if (!RunningAsRoot()) {
    chmod(model.c_str(), 0);
    chmod(state.c_str(), 0);
    EXPECT_EQ(TrainerError(ws.Train("--weights=" + model)), "cannot open '" + model + "': Permission denied");
    EXPECT_EQ(TrainerError(ws.Train("--snapshot=" + state)), "cannot open '" + state + "': Permission denied");
  }
}

TEST(BadInput, MissingOrUnreadableLmdb) {
  const std::string dir = NewTempDir();
  const std::string missing = dir + "/no_such_lmdb";
  Workspace ws(ClassifierNet(LmdbSource(missing)));
  std::string error = TrainerError(ws.Train());
  EXPECT_EQ(error, ws.net + ": layer data (Data): cannot open LMDB '" + missing + "': No such file or directory");
  // A file where the LMDB directory belongs.
  WriteFile(dir + "/a_file", "not a database");
  Workspace file_source(ClassifierNet(LmdbSource(dir + "/a_file")));
  error = TrainerError(file_source.Train());
  EXPECT_EQ(error.rfind(file_source.net + ": layer data (Data): cannot open LMDB '" + dir + "/a_file': ", 0), 0u)
      << error;
  if (!RunningAsRoot()) {
    const std::string db = WriteDatumLmdb(dir + "/locked", 1, 2, 2, {1, 2});
    chmod(db.c_str(), 0);
    Workspace locked(ClassifierNet(LmdbSource(db)));
    EXPECT_EQ(TrainerError(locked.Train()),
              locked.net + ": layer data (Data): cannot open LMDB '" + db + "': Permission denied");
    chmod(db.c_str(), 0755);
  }
}

// Case 7.
TEST(BadInput, CorruptTruncatedOrEmptyCaffemodelNamesTheFile) {
  Workspace ws(TinyNet());
  const std::string model = TrainedTinyModel(ws);
  const std::string bytes = ReadFile(model);
  ASSERT_GT(bytes.size(), 40u);
  const std::string bad = ws.dir + "/bad.caffemodel";
  const std::string not_valid = "'" + bad + "' is not a valid cortado.NetParameter file (truncated or corrupt)";
  WriteFile(bad, bytes.substr(0, bytes.size() / 2));
  EXPECT_EQ(TrainerError(ws.Train("--weights=" + bad)), not_valid);
  WriteFile(bad, bytes.substr(0, bytes.size() - 1));
  EXPECT_EQ(TrainerError(ws.Train("--weights=" + bad)), not_valid);
  WriteFile(bad, "this is not a caffemodel\n");
  EXPECT_EQ(TrainerError(ws.Train("--weights=" + bad)), not_valid);
  WriteFile(bad, "");
  EXPECT_EQ(TrainerError(ws.Train("--weights=" + bad)),
            "'" + bad + "' is empty; expected a cortado.NetParameter file (truncated or not yet written?)");
  EXPECT_EQ(ReadFile(model), bytes);  // the good one is untouched
}

// Case 8. Caffe's DataParameter.backend defaults to LEVELDB, so leaving it out means LEVELDB too: an
// LMDB source gets a hint to set backend: LMDB.
TEST(BadInput, LmdbSourceWithLeveldbBackendSaysSetBackendLmdb) {
  const std::string db = WriteDatumLmdb(NewTempDir() + "/db", 1, 2, 2, {1, 2});
  for (const std::string backend : {"", "backend: LEVELDB"}) {
    Workspace ws(ClassifierNet("source: '" + db + "' batch_size: 2 " + backend));
    const std::string error = TrainerError(ws.Train());
    EXPECT_EQ(error, ws.net + ": layer data (Data): '" + db + "' is an LMDB but data_param.backend is LEVELDB "
                     "(Caffe's default when backend is not given); set backend: LMDB");
  }
}

// Case 9.
TEST(BadInput, SnapshotTogetherWithWeights) {
  Workspace ws(TinyNet());
  const std::string model = TrainedTinyModel(ws);
  const std::string error =
      TrainerError(ws.Train("--weights=" + model + " --snapshot=" + ws.snap + "/tiny_iter_2.solverstate"));
  EXPECT_EQ(error, "give either --snapshot (resume) or --weights (fine-tune), not both");
}

// Case 10a.
TEST(BadInput, WeightsOfAnotherShapeNameLayerBlobAndBothShapes) {
  Workspace trained(TinyNet(3));
  const std::string model = TrainedTinyModel(trained);
  Workspace ws(TinyNet(5));
  ws.PlantSnapshot();
  EXPECT_EQ(TrainerError(ws.Train("--weights=" + model)),
            model + ": layer ip (InnerProduct): blob 0 has shape 2 5 (10) in the net but 2 3 (6) in the "
                    "weights file; rename the layer if it is meant to be trained afresh (weights are copied "
                    "by layer name)");
  ws.ExpectPlantedSnapshotUntouched();
}

// Case 10b.
TEST(BadInput, BottomsOfIncompatibleShapesNameLayerAndShapes) {
  const std::string dummy = R"(name: "n"
layer { name: "in" type: "DummyData" top: "a" top: "b"
        dummy_data_param { shape { dim: 4 dim: 3 dim: 2 } shape { dim: 4 dim: 3 dim: 5 } } }
)";
  Workspace sum(dummy + "layer { name: \"sum\" type: \"Eltwise\" bottom: \"a\" bottom: \"b\" top: \"s\" }\n");
  EXPECT_EQ(TrainerError(sum.Train()),
            sum.net + ": layer sum (Eltwise): bottom 1 has shape 4 3 5 (60) but bottom 0 has 4 3 2 (24); all "
                      "bottoms must have the same shape");
  Workspace concat(dummy + "layer { name: \"cat\" type: \"Concat\" bottom: \"a\" bottom: \"b\" top: \"c\" }\n");
  EXPECT_EQ(TrainerError(concat.Train()),
            concat.net + ": layer cat (Concat): bottom 1 has shape 4 3 5 (60) but bottom 0 has 4 3 2 (24); "
                         "all dims except axis 1 must match");
  // Two InnerProducts sharing one weight blob over inputs of different sizes.
  Workspace shared(dummy + R"(layer { name: "ip_a" type: "InnerProduct" bottom: "a" top: "ya" param { name: "w" }
        inner_product_param { num_output: 2 } }
layer { name: "ip_b" type: "InnerProduct" bottom: "b" top: "yb" param { name: "w" }
        inner_product_param { num_output: 2 } }
)");
  EXPECT_EQ(TrainerError(shared.Train()),
            shared.net + ": shared parameter 'w': layer ip_b blob 0 has shape 2 15 (30) but layer ip_a blob 0 "
                         "has 2 6 (12) (use share_mode: PERMISSIVE to share by count)");
}

// Case 11.
TEST(BadInput, KernelLargerThanPaddedInputNamesLayerAndSizes) {
  const std::string input = R"(name: "n"
layer { name: "in" type: "DummyData" top: "x" dummy_data_param { shape { dim: 1 dim: 1 dim: 3 dim: 3 } } }
)";
  Workspace conv(input + "layer { name: \"conv\" type: \"Convolution\" bottom: \"x\" top: \"y\" "
                         "convolution_param { num_output: 1 kernel_size: 6 pad: 1 } }\n");
  EXPECT_EQ(TrainerError(conv.Train()), conv.net + ": layer conv (Convolution): the kernel height 6 is larger "
                                                   "than the padded input height 5 (3 + 2·pad 1)");
  Workspace pool(input + "layer { name: \"pool\" type: \"Pooling\" bottom: \"x\" top: \"y\" "
                         "pooling_param { pool: MAX kernel_size: 4 } }\n");
  EXPECT_EQ(TrainerError(pool.Train()), pool.net + ": layer pool (Pooling): the kernel height 4 is larger "
                                                   "than the padded input height 3 (3 + 2·pad 0)");
}

// Case 12.
TEST(BadInput, CropLargerThanTheImageNamesTheLayer) {
  const std::string db = WriteDatumLmdb(NewTempDir() + "/db", 1, 4, 4, {1, 2});
  Workspace ws(ClassifierNet(LmdbSource(db), "crop_size: 5"));
  EXPECT_EQ(TrainerError(ws.Train()), ws.net + ": layer data (Data): crop_size 5 is larger than the images (4×4)");
}

// Case 13.
TEST(BadInput, MeanFileOfAnotherSizeNamesLayerFileAndBothShapes) {
  const std::string dir = NewTempDir();
  const std::string db = WriteDatumLmdb(dir + "/db", 1, 4, 4, {1, 2});
  BlobProto mean;
  for (int d : {1, 1, 3, 3}) mean.mutable_shape()->add_dim(d);
  mean.mutable_data()->Resize(9, 1.0f);
  const std::string mean_path = dir + "/mean.binaryproto";
  WriteProtoToBinaryFile(mean, mean_path);
  Workspace ws(ClassifierNet(LmdbSource(db), "mean_file: '" + mean_path + "'"));
  EXPECT_EQ(TrainerError(ws.Train()), ws.net + ": layer data (Data): mean file '" + mean_path +
                                          "' has shape 1×3×3 but the images are 1×4×4 (C×H×W)");
}

// Case 14, with a snapshot from an earlier run in the snapshot directory.
TEST(BadInput, LabelOutsideTheClassesNamesLayerAndLabel) {
  const std::string db = WriteDatumLmdb(NewTempDir() + "/db", 1, 2, 2, {3, 12, 4, 5});
  Workspace loss(ClassifierNet(LmdbSource(db)));
  loss.PlantSnapshot();
  EXPECT_EQ(TrainerError(loss.Train()),
            loss.net + ": layer loss (SoftmaxWithLoss): label 12 (at position 1) is outside the valid range [0, 10); "
            "labels must be class indices");
  loss.ExpectPlantedSnapshotUntouched();
  Workspace accuracy(ClassifierNet(LmdbSource(db), "", true));
  accuracy.PlantSnapshot();
  EXPECT_EQ(TrainerError(accuracy.Train()),
            accuracy.net + ": layer accuracy (Accuracy): label 12 (at position 1) is outside the valid range [0, 10); "
            "labels must be class indices");
  accuracy.ExpectPlantedSnapshotUntouched();
}

// Case 15.
TEST(BadInput, TestNetWithoutTestIter) {
  Workspace ws(TinyNet(), "test_interval: 1\n");
  WriteFile(ws.solver, ReadFile(ws.solver) + "test_net: \"" + ws.net + "\"\n");
  EXPECT_EQ(TrainerError(ws.Train()),
            ws.solver + ": 1 test net(s) but 0 test_iter value(s); give one test_iter per test net");
}

// Case 16.
TEST(BadInput, TrainNetWithoutLoss) {
  std::string net = TinyNet();
  net.erase(net.find("layer { name: \"loss\""));
  Workspace ws(net);
  ws.PlantSnapshot();
  const std::string error = TrainerError(ws.Train());
  EXPECT_EQ(error.rfind(ws.net + ": the training net 'tiny' has no loss", 0), 0u) << error;
  ws.ExpectPlantedSnapshotUntouched();
}

// The damaged .solverstate.h5 files fuzzing found (fuzz/regressions/solverstate_h5/): their damaged
// local heap had libhdf5 allocate 4 GiB while looking up /iter. The trainer reads a state in a child
// process under a memory limit, so each is refused with one line naming it, and nothing is written.
TEST(BadInput, DamagedHdf5SolverStatesFoundByFuzzing) {
  Workspace ws(TinyNet());
  ws.PlantSnapshot();
  int states = 0;
  for (const auto& entry : fs::directory_iterator(SourceDir() + "/fuzz/regressions/solverstate_h5")) {
    const std::string state = ws.dir + "/" + entry.path().filename().string();  // named *.solverstate.h5
    fs::copy_file(entry.path(), state);
    const std::string error = TrainerError(ws.Train("--snapshot=" + state));
    EXPECT_EQ(error.rfind("cannot read '" + state + "': ", 0), 0u) << error;
    ++states;
  }
  EXPECT_GT(states, 0);
  ws.ExpectPlantedSnapshotUntouched();
}

}  // namespace cortado::test
