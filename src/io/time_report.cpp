// time_report.cpp — writes trainer time's results as CSV or JSON (time_report.hpp).
#include "cortado/time_report.hpp"

#include <filesystem>
#include <fstream>
#include <iomanip>
#include <nlohmann/json.hpp>

#include "cortado/error.hpp"
#include "cortado/io.hpp"

namespace cortado {

namespace {

// A CSV field: quoted (with doubled quotes) when it holds a comma, a quote or a line break.
std::string CsvField(const std::string& text) {
  if (text.find_first_of(",\"\r\n") == std::string::npos) return text;
  std::string quoted = "\"";
  for (char c : text) quoted += c == '"' ? std::string("\"\"") : std::string(1, c);
  return quoted + "\"";
}

void WriteCsv(const TimeReport& r, std::ostream& out) {
  out << std::setprecision(9);
  out << "model,phase,device,threads,batch_size,iterations,layer,type,forward_ms,backward_ms,"
         "forward_backward_ms,images_per_s\n";
  const auto prefix = [&] {
    out << CsvField(r.model) << ',' << r.phase << ',' << CsvField(r.device) << ',' << r.threads << ','
        << r.batch_size << ',' << r.iterations << ',';
  };
  for (const LayerTime& layer : r.layers) {
    prefix();
    out << CsvField(layer.name) << ',' << CsvField(layer.type) << ',' << layer.forward_ms << ',' << layer.backward_ms
        << ",,\n";
  }
  prefix();
  out << "total,," << r.forward_ms << ',' << r.backward_ms << ',' << r.forward_backward_ms << ',' << r.images_per_s()
      << '\n';
}

void WriteJson(const TimeReport& r, std::ostream& out) {
  nlohmann::ordered_json layers = nlohmann::ordered_json::array();
  for (const LayerTime& layer : r.layers)
    layers.push_back({{"name", layer.name}, {"type", layer.type}, {"forward_ms", layer.forward_ms},
                      {"backward_ms", layer.backward_ms}});
  const nlohmann::ordered_json json = {
      {"model", r.model},           {"phase", r.phase},
      {"device", r.device},         {"threads", r.threads},
      {"batch_size", r.batch_size}, {"iterations", r.iterations},
      {"layers", layers},           {"forward_ms", r.forward_ms},
      {"backward_ms", r.backward_ms}, {"forward_backward_ms", r.forward_backward_ms},
      {"total_ms", r.total_ms},     {"images_per_s", r.images_per_s()}};
  out << json.dump(2) << '\n';
}

}  // namespace

bool IsTimeReportPath(const std::string& path) {
  const std::filesystem::path extension = std::filesystem::path(path).extension();
  return extension == ".csv" || extension == ".json";
}

void WriteTimeReport(const TimeReport& report, const std::string& path) {
  CORTADO_REQUIRE(IsTimeReportPath(path), "--output=", path, ": name a .csv or a .json file");
  WriteFileAtomically(path, [&](const std::string& temp) {
    std::ofstream out(temp);
    CORTADO_REQUIRE(out.good(), "cannot write '", path, "'");
    if (std::filesystem::path(path).extension() == ".json") {
      WriteJson(report, out);
    } else {
      WriteCsv(report, out);
    }
    out.close();
    CORTADO_REQUIRE(!out.fail(), "cannot write '", path, "'");
  });
}

}  // namespace cortado
