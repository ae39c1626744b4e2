// Implements the F4 plugin host. The plugin files ship as Bazel runfiles next
// to the binary (<binary>.runfiles/faultline/repro/F4/); FAULTLINE_PLUGIN_DIR
// overrides the directory.
#include "repro/F4/plugin_host.h"

#include <atomic>
#include <mutex>
#include <string>
#include <utility>

#include "reference/runtime/lazy_init.h"

namespace faultline {
namespace repro {
namespace {

std::atomic<RuntimeKind> g_runtime{RuntimeKind::kSimCuda};
std::mutex g_mu;
Status* g_last_init = new Status();

const char* PluginFile(PluginKind kind) {
  return kind == PluginKind::kEager ? "libfaultline_plugin_eager.so" : "libfaultline_plugin_lazy.so";
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
  FL_ASSIGN_OR_RETURN(std::string path, FindRunfile("repro/F4", PluginFile(kind), "FAULTLINE_PLUGIN_DIR"));
  // Set before loading: the eager plugin's static initializer calls the hook.
  g_runtime.store(runtime);
  FL_ASSIGN_OR_RETURN(SharedLibrary library, SharedLibrary::Open(path));
  return Plugin(std::move(library));
}

Status Plugin::Compute() {
  FL_ASSIGN_OR_RETURN(auto* compute, library_.Function<int()>("faultline_plugin_compute"));
  const int rc = compute();
  if (rc < 0) return InternalError(path() + " could not find faultline_plugin_host_init_cuda in the host binary");
  return LastPluginInitStatus();
}

}  // namespace repro
}  // namespace faultline
