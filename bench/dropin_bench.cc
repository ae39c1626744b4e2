// The per-call cost of the CUDA calls PyTorch makes most, over drop-in
// simcuda: cudaGetDevice (16 times for one host-to-device copy) and the
// driver's cuDevicePrimaryCtxGetState (6 times), plus cudaGetLastError.
// This binary links the stand-in libcudart.so.13 and dlopens the stand-in
// libcuda.so.1 (run it with ci/simcuda.sh, or from bazel-bin with
// LD_LIBRARY_PATH=bazel-bin/reference/dropin).
#include <benchmark/benchmark.h>
#include <cuda_runtime_api.h>
#include <dlfcn.h>

#include "bench/bench_main.h"

namespace {

using PrimaryCtxGetState = int (*)(int, unsigned*, int*);

void BM_CudaGetDevice(benchmark::State& state) {
  int device = 0;
  if (cudaGetDevice(&device) != cudaSuccess) state.SkipWithError("cudaGetDevice failed");
  for (auto _ : state) {
    cudaGetDevice(&device);
    benchmark::DoNotOptimize(device);
  }
}
BENCHMARK(BM_CudaGetDevice)->ThreadRange(1, 2);

void BM_CudaGetLastError(benchmark::State& state) {
  for (auto _ : state) benchmark::DoNotOptimize(cudaGetLastError());
}
BENCHMARK(BM_CudaGetLastError);

void BM_CuDevicePrimaryCtxGetState(benchmark::State& state) {
  void* driver = dlopen("libcuda.so.1", RTLD_NOW);
  auto get_state =
      driver == nullptr ? nullptr : reinterpret_cast<PrimaryCtxGetState>(dlsym(driver, "cuDevicePrimaryCtxGetState"));
  int count = 0;
  if (get_state == nullptr || cudaGetDeviceCount(&count) != cudaSuccess) {
    state.SkipWithError("no stand-in libcuda.so.1 on the library path");
    return;
  }
  unsigned flags = 0;
  int active = 0;
  for (auto _ : state) {
    get_state(0, &flags, &active);
    benchmark::DoNotOptimize(active);
  }
}
BENCHMARK(BM_CuDevicePrimaryCtxGetState);

}  // namespace

int main(int argc, char** argv) { return faultline::RunBenchmarksMain(argc, argv, "dropin_bench"); }
