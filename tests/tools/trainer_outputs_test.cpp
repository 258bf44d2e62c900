// trainer_outputs_test.cpp — the files trainer writes for scripts: `trainer time --output` (per-layer
// and total times as CSV or JSON, time_report.hpp) and the training metrics file
// (<snapshot prefix>_metrics.jsonl, metrics_log.hpp), checked against trainer's own log lines and the
// learning-rate formula.
#include <cmath>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <regex>
#include <sstream>
#include <vector>

#include "test_util.hpp"

namespace cortado::test {

namespace {

using Json = nlohmann::json;

// Input (batch 4) → InnerProduct → ReLU → InnerProduct → EuclideanLoss, with a test net.
const char* kNet = R"(
name: "small"
layer { name: "in" type: "DummyData" top: "x" top: "y"
        dummy_data_param { data_filler { type: "gaussian" std: 1 } shape { dim: 4 dim: 6 } shape { dim: 4 dim: 2 } } }
layer { name: "ip1" type: "InnerProduct" bottom: "x" top: "h" inner_product_param { num_output: 8 weight_filler { type: "xavier" } } }
layer { name: "relu" type: "ReLU" bottom: "h" top: "h" }
layer { name: "ip2" type: "InnerProduct" bottom: "h" top: "z" inner_product_param { num_output: 2 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "EuclideanLoss" bottom: "z" bottom: "y" top: "loss" }
)";

std::vector<std::vector<std::string>> ReadCsv(const std::string& path) {
  std::vector<std::vector<std::string>> rows;
  std::istringstream in(ReadFile(path));
  for (std::string line; std::getline(in, line);) {
    std::vector<std::string> row;
    std::stringstream fields(line);
    for (std::string field; std::getline(fields, field, ',');) row.push_back(field);
    if (!line.empty() && line.back() == ',') row.push_back("");
    rows.push_back(row);
  }
  return rows;
}

// The number trainer logged after `label` (e.g. "Average Forward pass: "), or NaN.
double Logged(const std::string& log, const std::string& label) {
  const size_t at = log.find(label);
  return at == std::string::npos ? NAN : std::stod(log.substr(at + label.size()));
}

std::vector<Json> ReadJsonLines(const std::string& path) {
  std::vector<Json> lines;
  std::istringstream in(ReadFile(path));
  for (std::string line; std::getline(in, line);) lines.push_back(Json::parse(line));
  return lines;
}

std::string WriteSolver(const std::string& dir, const std::string& extra = "") {
  WriteFile(dir + "/small.prototxt", kNet);
  const std::string path = dir + "/solver.prototxt";
  WriteFile(path, "net: \"" + dir + "/small.prototxt\"\ntest_iter: 2 test_interval: 10\n"
                  "base_lr: 0.1 lr_policy: \"step\" gamma: 0.5 stepsize: 10 momentum: 0.9\n"
                  "max_iter: 20 display: 5 snapshot: 10 random_seed: 3\nsnapshot_prefix: \"" + dir + "/small\"\n" + extra);
  return path;
}

// The values of "<what> = v" in the log lines that follow "Iteration N" markers, by iteration:
// train losses from "Iteration N (... iter/s ...), loss = v", test losses from "Test net output #0: loss = v".
std::map<int, double> LoggedByIteration(const std::string& log, const std::regex& pattern) {
  std::map<int, double> values;
  int iteration = -1;
  std::istringstream in(log);
  const std::regex marker("Iteration (\\d+)");
  for (std::string line; std::getline(in, line);) {
    std::smatch m;
    if (std::regex_search(line, m, marker)) iteration = std::stoi(m[1]);
    if (std::regex_search(line, m, pattern)) values[iteration] = std::stod(m[1]);
  }
  return values;
}

}  // namespace

TEST(TrainerTimeOutput, CsvHasEveryLayerAndTotalsThatAgreeWithTheLog) {
  const std::string dir = TempDir();
  WriteFile(dir + "/small.prototxt", kNet);
  const auto r = RunCommand(ToolPath("trainer") + " time --model=" + dir + "/small.prototxt --iterations=4 "
                            "--batch_size=3 --output=" + dir + "/times.csv");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto rows = ReadCsv(dir + "/times.csv");
  ASSERT_EQ(rows.size(), 7u);  // header, 5 layers, total
  EXPECT_EQ(rows[0], (std::vector<std::string>{"model", "phase", "device", "threads", "batch_size", "iterations",
                                               "layer", "type", "forward_ms", "backward_ms", "forward_backward_ms",
                                               "images_per_s"}));
  const std::vector<std::pair<std::string, std::string>> layers = {
      {"in", "DummyData"}, {"ip1", "InnerProduct"}, {"relu", "ReLU"}, {"ip2", "InnerProduct"}, {"loss", "EuclideanLoss"}};
  double forward_sum = 0, backward_sum = 0;
  for (size_t i = 0; i < layers.size(); ++i) {
    const auto& row = rows[i + 1];
    ASSERT_EQ(row.size(), 12u);
    EXPECT_EQ(row[0], dir + "/small.prototxt");
    EXPECT_EQ(row[1], "TRAIN");
    EXPECT_EQ(row[2], "CPU");
    EXPECT_GE(std::stoi(row[3]), 1);
    EXPECT_EQ(row[4], "3");  // --batch_size
    EXPECT_EQ(row[5], "4");
    EXPECT_EQ(row[6], layers[i].first);
    EXPECT_EQ(row[7], layers[i].second);
    EXPECT_EQ(row[10], "");
    forward_sum += std::stod(row[8]);
    backward_sum += std::stod(row[9]);
  }
  const auto& total = rows.back();
  ASSERT_EQ(total.size(), 12u);
  EXPECT_EQ(total[6], "total");
  const double forward = std::stod(total[8]), backward = std::stod(total[9]), both = std::stod(total[10]);
  // The pass totals are the sums of the layers' times (the clock marks are contiguous).
  EXPECT_NEAR(forward, forward_sum, 1e-6 * forward + 1e-9);
  EXPECT_NEAR(backward, backward_sum, 1e-6 * backward + 1e-9);
  EXPECT_NEAR(std::stod(total[11]), 3 * 1000.0 / both, 1e-6 * std::stod(total[11]));
  // The same numbers as the log lines (printed with 6 significant digits).
  EXPECT_NEAR(forward, Logged(r.err, "Average Forward pass: "), 1e-5 * forward + 1e-9);
  EXPECT_NEAR(backward, Logged(r.err, "Average Backward pass: "), 1e-5 * backward + 1e-9);
  EXPECT_NEAR(both, Logged(r.err, "Average Forward-Backward: "), 1e-5 * both + 1e-9);
  EXPECT_NE(r.err.find("Wrote the times to " + dir + "/times.csv"), std::string::npos);
}

TEST(TrainerTimeOutput, JsonHoldsTheSameResultsAndTestPhaseHasNoBackward) {
  const std::string dir = TempDir();
  WriteFile(dir + "/small.prototxt", kNet);
  const auto r = RunCommand(ToolPath("trainer") + " time --model=" + dir + "/small.prototxt --iterations=3 "
                            "--phase=TEST --output=" + dir + "/times.json");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const Json json = Json::parse(ReadFile(dir + "/times.json"));
  EXPECT_EQ(json["phase"], "TEST");
  EXPECT_EQ(json["device"], "CPU");
  EXPECT_EQ(json["batch_size"], 4);  // the prototxt's
  EXPECT_EQ(json["iterations"], 3);
  ASSERT_EQ(json["layers"].size(), 5u);
  EXPECT_EQ(json["layers"][1]["name"], "ip1");
  EXPECT_EQ(json["layers"][1]["type"], "InnerProduct");
  double forward_sum = 0;
  for (const Json& layer : json["layers"]) {
    forward_sum += layer["forward_ms"].get<double>();
    EXPECT_EQ(layer["backward_ms"].get<double>(), 0.0);
  }
  EXPECT_NEAR(json["forward_ms"].get<double>(), forward_sum, 1e-9 + 1e-6 * forward_sum);
  EXPECT_NEAR(json["forward_backward_ms"].get<double>() * 3, json["total_ms"].get<double>(), 1e-6);
  EXPECT_NEAR(json["images_per_s"].get<double>(), 4 * 1000.0 / json["forward_backward_ms"].get<double>(), 1e-6);
}

TEST(TrainerTimeOutput, AnOutputItCannotWriteIsRefusedBeforeTheBenchmark) {
  const std::string dir = TempDir();
  WriteFile(dir + "/small.prototxt", kNet);
  for (const std::string& output : {dir + "/times.txt", dir + "/missing/times.csv"}) {
    const auto r = RunCommand(ToolPath("trainer") + " time --model=" + dir + "/small.prototxt --output=" + output);
    EXPECT_EQ(r.exit_code, 1) << output;
    EXPECT_EQ(CountLines(r.err), 1) << r.err;
    EXPECT_NE(r.err.find("--output=" + output), std::string::npos) << r.err;
    EXPECT_FALSE(std::filesystem::exists(output));
  }
}

TEST(TrainerMetrics, OneLinePerDisplayAndTestMatchingTheLogAndTheRatePolicy) {
  const std::string dir = TempDir();
  const auto r = RunCommand(ToolPath("trainer") + " train --solver=" + WriteSolver(dir));
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto lines = ReadJsonLines(dir + "/small_metrics.jsonl");
  const auto train_loss = LoggedByIteration(r.err, std::regex("iters\\), loss = ([0-9.eE+-]+)"));
  const auto test_loss = LoggedByIteration(r.err, std::regex("Test net output #0: loss = ([0-9.eE+-]+)"));
  std::vector<int> train_iters, test_iters;
  double last_seconds = 0;
  for (const Json& line : lines) {
    const int iteration = line["iteration"];
    const double rate = 0.1 * std::pow(0.5, iteration / 10);  // step policy
    EXPECT_NEAR(line["learning_rate"].get<double>(), rate, 1e-7) << line;
    EXPECT_GE(line["seconds"].get<double>(), last_seconds);
    last_seconds = line["seconds"];
    EXPECT_GT(line["time"].get<double>(), 1.7e9);
    if (line["phase"] == "train") {
      train_iters.push_back(iteration);
      if (iteration < 20) {  // the final display line has no "iters)" part
        ASSERT_TRUE(train_loss.count(iteration)) << iteration;
        EXPECT_NEAR(line["loss"].get<double>(), train_loss.at(iteration), 1e-5 * train_loss.at(iteration));
        EXPECT_NEAR(line["outputs"]["loss"].get<double>(), line["loss"].get<double>(), 1e-6);
      }
    } else {
      ASSERT_EQ(line["phase"], "test");
      EXPECT_EQ(line["test_net"], 0);
      test_iters.push_back(iteration);
      ASSERT_TRUE(test_loss.count(iteration)) << iteration;
      EXPECT_NEAR(line["outputs"]["loss"].get<double>(), test_loss.at(iteration), 1e-5 * test_loss.at(iteration));
    }
  }
  EXPECT_EQ(train_iters, (std::vector<int>{0, 5, 10, 15, 20}));
  EXPECT_EQ(test_iters, (std::vector<int>{0, 10, 20}));
}

TEST(TrainerMetrics, AResumedRunKeepsTheEarlierLinesAndReplacesTheLaterOnes) {
  const std::string dir = TempDir();
  const std::string solver = WriteSolver(dir);
  ASSERT_EQ(RunCommand(ToolPath("trainer") + " train --solver=" + solver).exit_code, 0);
  const auto first = ReadJsonLines(dir + "/small_metrics.jsonl");
  const auto r = RunCommand(ToolPath("trainer") + " train --solver=" + solver + " --snapshot=" + dir +
                            "/small_iter_10.solverstate");
  ASSERT_EQ(r.exit_code, 0) << r.err;
  const auto resumed = ReadJsonLines(dir + "/small_metrics.jsonl");
  ASSERT_EQ(resumed.size(), first.size());  // the same displays and tests, none twice
  for (size_t i = 0; i < first.size(); ++i) {
    EXPECT_EQ(resumed[i]["iteration"], first[i]["iteration"]);
    EXPECT_EQ(resumed[i]["phase"], first[i]["phase"]);
    if (first[i]["iteration"].get<int>() < 10) EXPECT_EQ(resumed[i], first[i]);  // kept as written
    else EXPECT_NE(resumed[i]["time"], first[i]["time"]);                       // written again
  }
}

TEST(TrainerMetrics, MetricsFalseAndTheSolverFieldWriteNone) {
  const std::string dir = TempDir();
  ASSERT_EQ(RunCommand(ToolPath("trainer") + " train --metrics=false --solver=" + WriteSolver(dir)).exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(dir + "/small_metrics.jsonl"));
  const std::string other = TempDir();
  ASSERT_EQ(RunCommand(ToolPath("trainer") + " train --solver=" + WriteSolver(other, "write_metrics: false\n")).exit_code, 0);
  EXPECT_FALSE(std::filesystem::exists(other + "/small_metrics.jsonl"));
}

}  // namespace cortado::test
