// leveldb_fuzzer.cpp — a whole LevelDB directory, opened as the Data layer and compute_image_mean open
// one, and every record (up to 4096) read and parsed as a Datum. The input is the directory as a
// sequence of files, each "<name>\n<size as 8 hex digits>\n<bytes>" (fuzz/make_seeds.sh writes the
// seeds so); a name holding '/', starting with '.' or longer than 100 bytes is skipped.
#include <filesystem>
#include <string>

#include "cortado/data/records.hpp"
#include "fuzz_util.hpp"

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string input(reinterpret_cast<const char*>(data), size);
  const std::string db = cortado::fuzz::FreshFolder("db");
  size_t at = 0;
  for (int files = 0; files < 64 && at < input.size(); ++files) {
    const size_t name_end = input.find('\n', at);
    if (name_end == std::string::npos || name_end + 10 > input.size() || input[name_end + 9] != '\n') break;
    const std::string name = input.substr(at, name_end - at);
    const size_t length = std::strtoul(input.substr(name_end + 1, 8).c_str(), nullptr, 16);
    const std::string bytes = input.substr(name_end + 10, length);
    at = name_end + 10 + bytes.size();
    if (name.empty() || name.size() > 100 || name[0] == '.' || name.find('/') != std::string::npos ||
        name.find('\0') != std::string::npos)
      continue;
    cortado::fuzz::WriteInput("db/" + name, bytes);
  }
  return cortado::fuzz::Run([&] {
    const auto records = cortado::OpenRecords(cortado::DataParameter::LEVELDB, db, "layer data (Data)");
    cortado::fuzz::ParseEveryRecord(*records);
  });
}
