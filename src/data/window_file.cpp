// window_file.cpp — ReadWindowFile (window_file.hpp): an R-CNN window file, read token by token as Caffe
// reads it, with every token's line kept for the one-line errors; windows sorted into foreground and
// background as they are read, the others dropped (a VOC window file holds millions).
#include <algorithm>
#include <charconv>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <string_view>

#include "cortado/window_file.hpp"

#include "cortado/data/records.hpp"  // PrintableKey
#include "cortado/error.hpp"

namespace cortado {

namespace {

// The white-space separated tokens of a stream, each with its line. A token stays valid until the
// next call of Next.
class Tokens {
 public:
  explicit Tokens(std::istream& in) : in_(in) {}
  bool Next(std::string_view* token) {
    static constexpr const char* kSpace = " \t\r\n\v\f";
    for (;;) {
      const size_t begin = text_.find_first_not_of(kSpace, pos_);
      if (begin != std::string::npos) {
        pos_ = std::min(text_.find_first_of(kSpace, begin), text_.size());
        *token = std::string_view(text_).substr(begin, pos_ - begin);
        return true;
      }
      if (!std::getline(in_, text_)) return false;
      ++line_;
      pos_ = 0;
    }
  }
  int line() const { return line_; }  // of the last token (or the last line read)

 private:
  std::istream& in_;
  std::string text_;
  size_t pos_ = 0;
  int line_ = 0;
};

class Parser {
 public:
  Parser(const std::string& path, std::istream& in) : path_(path), tokens_(in) {}

  template <typename... Parts>
  [[noreturn]] void FailHere(const Parts&... parts) const {
    Fail(path_, ":", tokens_.line(), ": ", parts...);
  }

  bool Next(std::string_view* token) { return tokens_.Next(token); }
  // The next token, which must be there: `what` names it for the error at the end of the file.
  std::string_view Expect(const std::string& what) {
    std::string_view token;
    if (!tokens_.Next(&token)) FailHere("the file ends where ", what, " should be");
    return token;
  }
  template <typename T>
  T Number(const std::string& what, std::string_view token) const {
    T value{};
    const auto [end, ec] = std::from_chars(token.data(), token.data() + token.size(), value);
    if (ec != std::errc() || end != token.data() + token.size())
      FailHere("expected ", what, " (", std::is_integral_v<T> ? "an integer" : "a number", "), got '",
               PrintableKey(token), "'");
    return value;
  }
  template <typename T>
  T Read(const std::string& what) { return Number<T>(what, Expect(what)); }
  int line() const { return tokens_.line(); }

 private:
  const std::string& path_;
  Tokens tokens_;
};

}  // namespace

WindowFile ReadWindowFile(const std::string& path, const std::string& root_folder, float fg_threshold,
                          float bg_threshold) {
  std::ifstream in(path);
  CORTADO_REQUIRE(in.good(), "cannot open window file '", path, "'");
  Parser parser(path, in);
  WindowFile file;
  std::string_view token;
  CORTADO_REQUIRE(parser.Next(&token), path, ": the window file holds no images");
  int last_count = 0;
  for (int index = 0;; ++index) {
    if (token != "#") {
      const bool number = index > 0 && token.find_first_not_of("-.0123456789") == std::string_view::npos;
      parser.FailHere("expected '# ", index, "' to start image ", index, "'s block, got '", PrintableKey(token),
                      "'", number ? " (more windows than the " + std::to_string(last_count) + " image " +
                                        std::to_string(index - 1) + " declares?)"
                                  : "");
    }
    const int given = parser.Read<int>("the image index after '#'");
    if (given != index)
      parser.FailHere("image index ", given, " is out of order: expected ", index, " (blocks are numbered 0, 1, 2, ...)");
    WindowImage image;
    image.path = root_folder + std::string(parser.Expect("image " + std::to_string(index) + "'s path"));
    image.line = parser.line();
    std::error_code ec;
    if (!std::filesystem::is_regular_file(image.path, ec))
      parser.FailHere("image '", image.path, "' does not exist", root_folder.empty() ? "" : " (root_folder prepended)");
    image.channels = parser.Read<int>("the image's channels");
    if (image.channels != 1 && image.channels != 3) parser.FailHere("channels is ", image.channels, "; expected 3 or 1");
    if (!file.images.empty() && image.channels != file.images[0].channels)
      parser.FailHere("image ", index, " has ", image.channels, " channels but image 0 has ",
                      file.images[0].channels, "; every image must have the same");
    image.height = parser.Read<int>("the image's height");
    image.width = parser.Read<int>("the image's width");
    if (image.height <= 0 || image.width <= 0)
      parser.FailHere("the image's size ", image.height, "×", image.width, " (height × width) must be positive");
    const int count = parser.Read<int>("image " + std::to_string(index) + "'s number of windows");
    if (count < 0) parser.FailHere("the number of windows is ", count);
    for (int i = 0; i < count; ++i) {
      std::string_view first;
      if (!parser.Next(&first) || first == "#")
        parser.FailHere("image ", index, " declares ", count, " windows but its block holds ", i);
      Window window;
      window.image = index;
      window.label = parser.Number<int>("a window's class index", first);
      window.line = parser.line();
      const float overlap = parser.Read<float>("the window's overlap");
      window.x1 = parser.Read<int>("the window's x1");
      window.y1 = parser.Read<int>("the window's y1");
      window.x2 = parser.Read<int>("the window's x2");
      window.y2 = parser.Read<int>("the window's y2");
      if (!std::isfinite(overlap)) parser.FailHere("the window's overlap is ", overlap);
      if (window.x1 > window.x2 || window.y1 > window.y2)
        parser.FailHere("window (", window.x1, ", ", window.y1, ")–(", window.x2, ", ", window.y2,
                        ") is empty: expected x1 ≤ x2 and y1 ≤ y2 (inclusive corners)");
      if (window.x1 < 0 || window.y1 < 0 || window.x2 >= image.width || window.y2 >= image.height)
        parser.FailHere("window (", window.x1, ", ", window.y1, ")–(", window.x2, ", ", window.y2,
                        ") lies outside image '", image.path, "' of ", image.width, "×", image.height,
                        " (width × height; corners from 0, inclusive)");
      if (overlap >= fg_threshold) {
        if (window.label <= 0)
          parser.FailHere("a foreground window (overlap ", overlap, " ≥ fg_threshold ", fg_threshold,
                          ") needs a class index > 0, got ", window.label);
        file.foreground.push_back(window);
      } else if (overlap < bg_threshold) {
        window.label = 0;
        file.background.push_back(window);
      } else {
        ++file.dropped;
      }
    }
    file.images.push_back(std::move(image));
    last_count = count;
    if (!parser.Next(&token)) break;
  }
  return file;
}

}  // namespace cortado
