// The device_probe command line: asks a runtime for its device count without
// initializing CUDA in this process, and says why there is no usable device.
// ci/gpu_run.sh runs it first, so a GPU run on a machine without a usable
// device stops with the reason instead of failing every test one by one.
// Exit status: 0 with at least one device, 1 without, 2 for a usage error.
#include <cstdio>
#include <cstring>
#include <string>

#include "reference/runtime/runtime.h"

namespace {

constexpr char kUsage[] =
    "usage: device_probe [--runtime cuda|simcuda] [--json]\n"
    "Prints the device count of the runtime (default cuda), or the CUDA error that\n"
    "explains why there is none (35: no driver, 34: stub driver, 100: no device).\n"
    "Exit status: 0 with a device, 1 without, 2 for a usage error.\n";

std::string Quoted(const std::string& text) {
  std::string out = "\"";
  for (char c : text) {
    if (c == '"' || c == '\\') out += '\\';
    if (c == '\n') {
      out += "\\n";
      continue;
    }
    out += c;
  }
  return out + "\"";
}

}  // namespace

int main(int argc, char** argv) {
  std::string runtime_name = "cuda";
  bool json = false;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--json") == 0) {
      json = true;
    } else if (std::strcmp(argv[i], "--runtime") == 0 && i + 1 < argc) {
      runtime_name = argv[++i];
    } else if (std::strcmp(argv[i], "--help") == 0 || std::strcmp(argv[i], "-h") == 0) {
      std::fputs(kUsage, stdout);
      return 0;
    } else {
      std::fprintf(stderr, "device_probe: unknown argument '%s'\n%s", argv[i], kUsage);
      return 2;
    }
  }
  auto kind = faultline::ParseRuntimeKind(runtime_name);
  if (!kind.ok() || *kind == faultline::RuntimeKind::kCpu) {
    std::fprintf(stderr, "device_probe: --runtime is '%s'; expected cuda or simcuda\n", runtime_name.c_str());
    return 2;
  }
  faultline::Result<int> count = faultline::ProbeDeviceCount(*kind);
  const int devices = count.ok() ? *count : 0;
  std::string reason = count.ok() ? (devices > 0 ? "" : "the runtime reports 0 devices") : count.status().ToString();
  const auto& cuda = count.ok() ? std::nullopt : count.status().cuda_error();
  if (json) {
    std::printf("{\"runtime\": %s, \"devices\": %d, \"error\": %s, \"code\": %d, \"reason\": %s}\n",
                Quoted(faultline::RuntimeKindName(*kind)).c_str(), devices, cuda ? Quoted(cuda->name).c_str() : "null",
                cuda ? cuda->code : 0, reason.empty() ? "null" : Quoted(reason).c_str());
  } else if (devices > 0) {
    std::printf("%s: %d device(s)\n", faultline::RuntimeKindName(*kind), devices);
  } else {
    std::printf("%s: no usable device: %s\n", faultline::RuntimeKindName(*kind), reason.c_str());
  }
  return devices > 0 ? 0 : 1;
}
