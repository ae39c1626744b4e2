// Provides the host side of the F6 backend library: loading the cuinit or
// nvml build with dlopen, the driver hooks its is_active() calls back into,
// and Triton's driver resolution (`triton.runtime.driver.active`).
#ifndef FAULTLINE_REPRO_F6_BACKEND_HOST_H_
#define FAULTLINE_REPRO_F6_BACKEND_HOST_H_

#include <string>
#include <utility>

#include "reference/base/status.h"
#include "reference/runtime/runtime.h"
#include "repro/shared_library.h"

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

  // What the probe at load time found: ok when active, else why not.
  Status ActiveAtLoad() const;
  // triton.runtime.driver.active: asks is_active() now; with no active
  // driver, returns kZeroActiveDrivers carrying the probe's CUDA error.
  Status ResolveActiveDriver() const;
  const std::string& path() const { return library_.path(); }

 private:
  explicit Backend(SharedLibrary library) : library_(std::move(library)) {}
  SharedLibrary library_;
};

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_F6_BACKEND_HOST_H_
