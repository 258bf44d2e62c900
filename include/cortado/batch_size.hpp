// batch_size.hpp — one batch size for a whole net, without editing its prototxt (trainer's
// --batch_size, for sweeps and memory plans).
#pragma once

#include <string>

#include "cortado/cortado.pb.h"

namespace cortado {

// Sets the batch of every layer that makes one: dim 0 of Input's and DummyData's shapes (and of the
// legacy net-level input shapes), batch_size of Data, ImageData, HDF5Data, WindowData and
// MemoryData. Returns the number of layers (or legacy inputs) changed. batch must be positive.
int SetBatchSize(NetParameter* net, int batch);

// Replaces a solver's net paths (net, train_net, test_net) by the nets they name (net_param, ...), read
// relative to the working directory as the solver reads them, keeping the order of the test nets.
void InlineNetFiles(SolverParameter* solver);

// The same for every net of a solver: nets given by path are read (relative to the working
// directory, as the solver reads them) and inlined. An Error when no net has a batch to set.
void SetBatchSize(SolverParameter* solver, int batch);

}  // namespace cortado
