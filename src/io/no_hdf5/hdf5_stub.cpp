// hdf5_stub.cpp — linked when the build has no libhdf5: every HDF5 snapshot call, the HDF5Data
// layer's reader and the HDF5Output layer's writer throw an Error that says how to get HDF5 support
// (the real code is src/io/hdf5/hdf5_format.cpp, hdf5_dataset_read.cpp and hdf5_row_writer.cpp).
#include "cortado/error.hpp"  // Fail
#include "cortado/hdf5.hpp"

namespace cortado {

namespace {

[[noreturn]] void NoHdf5(const std::string& path) {
  Fail("'", path, "': this build of Cortado has no HDF5 support; rebuild with libhdf5-dev installed "
       "(scripts/install_deps.sh)");
}

}  // namespace

bool HaveHdf5Support() { return false; }

void WriteNetParameterToHdf5(const NetParameter&, const std::string& path) { NoHdf5(path); }
NetParameter ReadNetParameterFromHdf5(const std::string& path) { NoHdf5(path); }
void WriteSolverStateToHdf5(const SolverState&, const std::string& path) { NoHdf5(path); }
SolverState ReadSolverStateFromHdf5(const std::string& path) { NoHdf5(path); }
std::vector<Hdf5Dataset> ReadHdf5Datasets(const std::string& path, const std::vector<std::string>&) {
  NoHdf5(path);
}

// The constructor throws, so no writer exists to append to, flush or close.
struct Hdf5RowWriter::State {};
Hdf5RowWriter::Hdf5RowWriter(const std::string& path) { NoHdf5(path); }
Hdf5RowWriter::~Hdf5RowWriter() = default;
void Hdf5RowWriter::Append(const std::string&, const std::vector<int64_t>&, const float*) {}
void Hdf5RowWriter::Flush() {}

}  // namespace cortado
