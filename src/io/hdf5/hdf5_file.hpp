// hdf5_file.hpp — the libhdf5 C API made safe to use from the snapshot code: a session (lock, silent
// error stack), RAII handles, errors that name the file, and typed reads and writes of datasets,
// groups, Caffe's int and string scalars. Internal to src/io/hdf5/.
#pragma once

#include <hdf5.h>

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "cortado/child_process.hpp"  // RunInChildProcess, InChildProcess, GrowChildMemoryLimit
#include "cortado/error.hpp"          // Fail

namespace cortado::hdf5 {

// ---- sessions, handles, errors -------------------------------------------------------------------

// Held by every entry point: one lock (libhdf5 is usually built without thread safety), and
// libhdf5's automatic error printing turned off (restored afterwards). In a reading child process
// (ReadInChild) the lock is not taken: the parent holds it across the fork.
class Session {
 public:
  Session() : lock_(Mutex(), std::defer_lock) {
    if (!InChildProcess()) lock_.lock();
    H5Eget_auto2(H5E_DEFAULT, &saved_func_, &saved_data_);
    H5Eset_auto2(H5E_DEFAULT, nullptr, nullptr);
  }
  ~Session() {
    H5Eclear2(H5E_DEFAULT);
    H5Eset_auto2(H5E_DEFAULT, saved_func_, saved_data_);
  }
  Session(const Session&) = delete;
  Session& operator=(const Session&) = delete;

  static std::mutex& Mutex() {
    static std::mutex mutex;
    return mutex;
  }

 private:
  std::unique_lock<std::mutex> lock_;
  H5E_auto2_t saved_func_ = nullptr;
  void* saved_data_ = nullptr;
};

// Runs a read of the file at `path` (a function returning its result as bytes) in a child process
// (child_process.hpp), so that libhdf5 crashing on a damaged file is an Error naming it. The session
// lock is held across the fork: no libhdf5 call of another thread is half done in the child.
//
// The child's memory limit (ChildMemory) is kReadingMemoryFloor plus the file's size; each dataset whose
// values the file has shown it stores (ReadArray) raises it by what reading them takes. So a damaged
// header that makes libhdf5 allocate gigabytes fails inside the child, an Error naming the file.
constexpr size_t kReadingMemoryFloor = size_t{256} << 20;  // libhdf5's caches and its parsed metadata

template <typename Read>
std::string ReadInChild(const std::string& path, const Read& read) {
  std::lock_guard<std::mutex> lock(Session::Mutex());
  std::error_code ec;
  const uintmax_t file_bytes = std::filesystem::file_size(path, ec);
  ChildMemory memory;
  memory.budget_bytes = kReadingMemoryFloor + (ec ? 0 : static_cast<size_t>(file_bytes));
  memory.exceeded_message = "cannot read '" + path + "': reading it took more than the " +
                            std::to_string(memory.budget_bytes >> 20) +
                            " MiB it can need (a damaged HDF5 file?)";
  return RunInChildProcess(read,
                           "cannot read '" + path + "': libhdf5 crashed reading it (a damaged or cut-short HDF5 file?)",
                           memory);
}

// An hid_t closed by Close when it goes out of scope.
template <herr_t (*Close)(hid_t)>
class Handle {
 public:
  explicit Handle(hid_t id = -1) : id_(id) {}
  ~Handle() { CloseNow(); }
  Handle(Handle&& other) noexcept : id_(other.id_) { other.id_ = -1; }
  Handle& operator=(Handle&& other) noexcept {
    std::swap(id_, other.id_);
    return *this;
  }
  hid_t get() const { return id_; }
  herr_t CloseNow() {
    const herr_t status = id_ >= 0 ? Close(id_) : 0;
    id_ = -1;
    return status;
  }

 private:
  hid_t id_;
};
using FileHandle = Handle<H5Fclose>;
using GroupHandle = Handle<H5Gclose>;
using DatasetHandle = Handle<H5Dclose>;
using SpaceHandle = Handle<H5Sclose>;
using TypeHandle = Handle<H5Tclose>;
using PlistHandle = Handle<H5Pclose>;
using ObjectHandle = Handle<H5Oclose>;

// The most specific description on libhdf5's error stack, which is then cleared.
std::string TakeErrorReason();

// What is being done to which file, for error messages: "cannot read 'x.h5': <what> (<reason>)".
struct Where {
  const char* verb;
  const std::string& path;

