// Provides the host side of the F6 backend library: loading the cuinit or
// nvml build with dlopen, the driver hooks its is_active() calls back into,
// and Triton's driver resolution (`triton.runtime.driver.active`).
#ifndef FAULTLINE_REPRO_F6_BACKEND_HOST_H_
#define FAULTLINE_REPRO_F6_BACKEND_HOST_H_

#include <string>

#include "reference/base/status.h"
#include "reference/runtime/runtime.h"

namespace faultline {
namespace repro {

// Triton's message when driver resolution finds no active backend.
inline constexpr char kZeroActiveDrivers[] = "0 active drivers ([]). There should only be one.";

enum class ProbeKind {
  kCuInit,  // is_active() initializes CUDA (Triton PR 9578)
  kNvml,    // is_active() does not (Triton PR 10935 / 10933)
};

// A loaded backend library; unloads it on destruction.
class Backend {
 public:
  // Loads the library; its static initializer probes the driver through
  // `runtime` (ProbeKind::kCuInit initializes CUDA in this process).
  static Result<Backend> Load(ProbeKind kind, RuntimeKind runtime);
  Backend(Backend&& other) noexcept : handle_(other.handle_), path_(std::move(other.path_)) { other.handle_ = nullptr; }
  Backend(const Backend&) = delete;
  Backend& operator=(const Backend&) = delete;
  ~Backend();

  // What the probe at load time found: ok when active, else why not.
  Status ActiveAtLoad() const;
  // triton.runtime.driver.active: asks is_active() now; with no active
  // driver, returns kZeroActiveDrivers carrying the probe's CUDA error.
  Status ResolveActiveDriver() const;
  const std::string& path() const { return path_; }

 private:
  Backend(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  void* handle_;
  std::string path_;
};

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_F6_BACKEND_HOST_H_
