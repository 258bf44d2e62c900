// hdf5.hpp — snapshots in Caffe's HDF5 layout (snapshot_format: HDF5): <prefix>_iter_N.caffemodel.h5
// and <prefix>_iter_N.solverstate.h5, read and written at the level of the proto messages.
//
// .caffemodel.h5   /data/<layer name>/<j>   float32 dataset, dims = shape of the layer's blob j
//                  /diff/<layer name>/<j>   the same for the gradients (only when some blob has diff)
// .solverstate.h5  /iter, /current_step     int32, dims {1}
//                  /learned_net             fixed-length C string, scalar (H5LTmake_dataset_string)
//                  /history/<i>             float32, dims = shape of history blob i
//                  /cortado_<field>         Cortado's own SolverState fields (numbers >= 1000: bytes as
//                                           uint8, integers and floats as themselves); Caffe ignores them
//                                           and a file without them reads with those fields unset.
//
// Also the reader of the HDF5Data layer (named numeric datasets of a file, read whole as floats) and
// the writer of the HDF5Output layer (float32 datasets that grow by rows, in a file kept open).
//
// Snapshot writes go through a temporary file and a rename (WriteFileAtomically). Every failure is a
// cortado::Error naming the file, with libhdf5's own reason; libhdf5 prints nothing on stderr.
// A build without libhdf5 links src/io/no_hdf5/, whose functions throw an Error saying so.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "cortado/cortado.pb.h"  // NetParameter, SolverState
#include "cortado/io.hpp"          // PathEndsWith

namespace cortado {

// True for names ending in ".h5" (how Caffe and the solver tell an HDF5 snapshot).
inline bool IsHdf5Path(const std::string& path) { return PathEndsWith(path, ".h5"); }

// False in a build without libhdf5 (every function below then throws).
bool HaveHdf5Support();

// Writes one group under /data (and /diff) per layer that has blobs, named by the layer; each blob j
// of the layer becomes dataset "j" with the blob's shape (`shape`, else the legacy 4-axis fields).
// A blob with no data values is left out of /data (as Caffe leaves out weight-shared parameters).
void WriteNetParameterToHdf5(const NetParameter& net, const std::string& path);

// The layers under /data in the file's order (creation order when the file records it, as ours do;
// else by name, as Caffe reads), each with name and blobs (shape + data, and diff when /diff has it).
// A blob index missing in the file below a layer's highest one reads as an empty BlobProto.
NetParameter ReadNetParameterFromHdf5(const std::string& path);

void WriteSolverStateToHdf5(const SolverState& state, const std::string& path);
SolverState ReadSolverStateFromHdf5(const std::string& path);

// One dataset read whole: its dims (none for a scalar) and its values in row-major order, converted
// to float by libhdf5 from any integer or float type.
struct Hdf5Dataset {
  std::vector<int64_t> dims;
  std::vector<float> values;
};

// The datasets /<name> of the file at path, in the order of names (HDF5Data: one per top). A missing
// file, one that is not HDF5, and a missing or non-numeric dataset are each an Error naming the file.
std::vector<Hdf5Dataset> ReadHdf5Datasets(const std::string& path, const std::vector<std::string>& names);

// A file of float32 datasets that grow along axis 0, kept open while rows are appended (HDF5Output).
// The constructor creates the file, replacing an HDF5 file there (any other file is an Error); its directory must exist. Append adds
// rows to dataset /<name>, creating it at the first call: chunked, extendible along axis 0, its other
// axes fixed by that call. Flush writes everything out, so that the file is complete for other readers
// (ReadHdf5Datasets, h5py, other processes: the file is not locked) while it stays open; the destructor
// closes it. Every failure is an Error naming the file (without libhdf5: the constructor's, saying so).
class Hdf5RowWriter {
 public:
  explicit Hdf5RowWriter(const std::string& path);
  ~Hdf5RowWriter();
  Hdf5RowWriter(const Hdf5RowWriter&) = delete;
  Hdf5RowWriter& operator=(const Hdf5RowWriter&) = delete;

  // Appends dims[0] rows of shape dims[1..] (values row-major, dims[0]·… floats) to /<name>. A row
  // shape other than the one /<name> was created with is an Error, and the dataset is left unchanged.
  void Append(const std::string& name, const std::vector<int64_t>& dims, const float* values);
  void Flush();

 private:
  struct State;  // the open file and datasets (src/io/hdf5/hdf5_row_writer.cpp)
  std::unique_ptr<State> state_;
};

}  // namespace cortado
