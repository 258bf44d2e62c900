// hdf5_format.cpp — Caffe's HDF5 snapshot layout (.caffemodel.h5, .solverstate.h5), described in
// cortado/hdf5.hpp, on top of the libhdf5 helpers of hdf5_file.hpp. Every entry point holds an
// hdf5::Session; a failed call becomes a cortado::Error naming the file, with libhdf5's reason.
#include "cortado/hdf5.hpp"

#include <google/protobuf/reflection.h>  // RepeatedFieldRef

#include <cstdint>
#include <map>
#include <type_traits>
#include <vector>

#include "cortado/blob.hpp"   // BlobProtoShape
#include "cortado/error.hpp"  // Fail
#include "cortado/io.hpp"     // WriteFileAtomically
#include "hdf5_file.hpp"      // Session, handles, Where, typed dataset reads and writes

namespace cortado {

namespace {

namespace pb = google::protobuf;
using namespace hdf5;  // NOLINT: this file is the only user of the helpers

// ---- writing ------------------------------------------------------------------------------------

std::vector<hsize_t> DimsOf(const BlobProto& blob, const std::string& full_name, const Where& where) {
  std::vector<hsize_t> dims;
  for (int d : BlobProtoShape(blob)) {
    if (d < 0) where.Fail(full_name + " has a negative dimension");
    dims.push_back(static_cast<hsize_t>(d));
  }
  return dims;
}

// Writes blob values (data or diff) as dataset `name`; double values are stored as float32, the
// precision of Cortado's blobs. Nothing is written when the blob has no values of that kind.
void WriteBlobValues(hid_t parent, const std::string& name, const std::string& full_name,
                     const BlobProto& blob, bool diff, const Where& where) {
  const auto& floats = diff ? blob.diff() : blob.data();
  const auto& doubles = diff ? blob.double_diff() : blob.double_data();
  if (floats.empty() && doubles.empty()) return;
  const std::vector<hsize_t> dims = DimsOf(blob, full_name, where);
  int64_t count = 1;
  for (hsize_t d : dims) count *= static_cast<int64_t>(d);
  std::vector<float> converted(doubles.begin(), doubles.end());
  const float* values = floats.empty() ? converted.data() : floats.data();
  const int64_t size = floats.empty() ? doubles.size() : floats.size();
  if (size != count)
    where.Fail(full_name + " holds " + std::to_string(size) + " values but its shape needs " +
               std::to_string(count));
  WriteArray<float>(parent, name, full_name, dims, values, where);
}

// Splits a layer name into HDF5 path components ("inception_3a/1x1" -> group inception_3a, group 1x1).
std::vector<std::string> NameComponents(const std::string& layer_name, const Where& where) {
  std::vector<std::string> parts;
  size_t start = 0;
  while (true) {
    const size_t slash = layer_name.find('/', start);
    parts.push_back(layer_name.substr(start, slash - start));
    if (parts.back().empty() || parts.back() == ".")
      where.Fail("layer name '" + layer_name + "' cannot be stored as an HDF5 group name");
    if (slash == std::string::npos) break;
    start = slash + 1;
  }
  return parts;
}

// The group for one layer under /data or /diff; a '/' in the layer's name nests groups.
GroupHandle LayerGroup(hid_t top, const std::string& top_name, const std::string& layer_name,
                       const Where& where) {
  GroupHandle group;
  hid_t parent = top;
  std::string full_name = top_name;
  for (const std::string& part : NameComponents(layer_name, where)) {
    full_name += "/" + part;
    group = OpenOrCreateGroup(parent, part, full_name, where);
    parent = group.get();
  }
  return group;
}

// ---- reading -------------------------------------------------------------------------------------

// More than any layer has; a larger index is not a blob (and would make a huge vector).
constexpr int64_t kMaxBlobsPerLayer = 1024;

// One layer as read from /data or /diff: its name and blobs, values in `data`.
struct LayerRead {
  std::string name;
  std::vector<BlobProto> blobs;
};

// Walks a group of layer groups. A group holding datasets "0", "1", ... (or nothing: Caffe's group for
// a layer without blobs) is a layer; subgroups are layers whose names continue with '/'.
void ReadLayerGroups(hid_t group, const std::string& layer_name, const std::string& full_name,
                     const Where& where, std::vector<LayerRead>* layers) {
  const std::vector<std::string> children = ChildNames(group, full_name, where);
  std::vector<std::pair<std::string, ObjectHandle>> datasets, groups;
  for (const std::string& child : children) {
    ObjectHandle object(where.Check(H5Oopen(group, child.c_str(), H5P_DEFAULT),
                                    "cannot open " + full_name + "/" + child));
    const H5I_type_t type = H5Iget_type(object.get());
    if (type == H5I_DATASET) {
      datasets.emplace_back(child, std::move(object));
    } else if (type == H5I_GROUP) {
      groups.emplace_back(child, std::move(object));
    } else {
      where.Fail(full_name + "/" + child + " is neither a group nor a dataset");
    }
  }
  if (!layer_name.empty() && (!datasets.empty() || children.empty())) {
    LayerRead layer{layer_name, {}};
    for (const auto& [child, object] : datasets) {
      const std::string child_name = full_name + "/" + child;
      const int64_t index = IndexFromName(child);
      if (index < 0 || index >= kMaxBlobsPerLayer)
        where.Fail("unexpected dataset " + child_name + " (blobs are named 0, 1, ...)");
      if (static_cast<size_t>(index) >= layer.blobs.size()) layer.blobs.resize(static_cast<size_t>(index) + 1);
      std::vector<hsize_t> dims;
      const std::vector<float> values = ReadArray<float>(object.get(), child_name, where, &dims);
      BlobProto& blob = layer.blobs[static_cast<size_t>(index)];
      blob.mutable_shape();  // present even for a scalar (no dims)
      for (hsize_t d : dims) blob.mutable_shape()->add_dim(static_cast<int64_t>(d));
      blob.mutable_data()->Add(values.begin(), values.end());
    }
    layers->push_back(std::move(layer));
  } else if (layer_name.empty() && !datasets.empty()) {
    where.Fail(full_name + "/" + datasets[0].first + " is a dataset; " + full_name +
               " should hold one group per layer");
  }
  for (const auto& [child, object] : groups) {
    ReadLayerGroups(object.get(), layer_name.empty() ? child : layer_name + "/" + child,
                    full_name + "/" + child, where, layers);
  }
}

// Adds what /diff holds to the layers read from /data, matching layers by name and blobs by index.
void MergeDiffs(std::vector<LayerRead> diffs, std::vector<LayerRead>* layers, const Where& where) {
  std::map<std::string, size_t> position;
  for (size_t i = 0; i < layers->size(); ++i) position[(*layers)[i].name] = i;
  for (LayerRead& diff : diffs) {
    if (!position.count(diff.name)) {
      position[diff.name] = layers->size();
      layers->push_back({diff.name, {}});
    }
    std::vector<BlobProto>& blobs = (*layers)[position[diff.name]].blobs;
    if (blobs.size() < diff.blobs.size()) blobs.resize(diff.blobs.size());
    for (size_t j = 0; j < diff.blobs.size(); ++j) {
      BlobProto& source = diff.blobs[j];
      if (!source.has_shape()) continue;
      BlobProto& target = blobs[j];
      if (!target.has_shape()) {
        *target.mutable_shape() = source.shape();
      } else if (BlobProtoShape(target) != BlobProtoShape(source)) {
        where.Fail("/diff/" + diff.name + "/" + std::to_string(j) + " and /data/" + diff.name + "/" +
                   std::to_string(j) + " differ in shape");
      }
      target.mutable_diff()->Swap(source.mutable_data());
    }
  }
}

// ---- Cortado's own SolverState fields ------------------------------------------------------------

std::string ExtraDatasetName(const pb::FieldDescriptor* field) { return "cortado_" + field->name(); }

// Every value of a numeric field as T (none or one for a singular field).
template <typename T>
std::vector<T> FieldValues(const pb::Message& message, const pb::FieldDescriptor* field) {
  const pb::Reflection* reflection = message.GetReflection();
  if (field->is_repeated()) {
    const auto values = reflection->GetRepeatedFieldRef<T>(message, field);
    return std::vector<T>(values.begin(), values.end());
  }
  if (!reflection->HasField(message, field)) return {};
  if constexpr (std::is_same_v<T, int32_t>) return {reflection->GetInt32(message, field)};
  if constexpr (std::is_same_v<T, int64_t>) return {reflection->GetInt64(message, field)};
  if constexpr (std::is_same_v<T, uint32_t>) return {reflection->GetUInt32(message, field)};
  if constexpr (std::is_same_v<T, uint64_t>) return {reflection->GetUInt64(message, field)};
  if constexpr (std::is_same_v<T, float>) return {reflection->GetFloat(message, field)};
  if constexpr (std::is_same_v<T, double>) return {reflection->GetDouble(message, field)};
}

template <typename T>
void SetFieldValues(const std::vector<T>& values, const pb::FieldDescriptor* field,
                    pb::Message* message, const Where& where) {
  const pb::Reflection* reflection = message->GetReflection();
  if (field->is_repeated()) {
    auto target = reflection->GetMutableRepeatedFieldRef<T>(message, field);
    for (const T& value : values) target.Add(value);
    return;
  }
  if (values.size() != 1)
    where.Fail("/" + ExtraDatasetName(field) + " holds " + std::to_string(values.size()) + " values, not 1");
  if constexpr (std::is_same_v<T, int32_t>) reflection->SetInt32(message, field, values[0]);
  if constexpr (std::is_same_v<T, int64_t>) reflection->SetInt64(message, field, values[0]);
  if constexpr (std::is_same_v<T, uint32_t>) reflection->SetUInt32(message, field, values[0]);
  if constexpr (std::is_same_v<T, uint64_t>) reflection->SetUInt64(message, field, values[0]);
  if constexpr (std::is_same_v<T, float>) reflection->SetFloat(message, field, values[0]);
  if constexpr (std::is_same_v<T, double>) reflection->SetDouble(message, field, values[0]);
}

// Calls visit(T{}) with the C++ element type of a numeric field, or visit(uint8_t{}) for bytes.
template <typename Visit>
void DispatchOnType(const pb::FieldDescriptor* field, const std::string& path, const Visit& visit) {
  switch (field->cpp_type()) {
    case pb::FieldDescriptor::CPPTYPE_INT32: return visit(int32_t{});
    case pb::FieldDescriptor::CPPTYPE_INT64: return visit(int64_t{});
    case pb::FieldDescriptor::CPPTYPE_UINT32: return visit(uint32_t{});
    case pb::FieldDescriptor::CPPTYPE_UINT64: return visit(uint64_t{});
    case pb::FieldDescriptor::CPPTYPE_FLOAT: return visit(float{});
    case pb::FieldDescriptor::CPPTYPE_DOUBLE: return visit(double{});
    case pb::FieldDescriptor::CPPTYPE_STRING:
      if (!field->is_repeated()) return visit(uint8_t{});
      [[fallthrough]];
    default:
      cortado::Fail("'", path, "': SolverState field ", field->name(),
                    " has a type that HDF5 snapshots do not support");
  }
}

bool IsCortadoField(const pb::FieldDescriptor* field) { return field->number() >= 1000; }

void WriteExtraFields(hid_t file, const SolverState& state, const Where& where) {
  const pb::Descriptor* descriptor = state.GetDescriptor();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const pb::FieldDescriptor* field = descriptor->field(i);
    if (!IsCortadoField(field)) continue;
    const std::string name = ExtraDatasetName(field);
    DispatchOnType(field, where.path, [&](auto element) {
      using T = decltype(element);
      if constexpr (std::is_same_v<T, uint8_t>) {
        if (!state.GetReflection()->HasField(state, field)) return;
        const std::string bytes = state.GetReflection()->GetString(state, field);
        WriteArray<uint8_t>(file, name, "/" + name, {bytes.size()},
                            reinterpret_cast<const uint8_t*>(bytes.data()), where);
      } else {
        const std::vector<T> values = FieldValues<T>(state, field);
        if (values.empty()) return;
        WriteArray<T>(file, name, "/" + name, {values.size()}, values.data(), where);
      }
    });
  }
}

void ReadExtraFields(hid_t file, SolverState* state, const Where& where) {
  const pb::Descriptor* descriptor = state->GetDescriptor();
  for (int i = 0; i < descriptor->field_count(); ++i) {
    const pb::FieldDescriptor* field = descriptor->field(i);
    const std::string name = ExtraDatasetName(field);
    if (!IsCortadoField(field) || !Exists(file, name, "/" + name, where)) continue;
    DatasetHandle dataset = OpenDataset(file, name, "/" + name, where);
    DispatchOnType(field, where.path, [&](auto element) {
      using T = decltype(element);
      const std::vector<T> values = ReadArray<T>(dataset.get(), "/" + name, where);
      if constexpr (std::is_same_v<T, uint8_t>) {
        state->GetReflection()->SetString(state, field, std::string(values.begin(), values.end()));
      } else {
        SetFieldValues<T>(values, field, state, where);
      }
    });
  }
}

// The readers proper, run in a child process by the public functions below.
NetParameter ReadNetInThisProcess(const std::string& path) {
  Session session;
  const Where where{"read", path};
  FileHandle file = OpenForReading(path, where);
  std::vector<LayerRead> layers;
  {
    GroupHandle data = OpenGroup(file.get(), "data", "/data", where);
    ReadLayerGroups(data.get(), "", "/data", where, &layers);
  }
  if (Exists(file.get(), "diff", "/diff", where)) {
    GroupHandle diff = OpenGroup(file.get(), "diff", "/diff", where);
    std::vector<LayerRead> diffs;
    ReadLayerGroups(diff.get(), "", "/diff", where, &diffs);
    MergeDiffs(std::move(diffs), &layers, where);
  }
  NetParameter net;
  for (LayerRead& layer : layers) {
    LayerParameter* param = net.add_layer();
    param->set_name(layer.name);
    for (BlobProto& blob : layer.blobs) param->add_blobs()->Swap(&blob);
  }
  return net;
}

SolverState ReadStateInThisProcess(const std::string& path) {
  Session session;
  const Where where{"read", path};
  FileHandle file = OpenForReading(path, where);
  SolverState state;
  state.set_iter(ReadInt(file.get(), "iter", where));
  if (Exists(file.get(), "learned_net", "/learned_net", where))
    state.set_learned_net(ReadString(file.get(), "learned_net", where));
  if (Exists(file.get(), "current_step", "/current_step", where))
    state.set_current_step(ReadInt(file.get(), "current_step", where));
  GroupHandle history = OpenGroup(file.get(), "history", "/history", where);
  const std::vector<std::string> names = ChildNames(history.get(), "/history", where);
  for (size_t i = 0; i < names.size(); ++i) {
    const std::string index = std::to_string(i), full_name = "/history/" + index;
    if (!Exists(history.get(), index, full_name, where))
      where.Fail("/history holds " + std::to_string(names.size()) + " entries but no " + full_name);
    DatasetHandle dataset = OpenDataset(history.get(), index, full_name, where);
    std::vector<hsize_t> dims;
    const std::vector<float> values = ReadArray<float>(dataset.get(), full_name, where, &dims);
    BlobProto* blob = state.add_history();
    blob->mutable_shape();
    for (hsize_t d : dims) blob->mutable_shape()->add_dim(static_cast<int64_t>(d));
    blob->mutable_data()->Add(values.begin(), values.end());
  }
  ReadExtraFields(file.get(), &state, where);
  return state;
}

}  // namespace

