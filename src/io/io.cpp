// io.cpp — protobuf messages from and to files, text and binary, with errors that name the place.
#include "cortado/io.hpp"

#include <fcntl.h>
#include <google/protobuf/io/coded_stream.h>
#include <google/protobuf/io/tokenizer.h>
#include <google/protobuf/io/zero_copy_stream_impl.h>
#include <google/protobuf/text_format.h>
#include <unistd.h>

#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "cortado/error.hpp"

namespace cortado {

namespace {

namespace pb = google::protobuf;

// Keeps the first parse error as "file:line:column: message" (lines and columns from 1).
class FirstErrorCollector : public pb::io::ErrorCollector {
 public:
  explicit FirstErrorCollector(std::string name) : name_(std::move(name)) {}
  void AddError(int line, pb::io::ColumnNumber column, const std::string& message) override {
    if (!first_.empty()) return;
    std::ostringstream out;
    out << name_ << ":" << line + 1 << ":" << column + 1 << ": " << message;
    first_ = out.str();
  }
  void AddWarning(int, pb::io::ColumnNumber, const std::string&) override {}
  const std::string& first() const { return first_; }

 private:
  std::string name_;
  std::string first_;
};

std::string ReadWholeFile(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  CORTADO_REQUIRE(in.good(), "cannot open '", path, "': ", std::strerror(errno));
  std::ostringstream contents;
  contents << in.rdbuf();
  CORTADO_REQUIRE(!in.bad(), "cannot read '", path, "': ", std::strerror(errno));
  return contents.str();
}

// Writes bytes to path through path.tmp-<pid> + fsync + rename.
void WriteAtomically(const std::string& path, const std::string& bytes) {
  const std::string temp = path + ".tmp-" + std::to_string(getpid());
  const int fd = ::open(temp.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  CORTADO_REQUIRE(fd >= 0, "cannot write '", path, "': ", std::strerror(errno));
  size_t written = 0;
  while (written < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + written, bytes.size() - written);
    if (n < 0) {
      const int saved = errno;
      ::close(fd);
      ::unlink(temp.c_str());
      Fail("cannot write '", path, "': ", std::strerror(saved));
    }
    written += static_cast<size_t>(n);
  }
  ::fsync(fd);
  ::close(fd);
  if (std::rename(temp.c_str(), path.c_str()) != 0) {
    const int saved = errno;
    ::unlink(temp.c_str());
    Fail("cannot write '", path, "': ", std::strerror(saved));
  }
}

}  // namespace

bool FileExists(const std::string& path) {
  std::error_code ec;
  return std::filesystem::exists(path, ec);
}

void ReadProtoFromTextString(const std::string& text, pb::Message* message,
                             const std::string& name_for_errors) {
  FirstErrorCollector errors(name_for_errors);
  pb::TextFormat::Parser parser;
  parser.RecordErrorsTo(&errors);
  if (!parser.ParseFromString(text, message)) {
    Fail(errors.first().empty() ? name_for_errors + ": cannot parse as " + message->GetTypeName()
                                : errors.first());
  }
}

void ReadProtoFromTextFile(const std::string& path, pb::Message* message) {
  ReadProtoFromTextString(ReadWholeFile(path), message, path);
}

void ReadProtoFromBinaryFile(const std::string& path, pb::Message* message) {
  const std::string bytes = ReadWholeFile(path);
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
