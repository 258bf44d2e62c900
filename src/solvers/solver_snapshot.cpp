// solver_snapshot.cpp — a Solver's snapshots and their restoring: the .caffemodel and .solverstate files
// (binary protos or Caffe's HDF5 layout), with the update rule's history, the generators' states (every
// rank's, in data-parallel training) and the data readers' positions, so a resumed run goes on exactly.
#include "cortado/solver.hpp"

#include <glog/logging.h>
#include <google/protobuf/text_format.h>

#include <unistd.h>  // access

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <cmath>
#include <filesystem>
#include <sstream>

#include "cortado/batch_pipeline.hpp"  // RecordSeed
#include "cortado/batch_size.hpp"      // InlineNetFiles
#include "cortado/error.hpp"
#include "cortado/gpu_step.hpp"
#include "cortado/hdf5.hpp"
#include "cortado/io.hpp"
#include "cortado/math_gpu.hpp"
#include "cortado/parallel.hpp"
#include "cortado/update_rules.hpp"
#include "cortado/upgrade.hpp"

namespace cortado {

// Snapshots go to snapshot_prefix's directory (the solver's own when there is no prefix): a directory
// that is missing or not writable is reported now, not after the training.
void Solver::CheckSnapshotDirectory() const {
  const std::filesystem::path prefix(SnapshotFilename(""));
  std::filesystem::path dir = prefix.parent_path();
  if (dir.empty()) dir = ".";
  const std::string where = param_.snapshot_prefix().empty()
                                ? "snapshots go beside the solver (no snapshot_prefix), in '" + dir.string() + "'"
                                : "snapshot_prefix '" + param_.snapshot_prefix() + "'";
  std::error_code ec;
  CORTADO_REQUIRE(std::filesystem::is_directory(dir, ec), solver_path_, ": ", where, ": directory '", dir.string(),
                  "' does not exist; create it first");
  CORTADO_REQUIRE(::access(dir.c_str(), W_OK | X_OK) == 0, solver_path_, ": ", where, ": cannot write in directory '",
                  dir.string(), "': ", std::strerror(errno));
}

std::string Solver::SnapshotPrefix() const {
  if (!param_.snapshot_prefix().empty()) return param_.snapshot_prefix();
  const std::filesystem::path p(solver_path_);
  return (p.parent_path() / p.stem()).string();
}

std::string Solver::SnapshotFilename(const std::string& extension) const {
  return SnapshotPrefix() + "_iter_" + std::to_string(iter_) + extension;
}

std::string Solver::Snapshot() {
  if (stepper_) CheckGpuDivergence();  // a snapshot never holds diverged weights
  std::string rank_rng_states;  // data parallel: every rank's generator, one per line, on rank 0
  if (ranks_ != nullptr) {
    for (const std::string& rank_state : ranks_->GatherOnRoot(ctx_.SaveRngState()))
      rank_rng_states += rank_state + "\n";
    if (!is_root()) return "";
  }
  // Caffe's two formats: binary protos, or the same messages in its HDF5 layout (hdf5.hpp).
  const bool hdf5 = param_.snapshot_format() == SolverParameter::HDF5;
  const char* format = hdf5 ? "HDF5 file " : "binary proto file ";
  const std::string model = SnapshotFilename(hdf5 ? ".caffemodel.h5" : ".caffemodel");
  LOG(INFO) << "Snapshotting to " << format << model;
  ctx_.Synchronize();  // a GPU's last update may still be running: the copies below read its results
  NetParameter net_param;
  net_->ToProto(&net_param, param_.snapshot_diff());
  if (hdf5) {
    WriteNetParameterToHdf5(net_param, model);
  } else {
    WriteProtoToBinaryFile(net_param, model);
  }

  const std::string state_path = SnapshotFilename(hdf5 ? ".solverstate.h5" : ".solverstate");
  LOG(INFO) << "Snapshotting solver state to " << format << state_path;
  SolverState state;
  state.set_iter(iter_);
  state.set_learned_net(model);
  state.set_current_step(CurrentStep(param_, std::max(iter_ - 1, 0)));
  // History, one BlobProto per learnable parameter, buffer by buffer (a GPU's through a host copy).
  std::vector<float> host;
  for (float* h : history_) {
    if (ctx_.device() == Device::kGPU) {
      host.resize(static_cast<size_t>(net_->param_count()));
      gpu_download(ctx_, net_->param_count(), h, host.data());
      h = host.data();
    }
    int64_t offset = 0;
    for (const Blob* p : net_->learnable_params()) {
      BlobProto* proto = state.add_history();
      for (int d : p->shape()) proto->mutable_shape()->add_dim(d);
      proto->mutable_data()->Add(h + offset, h + offset + p->count());
      offset += p->count();
    }
  }
  state.set_rng_state(ctx_.SaveRngState());
  if (ranks_ != nullptr) {
    state.set_ranks(ranks_->size());
    state.set_rank_rng_states(rank_rng_states);
  }
  if (net_->loss_scale() != 1.0f || net_->loss_scaling().dynamic || net_->loss_scaling().adaptive) {
    state.set_loss_scale(net_->loss_scale());
    state.set_loss_scale_clean_steps(clean_steps_);
    if (stepper_ && stepper_->device_loss_scale()) {  // the device keeps a GPU run's scale
      const GpuStepper::LossScaleState s = stepper_->LossScale();
      state.set_loss_scale(s.scale);
      state.set_loss_scale_clean_steps(s.clean_steps);
    }
  }
  for (const Layer* reader : Readers()) {
    state.add_reader_position(reader->reader_state().position);
    state.add_reader_seed(reader->reader_state().seed);
  }
  if (hdf5) {
    WriteSolverStateToHdf5(state, state_path);
  } else {
    WriteProtoToBinaryFile(state, state_path);
  }
  if (resolved_) {
    const SolverParameter resolved = *resolved_;
    resolved_.reset();  // only the first snapshot writes them
    const std::string solver_path = SnapshotPrefix() + "_resolved_solver.prototxt";
    const std::string net_path = SnapshotPrefix() + "_resolved_net.prototxt";
    auto write = [&](const google::protobuf::Message& message, const std::string& path, const std::string& what) {
      std::string text;
      google::protobuf::TextFormat::PrintToString(message, &text);
      WriteAtomically(path, "# " + what + " of the run of " + solver_path_ + " as it ran: the command line's flags, " +
                                "the upgrades of old formats and the solver's rules for its nets applied.\n" + text);
    };
    write(resolved.has_train_net_param() ? resolved.train_net_param() : resolved.net_param(), net_path,
          "The training net");
    write(resolved, solver_path, "The solver (trainer train --solver=<this file> runs it again)");
    LOG(INFO) << "Wrote the solver and net of this run, as resolved, to " << solver_path << " and " << net_path;
  }
  return state_path;
}

void Solver::WriteResolvedAtFirstSnapshot() { resolved_ = std::make_unique<SolverParameter>(ResolvedParameter()); }

SolverParameter Solver::ResolvedParameter() const {
  SolverParameter resolved(param_);
  InlineNetFiles(&resolved);
  auto resolve = [&](NetParameter* net) {
    if (NetNeedsUpgrade(*net)) UpgradeNet(net, solver_path_);
    ApplyNetRules(net);
  };
  if (resolved.has_train_net_param()) resolve(resolved.mutable_train_net_param());
  if (resolved.has_net_param()) resolve(resolved.mutable_net_param());
  for (NetParameter& net : *resolved.mutable_test_net_param()) resolve(&net);
  resolved.set_type(rule_->type());
  resolved.clear_solver_type();
  resolved.set_random_seed(ranks_ != nullptr ? param_.random_seed() : ctx_.seed());
  return resolved;
}

// Everything a solver state could be refused for is checked before anything changes, so that a failed
// Restore (a solverstate of another net, say) leaves the solver as it was: a script that catches the
// error may go on from where it stood.
void Solver::Restore(const std::string& path) {
  ctx_.Synchronize();  // nothing queued on a GPU may still write what is about to be replaced
  SolverState state;
  if (IsHdf5Path(path)) {
    state = ReadSolverStateFromHdf5(path);
  } else {
    ReadProtoFromBinaryFile(path, &state);
  }
  CORTADO_REQUIRE(!PathEndsWith(path, ".caffemodel") && !PathEndsWith(path, ".caffemodel.h5"), path, " is a weights file, not a "
                  "solver state: resume from the .solverstate written with it, or fine-tune from it as weights "
                  "(trainer --weights, net.copy_from)");
  // Another message read as a SolverState keeps its fields as unknown ones (a .caffemodel's name, layers).
  CORTADO_REQUIRE(state.history_size() > 0 || state.has_learned_net() ||
                      state.GetReflection()->GetUnknownFields(state).empty(),
                  path, " is not a solver state (no history, no weights file, and fields a solver state does not "
                  "have); resume from the .solverstate a snapshot wrote");
  CORTADO_REQUIRE(state.iter() >= 0, path, ": iter is ", state.iter(), "; a snapshot's iteration is never negative "
                  "(a damaged or hand-edited solver state?)");
  NetParameter learned;
  std::string model;
  if (state.has_learned_net()) {
    model = state.learned_net();
    // A relative model path is tried as written, then beside the solverstate.
    if (!FileExists(model)) {
      const auto beside = std::filesystem::path(path).parent_path() / std::filesystem::path(model).filename();
      if (FileExists(beside.string())) model = beside.string();
    }
    learned = Net::ReadTrainedNet(model);
    try {
      net_->CheckTrainedLayers(learned);
    } catch (const Error& e) {
      Fail(path, ": its weights ", model, " are not this net's: ", e.what());
    }
  }
  const int expected = static_cast<int>(net_->learnable_params().size()) * rule_->num_history();
  CORTADO_REQUIRE(state.history_size() == expected, path, ": holds ", state.history_size(),
                  " history blobs but this ", rule_->type(), " solver on this net needs ", expected);
  for (int index = 0; index < expected; ++index) {
    const Blob* p = net_->learnable_params()[index % net_->learnable_params().size()];
    CORTADO_REQUIRE(state.history(index).data_size() == p->count(), path, ": history blob ", index, " holds ",
                    state.history(index).data_size(), " values but its parameter has ", p->count());
  }
  if (state.has_loss_scale())
    CORTADO_REQUIRE(std::isfinite(state.loss_scale()) && state.loss_scale() > 0, path, ": loss_scale is ",
                    state.loss_scale(), "; a loss scale is a positive number (a damaged solver state?)");
  if (state.has_rng_state()) Context::CheckRngState(state.rng_state(), path);
  const std::string rank_rng = RankRngState(state, path);
  if (!rank_rng.empty()) Context::CheckRngState(rank_rng, path);

  // ---- nothing below refuses the state
  iter_ = state.iter();
  if (state.has_learned_net()) net_->CopyTrainedLayersFrom(learned);
  int index = 0;
  std::vector<float> host;  // a GPU's history is assembled here, then copied
  for (float* h : history_) {
    float* target = h;
    if (ctx_.device() == Device::kGPU) {
      host.assign(static_cast<size_t>(net_->param_count()), 0.0f);
      target = host.data();
    }
    int64_t offset = 0;
    for (const Blob* p : net_->learnable_params()) {
      const BlobProto& proto = state.history(index++);
      std::copy(proto.data().begin(), proto.data().end(), target + offset);
      offset += p->count();
    }
    if (ctx_.device() == Device::kGPU) gpu_upload(ctx_, net_->param_count(), host.data(), h);
  }
  if (state.has_loss_scale()) {
    net_->SetLossScale(state.loss_scale());
    clean_steps_ = std::max(state.loss_scale_clean_steps(), 0);
    if (stepper_) stepper_->SetLossScale(state.loss_scale(), clean_steps_);
  }
  if (state.has_rng_state()) ctx_.RestoreRngState(state.rng_state());
  if (!rank_rng.empty()) {
    ctx_.RestoreRngState(rank_rng);
  } else {
    ReseedRankAfterRestore(state, path);
  }
  RestoreReaders(state, path);
}

// Data parallel: each rank takes its own generator back from a snapshot of as many ranks (this rank's
// line, returned here; "" otherwise). The reader positions count every rank's records, so the data goes
// on exactly with any number of ranks.
std::string Solver::RankRngState(const SolverState& state, const std::string& path) const {
  const int ranks = ranks_ != nullptr ? ranks_->size() : 1;
  const int saved = state.has_ranks() ? state.ranks() : 1;
  if (saved != ranks || ranks_ == nullptr) return "";  // one rank: rng_state was rank 0's
  std::vector<std::string> lines;
  std::istringstream in(state.rank_rng_states());
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  CORTADO_REQUIRE(static_cast<int>(lines.size()) == ranks, path, ": holds ", lines.size(),
                  " rank generator states for ", ranks, " ranks");
  return lines[ranks_->rank()];
}

// A snapshot of another number of ranks: the data goes on, the ranks' other draws start afresh.
void Solver::ReseedRankAfterRestore(const SolverState& state, const std::string& path) {
  const int ranks = ranks_ != nullptr ? ranks_->size() : 1;
  const int saved = state.has_ranks() ? state.ranks() : 1;
  if (saved == ranks) return;
  LOG_IF(WARNING, is_root()) << path << " was written by " << saved << " rank" << (saved == 1 ? "" : "s")
                             << " and this run has " << ranks << ": the data goes on where it stood, but random "
                             << "draws after the data (dropout) differ from an uninterrupted run";
  if (ranks_ != nullptr && ranks_->rank() > 0)
    ctx_.Reseed(static_cast<int64_t>(RecordSeed(param_.random_seed() + state.iter(), ranks_->rank()) >> 1));
}

std::vector<Layer*> Solver::Readers() const {
  std::vector<Layer*> readers;
  auto collect = [&readers](const Net& net) {
    for (const auto& layer : net.layers())
      if (layer->HasReader()) readers.push_back(layer.get());
  };
  collect(*net_);
  for (const auto& test_net : test_nets_) collect(*test_net);
  return readers;
}

void Solver::RestoreReaders(const SolverState& state, const std::string& path) {
  const std::vector<Layer*> readers = Readers();
  if (readers.empty()) return;
  const int saved = state.reader_position_size();
  if (saved == 0) {
    LOG(WARNING) << path << " holds no data-reader positions (a Caffe solver state?): the data "
                 << "restarts from the beginning of each dataset";
    return;
  }
  if (saved != static_cast<int>(readers.size()) || state.reader_seed_size() != saved) {
    LOG(WARNING) << path << " holds positions for " << saved << " data readers but these nets have "
                 << readers.size() << ": the data restarts from the beginning of each dataset";
    return;
  }
  for (int i = 0; i < saved; ++i)
    readers[i]->RestoreReaderState({state.reader_position(i), state.reader_seed(i)});
}

}  // namespace cortado
