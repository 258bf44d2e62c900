// hdf5_dataset_read.cpp — the HDF5Data layer's reader (declared in cortado/hdf5.hpp): named numeric
// datasets of one file, read whole and converted to float by libhdf5, under an hdf5::Session so that
// a failure is a cortado::Error naming the file and libhdf5 prints nothing, in a child process so that
// libhdf5 crashing on a damaged file is one too (hdf5::ReadInChild).
#include <cstdint>
#include <cstring>
#include <vector>

#include "cortado/hdf5.hpp"
#include "hdf5_file.hpp"  // Session, Where, OpenForReading, OpenDataset, ReadArray

namespace cortado {

namespace {

std::vector<Hdf5Dataset> ReadInThisProcess(const std::string& path, const std::vector<std::string>& names) {
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

// The datasets through the child's pipe: per dataset, its rank, dims, value count and values.
void Put(std::string* out, uint64_t n) { out->append(reinterpret_cast<const char*>(&n), sizeof n); }
uint64_t Take(const std::string& in, size_t* at) {
  uint64_t n = 0;
  CORTADO_REQUIRE(*at + sizeof n <= in.size(), "HDF5 reader: short answer");  // not a user's mistake: no crash either
  std::memcpy(&n, in.data() + *at, sizeof n);
  *at += sizeof n;
  return n;
}

}  // namespace

std::vector<Hdf5Dataset> ReadHdf5Datasets(const std::string& path, const std::vector<std::string>& names) {
  const std::string bytes = hdf5::ReadInChild(path, [&] {
    std::string out;
    for (const Hdf5Dataset& d : ReadInThisProcess(path, names)) {
      Put(&out, d.dims.size());
      for (int64_t dim : d.dims) Put(&out, static_cast<uint64_t>(dim));
      Put(&out, d.values.size());
      out.append(reinterpret_cast<const char*>(d.values.data()), d.values.size() * sizeof(float));
    }
    return out;
  });
  std::vector<Hdf5Dataset> datasets(names.size());
  size_t at = 0;
  for (Hdf5Dataset& d : datasets) {
    d.dims.resize(Take(bytes, &at));
    for (int64_t& dim : d.dims) dim = static_cast<int64_t>(Take(bytes, &at));
    const uint64_t count = Take(bytes, &at);
    CORTADO_REQUIRE(count <= (bytes.size() - at) / sizeof(float), "HDF5 reader: short answer");
    d.values.resize(count);
    std::memcpy(d.values.data(), bytes.data() + at, count * sizeof(float));
    at += count * sizeof(float);
  }
  return datasets;
}

}  // namespace cortado
