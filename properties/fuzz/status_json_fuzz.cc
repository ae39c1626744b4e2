// Fuzzes the JSON form of Status (reference/base/status_json.h), which
// carries a worker's or a child's error across a process boundary. Feeds:
// the input parsed as JSON (any document), given to StatusFromJson; then a
// Status built from the input's bytes, through StatusToJson, dump, parse
// and StatusFromJson. Asserts: StatusFromJson never crashes or throws and
// never returns OK; a CUDA error is a device error; StatusToJson's output
// can always be dumped; the round trip keeps the code, the CUDA detail and
// (for valid UTF-8) every string.
#include <cstring>

#include "properties/fuzz/fuzz_support.h"
#include "reference/base/status_json.h"

namespace faultline {
namespace {

void FromArbitraryJson(std::string_view bytes) {
  const nlohmann::json j = nlohmann::json::parse(bytes.begin(), bytes.end(), nullptr, /*allow_exceptions=*/false);
  if (j.is_discarded()) return;
  const Status status = StatusFromJson(j);
  FUZZ_CHECK(!status.ok(), "StatusFromJson returned OK for " + j.dump());
  FUZZ_CHECK(status.code() > StatusCode::kOk && status.code() <= StatusCode::kInternal, status.ToString());
  FUZZ_CHECK(!status.cuda_error() || status.code() == StatusCode::kDeviceError, status.ToString());
}

// Byte 0 picks the code (bit 7: a CUDA error), bytes 1..8 the CUDA code and
// line, the rest split at '\0' gives the message and the CUDA strings.
void RoundTrip(std::string_view bytes) {
  if (bytes.size() < 9) return;
  const uint8_t selector = static_cast<uint8_t>(bytes[0]);
  int32_t numbers[2];
  std::memcpy(numbers, bytes.data() + 1, 8);
  const std::vector<std::string_view> fields = fuzz::Split(bytes.substr(9), std::string_view("\0", 1), 5);
  auto field = [&](size_t i) { return i < fields.size() ? std::string(fields[i]) : std::string(); };
  const Status sent =
      (selector & 0x80)
          ? Status(CudaErrorInfo{numbers[0], field(1), field(2), field(3), field(4), numbers[1]}, field(0))
          : Status(static_cast<StatusCode>(1 + selector % 9), field(0));
  const std::string text = StatusToJson(sent).dump();
  const Status back = StatusFromJson(nlohmann::json::parse(text, nullptr, /*allow_exceptions=*/false));
  FUZZ_CHECK(back.code() == sent.code(), sent.ToString() + " came back as " + back.ToString());
  FUZZ_CHECK(back.cuda_error().has_value() == sent.cuda_error().has_value(), back.ToString());
  if (sent.cuda_error()) {
    const CudaErrorInfo &s = *sent.cuda_error(), &r = *back.cuda_error();
    FUZZ_CHECK(r.code == s.code && r.line == s.line, back.ToString());
    if (fuzz::IsValidUtf8(s.name)) FUZZ_CHECK(r.name == s.name, r.name);
    if (fuzz::IsValidUtf8(s.string)) FUZZ_CHECK(r.string == s.string, r.string);
    if (fuzz::IsValidUtf8(s.api)) FUZZ_CHECK(r.api == s.api, r.api);
    if (fuzz::IsValidUtf8(s.file)) FUZZ_CHECK(r.file == s.file, r.file);
  }
  if (fuzz::IsValidUtf8(sent.message())) FUZZ_CHECK(back.message() == sent.message(), back.message());
}

}  // namespace
}  // namespace faultline

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
  const std::string_view bytes(reinterpret_cast<const char*>(data), size);
  faultline::FromArbitraryJson(bytes);
  faultline::RoundTrip(bytes);
  return 0;
}
