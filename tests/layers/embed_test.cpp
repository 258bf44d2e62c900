// embed_test.cpp — Embed: rows of W by hand (with and without bias), the top's shape, accumulated
// weight gradients for repeated indices, bad indices and parameters as one-line errors, the refusal of
// a gradient for the indices, and a gradient check of W and b.
#include "cortado/error.hpp"
#include "index_gradient.hpp"
#include "test_util.hpp"

namespace cortado::test {

TEST(Embed, ForwardAndBackwardMatchHandComputedValues) {
  LayerFixture f("name: 'e' type: 'Embed' embed_param { num_output: 3 input_dim: 4 }", {{2, 2}});
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{2, 2, 3}));
  ASSERT_EQ(f.layer().blobs().size(), 2u);
  ASSERT_EQ(f.layer().blobs()[0]->shape(), (std::vector<int>{4, 3}));
  ASSERT_EQ(f.layer().blobs()[1]->shape(), (std::vector<int>{3}));
  for (int i = 0; i < 12; ++i) f.layer().blobs()[0]->data()[i] = static_cast<float>(i);  // W[r][c] = 3r + c
  const float b[] = {0.5f, -1, 2};
  std::copy(b, b + 3, f.layer().blobs()[1]->data());
  const float x[] = {2, 0, 3, 2};
  std::copy(x, x + 4, f.bottom(0).data());
  f.Forward();
  for (int i = 0; i < 4; ++i)
    for (int c = 0; c < 3; ++c) EXPECT_FLOAT_EQ(f.top(0).data()[i * 3 + c], 3 * x[i] + c + b[c]) << i << "," << c;

  for (int i = 0; i < 12; ++i) f.top(0).diff()[i] = static_cast<float>(i + 1);
  f.bottom(0).diff()[0] = 42.0f;
  BackwardWithout(f, {0});
  const float* dw = f.layer().blobs()[0]->diff();
  // Row 2 is picked by inputs 0 and 3: (1,2,3) + (10,11,12); row 0 by input 1; row 3 by input 2; row 1 by none.
  const float expected_dw[] = {4, 5, 6, 0, 0, 0, 11, 13, 15, 7, 8, 9};
  for (int i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(dw[i], expected_dw[i]) << i;
  const float expected_db[] = {1 + 4 + 7 + 10, 2 + 5 + 8 + 11, 3 + 6 + 9 + 12};
  for (int c = 0; c < 3; ++c) EXPECT_FLOAT_EQ(f.layer().blobs()[1]->diff()[c], expected_db[c]);
  EXPECT_EQ(f.bottom(0).diff()[0], 42.0f);  // the indices get nothing

  // Backward accumulates into the learnable blobs.
  f.layer().Backward(f.top(), {false}, f.bottom());
  for (int i = 0; i < 12; ++i) EXPECT_FLOAT_EQ(dw[i], 2 * expected_dw[i]) << i;
  EXPECT_FLOAT_EQ(f.layer().blobs()[1]->diff()[0], 2 * expected_db[0]);
}

TEST(Embed, WithoutBiasAndWithFillers) {
  LayerFixture f("type: 'Embed' embed_param { num_output: 2 input_dim: 3 bias_term: false "
                 "weight_filler { type: 'constant' value: 0.25 } }",
                 {{3}});
  ASSERT_EQ(f.layer().blobs().size(), 1u);
  ASSERT_EQ(f.top(0).shape(), (std::vector<int>{3, 2}));
  for (int i = 0; i < 6; ++i) EXPECT_EQ(f.layer().blobs()[0]->data()[i], 0.25f);
  const float w[] = {1, 2, 3, 4, 5, 6};
  std::copy(w, w + 6, f.layer().blobs()[0]->data());
  const float x[] = {1, 1, 0};
  std::copy(x, x + 3, f.bottom(0).data());
  f.Forward();
  const float y[] = {3, 4, 3, 4, 1, 2};
  for (int i = 0; i < 6; ++i) EXPECT_EQ(f.top(0).data()[i], y[i]) << i;
}

TEST(Embed, BadIndexIsAnErrorNamingTheLayer) {
  for (float bad : {4.0f, -1.0f, 1.5f, -0.5f}) {
    LayerFixture f("name: 'e' type: 'Embed' embed_param { num_output: 2 input_dim: 4 }", {{3}});
    const float x[] = {0, bad, 3};
    std::copy(x, x + 3, f.bottom(0).data());
    const std::string message = ErrorOf([&] { f.Forward(); });
    EXPECT_NE(message.find("layer e (Embed): input "), std::string::npos) << message;
    EXPECT_NE(message.find("(at position 1) is not an index; inputs must be integers in [0, 4)"), std::string::npos)
        << message;
    EXPECT_EQ(message.find('\n'), std::string::npos);
  }
  LayerFixture f("type: 'Embed' embed_param { num_output: 2 input_dim: 4 }", {{2}});
  f.bottom(0).data()[0] = 0;
  f.bottom(0).data()[1] = std::nanf("");
  EXPECT_THROW(f.Forward(), Error);
}

TEST(Embed, ParameterErrorsNameTheLayer) {
  EXPECT_NE(ErrorOf([] { LayerFixture("name: 'e' type: 'Embed' embed_param { input_dim: 4 }", {{2}}); })
                .find("layer e (Embed): embed_param.num_output must be positive"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] { LayerFixture("name: 'e' type: 'Embed' embed_param { num_output: 4 }", {{2}}); })
                .find("layer e (Embed): embed_param.input_dim must be positive"),
            std::string::npos);
  EXPECT_NE(ErrorOf([] {
              LayerFixture("name: 'e' type: 'Embed' embed_param { num_output: 1 input_dim: 1 }", {{2}, {2}});
            })
                .find("layer e (Embed)"),
            std::string::npos);
}

TEST(Embed, GradientOfTheIndicesIsRefused) {
  LayerFixture f("name: 'e' type: 'Embed' embed_param { num_output: 2 input_dim: 4 }", {{2}});
  f.bottom(0).data()[0] = 1;
  f.bottom(0).data()[1] = 3;
  f.Forward();
  EXPECT_NE(ErrorOf([&] { f.Backward(); }).find("layer e (Embed): cannot backpropagate to its input"),
            std::string::npos);
  EXPECT_FALSE(f.layer().AllowForceBackward(0));
}

TEST(Embed, GradientCheck) {
  for (const char* bias : {"true", "false"}) {
    SCOPED_TRACE(bias);
    LayerFixture f(std::string("type: 'Embed' embed_param { num_output: 3 input_dim: 5 bias_term: ") + bias +
                       " weight_filler { type: 'gaussian' } bias_filler { type: 'gaussian' } }",
                   {{2, 3}});
    const float x[] = {4, 0, 2, 2, 1, 4};
    std::copy(x, x + 6, f.bottom(0).data());
    CheckGradientWithoutIndices(f, {0});
  }
}

}  // namespace cortado::test
