// rnn_test.cpp — RNN against a reference recurrence written here from the definition (T = 3, N = 2),
// with and without a static input and exposed hidden state; the state carried between forward passes
// and cut by cont = 0; gradients w.r.t. x, x_static and every parameter; Caffe's blob order and
// shapes; parameter errors; and a tiny net that learns to repeat its previous input.
#include <cmath>

#include "cortado/error.hpp"
#include "cortado/io.hpp"
#include "cortado/net.hpp"
#include "sequence_task.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

using Vec = std::vector<float>;

struct Sizes {
  int T, N, I, H, S;  // S = 0: no static input
};

Vec Values(const Blob& b) { return Vec(b.data(), b.data() + b.count()); }

// o_t = tanh(W_ho·h_t + b_o), h_t = tanh(W_xh·x_t + b_h + W_s·x_static + W_hh·(cont_t·h_{t−1})), from h,
// which holds h_0 and ends as h_T. p: the layer's blobs in Caffe's order.
Vec Reference(const Sizes& z, const Vec& x, const Vec& cont, const Vec& xs, Vec* h, const std::vector<Vec>& p) {
  const bool with_static = z.S > 0;
  const Vec& w_xh = p[0];
  const Vec& b_h = p[1];
  const int r = with_static ? 3 : 2;
  const Vec &w_hh = p[r], &w_ho = p[r + 1], &b_o = p[r + 2];
  Vec out(static_cast<size_t>(z.T * z.N * z.H));
  for (int t = 0; t < z.T; ++t) {
    Vec next(static_cast<size_t>(z.N * z.H));
    for (int n = 0; n < z.N; ++n) {
      const int tn = t * z.N + n;
      for (int j = 0; j < z.H; ++j) {
        double a = b_h[j];
        for (int i = 0; i < z.I; ++i) a += w_xh[j * z.I + i] * x[tn * z.I + i];
        for (int s = 0; s < z.S; ++s) a += p[2][j * z.S + s] * xs[n * z.S + s];
        for (int k = 0; k < z.H; ++k) a += w_hh[j * z.H + k] * cont[tn] * (*h)[n * z.H + k];
        next[n * z.H + j] = static_cast<float>(std::tanh(a));
      }
      for (int j = 0; j < z.H; ++j) {
        double a = b_o[j];
        for (int k = 0; k < z.H; ++k) a += w_ho[j * z.H + k] * next[n * z.H + k];
        out[tn * z.H + j] = static_cast<float>(std::tanh(a));
      }
    }
    *h = next;
  }
  return out;
}

std::vector<Vec> Params(Layer& layer) {
  std::vector<Vec> p;
  for (auto& b : layer.blobs()) p.push_back(Values(*b));
  return p;
}

void ExpectClose(const Vec& got, const Vec& want, const std::string& what, float tol = 2e-5f) {
  ASSERT_EQ(got.size(), want.size()) << what;
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << what << " element " << i;
}

std::string Rnn(const std::string& extra = "") {
  return "name: 'rnn' type: 'RNN' recurrent_param { num_output: 4 "
         "weight_filler { type: 'gaussian' std: 0.5 } bias_filler { type: 'gaussian' std: 0.5 } " +
         extra + " }";
}

const Sizes kZ{3, 2, 3, 4, 0};
// Stream 0 starts at t = 0; stream 1 starts at t = 0 and again at t = 2.
const Vec kCont{0, 0, 1, 1, 1, 0};

void SetCont(LayerFixture& f, const Vec& cont) { std::copy(cont.begin(), cont.end(), f.bottom(1).data()); }

}  // namespace

TEST(RNN, ForwardMatchesReference) {
  LayerFixture f(Rnn(), {{3, 2, 3}, {3, 2}});
  f.FillBottoms();
  SetCont(f, kCont);
  f.Forward();
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{3, 2, 4}));
  Vec h(8, 0.0f);
  ExpectClose(Values(f.top(0)), Reference(kZ, Values(f.bottom(0)), kCont, {}, &h, Params(f.layer())), "o");
}

TEST(RNN, ForwardWithStaticInputMatchesReference) {
  LayerFixture f(Rnn(), {{3, 2, 3}, {3, 2}, {2, 5}});
  f.FillBottoms();
  SetCont(f, kCont);
  f.Forward();
  Vec h(8, 0.0f);
  const Sizes z{3, 2, 3, 4, 5};
  ExpectClose(Values(f.top(0)),
              Reference(z, Values(f.bottom(0)), kCont, Values(f.bottom(2)), &h, Params(f.layer())), "o");
}

