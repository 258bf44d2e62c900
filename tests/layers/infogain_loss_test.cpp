// infogain_loss_test.cpp — InfogainLoss: loss and gradient against a direct computation (H as a third
// bottom and from a binaryproto, the softmax axis, ignore_label and every normalization), H = I as
// SoftmaxWithLoss, the probabilities top, bad labels (the loss layers' shared message), parameter and
// shape errors naming the layer, and gradient checks.
#include <climits>
#include <cmath>

#include "cortado/error.hpp"
#include "cortado/io.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

// The loss and dscores computed directly (double): softmax along K of x (outer, K, inner), then Caffe's
// InfogainLoss formulas. normalizer < 0 means VALID (positions not ignored).
struct Expected {
  double loss = 0;
  std::vector<double> dx;
};
Expected Direct(const std::vector<float>& x, const std::vector<float>& labels, const std::vector<float>& h,
                int outer, int k, int inner, int ignore, double normalizer, double weight) {
  Expected e;
  e.dx.assign(x.size(), 0.0);
  std::vector<double> p(x.size());
  int valid = 0;
  for (int i = 0; i < outer; ++i)
    for (int j = 0; j < inner; ++j) {
      double max = -1e300, sum = 0;
      for (int c = 0; c < k; ++c) max = std::max(max, double(x[(i * k + c) * inner + j]));
      for (int c = 0; c < k; ++c) sum += std::exp(x[(i * k + c) * inner + j] - max);
      for (int c = 0; c < k; ++c) p[(i * k + c) * inner + j] = std::exp(x[(i * k + c) * inner + j] - max) / sum;
      const int l = static_cast<int>(labels[i * inner + j]);
      if (l == ignore) continue;
      ++valid;
      for (int c = 0; c < k; ++c) e.loss -= h[l * k + c] * std::log(p[(i * k + c) * inner + j]);
    }
  const double n = std::max(normalizer < 0 ? double(valid) : normalizer, 1.0);
  e.loss *= weight / n;
  for (int i = 0; i < outer; ++i)
    for (int j = 0; j < inner; ++j) {
      const int l = static_cast<int>(labels[i * inner + j]);
      if (l == ignore) continue;
      double row = 0;
      for (int c = 0; c < k; ++c) row += h[l * k + c];
      for (int c = 0; c < k; ++c) {
        const int at = (i * k + c) * inner + j;
        e.dx[at] = weight / n * (p[at] * row - h[l * k + c]);
      }
    }
  return e;
}

void ExpectMatches(LayerFixture& f, const Expected& e) {
  EXPECT_NEAR(f.Forward(), e.loss, 1e-5 * std::max(1.0, std::fabs(e.loss)));
  f.Backward();
  for (size_t i = 0; i < e.dx.size(); ++i) EXPECT_NEAR(f.bottom(0).diff()[i], e.dx[i], 1e-5) << i;
}

std::string WriteMatrix(const std::vector<float>& h, int k, bool four_axes = true) {
  BlobProto proto;
  if (four_axes) {
    proto.set_num(1);
    proto.set_channels(1);
    proto.set_height(k);
    proto.set_width(k);
  } else {
    proto.mutable_shape()->add_dim(k * k);
  }
  for (float v : h) proto.add_data(v);
  const std::string path = NewTempDir() + "/h.binaryproto";
  WriteProtoToBinaryFile(proto, path);
  return path;
}

const std::vector<float> kH = {1, 0.5f, 0, 0, 1, 0, 0.25f, 0, 2};  // 3 × 3

}  // namespace

TEST(InfogainLoss, MatchesDirectComputationWithHAsBottom) {
  LayerFixture f("type: 'InfogainLoss' loss_weight: 2", {{2, 3}, {2}, {3, 3}});
  const std::vector<float> x = {0.5f, -1, 2, 1, 1, -0.5f}, labels = {0, 2};
  std::copy(x.begin(), x.end(), f.bottom(0).data());
  std::copy(labels.begin(), labels.end(), f.bottom(1).data());
  std::copy(kH.begin(), kH.end(), f.bottom(2).data());
  ExpectMatches(f, Direct(x, labels, kH, 2, 3, 1, INT_MIN, -1, 2));
}

TEST(InfogainLoss, SourceFileAxisIgnoreLabelAndNormalizations) {
  const std::string source = WriteMatrix(kH, 3);
  const std::vector<float> labels = {0, 2, -1, 1};  // one position ignored
  struct Mode {
    const char* name;
    double normalizer;  // < 0: VALID
  } modes[] = {{"VALID", -1}, {"FULL", 4}, {"BATCH_SIZE", 2}, {"NONE", 1}};
  for (const Mode& m : modes) {
    SCOPED_TRACE(m.name);
    // Scores (2, 3, 2): the classes on axis 1, two positions per item.
    LayerFixture f(std::string("type: 'InfogainLoss' infogain_loss_param { source: '") + source +
                       "' } loss_param { ignore_label: -1 normalization: " + m.name + " }",
                   {{2, 3, 2}, {2, 2}});
    f.FillBottoms();
    std::copy(labels.begin(), labels.end(), f.bottom(1).data());
    const std::vector<float> x(f.bottom(0).data(), f.bottom(0).data() + 12);
    ExpectMatches(f, Direct(x, labels, kH, 2, 3, 2, -1, m.normalizer, 1));
  }
  // axis: 2 — scores (2, 2, 3): outer 4, inner 1; H given as a flat 9-vector.
  LayerFixture f(std::string("type: 'InfogainLoss' infogain_loss_param { axis: -1 source: '") +
                     WriteMatrix(kH, 3, false) + "' }",
                 {{2, 2, 3}, {2, 2}});
  f.FillBottoms();
  const std::vector<float> axis_labels = {2, 1, 0, 2};
  std::copy(axis_labels.begin(), axis_labels.end(), f.bottom(1).data());
  const std::vector<float> x(f.bottom(0).data(), f.bottom(0).data() + 12);
  ExpectMatches(f, Direct(x, axis_labels, kH, 4, 3, 1, INT_MIN, -1, 1));
}

