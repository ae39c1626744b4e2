// A CUDA program as a user writes it, built with nvcc -cudart shared: its
// fat binary registers through the runtime, its kernel launches through
// <<<>>>. dropin_programs_test runs it under ci/simcuda.sh and reads what it
// prints. It ends with status 7, which the launcher must pass on.
#include <cuda_runtime.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cstdio>

__global__ void Scale(float* data, float factor) { data[threadIdx.x] *= factor; }

int main() {
  int count = -1;
  const cudaError_t counted = cudaGetDeviceCount(&count);  // before printf reads count
  printf("count %d %d\n", static_cast<int>(counted), count);
  float host[32], back[32];
  for (int i = 0; i < 32; ++i) host[i] = static_cast<float>(i);
  float* device = nullptr;
  cudaMalloc(&device, sizeof(host));
  cudaMemcpy(device, host, sizeof(host), cudaMemcpyHostToDevice);
  Scale<<<1, 32>>>(device, 2.0f);
  const cudaError_t launch = cudaGetLastError();
  printf("launch %d %s\n", static_cast<int>(launch), cudaGetErrorString(launch));
  printf("copy back %d\n", static_cast<int>(cudaMemcpy(back, device, sizeof(back), cudaMemcpyDeviceToHost)));
  bool same = true;
  for (int i = 0; i < 32; ++i) same = same && back[i] == host[i];
  printf("bytes %s\n", same ? "unchanged" : "changed");
  fflush(stdout);
  const pid_t pid = fork();
  if (pid == 0) {
    void* p = nullptr;
    printf("child malloc %d\n", static_cast<int>(cudaMalloc(&p, 64)));
    fflush(stdout);
    _exit(0);
  }
  waitpid(pid, nullptr, 0);
  return 7;
}
