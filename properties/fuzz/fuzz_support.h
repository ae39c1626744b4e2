// Helpers shared by the fuzz targets in this folder: a check that ends the
// process (a failed property is a crash to libFuzzer and to the standalone
// driver alike), a per-process scratch folder for readers that take a path,
// and a way to split one input into parts.
#ifndef FAULTLINE_PROPERTIES_FUZZ_FUZZ_SUPPORT_H_
#define FAULTLINE_PROPERTIES_FUZZ_FUZZ_SUPPORT_H_

#include <cstddef>
#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace faultline {
namespace fuzz {

// Prints "fuzz check failed at FILE:LINE: CONDITION: DETAIL" and aborts.
[[noreturn]] void CheckFailed(const char* file, int line, const char* condition, const std::string& detail);

// Returns a folder made once per process with mkdtemp (TempDir, under
// DefaultTempBase(): $TEST_TMPDIR, else $TMPDIR, else /tmp) and removed with
// its files when the process that made it exits.
const std::string& ScratchDir();

// Writes `bytes` to `path` (created or truncated); aborts when it cannot.
void WriteFile(const std::string& path, std::string_view bytes);

// Splits `bytes` at every occurrence of `separator` (at most `max_parts`
// parts; the last part keeps any further separators).
std::vector<std::string_view> Split(std::string_view bytes, std::string_view separator, size_t max_parts);

// Returns whether `text` is valid UTF-8 (what nlohmann::json's dump accepts
// without throwing).
bool IsValidUtf8(const std::string& text);

}  // namespace fuzz
}  // namespace faultline

// Checks a property of the code under test; `detail` is any expression that
// converts to std::string, evaluated only on failure.
#define FUZZ_CHECK(condition, detail)                                                           \
  do {                                                                                          \
    if (!(condition)) ::faultline::fuzz::CheckFailed(__FILE__, __LINE__, #condition, (detail)); \
  } while (0)

#endif  // FAULTLINE_PROPERTIES_FUZZ_FUZZ_SUPPORT_H_
