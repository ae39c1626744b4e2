// Implements the F4 plugin host. The plugin files ship as Bazel runfiles next
// to the binary (<binary>.runfiles/faultline/repro/F4/); FAULTLINE_PLUGIN_DIR
// overrides the directory.
#include "repro/F4/plugin_host.h"

#include <dlfcn.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <mutex>

#include "reference/process/process.h"
#include "reference/runtime/lazy_init.h"

namespace faultline {
namespace repro {
namespace {

std::atomic<RuntimeKind> g_runtime{RuntimeKind::kSimCuda};
std::mutex g_mu;
Status* g_last_init = new Status();

Result<std::string> PluginPath(PluginKind kind) {
  const std::string file =
      kind == PluginKind::kEager ? "libfaultline_plugin_eager.so" : "libfaultline_plugin_lazy.so";
  std::string tried;
  if (const char* dir = std::getenv("FAULTLINE_PLUGIN_DIR"); dir && *dir) {
    const std::string path = std::string(dir) + "/" + file;
    if (access(path.c_str(), R_OK) == 0) return path;
    tried += path + " ";
  }
  FL_ASSIGN_OR_RETURN(std::string self, SelfExecutable());
  const std::string path = self + ".runfiles/faultline/repro/F4/" + file;
  if (access(path.c_str(), R_OK) == 0) return path;
  tried += path;
  return NotFoundError("plugin " + file + " not found; tried " + tried + " (set FAULTLINE_PLUGIN_DIR)");
}

}  // namespace

// The hook the plugin calls when it touches CUDA (found with dlsym, so the
// binary exports it: see the BUILD file's linkopts).
extern "C" __attribute__((visibility("default"), used)) int faultline_plugin_host_init_cuda(const char* who) {
  Status s = LazyInitCuda(GetRuntime(g_runtime.load()));
  std::lock_guard<std::mutex> lock(g_mu);
  *g_last_init = s.ok() ? s : s.WithContext(who);
  return s.ok() ? 0 : 1;
}

Status LastPluginInitStatus() {
  std::lock_guard<std::mutex> lock(g_mu);
  return *g_last_init;
}

Result<Plugin> Plugin::Load(PluginKind kind, RuntimeKind runtime) {
  FL_ASSIGN_OR_RETURN(std::string path, PluginPath(kind));
  g_runtime.store(runtime);
  void* handle = dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL);
  if (handle == nullptr) return UnavailableError("dlopen " + path + " failed: " + dlerror());
  return Plugin(handle, path);
}

Plugin::~Plugin() {
  if (handle_ != nullptr) dlclose(handle_);
}

Status Plugin::Compute() {
  using ComputeFn = int (*)();
  auto compute = reinterpret_cast<ComputeFn>(dlsym(handle_, "faultline_plugin_compute"));
  if (compute == nullptr) return InternalError(path_ + " has no faultline_plugin_compute");
  const int rc = compute();
  if (rc < 0) return InternalError(path_ + " could not find faultline_plugin_host_init_cuda in the host binary");
  return LastPluginInitStatus();
}

}  // namespace repro
}  // namespace faultline
