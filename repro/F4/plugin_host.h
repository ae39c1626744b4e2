// Provides the host side of the F4 plugin: loading the eager or lazy plugin
// shared library with dlopen, the CUDA-init hook it calls back into, and its
// compute entry point.
#ifndef FAULTLINE_REPRO_F4_PLUGIN_HOST_H_
#define FAULTLINE_REPRO_F4_PLUGIN_HOST_H_

#include <string>
#include <utility>

#include "reference/base/status.h"
#include "reference/runtime/runtime.h"
#include "repro/shared_library.h"

namespace faultline {
namespace repro {

enum class PluginKind { kEager, kLazy };

// A loaded plugin; unloads it on destruction.
class Plugin {
 public:
  // Loads the plugin, making `runtime` the one its CUDA touch uses. Loading
  // the eager plugin initializes CUDA (its static initializer runs).
  static Result<Plugin> Load(PluginKind kind, RuntimeKind runtime);
  // Runs the plugin's compute entry (initializes CUDA on first use).
  Status Compute();
  const std::string& path() const { return library_.path(); }

 private:
  explicit Plugin(SharedLibrary library) : library_(std::move(library)) {}
  SharedLibrary library_;
};

// Returns the status of the plugin's last CUDA initialization through the host.
Status LastPluginInitStatus();

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_F4_PLUGIN_HOST_H_
