// lstm_test.cpp — LSTM against a reference recurrence written here from the definition (T = 3, N = 2),
// with and without a static input and exposed hidden state; the state carried between forward passes
// and cut by cont = 0; gradients w.r.t. x, x_static and every parameter; Caffe's blob order and
// shapes; parameter errors; and a tiny net that learns to recall its first input.
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
double Sigmoid(double v) { return 1.0 / (1.0 + std::exp(-v)); }

// a = W_xc·x_t + b_c + W_s·x_static + W_hc·(cont_t·h_{t−1}) (4H: i f o g), c_t = cont_t·σ(a_f)·c_{t−1} +
// σ(a_i)·tanh(a_g), h_t = σ(a_o)·tanh(c_t); h and c hold the initial state and end as the final one.
// Returns h_1 … h_T. p: the layer's blobs in Caffe's order.
Vec Reference(const Sizes& z, const Vec& x, const Vec& cont, const Vec& xs, Vec* h, Vec* c,
              const std::vector<Vec>& p) {
  const int g4 = 4 * z.H;
  const Vec& w_xc = p[0];
  const Vec& b_c = p[1];
  const Vec& w_hc = p[z.S > 0 ? 3 : 2];
  Vec out(static_cast<size_t>(z.T * z.N * z.H));
  for (int t = 0; t < z.T; ++t) {
    Vec next_h(static_cast<size_t>(z.N * z.H)), next_c(next_h.size());
    for (int n = 0; n < z.N; ++n) {
      const int tn = t * z.N + n;
      std::vector<double> a(static_cast<size_t>(g4));
      for (int q = 0; q < g4; ++q) {
        a[q] = b_c[q];
        for (int i = 0; i < z.I; ++i) a[q] += w_xc[q * z.I + i] * x[tn * z.I + i];
        for (int s = 0; s < z.S; ++s) a[q] += p[2][q * z.S + s] * xs[n * z.S + s];
        for (int k = 0; k < z.H; ++k) a[q] += w_hc[q * z.H + k] * cont[tn] * (*h)[n * z.H + k];
      }
      for (int j = 0; j < z.H; ++j) {
        const double i = Sigmoid(a[j]), f = Sigmoid(a[z.H + j]), o = Sigmoid(a[2 * z.H + j]);
        const double g = std::tanh(a[3 * z.H + j]);
        const double cv = cont[tn] * f * (*c)[n * z.H + j] + i * g;
        next_c[n * z.H + j] = static_cast<float>(cv);
        next_h[n * z.H + j] = static_cast<float>(o * std::tanh(cv));
        out[tn * z.H + j] = next_h[n * z.H + j];
      }
    }
    *h = next_h;
    *c = next_c;
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

std::string Lstm(const std::string& extra = "") {
  return "name: 'lstm' type: 'LSTM' recurrent_param { num_output: 4 "
         "weight_filler { type: 'gaussian' std: 0.5 } bias_filler { type: 'gaussian' std: 0.5 } " +
         extra + " }";
}

const Sizes kZ{3, 2, 3, 4, 0};
const Vec kCont{0, 0, 1, 1, 1, 0};  // stream 1 starts again at t = 2

void SetCont(LayerFixture& f, const Vec& cont) { std::copy(cont.begin(), cont.end(), f.bottom(1).data()); }

}  // namespace

TEST(LSTM, ForwardMatchesReference) {
  LayerFixture f(Lstm(), {{3, 2, 3}, {3, 2}});
  f.FillBottoms();
  SetCont(f, kCont);
  f.Forward();
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{3, 2, 4}));
  Vec h(8, 0.0f), c(8, 0.0f);
  ExpectClose(Values(f.top(0)), Reference(kZ, Values(f.bottom(0)), kCont, {}, &h, &c, Params(f.layer())), "h");
}

TEST(LSTM, ForwardWithStaticInputMatchesReference) {
  LayerFixture f(Lstm(), {{3, 2, 3}, {3, 2}, {2, 5}});
  f.FillBottoms();
  SetCont(f, kCont);
  f.Forward();
  Vec h(8, 0.0f), c(8, 0.0f);
  const Sizes z{3, 2, 3, 4, 5};
  ExpectClose(Values(f.top(0)),
              Reference(z, Values(f.bottom(0)), kCont, Values(f.bottom(2)), &h, &c, Params(f.layer())), "h");
}

