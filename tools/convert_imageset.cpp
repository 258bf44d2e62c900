// convert_imageset.cpp — a folder of images and a list file ("relative/path label" per line) into an
// LMDB or a LevelDB (--backend) of Datums, as Caffe's tool: keys "%08d_<path>" (the line's index after
// the optional shuffle), raw uint8 C×H×W BGR pixels, or with --encoded the image file's own bytes
// (re-encoded only when it is resized, or when --encode_type asks for another format). Unreadable
// images are skipped.
#include <gflags/gflags.h>
#include <glog/logging.h>

#include <algorithm>
#include <cctype>
#include <cerrno>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <memory>
#include <random>
#include <sstream>
#include <string>
#include <vector>

#include "cortado/cortado.pb.h"
#include "cortado/data/db_writer.hpp"
#include "cortado/data/image_list.hpp"
#include "cortado/data/records.hpp"
#include "cortado/error.hpp"
#include "cortado/image.hpp"
#include "cortado/tool.hpp"

DEFINE_bool(gray, false, "Read the images as grey (1 channel) instead of colour (3 channels, BGR)");
DEFINE_bool(shuffle, false, "Shuffle the list's lines (with a fixed seed) before converting");
DEFINE_string(backend, "lmdb", "The database format to write: lmdb or leveldb");
DEFINE_int32(resize_width, 0, "Resize every image to this width (bilinear); with --resize_height");
DEFINE_int32(resize_height, 0, "Resize every image to this height (bilinear); with --resize_width");
DEFINE_bool(check_size, false, "Require every image to have the first one's channels, height and width");
DEFINE_bool(encoded, false, "Store the encoded image (the file's bytes) instead of raw pixels");
DEFINE_string(encode_type, "", "Re-encode the images as png or jpg (implies --encoded)");

namespace {

using cortado::Datum;
using cortado::Fail;

constexpr uint32_t kShuffleSeed = 1701;  // fixed: the same list always shuffles the same way
constexpr size_t kMaxKeyBytes = 511;     // LMDB's default maximum key size

using Entry = cortado::ImageListEntry;

// The list file's entries (cortado::ReadImageList), with the LMDB key length checked.
std::vector<Entry> ReadList(const std::string& list_path) {
  std::vector<Entry> entries = cortado::ReadImageList(list_path);
  for (const Entry& e : entries)
    CORTADO_REQUIRE(e.path.size() + 9 <= kMaxKeyBytes, list_path, ":", e.line, ": the path is ", e.path.size(),
                    " bytes long; LMDB keys (\"%08d_<path>\") allow at most ", kMaxKeyBytes - 9);
  return entries;
}

// Fisher–Yates with the raw generator, so that the order is the same with every standard library.
void Shuffle(std::vector<Entry>* entries) {
  std::mt19937 rng(kShuffleSeed);
  for (size_t i = entries->size(); i > 1; --i) std::swap((*entries)[i - 1], (*entries)[rng() % i]);
}

std::string Lower(std::string text) {
  std::transform(text.begin(), text.end(), text.begin(), [](unsigned char c) { return std::tolower(c); });
  return text;
}

std::string Extension(const std::string& path) {  // lower case, without the dot; "" when none
  const std::string name = std::filesystem::path(path).filename().string();
  const size_t dot = name.rfind('.');
  return dot == std::string::npos ? "" : Lower(name.substr(dot + 1));
}

bool SameFormat(const std::string& a, const std::string& b) {
  auto canonical = [](const std::string& e) { return e == "jpeg" ? std::string("jpg") : e; };
  return canonical(a) == canonical(b);
}

// Reads one image into datum as the flags ask; throws cortado::Error when it is not a readable image.
// --encoded without resizing keeps the file's bytes when they already are in the wanted format and
// decode to the wanted number of channels (the image is decoded only to check that and get its shape).
void ReadImage(const std::string& path, int label, Datum* datum, Datum* scratch) {
  const cortado::ColorMode mode = FLAGS_gray ? cortado::ColorMode::kGray : cortado::ColorMode::kColor;
  const bool encoded = FLAGS_encoded || !FLAGS_encode_type.empty();
  const bool resize = FLAGS_resize_width > 0;
  if (!encoded) {
    cortado::ReadImageToDatum(path, label, FLAGS_resize_height, FLAGS_resize_width, mode, "", datum);
    return;
  }
  const std::string ext = Extension(path);
  std::string encoding = FLAGS_encode_type;
  if (encoding.empty()) encoding = ext == "jpg" || ext == "jpeg" || ext == "png" ? ext : "png";
  if (!resize && SameFormat(ext, encoding)) {
    std::ifstream in(path, std::ios::binary);
    CORTADO_REQUIRE(in.good(), "cannot read image '", path, "' (missing or unreadable)");
    datum->Clear();
    datum->set_data(std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()));
    datum->set_encoded(true);
    try {
      cortado::DecodeDatum(*datum, cortado::ColorMode::kKeep, scratch);
    } catch (const cortado::Error& e) {  // not an image, or a header claiming too many pixels: say which
      Fail("cannot read image '", path, "': ", e.what());
    }
    if (scratch->channels() == (FLAGS_gray ? 1 : 3)) {
      datum->set_channels(scratch->channels());
      datum->set_height(scratch->height());
      datum->set_width(scratch->width());
      datum->set_label(label);
      return;
    }
  }
  cortado::ReadImageToDatum(path, label, FLAGS_resize_height, FLAGS_resize_width, mode, encoding, datum);
}

