// Implements the conformance scenarios. Observations use only what both
// backends expose through DeviceRuntime, so the same text is expected of both.
#include "properties/conformance.h"

#include <unistd.h>

#include <cerrno>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <optional>
#include <thread>

#include "kernels/fill.h"
#include "properties/conformance_launch.h"
#include "reference/base/temp_dir.h"
#include "reference/process/child_registry.h"
#include "reference/process/process.h"

namespace faultline {
namespace conformance {
namespace {

// Formats a status as "ok" or "<cudaErrorName>(<code>) <string>".
std::string Show(const Status& s) {
  if (s.ok()) return "ok";
  if (!s.cuda_error()) return std::string(StatusCodeName(s.code()));
  return s.cuda_error()->name + "(" + std::to_string(s.cuda_error()->code) + ") " + s.cuda_error()->string;
}
template <typename T>
std::string Show(const Result<T>& r) {
  return Show(r.status());
}

std::string Context(DeviceRuntime& rt) {
  auto active = rt.PrimaryContextActive(0);
  if (!active.ok()) return "context?";
  return *active ? "context" : "no-context";
}

// Runs `observe` in a forked child and returns its report.
std::string InForkedChild(DeviceRuntime& rt, const Observe& observe) {
  auto child = ChildProcess::Fork([&] {
    ReportToParent(observe(rt));
    return 0;
  });
  if (!child.ok()) return "fork failed";
  auto exit = child->Wait(std::chrono::seconds(60));
  return exit.ok() ? exit->transcript : "wait failed";
}

// Counts, then allocates: in a poisoned child the count still answers (from
// the runtime's inherited cache) while the allocation fails.
std::string CountAndMallocInChild(DeviceRuntime& rt) {
  std::string count = Show(rt.GetDeviceCount());
  return "count " + count + ", malloc " + Show(rt.Malloc(64));
}

// The count the runtime gives, and the one faultline caches.
std::string CountAndDeviceCount(DeviceRuntime& rt) {
  std::string count = Show(rt.GetDeviceCount());
  return count + "; DeviceCount()=" + std::to_string(rt.DeviceCount());
}

// Every call a program makes after CUDA's initialization failed (no
// visible device, or a device named twice in CUDA_VISIBLE_DEVICES).
std::string EveryCallAfterAFailedInitialization(DeviceRuntime& rt) {
  std::string text = "count " + Show(rt.GetDeviceCount());
  text += "; get " + Show(rt.GetLastError());
  text += "; get again " + Show(rt.GetLastError());
  text += "; set device " + Show(rt.SetDevice(0));
  text += "; malloc " + Show(rt.Malloc(64));
  return text + "; cuInit " + Show(rt.DriverInit());
}

std::string CountOnly(DeviceRuntime& rt) {
  auto count = rt.GetDeviceCount();
  return count.ok() ? "count ok " + std::to_string(*count) : Show(count);
}

// Every call a program makes on a machine without a usable driver.
std::string WithoutUsableDriver(DeviceRuntime& rt) {
  int host = 0;
  std::string text = "count " + Show(rt.GetDeviceCount());
  text += "; DeviceCount()=" + std::to_string(rt.DeviceCount());
  text += "; get " + Show(rt.GetLastError());
  text += "; get again " + Show(rt.GetLastError());
  auto driver = rt.DriverGetVersion();
  text += "; driver version " + (driver.ok() ? "ok " + std::to_string(*driver) : Show(driver));
  auto runtime = rt.RuntimeGetVersion();
  text += "; runtime version " + (runtime.ok() ? "ok " + std::to_string(*runtime) : Show(runtime));
  text += "; set device " + Show(rt.SetDevice(0));
  text += "; get device " + Show(rt.GetDevice());
  text += "; malloc " + Show(rt.Malloc(64));
  text += "; malloc host " + Show(rt.MallocHost(64));
  text += "; free host null " + Show(rt.FreeHost(nullptr));
  text += "; attributes " + Show(rt.GetPointerAttributes(&host));
  text += "; register " + Show(rt.HostRegister(&host, sizeof(host)));
  text += "; cuInit " + Show(rt.DriverInit());
  return text + "; last " + Show(rt.PeekAtLastError());
}

int RunObservation(const std::vector<std::string>& args) {
  if (args.size() != 2) return 2;
  auto kind = ParseRuntimeKind(args[1]);
  if (!kind.ok()) return 2;
  for (const Scenario& scenario : Scenarios()) {
    if (scenario.name != args[0]) continue;
    ReportToParent(scenario.observe(GetRuntime(*kind)));
    return 0;
  }
  return 2;
}
FL_REGISTER_CHILD("conformance_scenario", RunObservation);

int CountEntry(const std::vector<std::string>& args) {
  auto kind = ParseRuntimeKind(args.empty() ? "" : args[0]);
  if (!kind.ok()) return 2;
  ReportToParent(Show(GetRuntime(*kind).GetDeviceCount()));
  return 0;
}
FL_REGISTER_CHILD("conformance_count", CountEntry);

constexpr char kInit3[] = "cudaErrorInitializationError(3) initialization error";
constexpr char kCuInit3[] = "CUDA_ERROR_NOT_INITIALIZED(3) initialization error";
constexpr char kSticky700[] = "cudaErrorIllegalAddress(700) an illegal memory access was encountered";
constexpr char kNotRegistered713[] =
    "cudaErrorHostMemoryNotRegistered(713) pointer does not correspond to a registered memory region";
constexpr char kNoDevice100[] = "cudaErrorNoDevice(100) no CUDA-capable device is detected";
constexpr char kInvalidValue1[] = "cudaErrorInvalidValue(1) invalid argument";
constexpr char kInvalidDevice101[] = "cudaErrorInvalidDevice(101) invalid device ordinal";
constexpr char kDevicesUnavailable46[] =
    "cudaErrorDevicesUnavailable(46) CUDA-capable device(s) is/are busy or unavailable";
// Seen on an H100 (CUDA 13.0, driver 580): the GPU runs of 2026-11-26 in
// docs/gpu-validation.md are the source where the documentation is silent
// or says otherwise.
constexpr char kGpuRun20261126[] = "observed on an H100, CUDA 13.0, driver 580: docs/gpu-validation.md, 2026-11-26";

// Public sources, cited by several scenarios.
constexpr char kErrorTypesDoc[] =
    "CUDA Runtime API, Data types, enum cudaError (cudaErrorIllegalAddress, cudaErrorInitializationError): "
    "docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html";
constexpr char kForkFaq[] =
    "CUDA C Programming Guide, Initialization (a child forked after the parent initialized CUDA cannot use "
    "it); PyTorch torch/cuda/__init__.py _lazy_init ('Cannot re-initialize CUDA in forked subprocess')";
constexpr char kDeviceDoc[] =
    "CUDA Runtime API, Device Management (cudaSetDevice, cudaGetDevice, cudaDeviceReset): "
    "docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__DEVICE.html";
constexpr char kMemoryDoc[] =
    "CUDA Runtime API, Memory Management (cudaMallocHost, cudaFreeHost, cudaHostRegister, "
    "cudaHostUnregister, cudaPointerGetAttributes): docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__MEMORY.html";
constexpr char kUnregisterShim605[] =
    "lupinemachines/lupine PR 605 (a CUDA driver shim made to match the real driver: 'return "
    "CUDA_ERROR_INVALID_VALUE when unregister is called with an interior pointer while preserving "
    "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED for unknown memory'): github.com/lupinemachines/lupine/pull/605";
constexpr char kUnregisterProbe437[] =
    "lupinemachines/lupine #437 (probed against the real driver 590.48.01: 'cuMemHostUnregister on a "
    "cuMemHostAlloc pointer -> real INVALID_VALUE (1)'; cudaMallocHost and cudaHostUnregister are those driver "
    "calls): github.com/lupinemachines/lupine/issues/437";
constexpr char kEnvVarsDoc[] =
    "CUDA C Programming Guide, CUDA Environment Variables (CUDA_VISIBLE_DEVICES: indices or GPU UUIDs, "
    "unique prefixes allowed; devices after an invalid entry are hidden)";
constexpr char kVisibleDevicesRules[] =
    "PyTorch torch/cuda/__init__.py _parse_visible_devices, which copies the driver's parsing ('Repeated "
    "ordinal results in empty set'; 'CUDA_VISIBLE_DEVICES uses something like strtoul')";
constexpr char kNoDriverProgram[] =
    "a program linked to the real libcudart 13.0 on a machine without a driver (and with lib64/stubs/libcuda.so "
    "as libcuda.so.1): every call 35 (34), outputs untouched, cudaGetLastError never cleared; "
    "//properties:conformance_nodriver_cuda_test repeats it in the CPU suite";

std::string WithoutDriver(const char* error, const char* cu_init) {
  const std::string e = error;
  return "count " + e + "; DeviceCount()=0; get " + e + "; get again " + e +
         "; driver version ok 0; runtime version ok " + std::to_string(BuiltRuntimeVersion()) + "; set device " + e +
         "; get device " + e + "; malloc " + e + "; malloc host " + e + "; free host null " + e + "; attributes " + e +
         "; register " + e + "; cuInit " + cu_init + "; last " + e;
}

}  // namespace

void PrintTo(const Scenario& scenario, std::ostream* os) { *os << scenario.name; }

const char* DriverName(Driver driver) {
  switch (driver) {
    case Driver::kPresent: return "present";
    case Driver::kNone: return "none";
    case Driver::kStub: return "stub";
  }
  return "unknown";
}

const std::vector<Scenario>& Scenarios() {
  static const auto* scenarios = new std::vector<Scenario>{
      {"first_call_initializes",
       [](DeviceRuntime& rt) {
         std::string before = InForkedChild(rt, CountAndMallocInChild);
         std::string first = Show(rt.GetDeviceCount());
         return "fork before: " + before + "; count: " + first +
                "; fork after: " + InForkedChild(rt, CountAndMallocInChild);
       },
       "the first runtime call (even cudaGetDeviceCount) initializes CUDA; a child forked before it works, one "
       "forked after it cannot allocate (3) although its cudaGetDeviceCount still answers",
       kForkFaq, std::string("fork before: count ok, malloc ok; count: ok; fork after: count ok, malloc ") + kInit3},
      {"fork_after_init_fails_every_call",
       [](DeviceRuntime& rt) {
         const int parent_count = rt.DeviceCount();
         return InForkedChild(rt, [parent_count](DeviceRuntime& child) {
           int host = 0;
           // One statement per call: the order of operands of + is unspecified.
           std::string text = "count " + Show(child.GetDeviceCount());
           text += " | get device " + Show(child.GetDevice());
           text += " | set device " + Show(child.SetDevice(0));
           text += " | malloc " + Show(child.Malloc(64));
           text += " | attributes " + Show(child.GetPointerAttributes(&host));
           text += " | unregister " + Show(child.HostUnregister(&host));
           text += " | cuInit " + Show(child.DriverInit());
           return text + " | DeviceCount() " + (child.DeviceCount() == parent_count ? "as in the parent" : "differs");
         });
       },
       "in a child forked after the parent initialized CUDA every call that reaches the driver fails with 3 "
       "(cuInit with CUDA_ERROR_NOT_INITIALIZED); cudaGetDeviceCount answers from the runtime's inherited cache",
       kForkFaq,
       std::string("count ok | get device ") + kInit3 + " | set device " + kInit3 + " | malloc " + kInit3 +
           " | attributes " + kInit3 + " | unregister " + kInit3 + " | cuInit " + kCuInit3 +
           " | DeviceCount() as in the parent"},
      {"driver_init_only_then_fork",
       [](DeviceRuntime& rt) {
         std::string init = Show(rt.DriverInit());
         return "cuInit " + init + "; child: " + InForkedChild(rt, [](DeviceRuntime& child) {
                  std::string text = "count " + Show(child.GetDeviceCount());
                  text += " | malloc " + Show(child.Malloc(64));
                  text += " | get " + Show(child.GetLastError());
                  text += " | get again " + Show(child.GetLastError());
                  return text + " | cuInit " + Show(child.DriverInit());  // F6's legacy path
                });
       },
       "after only cuInit in the parent the runtime has no cache: in a forked child even cudaGetDeviceCount "
       "fails with 3, the failed initialization stays in the last error, and the child's own cuInit fails with "
       "CUDA_ERROR_NOT_INITIALIZED (3)",
       kForkFaq,
       std::string("cuInit ok; child: count ") + kInit3 + " | malloc " + kInit3 + " | get " + kInit3 + " | get again " +
           kInit3 + " | cuInit " + kCuInit3},
      {"primary_context_query_then_fork",
       [](DeviceRuntime& rt) {
         std::string query = Context(rt);  // cuInit, then cuDevicePrimaryCtxGetState
         return "query " + query + "; child: " + InForkedChild(rt, [](DeviceRuntime& child) {
                  std::string text = "count " + Show(child.GetDeviceCount());
                  text += " | malloc " + Show(child.Malloc(64));
                  return text + " | cuInit " + Show(child.DriverInit());
                });
       },
       "asking whether the primary context is active (cuDevicePrimaryCtxGetState, after cuInit) initializes "
       "the driver but creates no context: the answer is no, and in a child forked afterwards the first CUDA "
       "call fails with 3, as after cuInit alone (driver_init_only_then_fork)",
       std::string("CUDA Driver API, Initialization (cuInit must be called before any other driver call) and "
                   "Primary Context Management (cuDevicePrimaryCtxGetState): "
                   "docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__PRIMARY__CTX.html; ") +
           kForkFaq,
       std::string("query no-context; child: count ") + kInit3 + " | malloc " + kInit3 + " | cuInit " + kCuInit3},
      {"spawned_child_after_init",
       [](DeviceRuntime& rt) {
         (void)rt.GetDeviceCount();
         auto child = ChildProcess::Spawn("conformance_count", {RuntimeKindName(rt.kind())});
         if (!child.ok()) return std::string("spawn failed");
         auto exit = child->Wait(std::chrono::seconds(60));
         return "spawned: " + (exit.ok() ? exit->transcript : std::string("wait failed"));
       },
       "an exec'd (spawned) child initializes CUDA normally", kForkFaq, "spawned: ok"},
      {"fork_from_another_thread",
       [](DeviceRuntime& rt) {
         (void)rt.GetDeviceCount();
         std::string forked;
         std::thread([&] { forked = InForkedChild(rt, CountAndMallocInChild); }).join();
         return "fork from another thread: " + forked;
       },
       "the poisoning belongs to the process: a fork from a thread that never touched CUDA is poisoned too", kForkFaq,
       std::string("fork from another thread: count ok, malloc ") + kInit3},
      {"set_device_creates_context",
       [](DeviceRuntime& rt) {
         (void)rt.GetDeviceCount();
         std::string before = Context(rt);
         std::string call = Show(rt.SetDevice(0));
         return before + " -> " + call + " -> " + Context(rt);
       },
       "cudaSetDevice creates the primary context (CUDA >= 12)", kDeviceDoc, "no-context -> ok -> context"},
      {"get_device_creates_no_context",
       [](DeviceRuntime& rt) {
         auto device = rt.GetDevice();
         std::string call = device.ok() ? "ok " + std::to_string(*device) : Show(device);
         return call + " -> " + Context(rt);
       },
       "cudaGetDevice initializes CUDA but creates no primary context", kDeviceDoc, "ok 0 -> no-context"},
      {"free_null_creates_context",
       [](DeviceRuntime& rt) {
         (void)rt.GetDeviceCount();
         std::string before = Context(rt);
         std::string call = Show(rt.Free(nullptr));
         return before + " -> " + call + " -> " + Context(rt);
       },
       "cudaFree(0) creates the primary context", kMemoryDoc, "no-context -> ok -> context"},
      {"get_device_then_fork",
       [](DeviceRuntime& rt) {
         auto device = rt.GetDevice();
         std::string call = device.ok() ? "ok " + std::to_string(*device) : Show(device);
         return "get device " + call + "; fork after: " + InForkedChild(rt, CountAndMallocInChild);
       },
       "cudaGetDevice initializes CUDA: a child forked after it cannot allocate (3)", kDeviceDoc,
       std::string("get device ok 0; fork after: count ok, malloc ") + kInit3},
      {"device_reset_frees_allocations",
       [](DeviceRuntime& rt) {
         std::vector<char> host(1 << 16);
         auto p = rt.Malloc(1024);
         if (!p.ok()) return Show(p);
         std::string text = "malloc ok; register " + Show(rt.HostRegister(host.data(), host.size()));
         text += "; reset " + Show(rt.DeviceReset());
         text += "; free " + Show(rt.Free(*p));
         return text + "; unregister " + Show(rt.HostUnregister(host.data()));
       },
       "cudaDeviceReset frees every allocation and registration of the device in this process: freeing the "
       "allocation afterwards is invalid (1) and the registration is gone (713)",
       "CUDA Runtime API, Device Management (cudaDeviceReset: 'Explicitly destroys and cleans up all resources "
       "associated with the current device in the current process'): "
       "docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__DEVICE.html",
       std::string("malloc ok; register ok; reset ok; free cudaErrorInvalidValue(1) invalid argument; unregister ") +
           kNotRegistered713},
      {"device_reset_then_fork",
       [](DeviceRuntime& rt) {
         std::string text = "set " + Show(rt.SetDevice(0));
         text += " -> " + Context(rt);
         text += "; reset " + Show(rt.DeviceReset());
         text += " -> " + Context(rt);
         return text + "; fork after: " + InForkedChild(rt, CountAndMallocInChild);
       },
       "cudaDeviceReset destroys the primary context but the process stays initialized: a later fork is still "
       "poisoned",
       kDeviceDoc, std::string("set ok -> context; reset ok -> no-context; fork after: count ok, malloc ") + kInit3},
      {"pointer_attributes_unregistered",
       [](DeviceRuntime& rt) {
         (void)rt.GetDeviceCount();
         std::string before = Context(rt);
         std::vector<char> host(4096);
         auto attrs = rt.GetPointerAttributes(host.data());
         std::string type = attrs.ok() ? std::to_string(static_cast<int>(attrs->type)) : Show(attrs);
         return before + " -> type " + type + " -> " + Context(rt);
       },
       "cudaPointerGetAttributes on unregistered host memory succeeds with cudaMemoryTypeUnregistered (0) and "
       "creates no primary context",
       kMemoryDoc, "no-context -> type 0 -> no-context"},
      {"device_memory_attributes",
       [](DeviceRuntime& rt) {
         auto p = rt.Malloc(1024);
         if (!p.ok()) return Show(p);
         auto attrs = rt.GetPointerAttributes(*p);
         std::string text =
             "type " + std::to_string(static_cast<int>(attrs->type)) + " device " + std::to_string(attrs->device);
         text += "; free " + Show(rt.Free(*p));
         return text + "; free again " + Show(rt.Free(*p));
       },
       "device memory reports cudaMemoryTypeDevice (2); freeing twice is invalid", kMemoryDoc,
       "type 2 device 0; free ok; free again cudaErrorInvalidValue(1) invalid argument"},
      {"malloc_host_creates_context",
       [](DeviceRuntime& rt) {
         (void)rt.GetDeviceCount();
         std::string before = Context(rt);
         auto p = rt.MallocHost(4096);
         if (!p.ok()) return before + " -> " + Show(p);
         std::string after = Context(rt);
         auto attrs = rt.GetPointerAttributes(static_cast<char*>(*p) + 100);
         std::string type = attrs.ok() ? "type " + std::to_string(static_cast<int>(attrs->type)) + " device " +
                                             std::to_string(attrs->device)
                                       : Show(attrs);
         std::string free = Show(rt.FreeHost(*p));
         return before + " -> ok -> " + after + "; " + type + "; free " + free + "; free null " +
                Show(rt.FreeHost(nullptr));
       },
       "cudaMallocHost creates the primary context of the current device; the memory reads as "
       "cudaMemoryTypeHost (1); cudaFreeHost frees it and accepts null",
       kMemoryDoc, "no-context -> ok -> context; type 1 device 0; free ok; free null ok"},
      {"malloc_host_in_forked_child",
       [](DeviceRuntime& rt) {
         (void)rt.GetDeviceCount();
         return InForkedChild(rt, [](DeviceRuntime& child) {
           std::string text = Show(child.MallocHost(4096));
           return text + " | " + Show(child.FreeHost(nullptr));
         });
       },
       "cudaMallocHost and cudaFreeHost in a child forked after init fail with 3", kForkFaq,
       std::string(kInit3) + " | " + kInit3},
      {"register_twice",
       [](DeviceRuntime& rt) {
         std::vector<char> host(1 << 16);
         std::string first = Show(rt.HostRegister(host.data(), host.size()));
         auto attrs = rt.GetPointerAttributes(host.data() + 100);
         std::string type = attrs.ok() ? std::to_string(static_cast<int>(attrs->type)) : Show(attrs);
         std::string second = Show(rt.HostRegister(host.data(), host.size()));
         std::string unpin = Show(rt.HostUnregister(host.data()));
         std::string unpin_again = Show(rt.HostUnregister(host.data()));
         return first + "; type " + type + "; again " + second + "; unregister " + unpin + "; again " + unpin_again;
       },
       "cudaHostRegister on a registered range fails with 712; unregistering twice fails with 713", kMemoryDoc,
       "ok; type 1; again cudaErrorHostMemoryAlreadyRegistered(712) part or all of the requested memory range is "
       "already mapped; unregister ok; again " +
           std::string(kNotRegistered713)},
      {"unregister_interior_pointer",
       [](DeviceRuntime& rt) {
         std::vector<char> host(1 << 16);
         std::string text = "register " + Show(rt.HostRegister(host.data(), host.size()));
         text += "; unregister inside " + Show(rt.HostUnregister(host.data() + 4096));
         return text + "; unregister start " + Show(rt.HostUnregister(host.data()));
       },
       "cudaHostUnregister takes the start of a registered range: a pointer inside one fails with "
       "cudaErrorInvalidValue (1), not 713 (713 is for memory the process never registered)",
       std::string(kUnregisterShim605) + "; " + kMemoryDoc,
       std::string("register ok; unregister inside ") + kInvalidValue1 + "; unregister start ok"},
      {"unregister_malloc_host_pointer",
       [](DeviceRuntime& rt) {
         auto p = rt.MallocHost(4096);
         if (!p.ok()) return "malloc host " + Show(p);
         std::string text = "malloc host ok; unregister " + Show(rt.HostUnregister(*p));
         return text + "; free host " + Show(rt.FreeHost(*p));
       },
       "cudaHostUnregister of memory from cudaMallocHost fails with cudaErrorInvalidValue (1), not 713, and "
       "cudaFreeHost still frees it",
       std::string(kUnregisterProbe437) + "; " + kMemoryDoc,
       std::string("malloc host ok; unregister ") + kInvalidValue1 + "; free host ok"},
      {"a_failed_call_is_not_blamed_on_the_next_launch",
       [](DeviceRuntime& rt) {
         auto p = rt.Malloc(1 << 20);
         if (!p.ok()) return Show(p);
         std::string text = "malloc 1 TiB " + Show(rt.Malloc(size_t{1} << 40));
         text += "; fill " + Show(kernels::Fill(rt, static_cast<float*>(*p), 1024, 1.0f));
         text += "; peek " + Show(rt.PeekAtLastError());
         text += "; sync " + Show(rt.DeviceSynchronize());
         text += "; peek " + Show(rt.PeekAtLastError());
         text += "; get " + Show(rt.GetLastError());
         text += "; get again " + Show(rt.GetLastError());
         (void)rt.Free(*p);
         return text;
       },
       "a launch returns its own status: an earlier call's error stays in the last-error slot (until "
       "cudaGetLastError reads it) and does not fail the next kernel launch",
       "CUDA C Programming Guide, Error Checking (call cudaGetLastError just before a launch so that an earlier "
       "error is not taken for the launch's); CUDA Runtime API, Error Handling (cudaGetLastError: 'Returns the "
       "last error that has been produced by any of the runtime calls ... and resets it to cudaSuccess'): "
       "docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__ERROR.html",
       "malloc 1 TiB cudaErrorMemoryAllocation(2) out of memory; fill ok; peek cudaErrorMemoryAllocation(2) out of "
       "memory; sync ok; peek cudaErrorMemoryAllocation(2) out of memory; get cudaErrorMemoryAllocation(2) out of "
       "memory; get again ok"},
      {"kernel_on_another_devices_memory_faults",
       [](DeviceRuntime& rt) {
         std::string text = "set device 1 " + Show(rt.SetDevice(1));
         auto p = rt.Malloc(4096);
         text += "; malloc on 1 " + Show(p);
         if (!p.ok()) return text;
         text += "; set device 0 " + Show(rt.SetDevice(0));
         text += "; fill from 0 " + Show(kernels::Fill(rt, static_cast<float*>(*p), 1024, 1.0f));
         return text + "; sync " + Show(rt.DeviceSynchronize());
       },
       "without peer access, a kernel on device 0 that touches device 1's memory is an illegal address: the "
       "launch succeeds and the next synchronization fails with the sticky 700",
       "CUDA C Programming Guide, Peer-to-Peer Memory Access (a kernel reads another device's memory only after "
       "cudaDeviceEnablePeerAccess): docs.nvidia.com/cuda/cuda-c-programming-guide/",
       std::string("set device 1 ok; malloc on 1 ok; set device 0 ok; fill from 0 ok; sync ") + kSticky700,
       Driver::kPresent,
       {{"FAULTLINE_SIMCUDA_DEVICES", "2"}},
       2},
      {"malloc_beyond_memory_is_not_sticky",
       [](DeviceRuntime& rt) {
         std::string text = "malloc 1 TiB " + Show(rt.Malloc(size_t{1} << 40));
         text += "; get " + Show(rt.GetLastError());
         text += "; get again " + Show(rt.GetLastError());
         auto small = rt.Malloc(64);
         text += "; malloc 64 " + Show(small);
         if (small.ok()) (void)rt.Free(*small);
         return text;
       },
       "a cudaMalloc larger than the device fails with 2 and the error is not sticky: cudaGetLastError returns "
       "it once, and the next allocation works",
       "CUDA Runtime API, Data types, enum cudaError (cudaErrorMemoryAllocation; sticky errors are those that "
       "leave the context unusable): docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html",
       "malloc 1 TiB cudaErrorMemoryAllocation(2) out of memory; get cudaErrorMemoryAllocation(2) out of memory; "
       "get again ok; malloc 64 ok"},
      {"unregister_foreign_memory",
       [](DeviceRuntime& rt) {
         std::vector<char> host(4096);
         return Show(rt.HostUnregister(host.data()));
       },
       "cudaHostUnregister of memory this process did not register fails with 713", kMemoryDoc, kNotRegistered713},
      {"pinned_memory_in_forked_child",
       [](DeviceRuntime& rt) {
         std::vector<char> buffer(1 << 16);
         std::string pin = Show(rt.HostRegister(buffer.data(), buffer.size()));
         std::string child = InForkedChild(rt, [&buffer](DeviceRuntime& c) {
           std::string text = Show(c.HostUnregister(buffer.data()));
           text += " | " + Show(c.GetPointerAttributes(buffer.data()));
           return text + " | " + Show(c.IsPinned(buffer.data()));
         });
         return "pin " + pin + "; child: " + child + "; parent unregister " + Show(rt.HostUnregister(buffer.data()));
       },
       "in a child forked after the parent pinned memory, cudaHostUnregister, cudaPointerGetAttributes and so "
       "is_pinned() fail with 3 (initialization error), not 713: the fork check comes first (DGL 7381)",
       kForkFaq, std::string("pin ok; child: ") + kInit3 + " | " + kInit3 + " | " + kInit3 + "; parent unregister ok"},
      {"no_visible_device",
       CountAndDeviceCount,
       "with no visible device cudaGetDeviceCount fails with 100 and the device count is 0",
       kEnvVarsDoc,
       std::string(kNoDevice100) + "; DeviceCount()=0",
       Driver::kPresent,
       {{"CUDA_VISIBLE_DEVICES", ""}}},
      {"visible_devices_unknown_uuid",
       CountAndDeviceCount,
       "a CUDA_VISIBLE_DEVICES entry that is a UUID of no device hides every device (error 100)",
       kEnvVarsDoc,
       std::string(kNoDevice100) + "; DeviceCount()=0",
       Driver::kPresent,
       {{"CUDA_VISIBLE_DEVICES", "GPU-ffffffff-ffff-ffff-ffff-ffffffffffff"}}},
      {"visible_devices_cut_at_unknown_uuid",
       CountOnly,
       "devices listed before an unknown UUID stay visible; the list is cut there",
       kEnvVarsDoc,
       "count ok 1",
       Driver::kPresent,
       {{"CUDA_VISIBLE_DEVICES", "0,GPU-ffffffff-ffff-ffff-ffff-ffffffffffff,0"}}},
      {"visible_devices_repeated_ordinal",
       [](DeviceRuntime& rt) {
         std::string text = EveryCallAfterAFailedInitialization(rt);
         return text + "; DeviceCount()=" + std::to_string(rt.DeviceCount());
       },
       "a CUDA_VISIBLE_DEVICES that names a device twice hides every device, and initialization fails with "
       "cudaErrorInvalidDevice (101), not the 100 of an empty list: every call and every read of the last "
       "error return it, and cuInit fails with CUDA_ERROR_INVALID_DEVICE (101)",
       std::string(kGpuRun20261126) + " (the count's 101); " + kVisibleDevicesRules + "; " + kEnvVarsDoc,
       std::string("count ") + kInvalidDevice101 + "; get " + kInvalidDevice101 + "; get again " + kInvalidDevice101 +
           "; set device " + kInvalidDevice101 + "; malloc " + kInvalidDevice101 +
           "; cuInit CUDA_ERROR_INVALID_DEVICE(101) invalid device ordinal; DeviceCount()=0",
       Driver::kPresent,
       {{"CUDA_VISIBLE_DEVICES", "0,0"}}},
      {"invalid_launch_configuration",
       [](DeviceRuntime& rt) {
         auto launch = [&rt](unsigned grid, unsigned block) {
           const LaunchConfig config{grid, block, nullptr};
           return Show(rt.Launch(
               "EmptyKernel", config, nullptr, 0, [] {}, [config] { return LaunchEmptyKernelOnCuda(config); }));
         };
         std::string text;
         const struct {
           const char* name;
           unsigned grid, block;
         } bad[] = {{"block 0", 1, 0}, {"block 1025", 1, 1025}, {"grid 0", 0, 1}};
         for (const auto& b : bad) {
           text += std::string(b.name) + " " + launch(b.grid, b.block);
           text += "; get " + Show(rt.GetLastError());
           text += "; get again " + Show(rt.GetLastError()) + "; ";
         }
         auto p = rt.Malloc(64);
         text += "malloc " + Show(p);
         if (p.ok()) (void)rt.Free(*p);
         text += "; grid 1 block 1024 " + launch(1, 1024);
         return text + "; sync " + Show(rt.DeviceSynchronize());
       },
       "cudaLaunchKernel with block 0, block 1025 or grid 0 fails with cudaErrorInvalidValue (1), not the "
       "cudaErrorInvalidConfiguration (9) the error's description suggests, and the error is not sticky: "
       "cudaGetLastError returns it once, then success, and the next cudaMalloc and a valid launch work",
       std::string(kGpuRun20261126) +
           "; the driver's cuLaunchKernel answers dimensions out of range with "
           "CUDA_ERROR_INVALID_VALUE ('cuLaunchKernel failed: invalid argument', tinygrad PR 625); CUDA C "
           "Programming Guide, Thread Hierarchy (at most 1024 threads per block)",
       std::string("block 0 ") + kInvalidValue1 + "; get " + kInvalidValue1 + "; get again ok; " + "block 1025 " +
           kInvalidValue1 + "; get " + kInvalidValue1 + "; get again ok; " + "grid 0 " + kInvalidValue1 + "; get " +
           kInvalidValue1 + "; get again ok; " + "malloc ok; grid 1 block 1024 ok; sync ok"},
      {"visible_devices_read_like_strtoul",
       CountOnly,
       "a CUDA_VISIBLE_DEVICES entry is read like strtoul: its leading digits are the ordinal",
       std::string(kVisibleDevicesRules) + " ('1gpu2,2ampere is equivalent to 1,2')",
       "count ok 1",
       Driver::kPresent,
       {{"CUDA_VISIBLE_DEVICES", "0gpu"}}},
      {"no_visible_device_every_call",
       EveryCallAfterAFailedInitialization,
       "with no visible device the failed initialization is returned by every call and by every read of the "
       "last error (as without a driver), and cuInit fails with CUDA_ERROR_NO_DEVICE (100)",
       std::string("CUDA Driver API, Initialization (cuInit returns CUDA_ERROR_NO_DEVICE): "
                   "docs.nvidia.com/cuda/cuda-driver-api/group__CUDA__INITIALIZE.html; ") +
           kEnvVarsDoc,
       std::string("count ") + kNoDevice100 + "; get " + kNoDevice100 + "; get again " + kNoDevice100 +
           "; set device " + kNoDevice100 + "; malloc " + kNoDevice100 +
           "; cuInit CUDA_ERROR_NO_DEVICE(100) no CUDA-capable device is detected",
       Driver::kPresent,
       {{"CUDA_VISIBLE_DEVICES", ""}}},
      {"visible_devices_read_at_initialization",
       [](DeviceRuntime& rt) {
         setenv("CUDA_VISIBLE_DEVICES", "", 1);  // before the first call: applies
         std::string first = Show(rt.GetDeviceCount());
         unsetenv("CUDA_VISIBLE_DEVICES");  // after initialization: too late
         return "hidden before init: " + first + "; unset after init: " + Show(rt.GetDeviceCount());
       },
       "CUDA_VISIBLE_DEVICES is read when CUDA initializes: set in the process before the first call it "
       "applies, changed afterwards it does not",
       kEnvVarsDoc, std::string("hidden before init: ") + kNoDevice100 + "; unset after init: " + kNoDevice100},
      {"nvml_count_does_not_initialize",
       [](DeviceRuntime& rt) {
         auto count = rt.NvmlDeviceCount();
         std::string text = count.ok() ? (*count > 0 ? "nvml count ok (> 0)" : "nvml count 0") : Show(count);
         return text + "; fork after: " + InForkedChild(rt, CountAndMallocInChild);
       },
       "counting devices through NVML does not initialize CUDA: a child forked afterwards works (PyTorch "
       "PYTORCH_NVML_BASED_CUDA_CHECK, PR 84879 / 85951)",
       "NVML API Reference, nvmlDeviceGetCount_v2: docs.nvidia.com/deploy/nvml-api/; PyTorch #83973",
       "nvml count ok (> 0); fork after: count ok, malloc ok"},
      {"nvml_count_reads_visible_devices_per_call",
       [](DeviceRuntime& rt) {
         auto shown = [](const Result<int>& count) {
           return count.ok() ? (*count > 0 ? std::string("ok (> 0)") : "ok " + std::to_string(*count)) : Show(count);
         };
         std::string first = shown(rt.NvmlDeviceCount());
         setenv("CUDA_VISIBLE_DEVICES", "", 1);
         std::string hidden = shown(rt.NvmlDeviceCount());
         unsetenv("CUDA_VISIBLE_DEVICES");
         return "nvml count " + first + "; hidden: " + hidden + "; unset again: " + shown(rt.NvmlDeviceCount());
       },
       "the NVML count applies CUDA_VISIBLE_DEVICES as it is at each call (CUDA is not initialized, so nothing "
       "has read it yet), the way PyTorch's NVML-based device count does",
       "PyTorch torch/cuda/__init__.py: _device_count_nvml parses CUDA_VISIBLE_DEVICES on every call, and "
       "device_count() caches its answer only once CUDA is initialized",
       "nvml count ok (> 0); hidden: ok 0; unset again: ok (> 0)"},
      {"current_device_is_per_thread",
       [](DeviceRuntime& rt) {
         std::string set = Show(rt.SetDevice(1));
         std::string other;
         std::thread([&] {
           auto device = rt.GetDevice();
           other = device.ok() ? "device " + std::to_string(*device) : Show(device);
           other += ", " + Context(rt);
           auto p = rt.MallocHost(64);  // F8: pins through the thread's own device, 0
           other += " -> malloc host " + Show(p) + " -> " + Context(rt);
           if (p.ok()) (void)rt.FreeHost(*p);
         }).join();
         auto mine = rt.GetDevice();
         return "set device 1 " + set + "; other thread: " + other +
                "; this thread: " + (mine.ok() ? "device " + std::to_string(*mine) : Show(mine));
       },
       "the current device belongs to the host thread (default 0): a thread that never set one allocates "
       "pinned memory through device 0, creating device 0's primary context (F8)",
       "CUDA Runtime API, Device Management (cudaSetDevice: 'Sets device as the current device for the calling "
       "host thread'): docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__DEVICE.html",
       "set device 1 ok; other thread: device 0, no-context -> malloc host ok -> context; this thread: device 1",
       Driver::kPresent,
       {{"FAULTLINE_SIMCUDA_DEVICES", "2"}},
       2},
      {"invalid_device", [](DeviceRuntime& rt) { return Show(rt.SetDevice(rt.DeviceCount() + 7)); },
       "cudaSetDevice with an ordinal past the device count fails with 101", kDeviceDoc,
       "cudaErrorInvalidDevice(101) invalid device ordinal"},
      {"illegal_address_is_sticky",
       [](DeviceRuntime& rt) {
         auto good = rt.Malloc(1024);
         if (!good.ok()) return Show(good);
         std::string launch = Show(kernels::Fill(rt, nullptr, 1, 1.0f));
         std::string sync = Show(rt.DeviceSynchronize());
         std::string later = Show(rt.Malloc(1024));
         std::vector<char> host(16);
         std::string copy = Show(rt.Memcpy(host.data(), *good, 16, MemcpyKind::kDeviceToHost));
         return "launch " + launch + "; sync " + sync + "; malloc " + later + "; memcpy " + copy;
       },
       "a kernel that touches an illegal address raises 700 at the next synchronization, and every later call "
       "fails with it",
       kErrorTypesDoc,
       std::string("launch ok; sync ") + kSticky700 + "; malloc " + kSticky700 + "; memcpy " + kSticky700},
      {"sticky_error_after_get_last_error",
       [](DeviceRuntime& rt) {
         std::string launch = Show(kernels::Fill(rt, nullptr, 1, 1.0f));
         std::string sync = Show(rt.DeviceSynchronize());
         std::string get = Show(rt.GetLastError());
         std::string again = Show(rt.GetLastError());
         std::string malloc = Show(rt.Malloc(64));
         std::string count = Show(rt.GetDeviceCount());
         std::string after = Show(rt.GetLastError());
         return "launch " + launch + "; sync " + sync + "; get " + get + "; get again " + again + "; malloc " + malloc +
                "; count " + count + "; get after " + after;
       },
       "cudaGetLastError returns a sticky 700 once and clears its slot, but the context stays broken: the next "
       "call that uses it fails with 700 and sets it again; cudaGetDeviceCount, which needs no context, succeeds",
       kErrorTypesDoc,
       std::string("launch ok; sync ") + kSticky700 + "; get " + kSticky700 + "; get again ok; malloc " + kSticky700 +
           "; count ok; get after " + kSticky700},
      {"device_reset_after_sticky_error",
       [](DeviceRuntime& rt) {
         std::string text = "fill " + Show(kernels::Fill(rt, nullptr, 1, 1.0f));
         text += "; sync " + Show(rt.DeviceSynchronize());
         text += "; reset " + Show(rt.DeviceReset());
         text += "; malloc after reset " + Show(rt.Malloc(64));
         text += "; get " + Show(rt.GetLastError());
         text += "; get again " + Show(rt.GetLastError());
         text += "; malloc again " + Show(rt.Malloc(64));
         return text + "; count " + Show(rt.GetDeviceCount());
       },
       "cudaDeviceReset does not repair a context broken by an illegal address: after the reset every call "
       "that needs the device fails with cudaErrorDevicesUnavailable (46), which cudaGetLastError returns "
       "once; only a new process can use CUDA again, and cudaGetDeviceCount still answers",
       std::string(kGpuRun20261126) +
           " (the first cudaMalloc's 46); CUDA Runtime API, Data types, enum "
           "cudaError (cudaErrorIllegalAddress: 'To continue using CUDA, the process must be terminated and "
           "relaunched'): docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__TYPES.html",
       std::string("fill ok; sync ") + kSticky700 + "; reset ok; malloc after reset " + kDevicesUnavailable46 +
           "; get " + kDevicesUnavailable46 + "; get again ok; malloc again " + kDevicesUnavailable46 + "; count ok"},
      {"stream_lifecycle",
       [](DeviceRuntime& rt) {
         auto stream = rt.StreamCreate();
         if (!stream.ok()) return "create " + Show(stream);
         std::string sync = Show(rt.StreamSynchronize(*stream));
         // Not the destroyed handle afterwards: real CUDA leaves that undefined
         // (it crashed with SIGSEGV on an H100); simcuda's 400 is a diagnostic.
         return "create ok; sync " + sync + "; destroy " + Show(rt.StreamDestroy(*stream));
       },
       "streams are created, synchronized and destroyed",
       "CUDA Runtime API, Stream Management: docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__STREAM.html",
       "create ok; sync ok; destroy ok"},
      {"event_lifecycle",
       [](DeviceRuntime& rt) {
         auto event = rt.EventCreate();
         if (!event.ok()) return "create " + Show(event);
         std::string unrecorded = Show(rt.EventQuery(*event));
         auto p = rt.Malloc(1 << 20);
         if (!p.ok()) return Show(p);
         std::string fill = Show(kernels::Fill(rt, static_cast<float*>(*p), (1 << 20) / sizeof(float), 2.0f));
         std::string record = Show(rt.EventRecord(*event, nullptr));
         std::string sync = Show(rt.EventSynchronize(*event));
         std::string query = Show(rt.EventQuery(*event));
         std::string destroy = Show(rt.EventDestroy(*event));
         (void)rt.Free(*p);
         return "create ok; query unrecorded " + unrecorded + "; fill " + fill + "; record " + record +
                "; synchronize " + sync + "; query " + query + "; destroy " + destroy;
       },
       "cudaEventQuery is cudaSuccess for an event never recorded and after cudaEventSynchronize on a recorded one",
       "CUDA Runtime API, Event Management (cudaEventQuery: 'If cudaEventRecord() has not been called on event, "
       "cudaSuccess is returned'): docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__EVENT.html",
       "create ok; query unrecorded ok; fill ok; record ok; synchronize ok; query ok; destroy ok"},
      {"memcpy_async_from_pageable_memory",
       [](DeviceRuntime& rt) {
         std::vector<unsigned char> pageable(4096), back(4096);
         for (size_t i = 0; i < pageable.size(); ++i) pageable[i] = static_cast<unsigned char>(i * 7 + 1);
         auto p = rt.Malloc(pageable.size());
         if (!p.ok()) return Show(p);
         std::string async =
             Show(rt.MemcpyAsync(*p, pageable.data(), pageable.size(), MemcpyKind::kHostToDevice, nullptr));
         std::string sync = Show(rt.StreamSynchronize(nullptr));
         std::string copy = Show(rt.Memcpy(back.data(), *p, back.size(), MemcpyKind::kDeviceToHost));
         (void)rt.Free(*p);
         return "async " + async + "; sync " + sync + "; copy back " + copy + "; " +
                (back == pageable ? "equal" : "different");
       },
       "cudaMemcpyAsync from pageable host memory is allowed (staged through a pinned buffer)",
       "CUDA Runtime API, API synchronization behavior: docs.nvidia.com/cuda/cuda-runtime-api/api-sync-behavior.html",
       "async ok; sync ok; copy back ok; equal"},
      {"last_error_is_per_thread",
       [](DeviceRuntime& rt) {
         std::vector<char> host(64);
         (void)rt.HostUnregister(host.data());
         std::string other;
         std::thread([&] { other = Show(rt.PeekAtLastError()); }).join();
         std::string peek = Show(rt.PeekAtLastError());
         std::string get = Show(rt.GetLastError());
         std::string after = Show(rt.GetLastError());
         return "other thread " + other + "; peek " + peek + "; get " + get + "; after " + after;
       },
       "the last error is recorded per thread and cleared by cudaGetLastError",
       "CUDA Runtime API, Error Handling (cudaGetLastError: 'in the same host thread ... resets it to "
       "cudaSuccess'): docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART__ERROR.html",
       "other thread ok; peek " + std::string(kNotRegistered713) + "; get " + kNotRegistered713 + "; after ok"},
      {"driver_version_not_older_than_runtime",
       [](DeviceRuntime& rt) {
         auto driver = rt.DriverGetVersion();
         auto runtime = rt.RuntimeGetVersion();
         if (!driver.ok() || !runtime.ok()) return Show(driver) + " / " + Show(runtime);
         return std::string("driver >= runtime: ") + (*driver >= *runtime ? "yes" : "no");
       },
       "with a working driver, cudaDriverGetVersion is at least cudaRuntimeGetVersion",
       "CUDA Runtime API, Version Management: docs.nvidia.com/cuda/cuda-runtime-api/group__CUDART____VERSION.html",
       "driver >= runtime: yes"},
      {"no_driver", WithoutUsableDriver,
       "without a driver every call fails with 35 and writes nothing; cudaGetLastError returns 35 again and again; "
       "cudaDriverGetVersion succeeds with 0 and cudaRuntimeGetVersion with the runtime's version",
       kNoDriverProgram,
       WithoutDriver("cudaErrorInsufficientDriver(35) CUDA driver version is insufficient for CUDA runtime version",
                     "unavailable"),
       Driver::kNone},
      {"stub_driver", WithoutUsableDriver,
       "with only the toolkit's stub libcuda.so, everything is as without a driver but with 34", kNoDriverProgram,
       WithoutDriver("cudaErrorStubLibrary(34) CUDA driver is a stub library",
                     "CUDA_ERROR_STUB_LIBRARY(34) CUDA driver is a stub library"),
       Driver::kStub},
  };
  return *scenarios;
}

std::vector<Scenario> ScenariosFor(RuntimeKind runtime, Driver machine, int target_devices) {
  std::vector<Scenario> chosen;
  for (const Scenario& s : Scenarios()) {
    if (runtime != RuntimeKind::kCuda) {
      chosen.push_back(s);
    } else if (s.devices == target_devices && (s.driver == Driver::kStub || s.driver == machine)) {
      chosen.push_back(s);
    }
  }
  return chosen;
}

namespace {

// Returns the toolkit's stub driver library (FAULTLINE_CUDA_STUB, else the
// usual toolkit paths), or an error naming every path tried.
Result<std::string> StubDriverPath() {
  std::vector<std::string> candidates;
  if (const char* env = std::getenv("FAULTLINE_CUDA_STUB"); env != nullptr && *env != '\0') candidates.push_back(env);
  candidates.push_back("/usr/local/cuda/lib64/stubs/libcuda.so");
  candidates.push_back("/usr/local/cuda/targets/x86_64-linux/lib/stubs/libcuda.so");
  std::string tried;
  for (const std::string& path : candidates) {
    if (access(path.c_str(), R_OK) == 0) return path;
    tried += (tried.empty() ? "" : ", ") + path;
  }
  return NotFoundError("the stub driver scenario needs the toolkit's stub libcuda.so; not found at " + tried +
                       " (set FAULTLINE_CUDA_STUB)");
}

// Returns a fresh folder holding libcuda.so.1 -> the stub, removed (the
// link, not the stub) when the TempDir goes.
Result<TempDir> MakeStubDriverDir() {
  FL_ASSIGN_OR_RETURN(const std::string stub, StubDriverPath());
  FL_ASSIGN_OR_RETURN(TempDir dir, TempDir::Create("", "stub-driver.", "a folder for the stub driver's link"));
  const std::string library = dir.path() + "/libcuda.so.1";
  if (symlink(stub.c_str(), library.c_str()) != 0) {
    return InternalError("symlink " + library + " -> " + stub + " failed: " + std::strerror(errno));
  }
  return dir;
}

}  // namespace

Result<std::string> RunScenario(const Scenario& scenario, RuntimeKind runtime) {
  SpawnOptions options;
  options.env = scenario.env;
  std::optional<TempDir> stub_dir;  // outlives the child
  if (runtime == RuntimeKind::kSimCuda && scenario.driver != Driver::kPresent) {
    options.env.emplace_back("FAULTLINE_SIMCUDA_DRIVER", DriverName(scenario.driver));
  }
  if (runtime == RuntimeKind::kCuda && scenario.driver == Driver::kStub) {
    FL_ASSIGN_OR_RETURN(stub_dir, MakeStubDriverDir());
    // The stub goes first; the rest of the path stays (a bundle's libraries live there).
    const char* inherited = std::getenv("LD_LIBRARY_PATH");
    options.env.emplace_back(
        "LD_LIBRARY_PATH",
        stub_dir->path() + (inherited != nullptr && *inherited != '\0' ? ":" + std::string(inherited) : std::string()));
  }
  FL_ASSIGN_OR_RETURN(ChildProcess child,
                      ChildProcess::Spawn("conformance_scenario", {scenario.name, RuntimeKindName(runtime)}, options));
  FL_ASSIGN_OR_RETURN(ChildExit exit, child.Wait(std::chrono::seconds(120)));
  if (!exit.succeeded()) {
    return Status(StatusCode::kChildFailed,
                  "scenario " + scenario.name + ": " + exit.Describe() + "; transcript: " + exit.transcript);
  }
  return exit.transcript;
}

}  // namespace conformance
}  // namespace faultline
