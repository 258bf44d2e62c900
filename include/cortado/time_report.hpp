// time_report.hpp — trainer time's results as a file for scripts: per-layer forward and backward
// milliseconds and the pass totals, as CSV or JSON (trainer time --output=FILE.csv|FILE.json).
//
// CSV: a header, one row per layer, then a row named "total" whose type column is empty:
//   model,phase,device,threads,batch_size,iterations,layer,type,forward_ms,backward_ms,
//   forward_backward_ms,images_per_s
// (forward_backward_ms and images_per_s are filled on the total row only; images_per_s is
// batch_size / the forward-backward seconds).
// JSON: one object {"model", "phase", "device", "threads", "batch_size", "iterations",
//   "layers": [{"name", "type", "forward_ms", "backward_ms"}...], "forward_ms", "backward_ms",
//   "forward_backward_ms", "total_ms", "images_per_s"}.
#pragma once

#include <string>
#include <vector>

namespace cortado {

struct LayerTime {
  std::string name, type;
  double forward_ms = 0, backward_ms = 0;  // averages per iteration
};

struct TimeReport {
  std::string model, phase, device;  // device: "CPU" or "GPU <id>"
  int threads = 0;                   // CPU threads (OpenMP)
  int batch_size = 0;                // of the net's first data or input top
  int iterations = 0;
  std::vector<LayerTime> layers;
  double forward_ms = 0, backward_ms = 0, forward_backward_ms = 0;  // averages per iteration
  double total_ms = 0;                                               // all iterations
  double images_per_s() const { return forward_backward_ms > 0 ? batch_size * 1000.0 / forward_backward_ms : 0; }
};

// Whether path names a format WriteTimeReport writes (ends in .csv or .json).
bool IsTimeReportPath(const std::string& path);

// Writes the report to path (through a temporary file and a rename): JSON for .json, CSV for .csv.
void WriteTimeReport(const TimeReport& report, const std::string& path);

}  // namespace cortado
