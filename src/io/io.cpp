// io.cpp — protobuf messages from and to files, text and binary, with errors that name the place.
#include "cortado/io.hpp"

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/text_format.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <sstream>
#include <string_view>
#include <vector>

#include "cortado/cortado.pb.h"
#include "cortado/error.hpp"
#include "cortado/layer_registry.hpp"

namespace cortado {

namespace {

namespace pb = google::protobuf;

// Keeps the first parse error: line and column as protobuf counts them (from 0; a tab advances the
// column to the next multiple of 8).
class FirstErrorCollector : public pb::io::ErrorCollector {
 public:
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (seen_) return;
    seen_ = true;
    line_ = line, column_ = column, message_ = message;
  }
  void AddWarning(int, pb::io::ColumnNumber, const std::string&) override {}
  bool seen() const { return seen_; }
  int line() const { return line_; }
  int column() const { return column_; }
  const std::string& message() const { return message_; }

 private:
  bool seen_ = false;
  int line_ = 0, column_ = 0;
  std::string message_;
};

std::string_view LineOf(const std::string& text, int line) {
  size_t start = 0;
  for (int i = 0; i < line && start != std::string::npos; ++i) {
    start = text.find('\n', start);
    if (start != std::string::npos) ++start;
  }
  if (start == std::string::npos || start > text.size()) return {};
  const size_t end = text.find('\n', start);
  return std::string_view(text).substr(start, end == std::string::npos ? std::string::npos : end - start);
}

// The character index in `line` of protobuf's column (which counts a tab as up to 8).
size_t CharIndex(std::string_view line, int column) {
  int visual = 0;
  size_t i = 0;
  for (; i < line.size() && visual < column; ++i) visual = line[i] == '\t' ? (visual / 8 + 1) * 8 : visual + 1;
  return i;
}

// "file:line:column: message", counting from 1 in characters. protobuf reports an unknown field at
// the token after its name; point at the name itself.
std::string DescribeParseError(const std::string& text, const std::string& name, const FirstErrorCollector& e) {
  const std::string_view line = LineOf(text, e.line());
  size_t index = CharIndex(line, e.column());
  const std::string marker = "has no field named \"";
  const size_t at = e.message().find(marker);
  if (at != std::string::npos) {
    const size_t start = at + marker.size();
    const std::string field = e.message().substr(start, e.message().find('"', start) - start);
    const size_t found = field.empty() ? std::string::npos : line.substr(0, index).rfind(field);
    if (found != std::string::npos) index = found;
  }
  std::ostringstream out;
  out << name << ":" << e.line() + 1 << ":" << index + 1 << ": " << e.message();
  return out.str();
}

// A layer whose type Cortado does not build, where the text has it.
struct Unbuildable {
  std::string name, type;
  int line;  // from 1; 0 when unknown
};

// The layers (a net's, a solver's net_param's) whose type Cortado does not build, in text order. With
// `any_unknown`, every unknown type counts (the parse failed, and a type nobody knows is the likeliest
// reason); without, only the Caffe forks' types (LayerRegistry::IsForeign), since a type Cortado lacks
// may still be read, upgraded and written.
void FindUnbuildable(const pb::Message& message, const pb::TextFormat::ParseInfoTree* locations, bool any_unknown,
                     std::vector<Unbuildable>* found) {
  const pb::Reflection* reflection = message.GetReflection();
  std::vector<const pb::FieldDescriptor*> fields;
  reflection->ListFields(message, &fields);
  for (const pb::FieldDescriptor* field : fields) {
    if (field->cpp_type() != pb::FieldDescriptor::CPPTYPE_MESSAGE) continue;
    const int count = field->is_repeated() ? reflection->FieldSize(message, field) : 1;
    for (int i = 0; i < count; ++i) {
      const int index = field->is_repeated() ? i : -1;
      const pb::Message& child = field->is_repeated() ? reflection->GetRepeatedMessage(message, field, i)
                                                      : reflection->GetMessage(message, field);
      if (child.GetDescriptor() == LayerParameter::descriptor()) {
        const auto& layer = static_cast<const LayerParameter&>(child);
        if (layer.type().empty() || LayerRegistry::Has(layer.type())) continue;
        if (!any_unknown && !LayerRegistry::IsForeign(layer.type())) continue;
        const int line = locations != nullptr ? locations->GetLocation(field, index).line + 1 : 0;
        found->push_back({layer.name(), layer.type(), line});
        continue;
      }
      FindUnbuildable(child, locations != nullptr ? locations->GetTreeForNested(field, index) : nullptr, any_unknown,
                      found);
    }
  }
}

// One Error for every such layer: the first named with what its type is, the other types after it
// ("layer conv4_3_norm (line 1041): type 'Normalize' is not a Cortado layer; it comes from a Caffe
// fork: SSD (weiliu89/caffe); the net also has PriorBox (layer conv4_3_norm_mbox_priorbox, line 1177),
// ..."), so that a net from a fork is understood in one go.
void CheckLayerTypes(const pb::Message& message, const pb::TextFormat::ParseInfoTree* locations,
                     const std::string& name, bool any_unknown) {
  std::vector<Unbuildable> found;
  FindUnbuildable(message, locations, any_unknown, &found);
  if (found.empty()) return;
  auto where = [](const Unbuildable& layer) {
    return layer.line > 0 ? ", line " + std::to_string(layer.line) : std::string();
  };
  const Unbuildable& first = found.front();
  std::string others;
  std::vector<std::string> named = {first.type};
  for (const Unbuildable& layer : found) {
    if (std::find(named.begin(), named.end(), layer.type) != named.end()) continue;
    named.push_back(layer.type);
    if (named.size() > 7) {
      others += ", ...";
      break;
    }
    others += (others.empty() ? "" : ", ") + layer.type + " (layer " + layer.name + where(layer) + ")";
  }
  Fail(name, ": layer ", first.name, first.line > 0 ? " (line " + std::to_string(first.line) + ")" : "", ": ",
       LayerRegistry::UnknownTypeMessage(first.type), others.empty() ? "" : "; the net also has " + others);
}

}  // namespace