void CheckFlags() {
  cortado::ParseBackendFlag(FLAGS_backend);  // an unknown --backend is an Error
  cortado::CheckFlags({{"resize_width", 0, 1 << 16}, {"resize_height", 0, 1 << 16}});
  CORTADO_REQUIRE((FLAGS_resize_width > 0) == (FLAGS_resize_height > 0),
                  "--resize_width=", FLAGS_resize_width, " --resize_height=", FLAGS_resize_height,
                  ": give both, positive, or neither");
  const std::string type = Lower(FLAGS_encode_type);
  CORTADO_REQUIRE(type.empty() || type == "png" || type == "jpg" || type == "jpeg", "--encode_type=",
                  FLAGS_encode_type, " is not supported; use png or jpg");
  FLAGS_encode_type = type;
  CORTADO_REQUIRE(cortado::BuiltWithImageSupport(),
                  "this build has no OpenCV, which convert_imageset needs to read images");
}

std::string ShapeText(const Datum& d) {
  std::ostringstream out;
  out << d.channels() << "×" << d.height() << "×" << d.width();
  return out.str();
}

// Writes every readable image of `entries` to db; returns how many were written.
size_t WriteImages(const std::string& root, const std::string& list_path, const std::vector<Entry>& entries,
                   cortado::DbWriter* db) {
  Datum datum, scratch, first;
  std::string value;
  size_t count = 0;
  for (size_t i = 0; i < entries.size(); ++i) {
    const Entry& e = entries[i];
    const std::string path = root.empty() || root.back() == '/' ? root + e.path : root + "/" + e.path;
    try {
      ReadImage(path, e.label, &datum, &scratch);
    } catch (const cortado::Error& error) {
      LOG(WARNING) << list_path << ":" << e.line << ": skipping: " << error.what();
      continue;
    }
    if (FLAGS_check_size) {
      if (count == 0) first = datum;
      CORTADO_REQUIRE(datum.channels() == first.channels() && datum.height() == first.height() &&
                          datum.width() == first.width(),
                      list_path, ":", e.line, ": '", e.path, "' is ", ShapeText(datum),
                      " (C×H×W) but the first image is ", ShapeText(first), " (--check_size)");
    }
    CORTADO_REQUIRE(datum.SerializeToString(&value), "cannot serialise '", path, "'");
    char index[16];
    std::snprintf(index, sizeof(index), "%08zu_", i);
    db->Put(index + e.path, value);
    if (++count % 1000 == 0) LOG(INFO) << "Processed " << count << " files.";
  }
  db->Finish();
  if (count % 1000 != 0) LOG(INFO) << "Processed " << count << " files.";
  return count;
}

int Convert(const std::string& root, const std::string& list_path, const std::string& db_path) {
  CheckFlags();
  CORTADO_REQUIRE(root.empty() || std::filesystem::is_directory(root), "image folder '", root,
                  "' does not exist or is not a folder");
  std::vector<Entry> entries = ReadList(list_path);
  if (FLAGS_shuffle) {
    LOG(INFO) << "Shuffling data";
    Shuffle(&entries);
  }
  LOG(INFO) << "A total of " << entries.size() << " images.";
  if (!FLAGS_encode_type.empty() && !FLAGS_encoded)
    LOG(INFO) << "encode_type specified, assuming encoded=true.";

  // The database is removed again when the conversion fails (the writer, unfinished) or converts nothing.
  auto db = cortado::CreateDbWriter(cortado::ParseBackendFlag(FLAGS_backend), db_path, "");  // refuses an existing path
  const size_t count = WriteImages(root, list_path, entries, db.get());
  db.reset();
  const size_t skipped = entries.size() - count;
  if (count == 0) {
    std::filesystem::remove_all(db_path);
    Fail("none of the ", entries.size(), " images listed in '", list_path, "' could be read",
         entries.empty() ? "" : " (see the warnings above)", "; no database written");
  }
  if (skipped > 0)
    LOG(WARNING) << "Skipped " << skipped << " of " << entries.size() << " images (unreadable).";
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const char* usage =
      "Converts a set of images into an LMDB or a LevelDB of Datums.\n"
      "Usage: convert_imageset [FLAGS] ROOT/ LISTFILE DB\n"
      "LISTFILE lines are 'relative/path label' (split at the last space).";
  return cortado::RunTool(argc, argv, usage, [](int argc, char** argv) {
    CORTADO_REQUIRE(argc == 4, "expected 3 arguments, got ", argc - 1,
                    "; usage: convert_imageset [FLAGS] ROOT/ LISTFILE DB (see --help)");
    return Convert(argv[1], argv[2], argv[3]);
  });
}
