// Implements the fuzz helpers.
#include "properties/fuzz/fuzz_support.h"

#include <fcntl.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <utility>

#include "reference/base/fd_io.h"
#include "reference/base/temp_dir.h"

namespace faultline {
namespace fuzz {

void CheckFailed(const char* file, int line, const char* condition, const std::string& detail) {
  std::fprintf(stderr, "fuzz check failed at %s:%d: %s: %s\n", file, line, condition, detail.c_str());
  std::abort();
}

const std::string& ScratchDir() {
  // A static: its destructor removes the folder, with whatever the targets
  // wrote there, when the process exits.
  static const TempDir dir = [] {
    Result<TempDir> made = TempDir::Create("", "faultline-fuzz-", "the fuzz targets' scratch folder");
    if (!made.ok()) CheckFailed(__FILE__, __LINE__, "mkdtemp", made.status().message());
    return std::move(made).value();
  }();
  return dir.path();
}

void WriteFile(const std::string& path, std::string_view bytes) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
  if (fd < 0) CheckFailed(__FILE__, __LINE__, "open", path);
  const Status written = WriteAll(fd, bytes);
  if (!written.ok()) CheckFailed(__FILE__, __LINE__, "write", path + ": " + written.message());
  ::close(fd);
}

std::vector<std::string_view> Split(std::string_view bytes, std::string_view separator, size_t max_parts) {
  std::vector<std::string_view> parts;
  while (parts.size() + 1 < max_parts) {
    const size_t at = bytes.find(separator);
    if (at == std::string_view::npos) break;
    parts.push_back(bytes.substr(0, at));
    bytes.remove_prefix(at + separator.size());
  }
  parts.push_back(bytes);
  return parts;
}

bool IsValidUtf8(const std::string& text) {
  // RFC 3629, as nlohmann::json's decoder checks it: no overlong forms, no
  // surrogates, nothing above U+10FFFF. (Not by catching dump()'s exception:
  // that costs more than the rest of an input under ASan.)
  const auto* p = reinterpret_cast<const unsigned char*>(text.data());
  const auto* end = p + text.size();
  while (p < end) {
    const unsigned char c = *p++;
    if (c < 0x80) continue;
    int more;
    uint32_t min, code;
    if (c >= 0xc2 && c <= 0xdf) {
      more = 1, min = 0x80, code = c & 0x1f;
    } else if (c >= 0xe0 && c <= 0xef) {
      more = 2, min = 0x800, code = c & 0x0f;
    } else if (c >= 0xf0 && c <= 0xf4) {
      more = 3, min = 0x10000, code = c & 0x07;
    } else {
      return false;
    }
    if (end - p < more) return false;
    for (int i = 0; i < more; ++i, ++p) {
      if ((*p & 0xc0) != 0x80) return false;
      code = (code << 6) | (*p & 0x3f);
    }
    if (code < min || code > 0x10ffff || (code >= 0xd800 && code <= 0xdfff)) return false;
  }
  return true;
}

}  // namespace fuzz
}  // namespace faultline