std::string ReadWholeFile(const std::string& path) {
  // An ifstream opens a directory and reads it as empty; say what is wrong instead.
  std::error_code ec;
  const std::filesystem::file_status status = std::filesystem::status(path, ec);
  CORTADO_REQUIRE(!std::filesystem::is_directory(status), "cannot read '", path,
                  "': it is a directory; give the path of a file");
  // A device (/dev/zero, /dev/urandom) would be read for ever; a pipe (/dev/stdin) ends.
  CORTADO_REQUIRE(!std::filesystem::is_character_file(status) && !std::filesystem::is_block_file(status),
                  "cannot read '", path, "': it is a device, not a file");
  std::ifstream in(path, std::ios::binary);
  CORTADO_REQUIRE(in.good(), "cannot open '", path, "': ", std::strerror(errno));
  std::ostringstream contents;
  contents << in.rdbuf();
  CORTADO_REQUIRE(!in.bad(), "cannot read '", path, "': ", std::strerror(errno));
  return contents.str();
}

void WriteAtomically(const std::string& path, const std::string& bytes) {
  WriteFileAtomically(path, [&](const std::string& temp) {
    const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    CORTADO_REQUIRE(fd >= 0, "cannot write '", path, "': ", std::strerror(errno));
    size_t written = 0;
    while (written < bytes.size()) {
      const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
      if (n < 0) {
        const int saved = errno;
        ::close(fd);
        Fail("cannot write '", path, "': ", std::strerror(saved));
      }
      written += static_cast<size_t>(n);
    }
    ::close(fd);
  });
}

void WriteFileAtomically(const std::string& path,
                         const std::function<void(const std::string& temp_path)>& write) {
  const std::string temp = path + ".tmp-" + std::to_string(getpid());
  try {
    write(temp);
  } catch (...) {
    ::unlink(temp.c_str());
    throw;
  }
  // The finished file reaches the disk before it takes the final name.
  const int fd = ::open(temp.c_str(), O_RDONLY);
  if (fd >= 0) {
    ::fsync(fd);
    ::close(fd);
  }
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temp.c_str());
    Fail("cannot write '", path, "': ", std::strerror(saved));
  }
}

bool FileExists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

bool PathEndsWith(const std::string& path, const std::string& suffix) {
  return path.size() >= suffix.size() && path.compare(path.size() - suffix.size(), suffix.size(), suffix) == 0;
}

void ReadProtoFromTextString(const std::string& text, pb::Message* message,
                             const std::string& name_for_errors) {
  FirstErrorCollector errors;
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  pb::TextFormat::ParseInfoTree locations;
  parser.WriteLocationsTo(&locations);
  if (parser.ParseFromString(text, message)) {
    CheckLayerTypes(*message, &locations, name_for_errors, false);
    return;
  }
  // A Caffe fork's layer (SSD's PriorBox with its prior_box_param) fails first on its parameter field.
  // Parsed again with unknown fields allowed, the error can name the layer and say that its type is
  // the problem.
  std::unique_ptr<pb::Message> lenient(message->New());
  FirstErrorCollector ignored;
  pb::TextFormat::Parser relaxed;
  relaxed.RecordErrorsTo(&ignored);
  relaxed.AllowUnknownField(true);
  pb::TextFormat::ParseInfoTree lenient_locations;
  relaxed.WriteLocationsTo(&lenient_locations);
  if (relaxed.ParseFromString(text, lenient.get()))
    CheckLayerTypes(*lenient, &lenient_locations, name_for_errors, true);
  Fail(errors.seen() ? DescribeParseError(text, name_for_errors, errors)
                     : name_for_errors + ": cannot parse as " + message->GetTypeName());
}

void ReadProtoFromTextFile(const std::string& path, pb::Message* message) {
  ReadProtoFromTextString(ReadWholeFile(path), message, path);
}

void ReadProtoFromBinaryFile(const std::string& path, pb::Message* message) {
  const std::string bytes = ReadWholeFile(path);
  // Zero bytes would parse as an empty message: weights that silently copy nothing.
  CORTADO_REQUIRE(!bytes.empty(), "'", path, "' is empty; expected a ", message->GetTypeName(),
                  " file (truncated or not yet written?)");
  pb::io::CodedInputStream stream(reinterpret_cast<const uint8_t*>(bytes.data()),
                                  static_cast<int>(std::min<size_t>(bytes.size(), INT_MAX)));
  stream.SetTotalBytesLimit(INT_MAX);  // .caffemodel files may exceed protobuf's 64 MiB default
  CORTADO_REQUIRE(message->ParseFromCodedStream(&stream) && stream.ConsumedEntireMessage(),
                  "'", path, "' is not a valid ", message->GetTypeName(),
                  " file (truncated or corrupt)");
}

void WriteProtoToTextFile(const pb::Message& message, const std::string& path) {
  std::string text;
  pb::TextFormat::PrintToString(message, &text);
  WriteAtomically(path, text);
}

void WriteProtoToBinaryFile(const pb::Message& message, const std::string& path) {
  std::string bytes;
  CORTADO_REQUIRE(message.SerializeToString(&bytes), "cannot serialise ", message.GetTypeName(),
                  " for '", path, "'");
  WriteAtomically(path, bytes);
}

}  // namespace cortado
