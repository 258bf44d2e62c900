// image_list.hpp — ReadImageList: the "path label" lines of an image list file (ImageData,
// convert_imageset).
#pragma once

#include <string>
#include <vector>

namespace cortado {

// One line of an image list file (ImageData's source, convert_imageset's LISTFILE): "path label",
// split at the last space or tab, so paths may hold spaces; blank lines are skipped and trailing white
// space (a Windows "\r") ignored. A line without an integer label is an Error
// "<list>:<line>: expected 'relative/path label', got '<line>'"; a file that cannot be opened too.
struct ImageListEntry {
  std::string path;  // as written, relative to the root folder
  int label;
  int line;  // in the list file, from 1
};
std::vector<ImageListEntry> ReadImageList(const std::string& list_path);

}  // namespace cortado