// ---- the API -------------------------------------------------------------------------------------

bool HaveHdf5Support() { return true; }

void WriteNetParameterToHdf5(const NetParameter& net, const std::string& path) {
  Session session;
  const Where where{"write", path};
  bool any_diff = false;
  auto note_diffs = [&](const auto& layers) {
    for (const auto& layer : layers)
      for (const BlobProto& blob : layer.blobs()) any_diff |= blob.diff_size() + blob.double_diff_size() > 0;
  };
  note_diffs(net.layer());
  note_diffs(net.layers());
  WriteFileAtomically(path, [&](const std::string& temp_path) {
    WriteHdf5File(temp_path, where, [&](hid_t file) {
      GroupHandle data = CreateGroup(file, "data", "/data", where);
      GroupHandle diff = any_diff ? CreateGroup(file, "diff", "/diff", where) : GroupHandle();
      auto write_layer = [&](const std::string& name, const auto& blobs) {
        if (blobs.empty()) return;
        GroupHandle data_group = LayerGroup(data.get(), "/data", name, where);
        GroupHandle diff_group = any_diff ? LayerGroup(diff.get(), "/diff", name, where) : GroupHandle();
        for (int j = 0; j < blobs.size(); ++j) {
          const std::string index = std::to_string(j);
          WriteBlobValues(data_group.get(), index, "/data/" + name + "/" + index, blobs.Get(j), false, where);
          if (any_diff)
            WriteBlobValues(diff_group.get(), index, "/diff/" + name + "/" + index, blobs.Get(j), true, where);
        }
      };
      for (const auto& layer : net.layer()) write_layer(layer.name(), layer.blobs());
      for (const auto& layer : net.layers()) write_layer(layer.name(), layer.blobs());
    });
  });
}

