// hdf5_dataset_read.cpp — the HDF5Data layer's reader (declared in cortado/hdf5.hpp): named numeric
// datasets of one file, read whole and converted to float by libhdf5, under an hdf5::Session so that
// a failure is a cortado::Error naming the file and libhdf5 prints nothing.
#include <vector>

#include "cortado/hdf5.hpp"
#include "hdf5_file.hpp"  // Session, Where, OpenForReading, OpenDataset, ReadArray

namespace cortado {

std::vector<Hdf5Dataset> ReadHdf5Datasets(const std::string& path, const std::vector<std::string>& names) {
  hdf5::Session session;
  const hdf5::Where where{"read", path};
  hdf5::FileHandle file = hdf5::OpenForReading(path, where);
  std::vector<Hdf5Dataset> datasets(names.size());
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string full_name = "/" + names[i];
    hdf5::DatasetHandle dataset = hdf5::OpenDataset(file.get(), names[i], full_name, where);
    std::vector<hsize_t> dims;
    datasets[i].values = hdf5::ReadArray<float>(dataset.get(), full_name, where, &dims);
    datasets[i].dims.assign(dims.begin(), dims.end());
  }
  return datasets;
}

}  // namespace cortado
