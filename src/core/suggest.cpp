// suggest.cpp — the closest of several names by edit distance, for "did you mean" hints.
#include "cortado/suggest.hpp"

#include <algorithm>
#include <cctype>
#include <cstdint>

namespace cortado {

namespace {

// Levenshtein distance, case-insensitive.
size_t Distance(const std::string& a, const std::string& b) {
  std::vector<size_t> row(b.size() + 1);
  for (size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (size_t i = 1; i <= a.size(); ++i) {
    size_t diagonal = row[0];
    row[0] = i;
    for (size_t j = 1; j <= b.size(); ++j) {
      const size_t above = row[j];
      const bool same = std::tolower(static_cast<unsigned char>(a[i - 1])) ==
                        std::tolower(static_cast<unsigned char>(b[j - 1]));
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (same ? 0 : 1)});
      diagonal = above;
    }
  }
  return row[b.size()];
}

}  // namespace

std::string ClosestMatch(const std::string& word, const std::vector<std::string>& choices) {
  std::string closest;
  size_t best = SIZE_MAX;
  for (const auto& choice : choices) {
    const size_t d = Distance(word, choice);
    if (d < best) best = d, closest = choice;
  }
  return best <= std::max<size_t>(word.size() / 2, 1) ? closest : "";
}

}  // namespace cortado