TEST(LSTM, StateCarriesAcrossForwardPassesUntilContIsZero) {
  LayerFixture f(Lstm(), {{3, 2, 3}, {3, 2}});
  f.FillBottoms();
  const Vec start{0, 0, 1, 1, 1, 1}, all{1, 1, 1, 1, 1, 1};
  SetCont(f, start);
  f.Forward();
  const Vec first = Values(f.top(0));
  Vec h(8, 0.0f), c(8, 0.0f);
  Reference(kZ, Values(f.bottom(0)), start, {}, &h, &c, Params(f.layer()));  // h_T, c_T
  SetCont(f, all);
  f.Forward();
  ExpectClose(Values(f.top(0)), Reference(kZ, Values(f.bottom(0)), all, {}, &h, &c, Params(f.layer())), "continued");
  SetCont(f, start);
  f.Forward();
  ExpectClose(Values(f.top(0)), first, "restarted");
}

TEST(LSTM, ContZeroResetsTheStream) {
  LayerFixture f(Lstm(), {{3, 2, 3}, {3, 2}});
  f.FillBottoms();
  SetCont(f, kCont);
  f.Forward();
  const Vec before = Values(f.top(0));
  for (int i = 0; i < 12; ++i) f.bottom(0).data()[i] += 0.5f;  // change x_0 and x_1 of both streams
  f.Forward();
  const Vec after = Values(f.top(0));
  for (int j = 0; j < 4; ++j) {
    EXPECT_FLOAT_EQ(after[(2 * 2 + 1) * 4 + j], before[(2 * 2 + 1) * 4 + j]) << "stream 1 restarted at t = 2";
    EXPECT_NE(after[(2 * 2 + 0) * 4 + j], before[(2 * 2 + 0) * 4 + j]) << "stream 0 remembers";
  }
}

TEST(LSTM, ExposedHiddenStateIsReadAndWritten) {
  LayerFixture f(Lstm("expose_hidden: true"), {{3, 2, 3}, {3, 2}, {1, 2, 4}, {1, 2, 4}}, 3);
  f.FillBottoms();
  SetCont(f, {1, 0, 1, 1, 1, 1});
  ASSERT_EQ(f.top(1).shape(), (std::vector<int>{1, 2, 4}));
  ASSERT_EQ(f.top(2).shape(), (std::vector<int>{1, 2, 4}));
  for (int pass = 0; pass < 2; ++pass) {  // bottoms h_0, c_0 every time, nothing carried
    f.Forward();
    Vec h = Values(f.bottom(2)), c = Values(f.bottom(3));
    ExpectClose(Values(f.top(0)),
                Reference(kZ, Values(f.bottom(0)), Values(f.bottom(1)), {}, &h, &c, Params(f.layer())), "h");
    ExpectClose(Values(f.top(1)), h, "h_T");
    ExpectClose(Values(f.top(2)), c, "c_T");
  }
  std::fill(f.bottom(2).diff(), f.bottom(2).diff() + 8, 7.0f);
  std::fill(f.bottom(3).diff(), f.bottom(3).diff() + 8, 7.0f);
  std::fill(f.top(0).diff(), f.top(0).diff() + 24, 1.0f);
  f.Backward();
  for (int i = 0; i < 8; ++i) {
    EXPECT_EQ(f.bottom(2).diff()[i], 0.0f);
    EXPECT_EQ(f.bottom(3).diff()[i], 0.0f);
  }
}

TEST(LSTM, ExposedHiddenStateWithStaticInput) {
  LayerFixture f(Lstm("expose_hidden: true"), {{3, 2, 3}, {3, 2}, {2, 5}, {1, 2, 4}, {1, 2, 4}}, 3);
  f.FillBottoms();
  SetCont(f, kCont);
  f.Forward();
  ASSERT_EQ(f.layer().blobs().size(), 4u);
  Vec h = Values(f.bottom(3)), c = Values(f.bottom(4));
  const Sizes z{3, 2, 3, 4, 5};
  ExpectClose(Values(f.top(0)),
              Reference(z, Values(f.bottom(0)), kCont, Values(f.bottom(2)), &h, &c, Params(f.layer())), "h");
  ExpectClose(Values(f.top(1)), h, "h_T");
  ExpectClose(Values(f.top(2)), c, "c_T");
}