  [[noreturn]] void Fail(const std::string& what) const {
    const std::string reason = TakeErrorReason();
    cortado::Fail("cannot ", verb, " '", path, "': ", what, reason.empty() ? "" : " (" + reason + ")");
  }
  template <typename T>
  T Check(T result, const std::string& what) const {
    if (result < 0) Fail(what);
    return result;
  }
};

// ---- element types -------------------------------------------------------------------------------

// The in-memory and on-disk HDF5 types of a C++ element type (little-endian on disk, like Caffe's
// x86 files).
template <typename T>
struct ElementType;
template <> struct ElementType<float> {
  static hid_t memory() { return H5T_NATIVE_FLOAT; }
  static hid_t file() { return H5T_IEEE_F32LE; }
};
template <> struct ElementType<double> {
  static hid_t memory() { return H5T_NATIVE_DOUBLE; }
  static hid_t file() { return H5T_IEEE_F64LE; }
};
template <> struct ElementType<int32_t> {
  static hid_t memory() { return H5T_NATIVE_INT32; }
  static hid_t file() { return H5T_STD_I32LE; }
};
template <> struct ElementType<int64_t> {
  static hid_t memory() { return H5T_NATIVE_INT64; }
  static hid_t file() { return H5T_STD_I64LE; }
};
template <> struct ElementType<uint32_t> {
  static hid_t memory() { return H5T_NATIVE_UINT32; }
  static hid_t file() { return H5T_STD_U32LE; }
};
template <> struct ElementType<uint64_t> {
  static hid_t memory() { return H5T_NATIVE_UINT64; }
  static hid_t file() { return H5T_STD_U64LE; }
};
template <> struct ElementType<uint8_t> {
  static hid_t memory() { return H5T_NATIVE_UINT8; }
  static hid_t file() { return H5T_STD_U8LE; }
};

// ---- writing -------------------------------------------------------------------------------------

// A group whose links keep their creation order, so that layers read back in the order written.
GroupHandle CreateGroup(hid_t parent, const std::string& name, const std::string& full_name,
                        const Where& where);

// Opens parent/name, creating it when absent.
GroupHandle OpenOrCreateGroup(hid_t parent, const std::string& name, const std::string& full_name,
                              const Where& where);

// Dataset `name` holding values with the given dims (none: a scalar).
template <typename T>
void WriteArray(hid_t parent, const std::string& name, const std::string& full_name,
                const std::vector<hsize_t>& dims, const T* values, const Where& where) {
  const std::string what = "cannot write dataset " + full_name;
  SpaceHandle space(where.Check(dims.empty() ? H5Screate(H5S_SCALAR)
                                             : H5Screate_simple(static_cast<int>(dims.size()),
                                                                dims.data(), nullptr),
                                what));
  DatasetHandle dataset(where.Check(H5Dcreate2(parent, name.c_str(), ElementType<T>::file(),
                                               space.get(), H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT),
                                    what));
  if (H5Sget_simple_extent_npoints(space.get()) > 0)
    where.Check(H5Dwrite(dataset.get(), ElementType<T>::memory(), H5S_ALL, H5S_ALL, H5P_DEFAULT, values),
                what);
}

// Caffe's hdf5_save_int: a one-element int32 array.
void WriteInt(hid_t parent, const std::string& name, int32_t value, const Where& where);

// Caffe's hdf5_save_string (H5LTmake_dataset_string): a scalar fixed-length, NUL-terminated C string.
void WriteString(hid_t parent, const std::string& name, const std::string& value, const Where& where);

// Creates the file with a temporary name, lets `fill` write into it, and closes it checking the final
// flush; the caller's WriteFileAtomically renames it.
template <typename Fill>
void WriteHdf5File(const std::string& temp_path, const Where& where, const Fill& fill) {
  PlistHandle fapl(where.Check(H5Pcreate(H5P_FILE_ACCESS), "cannot create the file"));
  where.Check(H5Pset_fclose_degree(fapl.get(), H5F_CLOSE_STRONG), "cannot create the file");
  FileHandle file(
      where.Check(H5Fcreate(temp_path.c_str(), H5F_ACC_TRUNC, H5P_DEFAULT, fapl.get()), "cannot create the file"));
  fill(file.get());
  where.Check(file.CloseNow(), "cannot finish the file");
}

// ---- reading -------------------------------------------------------------------------------------

// File access properties without libhdf5's file locks (1.10 and later lock a file for as long as it
// is open): the HDF5Output layer's file stays open for writing while others read it, and within one
// process (and the reading child processes, which share the parent's open files) every open of a file
// must agree on locking. `what` is the error message's.
PlistHandle UnlockedFileAccess(const std::string& what, const Where& where);

// A missing file, one that is not HDF5 and one that libhdf5 cannot open (truncated) are each an
// Error naming the file. Opened without file locks (UnlockedFileAccess).
FileHandle OpenForReading(const std::string& path, const Where& where);

// Whether parent has a link `name` (one path component, full_name for errors); a lookup that fails
// (a damaged group) is an Error.
bool Exists(hid_t parent, const std::string& name, const std::string& full_name, const Where& where);

// The group or dataset parent/name; an Error naming full_name when it is missing.
GroupHandle OpenGroup(hid_t parent, const std::string& name, const std::string& full_name,
                      const Where& where);

// The names of a group's links, in creation order when the group records it (Cortado's files), else
// by name (Caffe's files, read the way Caffe reads them).
std::vector<std::string> ChildNames(hid_t group, const std::string& full_name, const Where& where);

// The most that the deflate filter (zlib) expands its input: a dataset whose filters end in deflate
// holds at most this many bytes for each one stored.
constexpr hsize_t kMostFilterExpansion = 1032;

// The most bytes of values a dataset can hold, from what the file stores of it: the stored bytes, or
// for a filtered (compressed) dataset kMostFilterExpansion times them. A count claimed beyond that
// is a damaged file, refused before anything is allocated for it.
hsize_t MostBytesStored(hid_t dataset, const std::string& what, const Where& where);

// "0", "1", ... -> the index; anything else -> -1.
int64_t IndexFromName(const std::string& name);

// Reads a numeric dataset (any integer or float type, converted by libhdf5) with its dims.
template <typename T>
std::vector<T> ReadArray(hid_t dataset, const std::string& full_name, const Where& where,
                         std::vector<hsize_t>* dims = nullptr) {
  const std::string what = "cannot read dataset " + full_name;
  TypeHandle type(where.Check(H5Dget_type(dataset), what));
  const H5T_class_t type_class = H5Tget_class(type.get());
  if (type_class != H5T_INTEGER && type_class != H5T_FLOAT) where.Fail(full_name + " is not numeric");
  SpaceHandle space(where.Check(H5Dget_space(dataset), what));
  if (H5Sget_simple_extent_type(space.get()) == H5S_NULL) where.Fail(full_name + " holds no dataspace");
  const int rank = where.Check(H5Sget_simple_extent_ndims(space.get()), what);
  std::vector<hsize_t> shape(static_cast<size_t>(rank));
  where.Check(H5Sget_simple_extent_dims(space.get(), shape.data(), nullptr), what);
  const hssize_t count = where.Check(H5Sget_simple_extent_npoints(space.get()), what);
  // Caffe's limit, and the file's own promise: an uncompressed dataset holds its values in the file.
  if (count > INT32_MAX) where.Fail(full_name + " has " + std::to_string(count) + " values, more than 2^31 - 1");
  const size_t value_bytes = H5Tget_size(type.get());
  const hsize_t most_bytes = MostBytesStored(dataset, what, where);
  if (value_bytes == 0 || static_cast<hsize_t>(count) > most_bytes / value_bytes)
    where.Fail(full_name + " claims " + std::to_string(count) + " values of " + std::to_string(value_bytes) +
               " bytes but the file stores " + std::to_string(H5Dget_storage_size(dataset)) + " bytes of them");
  // The values, the message the reader builds of them and the answer it sends (child_process.hpp).
  GrowChildMemoryLimit(4 * static_cast<size_t>(count) * sizeof(T));
  std::vector<T> values(static_cast<size_t>(count));
  if (count > 0)
    where.Check(H5Dread(dataset, ElementType<T>::memory(), H5S_ALL, H5S_ALL, H5P_DEFAULT, values.data()),
                what);
  if (dims != nullptr) *dims = shape;
  return values;
}

DatasetHandle OpenDataset(hid_t parent, const std::string& name, const std::string& full_name,
                          const Where& where);

// Caffe's hdf5_load_int: the single value of a dataset.
int32_t ReadInt(hid_t parent, const std::string& name, const Where& where);

// Caffe's hdf5_load_string; also reads the variable-length strings h5py writes by default.
std::string ReadString(hid_t parent, const std::string& name, const Where& where);

}  // namespace cortado::hdf5
