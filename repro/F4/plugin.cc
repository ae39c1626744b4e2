// A plugin shared library, built twice: eager (FAULTLINE_PLUGIN_EAGER=1)
// touches CUDA in a static initializer when the library is loaded, as
// `import peft` did by importing torch.utils.cpp_extension; lazy touches CUDA
// on first use only. The CUDA touch goes through the host process's
// faultline_plugin_host_init_cuda, found at load time, so the plugin uses the
// host's runtime (simcuda state is per process image).
#include <dlfcn.h>

namespace {

int InitCudaThroughHost() {
  using HostInit = int (*)(const char*);
  auto init = reinterpret_cast<HostInit>(dlsym(RTLD_DEFAULT, "faultline_plugin_host_init_cuda"));
  return init == nullptr ? -1
                         : init(FAULTLINE_PLUGIN_EAGER ? "eager plugin static initializer" : "lazy plugin first use");
}

#if FAULTLINE_PLUGIN_EAGER
const int g_cuda_at_load = InitCudaThroughHost();
#endif

}  // namespace

// Runs the plugin's work; returns 0 when CUDA is usable, -1 without a host.
extern "C" int faultline_plugin_compute() {
  static const int status = InitCudaThroughHost();
  return status;
}
