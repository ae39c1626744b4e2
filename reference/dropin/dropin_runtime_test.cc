// Tests the drop-in libraries through the real CUDA API, as an unmodified
// program sees them: this binary links the stand-in libcudart.so.13 (not
// the toolkit's) and reaches the stand-in libcuda.so.1 and
// libnvidia-ml.so.1 with dlopen, as CUDA programs do. Every scenario runs
// in a fresh process, since CUDA's state is per process; each expectation
// is what real CUDA gives (docs/simcuda.md).
#include <cuda_runtime_api.h>
#include <dlfcn.h>
#include <gmock/gmock.h>
#include <gtest/gtest.h>
#include <unistd.h>

#include <atomic>
#include <chrono>
#include <cstring>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "reference/base/status_matchers.h"
#include "reference/process/child_registry.h"
#include "reference/process/process.h"

// The registration entry points nvcc's generated code calls (crt/host_runtime.h).
extern "C" void** __cudaRegisterFatBinary(void* fat_cubin);
extern "C" void __cudaRegisterFunction(void** handle, const char* host_function, char* device_function,
                                       const char* device_name, int thread_limit, uint3* tid, uint3* bid, dim3* bdim,
                                       dim3* gdim, int* wsize);

namespace faultline {
namespace {

using Env = std::vector<std::pair<std::string, std::string>>;

ChildExit RunChild(const std::string& entry, const Env& env = {}, const std::vector<std::string>& args = {}) {
  SpawnOptions options;
  options.env = env;
  auto child = ChildProcess::Spawn(entry, args, options);
  FL_EXPECT_OK(child);
  auto exit = child->Wait(std::chrono::seconds(120));
  FL_EXPECT_OK(exit);
  EXPECT_TRUE(exit->succeeded()) << entry << ": " << exit->Describe();
  return *exit;
}

// A driver entry point from the stand-in libcuda.so.1.
template <typename Fn>
Fn Driver(const char* name) {
  static void* handle = dlopen("libcuda.so.1", RTLD_NOW);
  return handle == nullptr ? nullptr : reinterpret_cast<Fn>(dlsym(handle, name));
}

std::string Code(cudaError_t e) { return std::to_string(static_cast<int>(e)); }

// Forks; the child reports `body`'s text and exits. Returns the text.
std::string InForkedChild(const std::function<std::string()>& body) {
  auto child = ChildProcess::Fork([&] {
    ReportToParent(body());
    return 0;
  });
  if (!child.ok()) return child.status().ToString();
  auto exit = child->Wait(std::chrono::seconds(60));
  return exit.ok() ? exit->transcript : exit.status().ToString();
}

int ForkAfterInit(const std::vector<std::string>&) {
  int count = 0;
  cudaGetDeviceCount(&count);
  void* pinned = nullptr;
  cudaMallocHost(&pinned, 64);
  ReportToParent(InForkedChild([&] {
    int n = -1, device = -1;
    void* p = nullptr;
    cudaPointerAttributes attributes;
    std::ostringstream t;  // << sequences the calls left to right (+ would not)
    t << "count " << cudaGetDeviceCount(&n) << "=" << n << ", get " << cudaGetDevice(&device) << ", malloc "
      << cudaMalloc(&p, 64) << ", host " << cudaMallocHost(&p, 64) << ", attributes "
      << cudaPointerGetAttributes(&attributes, pinned) << ", last " << cudaGetLastError() << " " << cudaGetLastError();
    return t.str();
  }));
  return 0;
}
FL_REGISTER_CHILD("fork_after_init", ForkAfterInit);

// After cudaGetDeviceCount the runtime answers the count from its cache in
// a forked child; every call that needs the driver fails with 3
// (Note [Fork poisoning], seen on an H100).
TEST(DropInRuntimeTest, AChildForkedAfterInitializationFailsWithInitializationError) {
  EXPECT_EQ(RunChild("fork_after_init").transcript, "count 0=1, get 3, malloc 3, host 3, attributes 3, last 3 0");
}

int ForkAfterCuInitOnly(const std::vector<std::string>&) {
  auto cu_init = Driver<int (*)(unsigned)>("cuInit");
  ReportToParent("cuInit " + std::to_string(cu_init(0)) + "; ");
  ReportToParent(InForkedChild([&] {
    int n = -1;
    std::ostringstream t;
    t << "count " << cudaGetDeviceCount(&n) << ", last " << cudaGetLastError() << " " << cudaGetLastError()
      << ", cuInit " << cu_init(0);
    return t.str();
  }));
  return 0;
}
FL_REGISTER_CHILD("fork_after_cuinit", ForkAfterCuInitOnly);

// After only cuInit the runtime has no cache: the child's count fails too,
// and the failure stays in the last error.
TEST(DropInRuntimeTest, AChildForkedAfterOnlyCuInitCannotEvenCount) {
  EXPECT_EQ(RunChild("fork_after_cuinit").transcript, "cuInit 0; count 3, last 3 3, cuInit 3");
}

int ForkBeforeInit(const std::vector<std::string>&) {
  ReportToParent(InForkedChild([] {
    void* p = nullptr;
    std::ostringstream t;
    t << "malloc " << cudaMalloc(&p, 64) << ", free " << cudaFree(p);
    return t.str();
  }));
  int n = 0;
  ReportToParent("; parent count " + Code(cudaGetDeviceCount(&n)));
  return 0;
}
FL_REGISTER_CHILD("fork_before_init", ForkBeforeInit);

TEST(DropInRuntimeTest, NothingIsInitializedUntilTheFirstCallSoAnEarlyForkWorks) {
  EXPECT_EQ(RunChild("fork_before_init").transcript, "malloc 0, free 0; parent count 0");
}

int Copies(const std::vector<std::string>&) {
  std::vector<int> in(1000), out(1000, -1);
  for (int i = 0; i < 1000; ++i) in[i] = i * 7;
  int* device = nullptr;
  const size_t bytes = in.size() * sizeof(int);
  std::string t = "malloc " + Code(cudaMalloc(reinterpret_cast<void**>(&device), bytes));
  t += ", h2d " + Code(cudaMemcpy(device, in.data(), bytes, cudaMemcpyHostToDevice));
  t += ", d2h default " + Code(cudaMemcpy(out.data(), device, bytes, cudaMemcpyDefault));
  t += out == in ? ", equal" : ", differ";
  cudaPointerAttributes a;
  t += ", attributes " + Code(cudaPointerGetAttributes(&a, device));
  t += " type " + std::to_string(a.type);
  t += ", outside " + Code(cudaMemcpy(out.data(), device + 999, 8, cudaMemcpyDeviceToHost));
  t += ", last " + Code(cudaGetLastError());
  ReportToParent(t);
  return 0;
}
FL_REGISTER_CHILD("copies", Copies);

TEST(DropInRuntimeTest, CopiesMoveTheBytesAndCheckTheRanges) {
  EXPECT_EQ(RunChild("copies").transcript,
            "malloc 0, h2d 0, d2h default 0, equal, attributes 0 type 2, outside 1, last 1");
}

int PinThenReportAddress(const std::vector<std::string>&) {
  static char buffer[4096] __attribute__((aligned(4096)));
  std::ostringstream t;
  t << "register " << cudaHostRegister(buffer, sizeof(buffer), 0) << " again "
    << cudaHostRegister(buffer, sizeof(buffer), 0);
  ReportToParent(t.str());
  // A spawned process (exec: its own address space) cannot unpin it.
  SpawnOptions options;
  auto child = ChildProcess::Spawn("unregister_address", {std::to_string(reinterpret_cast<uintptr_t>(buffer))});
  auto exit = child->Wait(std::chrono::seconds(60));
  ReportToParent("; spawned: " + exit->transcript + "; here " + Code(cudaHostUnregister(buffer)));
  return 0;
}
FL_REGISTER_CHILD("pin_then_spawn", PinThenReportAddress);

int UnregisterAddress(const std::vector<std::string>& args) {
  void* address = reinterpret_cast<void*>(std::stoull(args.at(0)));
  ReportToParent("unregister " + Code(cudaHostUnregister(address)));
  return 0;
}
FL_REGISTER_CHILD("unregister_address", UnregisterAddress);

// Pinning is per process: 712 for a second registration, 713 for memory
// this process did not pin (DGL 7381, docs/failures/F2.md).
TEST(DropInRuntimeTest, PinnedMemoryBelongsToTheProcessThatPinnedIt) {
  EXPECT_EQ(RunChild("pin_then_spawn").transcript, "register 0 again 712; spawned: unregister 713; here 0");
}

int ReportVisible(const std::vector<std::string>&) {
  int n = -1;
  const cudaError_t counted = cudaGetDeviceCount(&n);
  std::string t = "count " + Code(counted) + "=" + std::to_string(n);
  if (n > 0) {
    cudaDeviceProp prop;
    cudaGetDeviceProperties(&prop, 0);
    char uuid[8];
    std::snprintf(uuid, sizeof(uuid), "%02x", static_cast<unsigned char>(prop.uuid.bytes[15]));
    t += " uuid ..." + std::string(uuid) + " cc " + std::to_string(prop.major) + "." + std::to_string(prop.minor) +
         " name " + prop.name;
  }
  ReportToParent(t);
  return 0;
}
FL_REGISTER_CHILD("report_visible", ReportVisible);

// CUDA_VISIBLE_DEVICES as the driver reads it (visible_devices.h).
TEST(DropInRuntimeTest, VisibleDevicesAreAppliedAtInitialization) {
  const Env two = {{"FAULTLINE_SIMCUDA_DEVICES", "2"}};
  auto with = [&](const char* mask) {
    Env env = two;
    env.emplace_back("CUDA_VISIBLE_DEVICES", mask);
    return RunChild("report_visible", env).transcript;
  };
  EXPECT_EQ(RunChild("report_visible", two).transcript, "count 0=2 uuid ...00 cc 9.0 name simcuda GPU");
  EXPECT_EQ(with("1"), "count 0=1 uuid ...01 cc 9.0 name simcuda GPU");
  EXPECT_EQ(with("GPU-5eed0000-0000-4000-8000-000000000001"), "count 0=1 uuid ...01 cc 9.0 name simcuda GPU");
  EXPECT_EQ(with(""), "count 100=-1");
  EXPECT_EQ(with("0,0"), "count 101=-1");
  Env named = {{"FAULTLINE_SIMCUDA_DEVICE_NAME", "NVIDIA H100 80GB HBM3"},
               {"FAULTLINE_SIMCUDA_COMPUTE_CAPABILITY", "8.6"}};
  EXPECT_EQ(RunChild("report_visible", named).transcript, "count 0=1 uuid ...00 cc 8.6 name NVIDIA H100 80GB HBM3");
}

TEST(DropInRuntimeTest, ABadConfigurationFailsTheFirstCallNamingTheVariable) {
  EXPECT_EQ(RunChild("report_visible", {{"FAULTLINE_SIMCUDA_DEVICES", "two"}}).transcript, "count 1=-1");
}

// Without a driver library the runtime answers 35, as the real one does.
TEST(DropInRuntimeTest, WithoutTheDriverLibraryEveryCallIsInsufficientDriver) {
  EXPECT_EQ(RunChild("report_visible", {{"LD_LIBRARY_PATH", "/nonexistent"}}).transcript, "count 35=-1");
}

int OutOfMemory(const std::vector<std::string>&) {
  void* p = nullptr;
  std::ostringstream t;
  t << "small " << cudaMalloc(&p, 512) << ", large " << cudaMalloc(&p, 1024) << ", last " << cudaGetLastError();
  ReportToParent(t.str());
  return 0;
}
FL_REGISTER_CHILD("out_of_memory", OutOfMemory);

TEST(DropInRuntimeTest, AllocationsBeyondTheSimulatedMemoryFail) {
  EXPECT_EQ(RunChild("out_of_memory", {{"FAULTLINE_SIMCUDA_MEMORY_BYTES", "1024"}}).transcript,
            "small 0, large 2, last 2");
}

int LastErrorPerThread(const std::vector<std::string>&) {
  int device = 0;
  cudaGetDevice(&device);
  const std::string failed = Code(cudaSetDevice(7));
  std::string other;
  std::thread([&] { other = Code(cudaGetLastError()); }).join();
  ReportToParent("set " + failed + ", other thread " + other + ", this thread " + Code(cudaGetLastError()));
  return 0;
}
FL_REGISTER_CHILD("last_error_per_thread", LastErrorPerThread);

TEST(DropInRuntimeTest, TheLastErrorBelongsToTheThread) {
  EXPECT_EQ(RunChild("last_error_per_thread").transcript, "set 101, other thread 0, this thread 101");
}

void ForeignKernelStub() {}

int LaunchForeignKernel(const std::vector<std::string>&) {
  static char fake_fat_binary[16];
  void** handle = __cudaRegisterFatBinary(fake_fat_binary);
  static char device_name[] = "_Z7scatterPi";
  __cudaRegisterFunction(handle, reinterpret_cast<const char*>(&ForeignKernelStub), device_name, device_name, -1,
                         nullptr, nullptr, nullptr, nullptr, nullptr);
  void* args[1] = {nullptr};
  const cudaError_t launch =
      cudaLaunchKernel(reinterpret_cast<const void*>(&ForeignKernelStub), dim3(1), dim3(1), args, 0, nullptr);
  void* p = nullptr;
  std::ostringstream t;
  t << "launch " << launch << " " << cudaGetErrorName(launch) << ", last " << cudaGetLastError() << " "
    << cudaGetLastError() << ", malloc after " << cudaMalloc(&p, 64);
  ReportToParent(t.str());
  return 0;
}
FL_REGISTER_CHILD("launch_foreign_kernel", LaunchForeignKernel);

// simcuda runs no device code: the launch fails, the process keeps working.
TEST(DropInRuntimeTest, AForeignKernelIsRefusedAndTheProcessKeepsWorking) {
  EXPECT_EQ(RunChild("launch_foreign_kernel").transcript,
            "launch 209 cudaErrorNoKernelImageForDevice, last 209 0, malloc after 0");
}

int UnmodelledCall(const std::vector<std::string>&) {
  cudaGraph_t graph;
  std::ostringstream t;
  t << "graph " << cudaGraphCreate(&graph, 0) << " " << cudaGraphCreate(&graph, 0) << ", last " << cudaGetLastError()
    << ", string " << cudaGetErrorString(cudaErrorNotSupported);
  ReportToParent(t.str());
  return 0;
}
FL_REGISTER_CHILD("unmodelled_call", UnmodelledCall);

TEST(DropInRuntimeTest, ACallSimcudaDoesNotModelIsNotSupported) {
  EXPECT_EQ(RunChild("unmodelled_call").transcript, "graph 801 801, last 801, string operation not supported");
}

int DriverApi(const std::vector<std::string>&) {
  auto cu_init = Driver<int (*)(unsigned)>("cuInit");
  auto cu_device_get = Driver<int (*)(int*, int)>("cuDeviceGet");
  auto cu_state = Driver<int (*)(int, unsigned*, int*)>("cuDevicePrimaryCtxGetState");
  auto cu_proc = Driver<int (*)(const char*, void**, int, unsigned long long, int*)>("cuGetProcAddress_v2");
  auto cu_export = Driver<int (*)(const void**, const void*)>("cuGetExportTable");
  int device = -1, active = -1, found = -1;
  unsigned flags = 0;
  std::string t = "before init " + std::to_string(cu_device_get(&device, 0));
  t += ", init " + std::to_string(cu_init(0));
  t += ", get " + std::to_string(cu_device_get(&device, 0));
  t += "=" + std::to_string(device);
  cu_state(0, &flags, &active);
  t += ", context " + std::to_string(active);
  cudaFree(nullptr);  // creates the primary context
  cu_state(0, &flags, &active);
  t += "->" + std::to_string(active);
  void* fn = nullptr;
  t += ", proc cuMemAlloc " + std::to_string(cu_proc("cuMemAlloc", &fn, 13000, 0, &found));
  t += fn == Driver<void*>("cuMemAlloc_v2") ? " is cuMemAlloc_v2" : " is another function";
  t += ", proc cuNoSuchCall " + std::to_string(cu_proc("cuNoSuchCall", &fn, 13000, 0, &found));
  t += " status " + std::to_string(found);
  const void* table = nullptr;
  t += ", export table " + std::to_string(cu_export(&table, "0123456789abcdef"));
  ReportToParent(t);
  return 0;
}
FL_REGISTER_CHILD("driver_api", DriverApi);

TEST(DropInRuntimeTest, TheDriverApiNeedsCuInitAndRefusesExportTables) {
  EXPECT_EQ(RunChild("driver_api").transcript,
            "before init 3, init 0, get 0=0, context 0->1, proc cuMemAlloc 0 is cuMemAlloc_v2, "
            "proc cuNoSuchCall 500 status 1, export table 801");
}

int NvmlCountThenFork(const std::vector<std::string>&) {
  void* nvml = dlopen("libnvidia-ml.so.1", RTLD_NOW);
  auto init = reinterpret_cast<int (*)()>(dlsym(nvml, "nvmlInit_v2"));
  auto count = reinterpret_cast<int (*)(unsigned*)>(dlsym(nvml, "nvmlDeviceGetCount_v2"));
  unsigned n = 0;
  std::ostringstream t;
  t << "init " << init() << ", count " << count(&n) << "=" << n;
  // NVML initializes no CUDA: a child forked now works.
  t << "; child " << InForkedChild([] {
    void* p = nullptr;
    return "malloc " + Code(cudaMalloc(&p, 64));
  });
  ReportToParent(t.str());
  return 0;
}
FL_REGISTER_CHILD("nvml_count_then_fork", NvmlCountThenFork);

// NVML ignores CUDA_VISIBLE_DEVICES (PyTorch applies it to NVML's list).
TEST(DropInRuntimeTest, NvmlCountsEveryDeviceWithoutInitializingCuda) {
  EXPECT_EQ(
      RunChild("nvml_count_then_fork", {{"FAULTLINE_SIMCUDA_DEVICES", "2"}, {"CUDA_VISIBLE_DEVICES", "1"}}).transcript,
      "init 0, count 0=2; child malloc 0");
}

// Threads calling into the libraries while the main thread forks: a fork
// must never copy a held lock into the child (pthread_atfork), so every
// child ends, with 3 where CUDA was initialized before the fork.
int ForkStress(const std::vector<std::string>& args) {
  const int forks = std::stoi(args.at(0));
  int n = 0;
  cudaGetDeviceCount(&n);
  std::atomic<bool> stop{false};
  std::vector<std::thread> threads;
  for (int i = 0; i < 3; ++i) {
    threads.emplace_back([&] {
      while (!stop.load()) {
        void* p = nullptr;
        int device = 0;
        cudaGetDevice(&device);
        if (cudaMalloc(&p, 256) == cudaSuccess) cudaFree(p);
        cudaGetLastError();
      }
    });
  }
  int finished = 0, poisoned = 0, hung = 0;
  for (int i = 0; i < forks; ++i) {
    auto child = ChildProcess::Fork([] {
      int device = 0;
      return cudaGetDevice(&device) == cudaErrorInitializationError ? 0 : 1;
    });
    if (!child.ok()) continue;
    // A hung child would be a deadlock: Wait kills it past the deadline.
    auto exit = child->Wait(std::chrono::seconds(20));
    if (!exit.ok()) continue;
    if (exit->timed_out()) {
      ++hung;
      continue;
    }
    ++finished;
    if (exit->succeeded()) ++poisoned;
  }
  stop = true;
  for (auto& t : threads) t.join();
  ReportToParent("finished " + std::to_string(finished) + ", error 3 in " + std::to_string(poisoned) + ", hung " +
                 std::to_string(hung));
  return 0;
}
FL_REGISTER_CHILD("fork_stress", ForkStress);

TEST(DropInRuntimeTest, ForkingWhileOtherThreadsCallCudaNeverDeadlocks) {
  const char* forks = std::getenv("FAULTLINE_DROPIN_FORKS");
  const std::string n = forks != nullptr && *forks != '\0' ? forks : "1000";
  EXPECT_EQ(RunChild("fork_stress", {}, {n}).transcript, "finished " + n + ", error 3 in " + n + ", hung 0");
}

}  // namespace
}  // namespace faultline
