// suggest.hpp — "did you mean ...?" for a misspelt name (layer types, flags, commands).
#pragma once

#include <string>
#include <vector>

namespace cortado {

// The choice closest to `word` by case-insensitive edit distance, or "" when none is close (more than
// half of the word would have to change).
std::string ClosestMatch(const std::string& word, const std::vector<std::string>& choices);

}  // namespace cortado
