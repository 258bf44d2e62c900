// metrics_log.hpp — the training metrics file for dashboards: one JSON object per line, written by
// Solver::Solve beside its snapshots (<snapshot prefix>_metrics.jsonl) at every display and test:
//   {"iteration":100,"seconds":1.52,"time":1795732181.5,"phase":"train","learning_rate":0.00992565,
//    "loss":0.2061,"outputs":{"loss":0.1917}}
//   {"iteration":500,"seconds":7.9,"time":1795732187.9,"phase":"test","test_net":0,
//    "learning_rate":0.00965,"outputs":{"accuracy":0.9712,"loss":0.0891}}
// "seconds" counts from the start of this run, "time" is the Unix time; "loss" is the displayed
// (smoothed) training loss; "outputs" are the net outputs as logged (an output of several values is
// a list). A number that is not finite is written as null. Each line is flushed as it is written, so
// a reader following the file sees it at once.
#pragma once

#include <chrono>
#include <fstream>
#include <string>
#include <vector>

namespace cortado {

class MetricsLog {
 public:
  struct Output {
    std::string name;
    std::vector<float> values;
  };

  // A fresh run (resume_iter < 0) starts the file empty. A resumed run keeps the lines of iterations
  // before resume_iter and drops the later ones (written after the snapshot it resumes from).
  // A file that cannot be written is an Error naming it.
  MetricsLog(const std::string& path, int resume_iter);

  void Train(int iteration, float learning_rate, float loss, const std::vector<Output>& outputs);
  void Test(int iteration, int test_net, float learning_rate, const std::vector<Output>& outputs);

 private:
  void WriteLine(const std::string& line);

  std::ofstream out_;
  std::chrono::steady_clock::time_point start_;
};

}  // namespace cortado