TEST(LSTM, GradientCheck) {
  LayerFixture f(Lstm(), {{3, 2, 3}, {3, 2}});
  f.FillBottoms();
  SetCont(f, kCont);  // cont_1 = 0: the carried state does not move the objective between passes
  GradientCheckOptions o;
  o.skip_bottoms = {1};
  CheckGradient(f, o);
}

TEST(LSTM, GradientCheckWithStaticInput) {
  LayerFixture f(Lstm(), {{3, 2, 3}, {3, 2}, {2, 5}});
  f.FillBottoms();
  SetCont(f, kCont);
  GradientCheckOptions o;
  o.skip_bottoms = {1};
  CheckGradient(f, o);
}

TEST(LSTM, LearnableBlobsInCaffesOrder) {
  LayerFixture plain(Lstm(), {{3, 2, 3, 2}, {3, 2}});
  const std::vector<std::vector<int>> want{{16, 6}, {16}, {16, 4}};  // W_xc b_c W_hc
  ASSERT_EQ(plain.layer().blobs().size(), want.size());
  for (size_t i = 0; i < want.size(); ++i) EXPECT_EQ(plain.layer().blobs()[i]->shape(), want[i]) << i;

  LayerFixture with_static(Lstm(), {{3, 2, 3}, {3, 2}, {2, 5, 1}});
  const std::vector<std::vector<int>> want_static{{16, 3}, {16}, {16, 5}, {16, 4}};  // W_xc_static 3rd
  ASSERT_EQ(with_static.layer().blobs().size(), want_static.size());
  for (size_t i = 0; i < want_static.size(); ++i)
    EXPECT_EQ(with_static.layer().blobs()[i]->shape(), want_static[i]) << i;
  EXPECT_EQ(with_static.top(0).shape(), (std::vector<int>{3, 2, 4}));
}

TEST(LSTM, ParameterErrorsNameTheLayer) {
  auto expect = [](const std::string& layer, const std::vector<std::vector<int>>& shapes, int tops,
                   const std::string& part) {
    const std::string e = ErrorOf([&] { LayerFixture f(layer, shapes, tops); });
    EXPECT_NE(e.find("layer lstm (LSTM)"), std::string::npos) << e;
    EXPECT_NE(e.find(part), std::string::npos) << e;
  };
  expect("name: 'lstm' type: 'LSTM' recurrent_param { }", {{3, 2, 3}, {3, 2}}, 1, "num_output must be positive");
  expect(Lstm(), {{3, 2, 3}, {3, 3}}, 1, "bottom[1] (cont)");
  expect(Lstm(), {{3, 2, 3}, {3, 2}, {1, 5}}, 1, "bottom[2] (x_static)");
  expect(Lstm("expose_hidden: true"), {{3, 2, 3}, {3, 2}, {1, 2, 4}, {1, 2, 3}}, 3, "initial state c_0");
  expect(Lstm("expose_hidden: true"), {{3, 2, 3}, {3, 2}, {1, 2, 4}}, 3, "at least 4 bottom");
  expect(Lstm("expose_hidden: true"), {{3, 2, 3}, {3, 2}, {1, 2, 4}, {1, 2, 4}}, 2, "exactly 3 top");
  LayerFixture f(Lstm(), {{3, 2, 3}, {3, 2}});
  EXPECT_FALSE(f.layer().AllowForceBackward(1));
}

// Every output should recall half the stream's first input: only the cell's memory can do that.
TEST(LSTM, TinyNetLearnsToRecallTheFirstInput) {
  const SequenceTaskLosses losses =
      TrainSequenceTask("LSTM", 600, 1.0f, [](int t, int n, const float* x) { return 0.5f * x[n]; });
  EXPECT_LT(losses.last, 0.1f * losses.first) << "first loss " << losses.first << ", last " << losses.last;
}

}  // namespace cortado::test
