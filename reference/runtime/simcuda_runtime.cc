// Implements simcuda. Every API call goes through Enter(), which applies the
// process-level rules of the real runtime in the order CUDA applies them.
#include "reference/runtime/simcuda_runtime.h"

#include <unistd.h>

#include <backward.hpp>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <optional>
#include <sstream>

#include "reference/base/parse_int.h"
#include "reference/runtime/backends.h"
#include "reference/runtime/cuda_errors.h"
#include "reference/runtime/python_stack.h"
#include "reference/runtime/simulated_machine.h"
#include "reference/runtime/visible_devices.h"

namespace faultline {
namespace {

// CUDA keeps the last error and the current device per host thread.
thread_local cudaError_t t_last_error = cudaSuccess;
thread_local int t_current_device = 0;
// Whether a runtime call made the current device's context current on this
// thread (the driver's cuCtxGetCurrent answers it when its stack is empty).
thread_local bool t_context_bound = false;

// Where CUDA was first initialized; inherited by forked children.
backward::StackTrace* g_init_trace = nullptr;
std::string* g_init_python_stack = nullptr;  // "" when the process runs no Python
// The site as text, resolved once (resolving reads debug information, which
// is slow): children forked after it inherit the text.
std::string* g_init_site_text = nullptr;

// Applies CUDA_VISIBLE_DEVICES to the simulated devices as the driver does
// (visible_devices.h).
VisibleDevices ApplyVisibleDevices(int physical) {
  const char* mask = std::getenv("CUDA_VISIBLE_DEVICES");
  if (mask == nullptr) {
    VisibleDevices all{physical, false, {}};
    for (int d = 0; d < physical; ++d) all.physical.push_back(d);
    return all;
  }
  std::vector<std::string> uuids;
  for (int d = 0; d < physical; ++d) uuids.push_back(SimulatedUuid(d));
  return ReadVisibleDevices(mask, uuids);
}

// Reads FAULTLINE_SIMCUDA_DRIVER: unset or "present", "none", "stub".
cudaError_t DriverError() {
  const char* driver = std::getenv("FAULTLINE_SIMCUDA_DRIVER");
  if (driver == nullptr || *driver == '\0' || std::strcmp(driver, "present") == 0) return cudaSuccess;
  if (std::strcmp(driver, "none") == 0) return cudaErrorInsufficientDriver;
  if (std::strcmp(driver, "stub") == 0) return cudaErrorStubLibrary;
  std::fprintf(stderr, "simcuda: ignoring FAULTLINE_SIMCUDA_DRIVER='%s': expected present, none or stub\n", driver);
  return cudaSuccess;
}

bool EndsWith(const std::string& text, const char* suffix) {
  const size_t n = std::strlen(suffix);
  return text.size() >= n && text.compare(text.size() - n, n, suffix) == 0;
}

// Skips the frames of the runtime itself: the user wants the caller.
// libstdc++'s call plumbing (std::invoke, std::function): the frames of a
// lambda or std::function call that are not the user's code.
bool IsCallPlumbing(const backward::ResolvedTrace::SourceLoc& loc) {
  if (loc.filename.find("/include/c++/") == std::string::npos) return false;
  return loc.function == "operator()" || loc.function.rfind("__invoke", 0) == 0 ||
         loc.function.rfind("_M_invoke", 0) == 0;
}

bool IsInternalFrame(const backward::ResolvedTrace::SourceLoc& loc) {
  // The dynamic loader's own frames (between dlopen and a static
  // initializer) say nothing about who loaded what.
  return loc.filename.empty() || EndsWith(loc.filename, "reference/runtime/simcuda_runtime.cc") ||
         EndsWith(loc.filename, "reference/runtime/runtime.cc") || EndsWith(loc.filename, "backward.hpp") ||
         loc.filename.find("reference/dropin/") != std::string::npos || loc.filename.rfind("./elf/", 0) == 0 ||
         IsCallPlumbing(loc);
}

std::string Basename(const std::string& path) {
  const size_t slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

// The drop-in libraries themselves (reference/dropin): not the caller.
bool IsDropInObject(const std::string& object) {
  const std::string name = Basename(object);
  return name == "libcuda.so.1" || name.rfind("libcudart.so", 0) == 0 || name == "libnvidia-ml.so.1";
}

// CPython's evaluation loop, from libpython or a statically linked python.
bool IsPythonInterpreterFrame(const backward::ResolvedTrace& frame) {
  return Basename(frame.object_filename).rfind("libpython", 0) == 0 || frame.source.filename.rfind("Python/", 0) == 0 ||
         frame.source.filename.rfind("Objects/", 0) == 0 || frame.source.filename.rfind("./Include/", 0) == 0;
}

}  // namespace

SimCudaRuntime::SimCudaRuntime() {
  driver_error_ = DriverError();
  const SimulatedMachine machine = ReadSimulatedMachine();
  physical_devices_ = machine.devices;
  // Until initialization applies CUDA_VISIBLE_DEVICES (see Enter), every device is visible.
  device_count_ = physical_devices_;
  capacity_bytes_ = machine.memory_bytes;
  device_name_ = machine.name;
  compute_major_ = machine.major;
  compute_minor_ = machine.minor;
  config_error_ = machine.error;
  for (int d = 0; d < physical_devices_; ++d) visible_physical_.push_back(d);
  primary_context_.assign(physical_devices_, false);
  used_bytes_.assign(physical_devices_, 0);
  // A fork while another thread holds mu_ must not leave the child's copy locked.
  current_pid_ = getpid();
  pthread_atfork([] { SimCuda().mu_.lock(); }, [] { SimCuda().mu_.unlock(); },
                 [] {
                   SimCudaRuntime& self = SimCuda();
                   self.current_pid_ = getpid();
                   self.ready_.store(false, std::memory_order_relaxed);
                   self.mu_.unlock();
                 });
}

Status SimCudaRuntime::Fail(cudaError_t code, const char* api, SourceLocation loc, const std::string& detail) {
  t_last_error = code;
  return CudaCallError(code, SimCudaErrorName(code), SimCudaErrorString(code), api, loc, detail);
}

std::string SimCudaRuntime::ForkDetail() {
  return "this process (pid " + std::to_string(getpid()) + ") was forked after CUDA was initialized in pid " +
         std::to_string(init_pid_) + " at:\n" + InitializationSiteLocked();
}

void SimCudaRuntime::InitializeDriverLocked() {
  initialized_ = true;
  init_pid_ = current_pid_;
  // The driver reads CUDA_VISIBLE_DEVICES once, at initialization (cuInit).
  const VisibleDevices visible = ApplyVisibleDevices(physical_devices_);
  device_count_ = visible.count;
  visible_physical_ = visible.physical;
  init_error_ = visible.names_a_device_twice ? cudaErrorInvalidDevice
                : visible.count == 0         ? cudaErrorNoDevice
                                             : cudaSuccess;
  if (g_init_trace == nullptr) g_init_trace = new backward::StackTrace();
  g_init_trace->load_here(48);
  if (g_init_python_stack == nullptr) g_init_python_stack = new std::string();
  *g_init_python_stack = CurrentPythonStack();
  delete g_init_site_text;
  g_init_site_text = nullptr;
  if (init_observer_ != nullptr) init_observer_(InitializationSiteLocked());
}

// Note [Fork poisoning]: a child forked after CUDA was initialized inherits
// the parent's memory but not its driver state. Seen on an H100 (CUDA 13.0,
// driver 580; docs/gpu-validation.md): every call that reaches the driver
// fails with 3 (cudaGetDevice, cudaSetDevice, cudaMalloc,
// cudaPointerGetAttributes, cudaHostUnregister, cudaMallocHost, cuInit), but
// cudaGetDeviceCount answers from the runtime's inherited cache, so counting
// devices in a child says nothing about whether CUDA works there. When the
// parent had initialized only the driver (cuInit), the runtime has no cache:
// the count fails too and the failure stays in the last error.
Status SimCudaRuntime::ConfigurationFailure(const char* api, SourceLocation loc) {
  if (!config_error_said_) {
    config_error_said_ = true;
    std::fprintf(stderr, "simcuda: bad configuration: %s\n", config_error_.c_str());
  }
  return Fail(cudaErrorInvalidValue, api, loc, "bad simcuda configuration: " + config_error_);
}

Status SimCudaRuntime::Enter(const char* api, Needs needs, SourceLocation loc) {
  if (!config_error_.empty()) return ConfigurationFailure(api, loc);
  if (driver_error_ != cudaSuccess) return Fail(driver_error_, api, loc);
  if (initialized_ && init_pid_ != current_pid_) {
    if (needs == Needs::kCachedCount && runtime_initialized_) return OkStatus();
    if (!runtime_initialized_) runtime_init_failed_ = true;
    return Fail(cudaErrorInitializationError, api, loc, ForkDetail());
  }
  if (!initialized_) InitializeDriverLocked();
  runtime_initialized_ = true;
  if (init_error_ != cudaSuccess) return Fail(init_error_, api, loc);
  ready_.store(true, std::memory_order_release);
  if (needs != Needs::kContext) return OkStatus();
  primary_context_[t_current_device] = true;
  t_context_bound = true;
  if (sticky_error_ == cudaErrorDevicesUnavailable) {
    return Fail(sticky_error_, api, loc, "the device was reset after a sticky error; only a new process can use it");
  }
  if (sticky_error_ != cudaSuccess) {
    return Fail(sticky_error_, api, loc, "sticky error from an earlier kernel; the context is unusable");
  }
  return OkStatus();
}

const SimCudaRuntime::Range* SimCudaRuntime::FindRange(const std::map<uintptr_t, Range>& ranges, const void* ptr,
                                                       size_t bytes) {
  uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  auto it = ranges.upper_bound(p);
  if (it == ranges.begin()) return nullptr;
  --it;
  if (p + bytes > it->first + it->second.bytes || p < it->first) return nullptr;
  return &it->second;
}

bool SimCudaRuntime::initialized() {
  std::lock_guard<std::mutex> lock(mu_);
  return initialized_;
}

std::string SimCudaRuntime::InitializationSite() {
  std::lock_guard<std::mutex> lock(mu_);
  return InitializationSiteLocked();
}

std::string SimCudaRuntime::InitializationSiteLocked() {
  if (!initialized_ || g_init_trace == nullptr) return "";
  if (g_init_site_text == nullptr) g_init_site_text = new std::string(ResolveInitializationSite());
  return *g_init_site_text;
}

std::string SimCudaRuntime::ResolveInitializationSite() {
  backward::TraceResolver resolver;
  resolver.load_stacktrace(*g_init_trace);
  std::ostringstream os;
  const bool python = g_init_python_stack != nullptr && !g_init_python_stack->empty();
  if (python) {
    // faulthandler's lines ("  File ..., line N in f") under its own header.
    std::istringstream lines(*g_init_python_stack);
    os << "Python (most recent call first):\n";
    for (std::string line; std::getline(lines, line);) {
      if (line.rfind("  File ", 0) == 0) os << "  " << line.substr(2) << "\n";
    }
    os << "Native:\n";
  }
  int shown = 0;
  auto print = [&](const backward::ResolvedTrace::SourceLoc& loc) {
    if (IsInternalFrame(loc) || shown >= 16) return;
    os << "  #" << shown++ << " " << loc.function << " at " << loc.filename << ":" << loc.line << "\n";
  };
  for (size_t i = 0; i < g_init_trace->size(); ++i) {
    backward::ResolvedTrace frame = resolver.resolve((*g_init_trace)[i]);
    // Under Python the native frames end where the interpreter begins: its
    // own frames are the Python ones above, in the user's terms.
    if (python && IsPythonInterpreterFrame(frame)) break;
    // Inlined calls first: they are the innermost frames at this address.
    for (const auto& inlined : frame.inliners) print(inlined);
    if (frame.source.filename.empty() && !frame.object_function.empty() && !IsDropInObject(frame.object_filename) &&
        shown < 16) {
      // A library without line tables (PyTorch's): its symbol and file.
      os << "  #" << shown++ << " " << frame.object_function << " in " << Basename(frame.object_filename) << "\n";
    } else {
      print(frame.source);
    }
  }
  return os.str();
}

// Asks as the CUDA backend does (cuda_runtime.cc): cuInit first, then
// cuDevicePrimaryCtxGetState. So the query initializes the driver (no
// context): a child forked after it is poisoned, as after any cuInit
// (primary_context_query_then_fork). simcuda's query used to initialize
// nothing, and such a child worked on simcuda only.
Result<bool> SimCudaRuntime::PrimaryContextActive(int device) {
  std::lock_guard<std::mutex> lock(mu_);
  if (Status init = DriverInitLocked(SourceLocation::Current()); !init.ok()) {
    return UnavailableError(
        "PrimaryContextActive: " +
        (init.cuda_error() ? "cuInit returned " + std::to_string(init.cuda_error()->code) : init.message()));
  }
  if (device < 0 || device >= device_count_) {
    return InvalidArgumentError("PrimaryContextActive: device " + std::to_string(device) + " is not in [0, " +
                                std::to_string(device_count_) + ")");
  }
  return static_cast<bool>(primary_context_[device]);
}

Result<int> SimCudaRuntime::DoGetDeviceCount(SourceLocation loc) {
  if (ready_.load(std::memory_order_acquire)) return device_count_;  // fixed once initialized
  std::lock_guard<std::mutex> lock(mu_);
  FL_RETURN_IF_ERROR(Enter("cudaGetDeviceCount", Needs::kCachedCount, loc));
  return device_count_;
}

Status SimCudaRuntime::DoSetDevice(int device, SourceLocation loc) {
  std::lock_guard<std::mutex> lock(mu_);
  FL_RETURN_IF_ERROR(Enter("cudaSetDevice", Needs::kDevice, loc));
  if (device < 0 || device >= device_count_) {
    return Fail(cudaErrorInvalidDevice, "cudaSetDevice", loc,
                "device " + std::to_string(device) + " is not in [0, " + std::to_string(device_count_) + ")");
  }
  t_current_device = device;
  // Since CUDA 12, cudaSetDevice initializes the device's primary context.
  return Enter("cudaSetDevice", Needs::kContext, loc);
}

Result<int> SimCudaRuntime::DoGetDevice(SourceLocation loc) {
  if (ready_.load(std::memory_order_acquire)) return t_current_device;
  std::lock_guard<std::mutex> lock(mu_);
  FL_RETURN_IF_ERROR(Enter("cudaGetDevice", Needs::kDevice, loc));
  return t_current_device;
}

Result<int> SimCudaRuntime::DoDriverGetVersion(SourceLocation) {
  // Answered by the driver library without initializing CUDA; 0 without one.
  std::lock_guard<std::mutex> lock(mu_);
  return driver_error_ == cudaSuccess ? BuiltRuntimeVersion() : 0;
}

Result<int> SimCudaRuntime::DoRuntimeGetVersion(SourceLocation) { return BuiltRuntimeVersion(); }

Result<int> SimCudaRuntime::DoNvmlDeviceCount(SourceLocation) {
  // NVML answers without initializing CUDA; the visible count follows the
  // CUDA_VISIBLE_DEVICES of the moment, the way PyTorch's NVML count applies it.
  std::lock_guard<std::mutex> lock(mu_);
  if (driver_error_ != cudaSuccess) {
    return UnavailableError("nvmlInit: libnvidia-ml.so.1 not found (no NVIDIA driver)");
  }
  if (!config_error_.empty()) return UnavailableError("nvmlInit: bad simcuda configuration: " + config_error_);
  return ApplyVisibleDevices(physical_devices_).count;
}

Status SimCudaRuntime::DoDriverInit(SourceLocation loc) {
  std::lock_guard<std::mutex> lock(mu_);
  return DriverInitLocked(loc);
}

Status SimCudaRuntime::DriverInitLocked(SourceLocation loc) {
  if (!config_error_.empty()) return ConfigurationFailure("cuInit", loc);
  if (driver_error_ == cudaErrorInsufficientDriver) {
    return UnavailableError("cuInit: libcuda.so.1 not found (no NVIDIA driver)");
  }
  if (driver_error_ == cudaErrorStubLibrary) {
    return CudaCallError(34, DriverErrorName(34), DriverErrorString(34), "cuInit", loc);
  }
  if (initialized_ && init_pid_ != current_pid_) {
    return CudaCallError(3, DriverErrorName(3), DriverErrorString(3), "cuInit", loc, ForkDetail());
  }
  if (!initialized_) InitializeDriverLocked();
  if (init_error_ != cudaSuccess) {  // the driver's codes match the runtime's here: 100, 101
    const int code = static_cast<int>(init_error_);
    return CudaCallError(code, DriverErrorName(code), DriverErrorString(code), "cuInit", loc);
  }
  return OkStatus();
}

Result<void*> SimCudaRuntime::DoMallocHost(size_t bytes, SourceLocation loc) {
  std::lock_guard<std::mutex> lock(mu_);
  FL_RETURN_IF_ERROR(Enter("cudaMallocHost", Needs::kContext, loc));
  const size_t rounded = (bytes + 4095) / 4096 * 4096;  // whole pages, as pinning is
  void* ptr = std::aligned_alloc(4096, rounded);
  if (ptr == nullptr) return Fail(cudaErrorMemoryAllocation, "cudaMallocHost", loc, "host allocation failed");
  pinned_allocations_[reinterpret_cast<uintptr_t>(ptr)] = Range{bytes, t_current_device};
  return ptr;
}

Status SimCudaRuntime::DoFreeHost(void* ptr, SourceLocation loc) {
  std::lock_guard<std::mutex> lock(mu_);
  FL_RETURN_IF_ERROR(Enter("cudaFreeHost", Needs::kContext, loc));
  if (ptr == nullptr) return OkStatus();
  if (pinned_allocations_.erase(reinterpret_cast<uintptr_t>(ptr)) == 0) {
    return Fail(cudaErrorInvalidValue, "cudaFreeHost", loc, PointerText(ptr) + " is not from cudaMallocHost");
  }
  std::free(ptr);
  return OkStatus();
}

Status SimCudaRuntime::DoDeviceReset(SourceLocation loc) {
  std::lock_guard<std::mutex> lock(mu_);
  FL_RETURN_IF_ERROR(Enter("cudaDeviceReset", Needs::kDevice, loc));
  ResetDeviceLocked(t_current_device);
  return OkStatus();
}

Status SimCudaRuntime::ResetDevice(int device, SourceLocation loc) {
  std::lock_guard<std::mutex> lock(mu_);
  FL_RETURN_IF_ERROR(Enter("cuDevicePrimaryCtxReset", Needs::kDevice, loc));
  if (device < 0 || device >= device_count_) {
    return Fail(cudaErrorInvalidDevice, "cuDevicePrimaryCtxReset", loc,
                "device " + std::to_string(device) + " is not in [0, " + std::to_string(device_count_) + ")");
  }
  ResetDeviceLocked(device);
  return OkStatus();
}

void SimCudaRuntime::ResetDeviceLocked(int device) {
  // Everything the device's primary context owned goes with it.
  auto drop = [device](std::map<uintptr_t, Range>& ranges, bool owns_memory) {
    for (auto it = ranges.begin(); it != ranges.end();) {
      if (it->second.device != device) {
        ++it;
        continue;
      }
      if (owns_memory) std::free(reinterpret_cast<void*>(it->first));
      it = ranges.erase(it);
    }
  };
  drop(device_allocations_, /*owns_memory=*/true);
  drop(pinned_allocations_, /*owns_memory=*/true);
  drop(registered_host_, /*owns_memory=*/false);
  for (auto it = streams_.begin(); it != streams_.end();) {
    if (it->second == device) {
      delete static_cast<char*>(it->first);
      it = streams_.erase(it);
    } else {
      ++it;
    }
  }
  for (auto it = events_.begin(); it != events_.end();) {
    if (it->second == device) {
      delete static_cast<char*>(it->first);
      it = events_.erase(it);
    } else {
      ++it;
    }
  }
  used_bytes_[device] = 0;
  primary_context_[device] = false;
  // A reset of the faulted device does not repair it: on an H100 the next
  // cudaMalloc failed with cudaErrorDevicesUnavailable (46), not 700
  // (device_reset_after_sticky_error, docs/gpu-validation.md 2026-11-26).
  if (sticky_error_ != cudaSuccess && device == sticky_device_) sticky_error_ = cudaErrorDevicesUnavailable;
}

Result<void*> SimCudaRuntime::DoMalloc(size_t bytes, SourceLocation loc) {
  std::lock_guard<std::mutex> lock(mu_);
  return MallocLocked(bytes, /*managed=*/false, "cudaMalloc", loc);
}

Result<void*> SimCudaRuntime::MallocManaged(size_t bytes, SourceLocation loc) {
  if (bytes == 0 || bytes > kMaxBytes) {
    return InvalidArgumentError("cudaMallocManaged: argument 'bytes' is " + std::to_string(bytes) +
                                "; expected 0 < bytes <= " + std::to_string(kMaxBytes));
  }
  std::lock_guard<std::mutex> lock(mu_);
  return MallocLocked(bytes, /*managed=*/true, "cudaMallocManaged", loc);
}

Result<void*> SimCudaRuntime::MallocLocked(size_t bytes, bool managed, const char* api, SourceLocation loc) {
  FL_RETURN_IF_ERROR(Enter(api, Needs::kContext, loc));
  const int device = t_current_device;
  if (used_bytes_[device] + bytes > capacity_bytes_) {
    return Fail(cudaErrorMemoryAllocation, api, loc,
                "requested " + std::to_string(bytes) + " bytes with " + std::to_string(used_bytes_[device]) + " of " +
                    std::to_string(capacity_bytes_) + " in use on device " + std::to_string(device));
  }
  // Real allocations are 256-byte aligned; the host twin relies on it too.
  size_t rounded = (bytes + 255) / 256 * 256;
  void* ptr = std::aligned_alloc(256, rounded);
  if (ptr == nullptr) return Fail(cudaErrorMemoryAllocation, api, loc, "host allocation failed");
  device_allocations_[reinterpret_cast<uintptr_t>(ptr)] = Range{bytes, device, managed};
  used_bytes_[device] += bytes;
  return ptr;
}

Status SimCudaRuntime::DoFree(void* ptr, SourceLocation loc) {
  std::lock_guard<std::mutex> lock(mu_);
  FL_RETURN_IF_ERROR(Enter("cudaFree", Needs::kContext, loc));
  if (ptr == nullptr) return OkStatus();
  auto it = device_allocations_.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == device_allocations_.end()) {
    return Fail(cudaErrorInvalidValue, "cudaFree", loc, PointerText(ptr) + " is not a device allocation");
  }
  used_bytes_[it->second.device] -= it->second.bytes;
  device_allocations_.erase(it);
  std::free(ptr);
  return OkStatus();
}

Status SimCudaRuntime::DoMemcpy(void* dst, const void* src, size_t bytes, MemcpyKind kind, StreamHandle stream,
                                bool async, SourceLocation loc) {
  const char* api = async ? "cudaMemcpyAsync" : "cudaMemcpy";
  std::lock_guard<std::mutex> lock(mu_);
  FL_RETURN_IF_ERROR(Enter(api, Needs::kContext, loc));
  if (!KnownStream(stream))
    return Fail(cudaErrorInvalidResourceHandle, api, loc, "unknown stream " + PointerText(stream));
  const bool dst_device = kind == MemcpyKind::kHostToDevice || kind == MemcpyKind::kDeviceToDevice;
  const bool src_device = kind == MemcpyKind::kDeviceToHost || kind == MemcpyKind::kDeviceToDevice;
  if (dst_device && FindRange(device_allocations_, dst, bytes) == nullptr) {
    return Fail(cudaErrorInvalidValue, api, loc,
                "dst " + PointerText(dst) + " + " + std::to_string(bytes) + " bytes is not inside a device allocation");
  }
  if (src_device && FindRange(device_allocations_, src, bytes) == nullptr) {
    return Fail(cudaErrorInvalidValue, api, loc,
                "src " + PointerText(src) + " + " + std::to_string(bytes) + " bytes is not inside a device allocation");
  }
  std::memmove(dst, src, bytes);  // streams run synchronously in simcuda
  return OkStatus();
}

Status SimCudaRuntime::DoHostRegister(void* ptr, size_t bytes, SourceLocation loc) {
  std::lock_guard<std::mutex> lock(mu_);
  FL_RETURN_IF_ERROR(Enter("cudaHostRegister", Needs::kContext, loc));
  uintptr_t begin = reinterpret_cast<uintptr_t>(ptr);
  for (const auto* pinned : {&registered_host_, &pinned_allocations_}) {
    for (const auto& [start, range] : *pinned) {
      if (begin < start + range.bytes && start < begin + bytes) {
        return Fail(cudaErrorHostMemoryAlreadyRegistered, "cudaHostRegister", loc,
                    PointerText(ptr) + " + " + std::to_string(bytes) + " bytes overlaps the pinned range at " +
                        PointerText(reinterpret_cast<void*>(start)));
      }
    }
  }
  registered_host_[begin] = Range{bytes, t_current_device};
  return OkStatus();
}

Status SimCudaRuntime::DoHostUnregister(void* ptr, SourceLocation loc) {
  std::lock_guard<std::mutex> lock(mu_);
  FL_RETURN_IF_ERROR(Enter("cudaHostUnregister", Needs::kContext, loc));
  auto it = registered_host_.find(reinterpret_cast<uintptr_t>(ptr));
  if (it == registered_host_.end()) {
    // The driver answers "invalid value" for memory it knows but that is not
    // the start of a registration, and 713 only for memory it does not know
    // (lupine PR 605 and #437, a driver shim matched to driver 590.48.01).
    if (FindRange(registered_host_, ptr, 1) != nullptr) {
      return Fail(cudaErrorInvalidValue, "cudaHostUnregister", loc,
                  PointerText(ptr) + " lies inside a registered range; unregister the range's start");
    }
    if (FindRange(pinned_allocations_, ptr, 1) != nullptr) {
      return Fail(cudaErrorInvalidValue, "cudaHostUnregister", loc,
                  PointerText(ptr) + " is memory from cudaMallocHost; free it with cudaFreeHost");
    }
    return Fail(cudaErrorHostMemoryNotRegistered, "cudaHostUnregister", loc,
                PointerText(ptr) + " was not registered by this process (pid " + std::to_string(getpid()) +
                    "); pinning is per process, only the process that pinned memory can unpin it");
  }
  registered_host_.erase(it);
  return OkStatus();
}

Result<PointerAttributes> SimCudaRuntime::DoGetPointerAttributes(const void* ptr, SourceLocation loc) {
  std::lock_guard<std::mutex> lock(mu_);
  // Creates no primary context (seen on an H100, docs/gpu-validation.md).
  FL_RETURN_IF_ERROR(Enter("cudaPointerGetAttributes", Needs::kDevice, loc));
  if (const Range* r = FindRange(device_allocations_, ptr, 1)) {
    return PointerAttributes{r->managed ? MemoryType::kManaged : MemoryType::kDevice, r->device};
  }
  if (const Range* r = FindRange(registered_host_, ptr, 1)) return PointerAttributes{MemoryType::kHost, r->device};
  if (const Range* r = FindRange(pinned_allocations_, ptr, 1)) return PointerAttributes{MemoryType::kHost, r->device};
  return PointerAttributes{MemoryType::kUnregistered, -1};
}

Result<StreamHandle> SimCudaRuntime::DoStreamCreate(SourceLocation loc) {
  std::lock_guard<std::mutex> lock(mu_);
  FL_RETURN_IF_ERROR(Enter("cudaStreamCreate", Needs::kContext, loc));
  StreamHandle stream = new char;  // a unique address; simcuda streams are synchronous
  streams_[stream] = t_current_device;
  return stream;
}

Status SimCudaRuntime::DoStreamSynchronize(StreamHandle stream, SourceLocation loc) {
  std::lock_guard<std::mutex> lock(mu_);
  FL_RETURN_IF_ERROR(Enter("cudaStreamSynchronize", Needs::kContext, loc));
  if (!KnownStream(stream)) {
    return Fail(cudaErrorInvalidResourceHandle, "cudaStreamSynchronize", loc, "unknown stream " + PointerText(stream));
  }
  return OkStatus();
}

Status SimCudaRuntime::DoStreamDestroy(StreamHandle stream, SourceLocation loc) {
  std::lock_guard<std::mutex> lock(mu_);
  FL_RETURN_IF_ERROR(Enter("cudaStreamDestroy", Needs::kContext, loc));
  if (streams_.erase(stream) == 0) {
    return Fail(cudaErrorInvalidResourceHandle, "cudaStreamDestroy", loc, "unknown stream " + PointerText(stream));
  }
  delete static_cast<char*>(stream);
  return OkStatus();
}

Status SimCudaRuntime::DoDeviceSynchronize(SourceLocation loc) {
  std::lock_guard<std::mutex> lock(mu_);
  return Enter("cudaDeviceSynchronize", Needs::kContext, loc);
}

bool SimCudaRuntime::KnownStream(StreamHandle handle) const { return handle == nullptr || streams_.count(handle) != 0; }

Status SimCudaRuntime::CheckEvent(const char* api, EventHandle event, SourceLocation loc) {
  if (events_.count(event) != 0) return OkStatus();
  return Fail(cudaErrorInvalidResourceHandle, api, loc, "unknown event " + PointerText(event));
}

Result<EventHandle> SimCudaRuntime::DoEventCreate(SourceLocation loc) {
  std::lock_guard<std::mutex> lock(mu_);
  FL_RETURN_IF_ERROR(Enter("cudaEventCreate", Needs::kContext, loc));
  EventHandle event = new char;  // a unique address
  events_[event] = t_current_device;
  return event;
}

Status SimCudaRuntime::DoEventRecord(EventHandle event, StreamHandle stream, SourceLocation loc) {
  std::lock_guard<std::mutex> lock(mu_);
  FL_RETURN_IF_ERROR(Enter("cudaEventRecord", Needs::kContext, loc));
  FL_RETURN_IF_ERROR(CheckEvent("cudaEventRecord", event, loc));
  if (!KnownStream(stream)) {
    return Fail(cudaErrorInvalidResourceHandle, "cudaEventRecord", loc, "unknown stream " + PointerText(stream));
  }
  return OkStatus();
}

// simcuda's streams run synchronously: recorded work has always finished.
Status SimCudaRuntime::DoEventQuery(EventHandle event, SourceLocation loc) {
  std::lock_guard<std::mutex> lock(mu_);
  FL_RETURN_IF_ERROR(Enter("cudaEventQuery", Needs::kContext, loc));
  return CheckEvent("cudaEventQuery", event, loc);
}

Status SimCudaRuntime::DoEventSynchronize(EventHandle event, SourceLocation loc) {
  std::lock_guard<std::mutex> lock(mu_);
  FL_RETURN_IF_ERROR(Enter("cudaEventSynchronize", Needs::kContext, loc));
  return CheckEvent("cudaEventSynchronize", event, loc);
}

Status SimCudaRuntime::DoEventDestroy(EventHandle event, SourceLocation loc) {
  std::lock_guard<std::mutex> lock(mu_);
  FL_RETURN_IF_ERROR(Enter("cudaEventDestroy", Needs::kContext, loc));
  FL_RETURN_IF_ERROR(CheckEvent("cudaEventDestroy", event, loc));
  events_.erase(event);
  delete static_cast<char*>(event);
  return OkStatus();
}

Status SimCudaRuntime::DoGetLastError(bool clear, SourceLocation loc) {
  std::lock_guard<std::mutex> lock(mu_);
  // A failed initialization describes the process, not one call: real CUDA
  // returns it again after every read. A sticky 700 does not: the slot
  // clears, and the broken context sets it again at its next use (both seen
  // on an H100, docs/gpu-validation.md).
  cudaError_t code = t_last_error;
  if (driver_error_ != cudaSuccess) {
    code = driver_error_;
  } else if (runtime_init_failed_) {
    code = cudaErrorInitializationError;
  } else if (initialized_ && init_error_ != cudaSuccess) {
    code = init_error_;  // initialization found no device, or one named twice
  } else if (clear) {
    t_last_error = cudaSuccess;
  }
  if (code == cudaSuccess) return OkStatus();
  return CudaCallError(code, SimCudaErrorName(code), SimCudaErrorString(code),
                       clear ? "cudaGetLastError" : "cudaPeekAtLastError", loc);
}

Status SimCudaRuntime::DoLaunch(const char* kernel, const LaunchConfig& config, const BufferUse* buffers,
                                size_t num_buffers, const std::function<void()>& host_twin, const std::function<int()>&,
                                SourceLocation loc) {
  bool run_body = false;
  FL_RETURN_IF_ERROR(BeginKernel(kernel, config, buffers, num_buffers, loc, &run_body));
  if (run_body) host_twin();  // outside mu_: the twin may be long, and kernels make no runtime calls
  return OkStatus();
}

Status SimCudaRuntime::BeginKernel(const char* kernel, const LaunchConfig& config, const BufferUse* buffers,
                                   size_t num_buffers, SourceLocation loc, bool* run_body) {
  *run_body = false;
  std::lock_guard<std::mutex> lock(mu_);
  FL_RETURN_IF_ERROR(Enter("cudaLaunchKernel", Needs::kContext, loc));
  // cudaLaunchKernel answers an out-of-range grid or block with
  // cudaErrorInvalidValue (1), not the cudaErrorInvalidConfiguration (9)
  // its documentation suggests (seen on an H100, CUDA 13.0, driver 580;
  // docs/gpu-validation.md 2026-11-26).
  if (config.grid == 0 || config.block == 0 || config.block > 1024) {
    return Fail(cudaErrorInvalidValue, "cudaLaunchKernel", loc,
                std::string(kernel) + " launched with grid " + std::to_string(config.grid) + ", block " +
                    std::to_string(config.block) + "; expected grid >= 1 and 1 <= block <= 1024");
  }
  if (!KnownStream(config.stream)) {
    return Fail(cudaErrorInvalidResourceHandle, "cudaLaunchKernel", loc, "unknown stream");
  }
  // A launch goes to a stream of the current device (a diagnostic: real
  // CUDA fails such a launch, with a code simcuda does not claim).
  if (config.stream != nullptr && streams_.at(config.stream) != t_current_device) {
    return Fail(cudaErrorInvalidResourceHandle, "cudaLaunchKernel", loc,
                "the stream belongs to device " + std::to_string(streams_.at(config.stream)) +
                    "; the current device is " + std::to_string(t_current_device));
  }
  for (size_t i = 0; i < num_buffers; ++i) {
    const BufferUse& b = buffers[i];
    if (b.bytes == 0) continue;
    // Another device's memory is out of reach without peer access (which
    // simcuda does not model); host memory is mapped for every device.
    const Range* on_device = FindRange(device_allocations_, b.ptr, b.bytes);
    const bool reachable = on_device != nullptr ? on_device->device == t_current_device
                                                : FindRange(registered_host_, b.ptr, b.bytes) != nullptr ||
                                                      FindRange(pinned_allocations_, b.ptr, b.bytes) != nullptr;
    if (!reachable) {
      // Like a GPU fault: the launch itself succeeds, the context is lost.
      sticky_error_ = cudaErrorIllegalAddress;
      sticky_device_ = t_current_device;
      return OkStatus();
    }
  }
  *run_body = true;
  return OkStatus();
}

Result<SimCudaRuntime::DeviceDescription> SimCudaRuntime::Describe(int device, SourceLocation loc) {
  std::lock_guard<std::mutex> lock(mu_);
  FL_RETURN_IF_ERROR(Enter("cudaGetDeviceProperties", Needs::kCachedCount, loc));
  if (device < 0 || device >= device_count_) {
    return Fail(cudaErrorInvalidDevice, "cudaGetDeviceProperties", loc,
                "device " + std::to_string(device) + " is not in [0, " + std::to_string(device_count_) + ")");
  }
  const int physical = visible_physical_[device];
  return DeviceDescription{device_name_,   capacity_bytes_,         compute_major_,
                           compute_minor_, SimulatedUuid(physical), physical};
}

Status SimCudaRuntime::EnterRuntimeCall(const char* api, bool needs_context, SourceLocation loc) {
  std::lock_guard<std::mutex> lock(mu_);
  return Enter(api, needs_context ? Needs::kContext : Needs::kDevice, loc);
}

Status SimCudaRuntime::DriverReady(const char* api, SourceLocation loc) {
  if (ready_.load(std::memory_order_acquire)) return OkStatus();
  std::lock_guard<std::mutex> lock(mu_);
  if (initialized_ && init_pid_ == current_pid_ && driver_error_ == cudaSuccess) return OkStatus();
  const std::string detail = initialized_ && init_pid_ != current_pid_ ? ForkDetail() : "cuInit has not been called";
  return CudaCallError(3, DriverErrorName(3), DriverErrorString(3), api, loc, detail);
}

Status SimCudaRuntime::RetainPrimaryContext(int device, SourceLocation loc) {
  FL_RETURN_IF_ERROR(DriverReady("cuDevicePrimaryCtxRetain", loc));
  std::lock_guard<std::mutex> lock(mu_);
  if (device < 0 || device >= device_count_) {
    return CudaCallError(101, DriverErrorName(101), DriverErrorString(101), "cuDevicePrimaryCtxRetain", loc,
                         "device " + std::to_string(device) + " is not in [0, " + std::to_string(device_count_) + ")");
  }
  primary_context_[device] = true;
  return OkStatus();
}

int SimCudaRuntime::CurrentDeviceUnchecked() const { return t_current_device; }

bool SimCudaRuntime::ContextBoundUnchecked() const { return t_context_bound; }

Result<std::pair<void*, size_t>> SimCudaRuntime::AllocationRange(const void* ptr, SourceLocation loc) {
  std::lock_guard<std::mutex> lock(mu_);
  FL_RETURN_IF_ERROR(Enter("cuMemGetAddressRange", Needs::kContext, loc));
  const uintptr_t p = reinterpret_cast<uintptr_t>(ptr);
  auto it = device_allocations_.upper_bound(p);
  if (it != device_allocations_.begin()) {
    --it;
    if (p < it->first + it->second.bytes) return std::make_pair(reinterpret_cast<void*>(it->first), it->second.bytes);
  }
  return Fail(cudaErrorInvalidValue, "cuMemGetAddressRange", loc, PointerText(ptr) + " is not in a device allocation");
}

void SimCudaRuntime::UnbindContext() { t_context_bound = false; }

Result<std::pair<size_t, size_t>> SimCudaRuntime::MemoryInfo(SourceLocation loc) {
  std::lock_guard<std::mutex> lock(mu_);
  FL_RETURN_IF_ERROR(Enter("cudaMemGetInfo", Needs::kContext, loc));
  return std::make_pair(capacity_bytes_ - used_bytes_[t_current_device], capacity_bytes_);
}

void SimCudaRuntime::RecordError(cudaError_t code) { t_last_error = code; }

void SimCudaRuntime::SetInitializationObserver(InitializationObserver observer) {
  std::lock_guard<std::mutex> lock(mu_);
  init_observer_ = observer;
}

SimCudaRuntime& SimCuda() {
  static auto* runtime = new SimCudaRuntime();
  return *runtime;
}

DeviceRuntime& SimCudaRuntimeInstance() { return SimCuda(); }

}  // namespace faultline
