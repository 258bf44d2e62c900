// solver_test.cpp — the training loop end to end on a small regression net: the loss falls, test nets
// read the train net's weights, snapshots are written where Caffe writes them, and a run restored
// from a snapshot ends with the same weights as one never interrupted.
#include <filesystem>

#include "cortado/error.hpp"
#include "cortado/io.hpp"
#include "cortado/solver.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

// y = x·Wᵀ on fixed inputs: an Input layer whose blobs the test fills once.
const char* kNet = R"(
name: "regression"
layer { name: "in" type: "Input" top: "x" top: "y" input_param { shape { dim: 8 dim: 4 } shape { dim: 8 dim: 2 } } }
layer { name: "ip" type: "InnerProduct" bottom: "x" top: "z"
        inner_product_param { num_output: 2 weight_filler { type: "gaussian" std: 0.1 } } }
layer { name: "loss" type: "EuclideanLoss" bottom: "z" bottom: "y" top: "loss" }
)";

SolverParameter MakeSolver(const std::string& type, const std::string& prefix) {
  SolverParameter param;
  ReadProtoFromTextString(std::string("base_lr: 0.05 lr_policy: 'step' gamma: 0.5 stepsize: 7 momentum: ") +
                              (type == "AdaGrad" || type == "RMSProp" ? "0" : "0.9") +
                              " weight_decay: 0.001 max_iter: 12 display: 0 random_seed: 5 "
                              "solver_mode: CPU test_iter: 1 test_interval: 4 snapshot_after_train: false",
                          &param);
  param.set_type(type);
  ReadProtoFromTextString(kNet, param.mutable_net_param());
  param.set_snapshot_prefix(prefix);
  return param;
}

void FillInputs(Solver& solver) {
  FillLinearFit(solver.net());
  FillLinearFit(solver.test_nets()[0].get());
}

std::vector<float> Weights(Solver& solver) {
  return {solver.net()->param_data(), solver.net()->param_data() + solver.net()->param_count()};
}

}  // namespace

TEST(Solver, LossFallsAndTestNetSharesWeights) {
  SolverParameter param = MakeSolver("SGD", TempDir() + "/r");
  param.set_max_iter(60);
  param.set_lr_policy("fixed");
  Solver solver(param);
  FillInputs(solver);
  const float before = solver.net()->Forward();
  solver.Step(60);
  const float after = solver.net()->Forward();
  EXPECT_LT(after, 0.05f * before);
  // The test net reads the same parameter memory.
  EXPECT_EQ(solver.test_nets()[0]->layer_by_name("ip")->blobs()[0]->data(),
            solver.net()->layer_by_name("ip")->blobs()[0]->data());
  solver.TestAll();
  ASSERT_EQ(solver.last_test_scores(0).size(), 1u);
  EXPECT_NEAR(solver.last_test_scores(0)[0], after, 1e-5);
}

class SolverResume : public testing::TestWithParam<std::string> {};

TEST_P(SolverResume, RestoredRunEqualsUninterruptedRun) {
  const std::string dir = TempDir();
  Solver straight(MakeSolver(GetParam(), dir + "/straight"));
  FillInputs(straight);
  straight.Step(12);

  SolverParameter param = MakeSolver(GetParam(), dir + "/first");
  Solver first(param);
  FillInputs(first);
  first.Step(5);
  const std::string state = first.Snapshot();
  EXPECT_EQ(state, dir + "/first_iter_5.solverstate");
  EXPECT_TRUE(FileExists(dir + "/first_iter_5.caffemodel"));

  Solver resumed(MakeSolver(GetParam(), dir + "/second"));
  FillInputs(resumed);
  resumed.Restore(state);
  EXPECT_EQ(resumed.iter(), 5);
  resumed.Step(7);
  EXPECT_EQ(Weights(resumed), Weights(straight));
}

INSTANTIATE_TEST_SUITE_P(AllTypes, SolverResume,
                         testing::Values("SGD", "Nesterov", "AdaGrad", "RMSProp", "AdaDelta", "Adam"));