NetParameter ReadNetParameterFromHdf5(const std::string& path) {
  NetParameter net;
  const std::string bytes = ReadInChild(path, [&] { return ReadNetInThisProcess(path).SerializeAsString(); });
  CORTADO_REQUIRE(net.ParseFromString(bytes), "cannot read '", path, "': its weights exceed 2 GiB");
  return net;
}

SolverState ReadSolverStateFromHdf5(const std::string& path) {
  SolverState state;
  const std::string bytes = ReadInChild(path, [&] { return ReadStateInThisProcess(path).SerializeAsString(); });
  CORTADO_REQUIRE(state.ParseFromString(bytes), "cannot read '", path, "': its state exceeds 2 GiB");
  return state;
}

void WriteSolverStateToHdf5(const SolverState& state, const std::string& path) {
  Session session;
  const Where where{"write", path};
  WriteFileAtomically(path, [&](const std::string& temp_path) {
    WriteHdf5File(temp_path, where, [&](hid_t file) {
      WriteInt(file, "iter", state.iter(), where);
      WriteString(file, "learned_net", state.learned_net(), where);
      WriteInt(file, "current_step", state.current_step(), where);
      GroupHandle history(
          where.Check(H5Gcreate2(file, "history", H5P_DEFAULT, H5P_DEFAULT, H5P_DEFAULT), "cannot create /history"));
      for (int i = 0; i < state.history_size(); ++i) {
        const std::string index = std::to_string(i), full_name = "/history/" + index;
        const BlobProto& blob = state.history(i);
        if (blob.data_size() + blob.double_data_size() == 0 && !DimsOf(blob, full_name, where).empty())
          where.Fail(full_name + " has no values");
        WriteBlobValues(history.get(), index, full_name, blob, false, where);
      }
      WriteExtraFields(file, state, where);
    });
  });
}

}  // namespace cortado
