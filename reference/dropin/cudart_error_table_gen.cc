// Prints the real CUDA runtime's name and message of every error code, as
// C++ initializer rows, for the stand-in libcudart's cudaGetErrorName and
// cudaGetErrorString (built at build time from the toolkit's static cudart,
// which answers these without a driver).
#include <cuda_runtime_api.h>

#include <cstdio>
#include <cstring>

int main() {
  const char* unknown = cudaGetErrorName(static_cast<cudaError_t>(12345));
  for (int code = 0; code < 10000; ++code) {
    const cudaError_t error = static_cast<cudaError_t>(code);
    const char* name = cudaGetErrorName(error);
    if (std::strcmp(name, unknown) == 0) continue;
    std::printf("{%d, \"%s\", \"", code, name);
    for (const char* c = cudaGetErrorString(error); *c != '\0'; ++c) {
      if (*c == '"' || *c == '\\') std::putchar('\\');
      std::putchar(*c);
    }
    std::printf("\"},\n");
  }
  std::printf("// unknown: {\"%s\", \"%s\"}\n", unknown, cudaGetErrorString(static_cast<cudaError_t>(12345)));
  return 0;
}