// Caffe's RecurrentLayer starts each forward pass from the previous pass's final state; cont_1 = 0
// cuts it off.
TEST(RNN, StateCarriesAcrossForwardPassesUntilContIsZero) {
  LayerFixture f(Rnn(), {{3, 2, 3}, {3, 2}});
  f.FillBottoms();
  SetCont(f, {0, 0, 1, 1, 1, 1});
  f.Forward();
  const Vec first = Values(f.top(0));
  Vec h(8, 0.0f);
  Reference(kZ, Values(f.bottom(0)), {0, 0, 1, 1, 1, 1}, {}, &h, Params(f.layer()));  // h = h_T
  SetCont(f, {1, 1, 1, 1, 1, 1});
  f.Forward();
  ExpectClose(Values(f.top(0)), Reference(kZ, Values(f.bottom(0)), {1, 1, 1, 1, 1, 1}, {}, &h, Params(f.layer())),
              "continued");
  SetCont(f, {0, 0, 1, 1, 1, 1});
  f.Forward();
  ExpectClose(Values(f.top(0)), first, "restarted");
}

// cont_t = 0 for one stream in mid-batch: its later outputs no longer depend on its earlier inputs.
TEST(RNN, ContZeroResetsTheStream) {
  LayerFixture f(Rnn(), {{3, 2, 3}, {3, 2}});
  f.FillBottoms();
  SetCont(f, kCont);
  f.Forward();
  const Vec before = Values(f.top(0));
  for (int t = 0; t < 2; ++t)
    for (int n = 0; n < 2; ++n)
      for (int i = 0; i < 3; ++i) f.bottom(0).data()[(t * 2 + n) * 3 + i] += 0.5f;  // change x_0, x_1
  f.Forward();
  const Vec after = Values(f.top(0));
  for (int j = 0; j < 4; ++j) {
    EXPECT_FLOAT_EQ(after[(2 * 2 + 1) * 4 + j], before[(2 * 2 + 1) * 4 + j]) << "stream 1 restarted at t = 2";
    EXPECT_NE(after[(2 * 2 + 0) * 4 + j], before[(2 * 2 + 0) * 4 + j]) << "stream 0 remembers";
  }
}

TEST(RNN, ExposedHiddenStateIsReadAndWritten) {
  LayerFixture f(Rnn("expose_hidden: true"), {{3, 2, 3}, {3, 2}, {1, 2, 4}}, 2);
  f.FillBottoms();
  SetCont(f, {1, 0, 1, 1, 1, 1});
  ASSERT_EQ(f.top(1).shape(), (std::vector<int>{1, 2, 4}));
  for (int pass = 0; pass < 2; ++pass) {  // no state carried: the bottom h_0 is used each time
    f.Forward();
    Vec h = Values(f.bottom(2));
    ExpectClose(Values(f.top(0)), Reference(kZ, Values(f.bottom(0)), Values(f.bottom(1)), {}, &h, Params(f.layer())),
                "o");
    ExpectClose(Values(f.top(1)), h, "h_T");
  }
  // Caffe passes no gradient to h_0.
  std::fill(f.bottom(2).diff(), f.bottom(2).diff() + 8, 7.0f);
  std::fill(f.top(0).diff(), f.top(0).diff() + 24, 1.0f);
  f.Backward();
  for (int i = 0; i < 8; ++i) EXPECT_EQ(f.bottom(2).diff()[i], 0.0f);
}

TEST(RNN, ExposedHiddenStateWithStaticInput) {
  LayerFixture f(Rnn("expose_hidden: true"), {{3, 2, 3}, {3, 2}, {2, 5}, {1, 2, 4}}, 2);
  f.FillBottoms();
  SetCont(f, kCont);
  f.Forward();
  ASSERT_EQ(f.layer().blobs().size(), 6u);
  Vec h = Values(f.bottom(3));
  const Sizes z{3, 2, 3, 4, 5};
  ExpectClose(Values(f.top(0)),
              Reference(z, Values(f.bottom(0)), kCont, Values(f.bottom(2)), &h, Params(f.layer())), "o");
  ExpectClose(Values(f.top(1)), h, "h_T");
}

