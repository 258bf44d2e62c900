// hdf5_file.cpp — the non-template helpers of hdf5_file.hpp.
#include "hdf5_file.hpp"

#include <algorithm>
#include <filesystem>
#include <limits>

#include "cortado/io.hpp"  // FileExists

namespace cortado::hdf5 {

std::string TakeErrorReason() {
  std::string reason;
  auto innermost = [](unsigned n, const H5E_error2_t* error, void* out) -> herr_t {
    if (n == 0 && error->desc != nullptr) *static_cast<std::string*>(out) = error->desc;
    return 0;
  };
  H5Ewalk2(H5E_DEFAULT, H5E_WALK_UPWARD, innermost, &reason);
  H5Eclear2(H5E_DEFAULT);
  return reason;
}

GroupHandle CreateGroup(hid_t parent, const std::string& name, const std::string& full_name,
                        const Where& where) {
  PlistHandle gcpl(where.Check(H5Pcreate(H5P_GROUP_CREATE), "cannot create group " + full_name));
  where.Check(H5Pset_link_creation_order(gcpl.get(), H5P_CRT_ORDER_TRACKED | H5P_CRT_ORDER_INDEXED),
              "cannot create group " + full_name);
  return GroupHandle(where.Check(H5Gcreate2(parent, name.c_str(), H5P_DEFAULT, gcpl.get(), H5P_DEFAULT),
                                 "cannot create group " + full_name));
}

GroupHandle OpenOrCreateGroup(hid_t parent, const std::string& name, const std::string& full_name,
                              const Where& where) {
  if (H5Lexists(parent, name.c_str(), H5P_DEFAULT) > 0)
    return GroupHandle(where.Check(H5Gopen2(parent, name.c_str(), H5P_DEFAULT),
                                   full_name + " exists and is not a group"));
  return CreateGroup(parent, name, full_name, where);
}

void WriteInt(hid_t parent, const std::string& name, int32_t value, const Where& where) {
  WriteArray<int32_t>(parent, name, "/" + name, {1}, &value, where);
}

void WriteString(hid_t parent, const std::string& name, const std::string& value, const Where& where) {
  const std::string what = "cannot write dataset /" + name;
  TypeHandle type(where.Check(H5Tcopy(H5T_C_S1), what));
  where.Check(H5Tset_size(type.get(), value.size() + 1), what);
  where.Check(H5Tset_strpad(type.get(), H5T_STR_NULLTERM), what);
  SpaceHandle space(where.Check(H5Screate(H5S_SCALAR), what));
  DatasetHandle dataset(where.Check(
      H5Dcreate2(parent, name.c_str(), type.get(), space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
      what));
  where.Check(H5Dwrite(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, value.c_str()), what);
}

PlistHandle UnlockedFileAccess(const std::string& what, const Where& where) {
  PlistHandle access(where.Check(H5Pcreate(H5P_FILE_ACCESS), what));
  // H5Pset_file_locking came with libhdf5 1.10.7 and 1.12.1; older versions lock unless the
  // HDF5_USE_FILE_LOCKING environment variable says FALSE.
#if H5_VERSION_GE(1, 12, 1) || (H5_VERS_MAJOR == 1 && H5_VERS_MINOR == 10 && H5_VERS_RELEASE >= 7)
  where.Check(H5Pset_file_locking(access.get(), false, true), what);
#endif
  return access;
}

FileHandle OpenForReading(const std::string& path, const Where& where) {
  if (!FileExists(path)) where.Fail("no such file");
  std::error_code ec;
  if (std::filesystem::is_directory(path, ec)) where.Fail("it is a directory; give the path of a file");
  const htri_t is_hdf5 = H5Fis_hdf5(path.c_str());
  if (is_hdf5 < 0) where.Fail("cannot open it");
  if (is_hdf5 == 0) where.Fail("not an HDF5 file");
  const PlistHandle access = UnlockedFileAccess("cannot open it as HDF5", where);
  return FileHandle(where.Check(H5Fopen(path.c_str(), H5F_ACC_RDONLY, access.get()), "cannot open it as HDF5"));
}

bool Exists(hid_t parent, const std::string& name, const std::string& full_name, const Where& where) {
  return where.Check(H5Lexists(parent, name.c_str(), H5P_DEFAULT), "cannot look up " + full_name) > 0;
}

GroupHandle OpenGroup(hid_t parent, const std::string& name, const std::string& full_name,
                      const Where& where) {
  if (!Exists(parent, name, full_name, where)) where.Fail("no group " + full_name);
  return GroupHandle(where.Check(H5Gopen2(parent, name.c_str(), H5P_DEFAULT), full_name + " is not a group"));
}

std::vector<std::string> ChildNames(hid_t group, const std::string& full_name, const Where& where) {
  const std::string what = "cannot list group " + full_name;
  H5G_info_t info;
  where.Check(H5Gget_info(group, &info), what);
  PlistHandle gcpl(where.Check(H5Gget_create_plist(group), what));
  unsigned order_flags = 0;
  where.Check(H5Pget_link_creation_order(gcpl.get(), &order_flags), what);
  const H5_index_t index = (order_flags & H5P_CRT_ORDER_INDEXED) ? H5_INDEX_CRT_ORDER : H5_INDEX_NAME;
  std::vector<std::string> names;
  for (hsize_t i = 0; i < info.nlinks; ++i) {
    const ssize_t size = where.Check(
        H5Lget_name_by_idx(group, ".", index, H5_ITER_INC, i, nullptr, 0, H5P_DEFAULT), what);
    std::string name(static_cast<size_t>(size) + 1, '\0');
    where.Check(H5Lget_name_by_idx(group, ".", index, H5_ITER_INC, i, name.data(), name.size(), H5P_DEFAULT),
                what);
    name.resize(static_cast<size_t>(size));
    names.push_back(name);
  }
  return names;
}

hsize_t MostBytesStored(hid_t dataset, const std::string& what, const Where& where) {
  PlistHandle create(where.Check(H5Dget_create_plist(dataset), what));
  const hsize_t stored = H5Dget_storage_size(dataset);
  const int filters = where.Check(H5Pget_nfilters(create.get()), what);
  if (filters == 0) return stored;
  return stored > std::numeric_limits<hsize_t>::max() / kMostFilterExpansion ? std::numeric_limits<hsize_t>::max()
                                                                             : stored * kMostFilterExpansion;
}

int64_t IndexFromName(const std::string& name) {
  if (name.empty() || name.size() > 9 || (name.size() > 1 && name[0] == '0')) return -1;
  if (!std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; })) return -1;
  return std::stoll(name);
}

