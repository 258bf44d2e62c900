// error.hpp — the two kinds of error in Cortado.
//
// A user's mistake (bad prototxt, missing file, shape mismatch, bad label) throws cortado::Error with
// a message that names the file:line or the layer; tools turn it into one line on stderr and exit 1.
// A broken internal invariant is a glog CHECK, which aborts.
#pragma once

#include <sstream>
#include <stdexcept>
#include <string>

namespace cortado {

class Error : public std::runtime_error {
 public:
  explicit Error(const std::string& message) : std::runtime_error(message) {}
};

namespace detail {
inline void AppendAll(std::ostringstream&) {}
template <typename T, typename... Rest>
void AppendAll(std::ostringstream& out, const T& first, const Rest&... rest) {
  out << first;
  AppendAll(out, rest...);
}
}  // namespace detail

// Builds a message from its pieces: Fail("layer ", name, ": kernel ", k, " is larger than ", n).
template <typename... Parts>
[[noreturn]] void Fail(const Parts&... parts) {
  std::ostringstream out;
  detail::AppendAll(out, parts...);
  throw Error(out.str());
}

// Throws a user-facing Error when the condition does not hold.
#define CORTADO_REQUIRE(condition, ...)            \
  do {                                             \
    if (!(condition)) ::cortado::Fail(__VA_ARGS__); \
  } while (0)

}  // namespace cortado
