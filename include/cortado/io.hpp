// io.hpp — reading and writing protobuf messages: prototxt (text) and binary (.caffemodel,
// .solverstate, .binaryproto). Every failure throws cortado::Error naming the file, and for text the
// line and column.
#pragma once

#include <google/protobuf/message.h>

#include <functional>
#include <string>

namespace cortado {

// Text format. A syntax error reads "net.prototxt:12:5: Expected identifier, got: }". A layer (of a net,
// or of a solver's net_param) of a Caffe fork's type is an Error naming the layer and its line,
// "net.prototxt: layer mbox_priorbox (line 1177): type 'PriorBox' is not a Cortado layer; it comes from
// a Caffe fork: SSD (weiliu89/caffe)" (and the net's other such types after it, each with a layer and
// line), also when the fork's parameter field (prior_box_param) is what the parse stumbled on first;
// when the parse fails, any layer type Cortado does not know is named so.
// (A text that parses may hold other types Cortado lacks: the Net refuses those when it is built.)
void ReadProtoFromTextFile(const std::string& path, google::protobuf::Message* message);
void ReadProtoFromTextString(const std::string& text, google::protobuf::Message* message,
                             const std::string& name_for_errors = "<string>");
// Binary format, without protobuf's default 64 MiB limit. A truncated or corrupt file is an Error.
void ReadProtoFromBinaryFile(const std::string& path, google::protobuf::Message* message);

// Both writers go through a temporary file in the same directory and a rename, so a crash never
// leaves a half-written file under the final name.
void WriteProtoToTextFile(const google::protobuf::Message& message, const std::string& path);
void WriteProtoToBinaryFile(const google::protobuf::Message& message, const std::string& path);

// The same guarantee for any writer: `write` creates its file at the temporary path it is given (in
// path's directory); then that file is flushed to disk and renamed over `path`. If `write` throws, the
// temporary file is removed and `path` is left as it was.
void WriteFileAtomically(const std::string& path,
                         const std::function<void(const std::string& temp_path)>& write);
// `bytes` written to `path` through WriteFileAtomically.
void WriteAtomically(const std::string& path, const std::string& bytes);

// The whole file as bytes; an Error for a directory, a device, or a file that cannot be read.
std::string ReadWholeFile(const std::string& path);

bool FileExists(const std::string& path);
// Whether the path ends in `suffix` (".caffemodel", ".h5"): how the tools tell a file's kind by name.
bool PathEndsWith(const std::string& path, const std::string& suffix);

}  // namespace cortado