DatasetHandle OpenDataset(hid_t parent, const std::string& name, const std::string& full_name,
                          const Where& where) {
  if (!Exists(parent, name, full_name, where)) where.Fail("no dataset " + full_name);
  return DatasetHandle(
      where.Check(H5Dopen2(parent, name.c_str(), H5P_DEFAULT), full_name + " is not a dataset"));
}

int32_t ReadInt(hid_t parent, const std::string& name, const Where& where) {
  DatasetHandle dataset = OpenDataset(parent, name, "/" + name, where);
  const std::vector<int32_t> values = ReadArray<int32_t>(dataset.get(), "/" + name, where);
  if (values.size() != 1) where.Fail("/" + name + " holds " + std::to_string(values.size()) + " values, not 1");
  return values[0];
}

std::string ReadString(hid_t parent, const std::string& name, const Where& where) {
  const std::string full_name = "/" + name, what = "cannot read dataset " + full_name;
  DatasetHandle dataset = OpenDataset(parent, name, full_name, where);
  TypeHandle type(where.Check(H5Dget_type(dataset.get()), what));
  if (H5Tget_class(type.get()) != H5T_STRING) where.Fail(full_name + " is not a string");
  SpaceHandle space(where.Check(H5Dget_space(dataset.get()), what));
  if (H5Sget_simple_extent_npoints(space.get()) != 1) where.Fail(full_name + " is not a single string");
  if (where.Check(H5Tis_variable_str(type.get()), what) > 0) {
    TypeHandle memory(where.Check(H5Tcopy(H5T_C_S1), what));
    where.Check(H5Tset_size(memory.get(), H5T_VARIABLE), what);
    where.Check(H5Tset_cset(memory.get(), H5Tget_cset(type.get())), what);  // h5py writes UTF-8
    char* text = nullptr;
    where.Check(H5Dread(dataset.get(), memory.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, &text), what);
    std::string value = text != nullptr ? text : "";
    H5free_memory(text);
    return value;
  }
  const size_t size = H5Tget_size(type.get());
  if (size == 0) where.Fail(what);
  if (size > MostBytesStored(dataset.get(), what, where))
    where.Fail(full_name + " claims a string of " + std::to_string(size) + " bytes, more than the file stores");
  GrowChildMemoryLimit(2 * size);  // the buffer and the string returned
  std::string buffer(size, '\0');
  where.Check(H5Dread(dataset.get(), type.get(), H5S_ALL, H5S_ALL, H5P_DEFAULT, buffer.data()), what);
  return buffer.substr(0, buffer.find('\0'));
}


}  // namespace cortado::hdf5
