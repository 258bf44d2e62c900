// image_list.cpp — ReadImageList: the "relative/path label" list files of ImageData and
// convert_imageset, one parser for both.
#include <cerrno>
#include <cctype>
#include <climits>
#include <cstdlib>
#include <fstream>

#include "cortado/data/image_list.hpp"
#include "cortado/data/records.hpp"
#include "cortado/error.hpp"

namespace cortado {

std::vector<ImageListEntry> ReadImageList(const std::string& list_path) {
  std::ifstream in(list_path);
  CORTADO_REQUIRE(in.good(), "cannot open list file '", list_path, "'");
  std::vector<ImageListEntry> entries;
  std::string text;
  for (int line = 1; std::getline(in, text); ++line) {
    while (!text.empty() && std::isspace(static_cast<unsigned char>(text.back()))) text.pop_back();
    if (text.find_first_not_of(" \t") == std::string::npos) continue;
    const size_t space = text.find_last_of(" \t");
    const std::string label = space == std::string::npos ? "" : text.substr(space + 1);
    const std::string path = space == std::string::npos ? text : text.substr(0, space);
    char* end = nullptr;
    errno = 0;
    const long value = std::strtol(label.c_str(), &end, 10);
    CORTADO_REQUIRE(!path.empty() && !label.empty() && *end == '\0' && errno == 0 && value >= INT_MIN &&
                        value <= INT_MAX,
                    list_path, ":", line, ": expected 'relative/path label', got '", PrintableKey(text), "'");
    entries.push_back({path, static_cast<int>(value), line});
  }
  return entries;
}

}  // namespace cortado