// A solverstate the solver refuses leaves it as it was: the iteration, the weights and the history. The
// first refused here is another net's, whose first layer matches (it was copied before the second
// failed); the second is another solver type's, of the same net (its history is refused after the
// iteration and weights were taken).
TEST(Solver, RefusedRestoreLeavesTheSolverAsItWas) {
  const std::string dir = TempDir();
  const char* other_net = R"(
name: "regression"
layer { name: "in" type: "DummyData" top: "x" top: "y"
        dummy_data_param { data_filler { type: "gaussian" std: 1 } shape { dim: 8 dim: 4 } shape { dim: 8 dim: 3 } } }
layer { name: "ip" type: "InnerProduct" bottom: "x" top: "z"
        inner_product_param { num_output: 2 weight_filler { type: "gaussian" std: 0.1 } } }
layer { name: "ip2" type: "InnerProduct" bottom: "z" top: "w"
        inner_product_param { num_output: 3 weight_filler { type: "gaussian" std: 0.1 } } }
layer { name: "loss" type: "EuclideanLoss" bottom: "w" bottom: "y" top: "loss" }
)";
  SolverParameter other = MakeSolver("SGD", dir + "/other");
  other.clear_test_iter();
  other.clear_test_interval();
  ReadProtoFromTextString(other_net, other.mutable_net_param());
  SolverParameter longer(other);
  longer.mutable_net_param()->mutable_layer(2)->mutable_inner_product_param()->set_num_output(5);
  longer.mutable_net_param()->mutable_layer(0)->mutable_dummy_data_param()->mutable_shape(1)->set_dim(1, 5);
  longer.set_snapshot_prefix(dir + "/longer");
  Solver donor(longer);
  donor.Step(3);
  const std::string longer_state = donor.Snapshot();

  Solver solver(other);
  solver.Step(2);
  const std::vector<float> weights = Weights(solver);
  try {
    solver.Restore(longer_state);
    ADD_FAILURE() << "a state of another net was restored";
  } catch (const Error& e) {
    EXPECT_NE(std::string(e.what()).find("layer ip2 (InnerProduct): blob 0 has shape 3 2 (6) in the net but 5 2 (10)"),
              std::string::npos) << e.what();
  }
  EXPECT_EQ(solver.iter(), 2);
  EXPECT_EQ(Weights(solver), weights);

  SolverParameter adam_param(other);
  adam_param.set_type("Adam");
  adam_param.set_snapshot_prefix(dir + "/adam");
  Solver adam(adam_param);
  adam.Step(4);
  const std::string adam_state = adam.Snapshot();
  EXPECT_THROW(solver.Restore(adam_state), Error);
  EXPECT_EQ(solver.iter(), 2);
  EXPECT_EQ(Weights(solver), weights);
  // The refusals changed nothing that the next steps read: they go on as a solver never refused.
  Solver untouched(other);
  untouched.Step(2);
  solver.Step(3);
  untouched.Step(3);
  EXPECT_EQ(Weights(solver), Weights(untouched));
}

TEST(Solver, TestIterCountMustMatchTestNets) {
  SolverParameter param = MakeSolver("SGD", TempDir() + "/x");
  param.add_test_iter(3);  // two test_iter values: the general net serves as both test nets
  EXPECT_NO_THROW(Solver{param});
  param.clear_test_iter();
  param.add_test_net_param()->CopyFrom(param.net_param());
  param.clear_net_param();
  param.mutable_train_net_param()->CopyFrom(param.test_net_param(0));
  EXPECT_THROW(Solver{param}, Error);  // a test net without test_iter
}

TEST(Solver, UnknownTypeAndPolicyAreErrors) {
  SolverParameter param = MakeSolver("SGD", TempDir() + "/x");
  param.set_type("Adamax");
  EXPECT_THROW(Solver{param}, Error);
  param.set_type("SGD");
  param.set_lr_policy("cosine");
  EXPECT_THROW(Solver{param}, Error);
}

}  // namespace cortado::test

namespace cortado::test {

// Random layers (DummyData gaussian inputs, Dropout) draw from the solver's seeded generator: the same
// random_seed gives the same weights, another seed different ones.
TEST(Solver, FixedSeedGivesIdenticalRuns) {
  const char* net = R"(
layer { name: "in" type: "DummyData" top: "x" top: "y"
        dummy_data_param { data_filler { type: "gaussian" std: 1 } shape { dim: 6 dim: 5 } shape { dim: 6 dim: 3 } } }
layer { name: "ip" type: "InnerProduct" bottom: "x" top: "h" inner_product_param { num_output: 4 weight_filler { type: "xavier" } } }
layer { name: "drop" type: "Dropout" bottom: "h" top: "h" }
layer { name: "out" type: "InnerProduct" bottom: "h" top: "z" inner_product_param { num_output: 3 weight_filler { type: "xavier" } } }
layer { name: "loss" type: "EuclideanLoss" bottom: "z" bottom: "y" top: "loss" }
)";
  auto run = [&](int seed) {
    SolverParameter param;
    ReadProtoFromTextString("base_lr: 0.01 lr_policy: 'fixed' momentum: 0.9 max_iter: 20 display: 0 "
                            "solver_mode: CPU snapshot_after_train: false", &param);
    param.set_random_seed(seed);
    ReadProtoFromTextString(net, param.mutable_net_param());
    Solver solver(param);
    solver.Step(20);
    return Weights(solver);
  };
  EXPECT_EQ(run(42), run(42));
  EXPECT_NE(run(42), run(43));
}

}  // namespace cortado::test
