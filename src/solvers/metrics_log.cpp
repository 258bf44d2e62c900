// metrics_log.cpp — the training metrics file, JSON lines (metrics_log.hpp).
#include "cortado/metrics_log.hpp"

#include <cerrno>
#include <charconv>
#include <cstdlib>
#include <cmath>
#include <cstring>
#include <nlohmann/json.hpp>

#include "cortado/error.hpp"
#include "cortado/io.hpp"

namespace cortado {

namespace {

using Json = nlohmann::ordered_json;

// A float as JSON: its shortest decimal form (0.01, not 0.009999999776), or null when not finite.
Json Number(float value) {
  if (!std::isfinite(value)) return Json(nullptr);
  char text[32];
  const auto end = std::to_chars(text, text + sizeof text, value).ptr;
  return Json(std::strtod(std::string(text, end).c_str(), nullptr));
}

Json Outputs(const std::vector<MetricsLog::Output>& outputs) {
  Json json = Json::object();
  for (const auto& output : outputs) {
    if (output.values.size() == 1) {
      json[output.name] = Number(output.values[0]);
    } else {
      Json list = Json::array();
      for (float value : output.values) list.push_back(Number(value));
      json[output.name] = list;
    }
  }
  return json;
}

// The lines of the file at path whose "iteration" is below `before` (unparsable lines are dropped).
std::string LinesBefore(const std::string& path, int before) {
  std::ifstream in(path);
  std::string kept, line;
  while (std::getline(in, line)) {
    const Json json = Json::parse(line, nullptr, /*allow_exceptions=*/false);
    if (json.is_object() && json.contains("iteration") && json["iteration"].is_number_integer() &&
        json["iteration"].get<int>() < before)
      kept += line + "\n";
  }
  return kept;
}

// What every line begins with: the iteration, the seconds since `start`, the Unix time and the phase.
Json Head(int iteration, const char* phase, std::chrono::steady_clock::time_point start) {
  using namespace std::chrono;
  return {{"iteration", iteration},
          {"seconds", duration<double>(steady_clock::now() - start).count()},
          {"time", duration<double>(system_clock::now().time_since_epoch()).count()},
          {"phase", phase}};
}

}  // namespace

MetricsLog::MetricsLog(const std::string& path, int resume_iter) : start_(std::chrono::steady_clock::now()) {
  const std::string kept = resume_iter >= 0 && FileExists(path) ? LinesBefore(path, resume_iter) : "";
  out_.open(path, std::ios::out | std::ios::trunc);
  CORTADO_REQUIRE(out_.good(), "cannot write the metrics file '", path, "': ", std::strerror(errno));
  out_ << kept;
  out_.flush();
}

void MetricsLog::WriteLine(const std::string& line) {
  out_ << line << '\n';
  out_.flush();
}

void MetricsLog::Train(int iteration, float learning_rate, float loss, const std::vector<Output>& outputs) {
  Json json = Head(iteration, "train", start_);
  json["learning_rate"] = Number(learning_rate);
  json["loss"] = Number(loss);
  json["outputs"] = Outputs(outputs);
  WriteLine(json.dump());
}

void MetricsLog::Test(int iteration, int test_net, float learning_rate, const std::vector<Output>& outputs) {
  Json json = Head(iteration, "test", start_);
  json["test_net"] = test_net;
  json["learning_rate"] = Number(learning_rate);
  json["outputs"] = Outputs(outputs);
  WriteLine(json.dump());
}

}  // namespace cortado