TEST(InfogainLoss, IdentityMatrixIsSoftmaxWithLoss) {
  const std::vector<float> identity = {1, 0, 0, 0, 1, 0, 0, 0, 1};
  LayerFixture info(std::string("type: 'InfogainLoss' infogain_loss_param { source: '") + WriteMatrix(identity, 3) +
                        "' }",
                    {{2, 3, 2}, {2, 2}}, 2);
  LayerFixture soft("type: 'SoftmaxWithLoss'", {{2, 3, 2}, {2, 2}}, 2);
  info.FillBottoms();
  std::copy(info.bottom(0).data(), info.bottom(0).data() + 12, soft.bottom(0).data());
  const float labels[] = {1, 0, 2, 2};
  std::copy(labels, labels + 4, info.bottom(1).data());
  std::copy(labels, labels + 4, soft.bottom(1).data());
  EXPECT_NEAR(info.Forward(), soft.Forward(), 1e-6);
  for (int i = 0; i < 12; ++i) EXPECT_NEAR(info.top(1).data()[i], soft.top(1).data()[i], 1e-7) << i;
  info.Backward();
  soft.Backward();
  for (int i = 0; i < 12; ++i) EXPECT_NEAR(info.bottom(0).diff()[i], soft.bottom(0).diff()[i], 1e-6) << i;
}

TEST(InfogainLoss, BadLabelIsTheLossLayersError) {
  std::string messages[2];
  const char* types[2] = {"InfogainLoss", "SoftmaxWithLoss"};
  for (int k = 0; k < 2; ++k) {
    LayerFixture f(std::string("name: 'loss' type: '") + types[k] + "' loss_param { ignore_label: 7 }",
                   k == 0 ? std::vector<std::vector<int>>{{2, 3}, {2}, {3, 3}}
                          : std::vector<std::vector<int>>{{2, 3}, {2}});
    f.FillBottoms();
    f.bottom(1).data()[0] = 1;
    f.bottom(1).data()[1] = 3;
    messages[k] = ErrorOf([&] { f.Forward(); });
  }
  EXPECT_NE(messages[0].find("layer loss (InfogainLoss): label 3 (at position 1)"), std::string::npos) << messages[0];
  messages[1].replace(messages[1].find(types[1]), 15, types[0]);
  EXPECT_EQ(messages[0], messages[1]);
}

TEST(InfogainLoss, ParameterAndShapeErrorsNameTheLayer) {
  auto error = [](const std::string& extra, const std::vector<std::vector<int>>& shapes) {
    return ErrorOf([&] { LayerFixture("name: 'ig' type: 'InfogainLoss' " + extra, shapes); });
  };
  EXPECT_NE(error("", {{2, 3}, {2}}).find("layer ig (InfogainLoss): needs the infogain matrix H"), std::string::npos);
  EXPECT_NE(error("", {{2, 3}, {2}, {2, 2}}).find("layer ig (InfogainLoss): the infogain matrix H must be 3×3"),
            std::string::npos);
  EXPECT_NE(error("infogain_loss_param { source: '" + WriteMatrix({1, 0, 0, 1}, 2) + "' }", {{2, 3}, {2}})
                .find("layer ig (InfogainLoss): the infogain matrix H must be 3×3"),
            std::string::npos);
  EXPECT_NE(error("infogain_loss_param { source: '/nonexistent/h.binaryproto' }", {{2, 3}, {2}})
                .find("layer ig (InfogainLoss): infogain matrix: "),
            std::string::npos);
  EXPECT_NE(error("loss_param { normalize: true }", {{2, 3}, {2}, {3, 3}})
                .find("layer ig (InfogainLoss): loss_param.normalize is deprecated; use normalization"),
            std::string::npos);
  EXPECT_NE(error("", {{2, 3}, {3}, {3, 3}}).find("layer ig (InfogainLoss)"), std::string::npos);
  EXPECT_NE(error("", {{2, 3, 2}, {2}, {3, 3}}).find("layer ig (InfogainLoss): needs one label per score position"),
            std::string::npos);
}

TEST(InfogainLoss, GradientCheck) {
  {
    LayerFixture f("type: 'InfogainLoss' loss_weight: 3", {{3, 4}, {3}, {4, 4}});
    f.FillBottoms();
    FillUniform(&f.bottom(2), f.rng(), 0.0f, 2.0f);
    const float labels[] = {3, 0, 1};
    std::copy(labels, labels + 3, f.bottom(1).data());
    GradientCheckOptions o;
    o.skip_bottoms = {1, 2};
    CheckGradient(f, o);
  }
  {
    LayerFixture f(std::string("type: 'InfogainLoss' infogain_loss_param { source: '") + WriteMatrix(kH, 3) +
                       "' } loss_param { ignore_label: 0 }",
                   {{2, 3, 3}, {2, 3}});
    f.FillBottoms();
    const float labels[] = {1, 0, 2, 2, 1, 0};
    std::copy(labels, labels + 6, f.bottom(1).data());
    GradientCheckOptions o;
    o.skip_bottoms = {1};
    CheckGradient(f, o);
  }
}

}  // namespace cortado::test
