// Provides the host side of the F4 plugin: loading the eager or lazy plugin
// shared library with dlopen, the CUDA-init hook it calls back into, and its
// compute entry point.
#ifndef FAULTLINE_REPRO_F4_PLUGIN_HOST_H_
#define FAULTLINE_REPRO_F4_PLUGIN_HOST_H_

#include <string>

#include "reference/base/status.h"
#include "reference/runtime/runtime.h"

namespace faultline {
namespace repro {

enum class PluginKind { kEager, kLazy };

// A loaded plugin; unloads it on destruction.
class Plugin {
 public:
  // Loads the plugin, making `runtime` the one its CUDA touch uses. Loading
  // the eager plugin initializes CUDA (its static initializer runs).
  static Result<Plugin> Load(PluginKind kind, RuntimeKind runtime);
  Plugin(Plugin&& other) noexcept : handle_(other.handle_), path_(std::move(other.path_)) { other.handle_ = nullptr; }
  Plugin(const Plugin&) = delete;
  Plugin& operator=(const Plugin&) = delete;
  ~Plugin();
  // Runs the plugin's compute entry (initializes CUDA on first use).
  Status Compute();
  const std::string& path() const { return path_; }

 private:
  Plugin(void* handle, std::string path) : handle_(handle), path_(std::move(path)) {}
  void* handle_;
  std::string path_;
};

// Returns the status of the plugin's last CUDA initialization through the host.
Status LastPluginInitStatus();

}  // namespace repro
}  // namespace faultline

#endif  // FAULTLINE_REPRO_F4_PLUGIN_HOST_H_
