// encoded_image.cpp — ReadEncodedImageHeader: the format and size an encoded record's bytes claim, read
// from the header alone (JPEG's SOF marker, PNG's IHDR, BMP's DIB header, PNM's text header, TIFF's
// first directory, WebP's first chunk), so that a damaged record is refused before a decoder is handed
// it or allocates what it claims.
#include <cctype>
#include <cstdint>

#include "cortado/image.hpp"

namespace cortado {

namespace {

uint32_t Big16(std::string_view b, size_t at) { return uint32_t(uint8_t(b[at])) << 8 | uint8_t(b[at + 1]); }
uint32_t Big32(std::string_view b, size_t at) { return Big16(b, at) << 16 | Big16(b, at + 2); }
uint32_t Little16(std::string_view b, size_t at) { return uint32_t(uint8_t(b[at + 1])) << 8 | uint8_t(b[at]); }
uint32_t Little24(std::string_view b, size_t at) { return uint32_t(uint8_t(b[at + 2])) << 16 | Little16(b, at); }
uint32_t Little32(std::string_view b, size_t at) { return Little16(b, at + 2) << 16 | Little16(b, at); }

// JPEG: markers from the start until a start-of-frame (SOF0–SOF15 but DHT C4, JPG C8, DAC CC).
bool JpegSize(std::string_view b, EncodedImageHeader* header) {
  size_t at = 2;
  while (at + 4 <= b.size()) {
    if (uint8_t(b[at]) != 0xFF) return false;
    const uint8_t marker = uint8_t(b[at + 1]);
    if (marker == 0xFF) {  // fill byte
      ++at;
      continue;
    }
    if (marker == 0x01 || (marker >= 0xD0 && marker <= 0xD8)) {  // no length
      at += 2;
      continue;
    }
    const size_t length = Big16(b, at + 2);
    const bool frame = marker >= 0xC0 && marker <= 0xCF && marker != 0xC4 && marker != 0xC8 && marker != 0xCC;
    if (frame) {
      if (at + 9 > b.size()) return false;
      header->height = Big16(b, at + 5), header->width = Big16(b, at + 7);
      return true;
    }
    if (marker == 0xD9 || marker == 0xDA || length < 2) return false;  // the image data before any frame
    at += 2 + length;
  }
  return false;
}

// PNM: "P1".."P6", then width and height as text, with "#" comments between.
bool PnmSize(std::string_view b, EncodedImageHeader* header) {
  size_t at = 2;
  uint32_t values[2] = {0, 0};
  for (uint32_t& value : values) {
    while (at < b.size() && (std::isspace(uint8_t(b[at])) || b[at] == '#')) {
      if (b[at] == '#') {
        while (at < b.size() && b[at] != '\n') ++at;
      } else {
        ++at;
      }
    }
    if (at >= b.size() || !std::isdigit(uint8_t(b[at]))) return false;
    for (; at < b.size() && std::isdigit(uint8_t(b[at])); ++at) {
      if (value > 100000000) return false;
      value = value * 10 + uint32_t(b[at] - '0');
    }
  }
  header->width = values[0], header->height = values[1];
  return true;
}

// TIFF: the first image file directory's ImageWidth (256) and ImageLength (257) entries. A directory
// that lists one twice is measured by the first entry, as libtiff (hence OpenCV) reads it: it ignores
// later duplicates, so a damaged file listing 32768×32768 and then 1×1 decodes as 32768×32768.
bool TiffSize(std::string_view b, EncodedImageHeader* header) {
  const bool little = b[0] == 'I';
  auto u16 = [&](size_t at) { return little ? Little16(b, at) : Big16(b, at); };
  auto u32 = [&](size_t at) { return little ? Little32(b, at) : Big32(b, at); };
  const size_t ifd = u32(4);
  if (ifd + 2 > b.size()) return false;
  const uint32_t entries = u16(ifd);
  bool width = false, height = false;
  for (uint32_t i = 0; i < entries && ifd + 2 + 12 * (i + 1) <= b.size(); ++i) {
    const size_t entry = ifd + 2 + 12 * i;
    const uint32_t tag = u16(entry), type = u16(entry + 2);
    const uint32_t value = type == 3 ? u16(entry + 8) : u32(entry + 8);  // SHORT or LONG
    if (tag == 256 && !width) header->width = value, width = true;
    if (tag == 257 && !height) header->height = value, height = true;
  }
  return width && height;
}

// WebP: the size in the first chunk, lossy (VP8), lossless (VP8L) or extended (VP8X).
bool WebpSize(std::string_view b, EncodedImageHeader* header) {
  if (b.size() < 30) return false;
  const std::string_view chunk = b.substr(12, 4);
  if (chunk == "VP8 ") {
    header->width = Little16(b, 26) & 0x3fff, header->height = Little16(b, 28) & 0x3fff;
  } else if (chunk == "VP8L") {
    const uint32_t bits = Little32(b, 21);
    header->width = (bits & 0x3fff) + 1, header->height = ((bits >> 14) & 0x3fff) + 1;
  } else if (chunk == "VP8X") {
    header->width = Little24(b, 24) + 1, header->height = Little24(b, 27) + 1;
  } else {
    return false;
  }
  return true;
}

}  // namespace

bool ReadEncodedImageHeader(std::string_view b, EncodedImageHeader* header) {
  if (b.size() >= 4 && uint8_t(b[0]) == 0xFF && uint8_t(b[1]) == 0xD8 && uint8_t(b[2]) == 0xFF) {
    header->format = "JPEG";
    return JpegSize(b, header);
  }
  if (b.size() >= 24 && b.substr(0, 8) == std::string_view("\x89PNG\r\n\x1a\n", 8) && b.substr(12, 4) == "IHDR") {
    header->format = "PNG";
    header->width = Big32(b, 16), header->height = Big32(b, 20);
    return true;
  }
  if (b.size() >= 26 && b[0] == 'B' && b[1] == 'M') {
    header->format = "BMP";
    if (Little32(b, 14) == 12) {  // OS/2 BITMAPCOREHEADER: 16-bit sizes
      header->width = Little16(b, 18), header->height = Little16(b, 20);
    } else {
      const auto height = static_cast<int32_t>(Little32(b, 22));  // negative: rows top-down
      header->width = Little32(b, 18), header->height = height < 0 ? 0u - uint32_t(height) : uint32_t(height);
    }
    return true;
  }
  if (b.size() >= 3 && b[0] == 'P' && b[1] >= '1' && b[1] <= '6') {
    header->format = "PNM";
    return PnmSize(b, header);
  }
  const std::string_view tiff_little("II*\0", 4), tiff_big("MM\0*", 4);
  if (b.size() >= 8 && (b.substr(0, 4) == tiff_little || b.substr(0, 4) == tiff_big)) {
    header->format = "TIFF";
    return TiffSize(b, header);
  }
  if (b.size() >= 16 && b.substr(0, 4) == "RIFF" && b.substr(8, 4) == "WEBP") {
    header->format = "WebP";
    return WebpSize(b, header);
  }
  return false;
}

}  // namespace cortado