TEST(RNN, GradientCheck) {
  LayerFixture f(Rnn(), {{3, 2, 3}, {3, 2}});
  f.FillBottoms();
  SetCont(f, kCont);  // cont_1 = 0: the carried state does not move the objective between passes
  GradientCheckOptions o;
  o.skip_bottoms = {1};
  CheckGradient(f, o);
}

TEST(RNN, GradientCheckWithStaticInput) {
  LayerFixture f(Rnn(), {{3, 2, 3}, {3, 2}, {2, 5}});
  f.FillBottoms();
  SetCont(f, kCont);
  GradientCheckOptions o;
  o.skip_bottoms = {1};
  CheckGradient(f, o);
}

TEST(RNN, LearnableBlobsInCaffesOrder) {
  LayerFixture plain(Rnn(), {{3, 2, 3, 2}, {3, 2}});
  const std::vector<std::vector<int>> want{{4, 6}, {4}, {4, 4}, {4, 4}, {4}};  // W_xh b_h W_hh W_ho b_o
  ASSERT_EQ(plain.layer().blobs().size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(plain.layer().blobs()[i]->shape(), want[i]) << i;

  LayerFixture with_static(Rnn(), {{3, 2, 3}, {3, 2}, {2, 5, 1}});
  const std::vector<std::vector<int>> want_static{{4, 3}, {4}, {4, 5}, {4, 4}, {4, 4}, {4}};  // W_xh_static 3rd
  ASSERT_EQ(with_static.layer().blobs().size(), want_static.size());
  for (size_t i = 0; i < want_static.size(); ++i)
    EXPECT_EQ(with_static.layer().blobs()[i]->shape(), want_static[i]) << i;
  EXPECT_EQ(with_static.top(0).shape(), (std::vector<int>{3, 2, 4}));
}

TEST(RNN, FillersFollowWeightAndBias) {
  LayerFixture f("type: 'RNN' recurrent_param { num_output: 2 weight_filler { type: 'constant' value: 0.25 } "
                 "bias_filler { type: 'constant' value: -1 } }",
                 {{2, 1, 3}, {2, 1}});
  const std::vector<float> want{0.25f, -1.0f, 0.25f, 0.25f, -1.0f};
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(f.layer().blobs()[i]->data()[0], want[i]) << i;
}

TEST(RNN, ParameterErrorsNameTheLayer) {
  auto expect = [](const std::string& layer, const std::vector<std::vector<int>>& shapes, int tops,
                   const std::string& part) {
    const std::string e = ErrorOf([&] { LayerFixture f(layer, shapes, tops); });
    EXPECT_NE(e.find("layer rnn (RNN)"), std::string::npos) << e;
    EXPECT_NE(e.find(part), std::string::npos) << e;
  };
  expect("name: 'rnn' type: 'RNN' recurrent_param { }", {{3, 2, 3}, {3, 2}}, 1, "num_output must be positive");
  expect(Rnn(), {{3}, {3, 2}}, 1, "at least 2 axes");
  expect(Rnn(), {{3, 2}, {3, 2}}, 1, "has no input axis");
  expect(Rnn(), {{3, 2, 3}, {3, 2, 1}}, 1, "exactly 2 axes");
  expect(Rnn(), {{3, 2, 3}, {2, 2}}, 1, "bottom[1] (cont)");
  expect(Rnn(), {{3, 2, 3}, {3, 2}, {3, 5}}, 1, "bottom[2] (x_static)");
  expect(Rnn("expose_hidden: true"), {{3, 2, 3}, {3, 2}, {1, 2, 5}}, 2, "initial state h_0");
  expect(Rnn("expose_hidden: true"), {{3, 2, 3}, {3, 2}}, 2, "at least 3 bottom");
  expect(Rnn(), {{3, 2, 3}, {3, 2}}, 2, "exactly 1 top");
  LayerFixture f(Rnn(), {{3, 2, 3}, {3, 2}});
  EXPECT_FALSE(f.layer().AllowForceBackward(1));
}

// Each output should repeat the stream's previous input (0 at t = 0): only the recurrence can do that.
TEST(RNN, TinyNetLearnsToRepeatThePreviousInput) {
  const SequenceTaskLosses losses = TrainSequenceTask(
      "RNN", 400, 0.5f, [](int t, int n, const float* x) { return t > 0 ? x[(t - 1) * 4 + n] : 0.0f; });
  EXPECT_LT(losses.last, 0.1f * losses.first) << "first loss " << losses.first << ", last " << losses.last;
}

}  // namespace cortado::test
