// The stand-in libcuda.so.1: the CUDA driver API over the simcuda model,
// which lives here, as the process state lives in the real driver. The
// stand-in libcudart reaches the same state through faultline_simcuda_model().
// Every driver call but cuInit, the version, error texts and symbol lookup
// needs cuInit first, and fails with CUDA_ERROR_NOT_INITIALIZED (3) in a
// child forked after initialization (Note [Fork poisoning] in simcuda_runtime.cc).
#include <unistd.h>

#include <atomic>
#include <cstdio>
#include <cstring>
#include <string>
#include <unordered_map>
#include <vector>

#include "reference/dropin/device_attributes.h"
#include "reference/dropin/driver_api.h"
#include "reference/dropin/model_api.h"
#include "reference/dropin/process_report.h"
#include "reference/runtime/cuda_errors.h"
#include "reference/runtime/simcuda_runtime.h"

namespace faultline::dropin {
namespace {

SimCudaRuntime& Model() { return SimCuda(); }

// Primary contexts are handles into this array, one per visible device.
constexpr int kMaxContexts = 64;
char g_contexts[kMaxContexts];

CUcontext ContextOf(int device) { return &g_contexts[device]; }
int DeviceOfContext(CUcontext context) {
  const char* p = static_cast<const char*>(context);
  return p >= g_contexts && p < g_contexts + kMaxContexts ? static_cast<int>(p - g_contexts) : -1;
}

// Each said once per process. A forked child inherits them, so the fork
// message's flag is only ever set in a child that was refused for having
// been forked (its parent never is: it initialized CUDA itself).
std::atomic<bool> g_fork_message_said{false};
std::atomic<bool> g_not_initialized_said{false};

// Turns a model Status into a code, recording the first failure in the
// process report. A call refused in a child forked after initialization
// says once, on stderr, which process initialized CUDA and where; a driver
// call before cuInit says once that cuInit has not been called.
int CodeOf(const Status& status, const char* api) {
  if (status.ok()) return 0;
  const int code = status.cuda_error() ? status.cuda_error()->code : 1;
  if (!status.cuda_error()) Model().RecordError(cudaErrorInvalidValue);
  ReportFailure(api, code, status.cuda_error() ? status.cuda_error()->name.c_str() : "cudaErrorInvalidValue");
  if (code == 3) {
    const bool forked = status.message().find("was forked after CUDA was initialized") != std::string::npos;
    std::atomic<bool>& said = forked ? g_fork_message_said : g_not_initialized_said;
    if (!said.exchange(true)) std::fprintf(stderr, "simcuda: %s\n", status.message().c_str());
  }
  return code;
}

template <typename T>
int CodeOf(const Result<T>& result, const char* api) {
  return CodeOf(result.ok() ? OkStatus() : result.status(), api);
}

// Says once per name that a driver entry point runs no device code.
int NoDeviceCode(const char* api) {
  static std::mutex mu;
  static auto* said = new std::unordered_map<std::string, bool>();
  std::lock_guard<std::mutex> lock(mu);
  if (!(*said)[api]) {
    (*said)[api] = true;
    std::fprintf(stderr,
                 "simcuda: %s: simcuda runs no device code (modules and kernels are not simulated); "
                 "returning CUDA_ERROR_NOT_SUPPORTED (801)\n",
                 api);
  }
  return kErrorNotSupported;
}

// Streams 0x1 and 0x2 (CU_STREAM_LEGACY, CU_STREAM_PER_THREAD) name the
// default stream; simcuda's streams are synchronous, so they are one stream.
StreamHandle StreamOf(CUstream stream) {
  const auto value = reinterpret_cast<uintptr_t>(stream);
  return value == 1 || value == 2 ? nullptr : stream;
}

bool OnDevice(MemoryType type) { return type == MemoryType::kDevice || type == MemoryType::kManaged; }

// The thread's contexts below the current one (cuCtxPushCurrent saves them
// here). The current context is the primary context of the model's
// current device, once a call bound it to the thread (the runtime binds
// it too, as on a GPU); only primary contexts exist in simcuda.
thread_local std::vector<int> t_saved_contexts;

// The checks of a driver call, then `device` in range.
int CheckDevice(const char* api, CUdevice device) {
  if (int code = CodeOf(Model().DriverReady(api), api)) return code;
  Result<int> count = Model().GetDeviceCount();
  if (!count.ok()) return CodeOf(count, api);
  return device >= 0 && device < *count ? 0 : kErrorInvalidDevice;
}

// A driver call that works in the current context: cuInit first, then a
// context current on this thread (CUDA_ERROR_INVALID_CONTEXT without one).
int CheckContext(const char* api) {
  if (int code = CodeOf(Model().DriverReady(api), api)) return code;
  return Model().ContextBoundUnchecked() ? 0 : kErrorInvalidContext;
}

int Memcpy(void* dst, const void* src, size_t bytes, MemcpyKind kind, CUstream stream, bool async, const char* api) {
  if (int code = CheckContext(api)) return code;
  if (bytes == 0) return 0;
  Status copied =
      async ? Model().MemcpyAsync(dst, src, bytes, kind, StreamOf(stream)) : Model().Memcpy(dst, src, bytes, kind);
  return CodeOf(copied, api);
}

// The copy direction from the pointers themselves (unified addressing).
MemcpyKind KindOf(const void* dst, const void* src) {
  auto on_device = [](const void* p) {
    Result<PointerAttributes> a = Model().GetPointerAttributes(p);
    return a.ok() && OnDevice(a->type);
  };
  const bool d = on_device(dst), s = on_device(src);
  return d ? (s ? MemcpyKind::kDeviceToDevice : MemcpyKind::kHostToDevice)
           : (s ? MemcpyKind::kDeviceToHost : MemcpyKind::kHostToHost);
}

void* Ptr(CUdeviceptr p) { return reinterpret_cast<void*>(static_cast<uintptr_t>(p)); }

}  // namespace
}  // namespace faultline::dropin

using namespace faultline;          // NOLINT: the C API below is a thin layer
using namespace faultline::dropin;  // NOLINT

extern "C" {

CUresult cuInit(unsigned int flags) {
  if (flags != 0) return kErrorInvalidValue;
  return CodeOf(Model().DriverInit(), "cuInit");
}

CUresult cuDriverGetVersion(int* version) {
  if (version == nullptr) return kErrorInvalidValue;
  Result<int> v = Model().DriverGetVersion();
  *version = v.ok() ? *v : 0;
  return 0;
}

CUresult cuDeviceGetCount(int* count) {
  if (count == nullptr) return kErrorInvalidValue;
  if (int code = CodeOf(Model().DriverReady("cuDeviceGetCount"), "cuDeviceGetCount")) return code;
  Result<int> n = Model().GetDeviceCount();
  if (!n.ok()) return CodeOf(n, "cuDeviceGetCount");
  *count = *n;
  return 0;
}

CUresult cuDeviceGet(CUdevice* device, int ordinal) {
  if (device == nullptr) return kErrorInvalidValue;
  if (int code = CheckDevice("cuDeviceGet", ordinal)) return code;
  *device = ordinal;
  return 0;
}

CUresult cuDeviceGetName(char* name, int length, CUdevice device) {
  if (name == nullptr || length <= 0) return kErrorInvalidValue;
  if (int code = CheckDevice("cuDeviceGetName", device)) return code;
  Result<SimCudaRuntime::DeviceDescription> d = Model().Describe(device);
  if (!d.ok()) return CodeOf(d, "cuDeviceGetName");
  std::snprintf(name, static_cast<size_t>(length), "%s", d->name.c_str());
  return 0;
}

// "GPU-5eed0000-0000-4000-8000-000000000001" -> its 16 bytes.
static void UuidBytes(const std::string& text, char out[16]) {
  std::string hex;
  for (char c : text.substr(4)) {
    if (c != '-') hex += c;
  }
  for (int i = 0; i < 16; ++i) out[i] = static_cast<char>(std::stoi(hex.substr(2 * i, 2), nullptr, 16));
}

CUresult cuDeviceGetUuid_v2(CUuuid* uuid, CUdevice device) {
  if (uuid == nullptr) return kErrorInvalidValue;
  if (int code = CheckDevice("cuDeviceGetUuid", device)) return code;
  Result<SimCudaRuntime::DeviceDescription> d = Model().Describe(device);
  if (!d.ok()) return CodeOf(d, "cuDeviceGetUuid");
  UuidBytes(d->uuid, uuid->bytes);
  return 0;
}

CUresult cuDeviceGetUuid(CUuuid* uuid, CUdevice device) { return cuDeviceGetUuid_v2(uuid, device); }

CUresult cuDeviceTotalMem_v2(size_t* bytes, CUdevice device) {
  if (bytes == nullptr) return kErrorInvalidValue;
  if (int code = CheckDevice("cuDeviceTotalMem", device)) return code;
  Result<SimCudaRuntime::DeviceDescription> d = Model().Describe(device);
  if (!d.ok()) return CodeOf(d, "cuDeviceTotalMem");
  *bytes = d->memory_bytes;
  return 0;
}

CUresult cuDeviceGetAttribute(int* value, int attribute, CUdevice device) {
  if (value == nullptr) return kErrorInvalidValue;
  if (int code = CheckDevice("cuDeviceGetAttribute", device)) return code;
  Result<SimCudaRuntime::DeviceDescription> d = Model().Describe(device);
  if (!d.ok()) return CodeOf(d, "cuDeviceGetAttribute");
  std::optional<int> v = DeviceAttribute(attribute, d->major, d->minor, d->physical);
  if (!v) return kErrorInvalidValue;
  *value = *v;
  return 0;
}

CUresult cuDeviceComputeCapability(int* major, int* minor, CUdevice device) {
  if (major == nullptr || minor == nullptr) return kErrorInvalidValue;
  if (int code = cuDeviceGetAttribute(major, 75, device)) return code;
  return cuDeviceGetAttribute(minor, 76, device);
}

CUresult cuDeviceGetPCIBusId(char* text, int length, CUdevice device) {
  if (text == nullptr || length <= 0) return kErrorInvalidValue;
  int bus = 0;
  if (int code = cuDeviceGetAttribute(&bus, 33, device)) return code;
  std::snprintf(text, static_cast<size_t>(length), "00000000:%02X:00.0", bus);
  return 0;
}

CUresult cuDevicePrimaryCtxGetState(CUdevice device, unsigned int* flags, int* active) {
  if (flags == nullptr || active == nullptr) return kErrorInvalidValue;
  if (int code = CheckDevice("cuDevicePrimaryCtxGetState", device)) return code;
  Result<bool> state = Model().PrimaryContextActive(device);
  if (!state.ok()) return CodeOf(state, "cuDevicePrimaryCtxGetState");
  *flags = 0;
  *active = *state ? 1 : 0;
  return 0;
}

CUresult cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device) {
  if (context == nullptr) return kErrorInvalidValue;
  if (int code = CheckDevice("cuDevicePrimaryCtxRetain", device)) return code;
  if (int code = CodeOf(Model().RetainPrimaryContext(device), "cuDevicePrimaryCtxRetain")) return code;
  *context = ContextOf(device);
  return 0;
}

// simcuda keeps no reference count: a primary context lives until the process ends.
CUresult cuDevicePrimaryCtxRelease_v2(CUdevice device) { return CheckDevice("cuDevicePrimaryCtxRelease", device); }
CUresult cuDevicePrimaryCtxSetFlags_v2(CUdevice device, unsigned int) {
  return CheckDevice("cuDevicePrimaryCtxSetFlags", device);
}

// Frees what the device's primary context owned; the context becomes inactive.
CUresult cuDevicePrimaryCtxReset_v2(CUdevice device) {
  if (int code = CheckDevice("cuDevicePrimaryCtxReset", device)) return code;
  return CodeOf(Model().ResetDevice(device), "cuDevicePrimaryCtxReset");
}

CUresult cuCtxGetCurrent(CUcontext* context) {
  if (context == nullptr) return kErrorInvalidValue;
  if (int code = CodeOf(Model().DriverReady("cuCtxGetCurrent"), "cuCtxGetCurrent")) return code;
  *context = Model().ContextBoundUnchecked() ? ContextOf(Model().CurrentDeviceUnchecked()) : nullptr;
  return 0;
}

CUresult cuCtxPushCurrent_v2(CUcontext context) {
  if (int code = CodeOf(Model().DriverReady("cuCtxPushCurrent"), "cuCtxPushCurrent")) return code;
  const int device = DeviceOfContext(context);
  if (device < 0) return kErrorInvalidContext;
  if (Model().ContextBoundUnchecked()) t_saved_contexts.push_back(Model().CurrentDeviceUnchecked());
  return CodeOf(Model().SetDevice(device), "cuCtxPushCurrent");
}

CUresult cuCtxPopCurrent_v2(CUcontext* context) {
  if (int code = CheckContext("cuCtxPopCurrent")) return code;
  if (context != nullptr) *context = ContextOf(Model().CurrentDeviceUnchecked());
  if (t_saved_contexts.empty()) {
    Model().UnbindContext();
    return 0;
  }
  const int below = t_saved_contexts.back();
  t_saved_contexts.pop_back();
  return CodeOf(Model().SetDevice(below), "cuCtxPopCurrent");
}

// Replaces the current context; NULL pops it (a no-op with none).
CUresult cuCtxSetCurrent(CUcontext context) {
  if (int code = CodeOf(Model().DriverReady("cuCtxSetCurrent"), "cuCtxSetCurrent")) return code;
  if (context == nullptr) return Model().ContextBoundUnchecked() ? cuCtxPopCurrent_v2(nullptr) : 0;
  const int device = DeviceOfContext(context);
  if (device < 0) return kErrorInvalidContext;
  return CodeOf(Model().SetDevice(device), "cuCtxSetCurrent");
}

CUresult cuCtxGetDevice(CUdevice* device) {
  if (device == nullptr) return kErrorInvalidValue;
  if (int code = CheckContext("cuCtxGetDevice")) return code;
  *device = Model().CurrentDeviceUnchecked();
  return 0;
}

CUresult cuCtxSynchronize() {
  if (int code = CheckContext("cuCtxSynchronize")) return code;
  return CodeOf(Model().DeviceSynchronize(), "cuCtxSynchronize");
}

CUresult cuMemGetInfo_v2(size_t* free_bytes, size_t* total_bytes) {
  if (free_bytes == nullptr || total_bytes == nullptr) return kErrorInvalidValue;
  if (int code = CheckContext("cuMemGetInfo")) return code;
  Result<std::pair<size_t, size_t>> info = Model().MemoryInfo();
  if (!info.ok()) return CodeOf(info, "cuMemGetInfo");
  *free_bytes = info->first;
  *total_bytes = info->second;
  return 0;
}

CUresult cuMemAlloc_v2(CUdeviceptr* ptr, size_t bytes) {
  if (ptr == nullptr || bytes == 0) return kErrorInvalidValue;
  if (int code = CheckContext("cuMemAlloc")) return code;
  Result<void*> p = Model().Malloc(bytes);
  if (!p.ok()) return CodeOf(p, "cuMemAlloc");
  *ptr = reinterpret_cast<uintptr_t>(*p);
  return 0;
}

// A free needs no current context: the memory names its own (numba-cuda's
// cuda.close() pops every context, then frees what its arrays held). The
// model's free binds a context to the thread; that is undone here.
CUresult cuMemFree_v2(CUdeviceptr ptr) {
  if (int code = CodeOf(Model().DriverReady("cuMemFree"), "cuMemFree")) return code;
  const bool bound = Model().ContextBoundUnchecked();
  const int code = CodeOf(Model().Free(Ptr(ptr)), "cuMemFree");
  if (!bound) Model().UnbindContext();
  return code;
}

CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t bytes) {
  return Memcpy(Ptr(dst), src, bytes, MemcpyKind::kHostToDevice, nullptr, false, "cuMemcpyHtoD");
}
CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t bytes) {
  return Memcpy(dst, Ptr(src), bytes, MemcpyKind::kDeviceToHost, nullptr, false, "cuMemcpyDtoH");
}
CUresult cuMemcpyDtoD_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  return Memcpy(Ptr(dst), Ptr(src), bytes, MemcpyKind::kDeviceToDevice, nullptr, false, "cuMemcpyDtoD");
}
CUresult cuMemcpyHtoDAsync_v2(CUdeviceptr dst, const void* src, size_t bytes, CUstream stream) {
  return Memcpy(Ptr(dst), src, bytes, MemcpyKind::kHostToDevice, stream, true, "cuMemcpyHtoDAsync");
}
CUresult cuMemcpyDtoHAsync_v2(void* dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  return Memcpy(dst, Ptr(src), bytes, MemcpyKind::kDeviceToHost, stream, true, "cuMemcpyDtoHAsync");
}
CUresult cuMemcpyDtoDAsync_v2(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  return Memcpy(Ptr(dst), Ptr(src), bytes, MemcpyKind::kDeviceToDevice, stream, true, "cuMemcpyDtoDAsync");
}
CUresult cuMemcpy(CUdeviceptr dst, CUdeviceptr src, size_t bytes) {
  return Memcpy(Ptr(dst), Ptr(src), bytes, KindOf(Ptr(dst), Ptr(src)), nullptr, false, "cuMemcpy");
}
CUresult cuMemcpyAsync(CUdeviceptr dst, CUdeviceptr src, size_t bytes, CUstream stream) {
  return Memcpy(Ptr(dst), Ptr(src), bytes, KindOf(Ptr(dst), Ptr(src)), stream, true, "cuMemcpyAsync");
}

CUresult cuMemsetD8_v2(CUdeviceptr dst, unsigned char value, size_t count) {
  if (int code = CheckContext("cuMemsetD8")) return code;
  Result<PointerAttributes> a = Model().GetPointerAttributes(Ptr(dst));
  if (!a.ok()) return CodeOf(a, "cuMemsetD8");
  if (!OnDevice(a->type)) return kErrorInvalidValue;
  std::memset(Ptr(dst), value, count);
  return 0;
}
CUresult cuMemsetD8Async(CUdeviceptr dst, unsigned char value, size_t count, CUstream) {
  return cuMemsetD8_v2(dst, value, count);
}

CUresult cuMemAllocManaged(CUdeviceptr* ptr, size_t bytes, unsigned int) {
  if (ptr == nullptr || bytes == 0) return kErrorInvalidValue;
  if (int code = CheckContext("cuMemAllocManaged")) return code;
  Result<void*> p = Model().MallocManaged(bytes);
  if (!p.ok()) return CodeOf(p, "cuMemAllocManaged");
  *ptr = reinterpret_cast<uintptr_t>(*p);
  return 0;
}

CUresult cuMemHostAlloc(void** ptr, size_t bytes, unsigned int) {
  if (ptr == nullptr || bytes == 0) return kErrorInvalidValue;
  if (int code = CheckContext("cuMemHostAlloc")) return code;
  Result<void*> p = Model().MallocHost(bytes);
  if (!p.ok()) return CodeOf(p, "cuMemHostAlloc");
  *ptr = *p;
  return 0;
}
CUresult cuMemAllocHost_v2(void** ptr, size_t bytes) { return cuMemHostAlloc(ptr, bytes, 0); }

CUresult cuMemFreeHost(void* ptr) {
  if (int code = CheckContext("cuMemFreeHost")) return code;
  return CodeOf(Model().FreeHost(ptr), "cuMemFreeHost");
}

CUresult cuMemHostRegister_v2(void* ptr, size_t bytes, unsigned int) {
  if (int code = CheckContext("cuMemHostRegister")) return code;
  return CodeOf(Model().HostRegister(ptr, bytes), "cuMemHostRegister");
}

CUresult cuMemHostUnregister(void* ptr) {
  if (int code = CheckContext("cuMemHostUnregister")) return code;
  return CodeOf(Model().HostUnregister(ptr), "cuMemHostUnregister");
}

CUresult cuMemHostGetFlags(unsigned int* flags, void* host) {
  if (flags == nullptr) return kErrorInvalidValue;
  if (int code = CheckContext("cuMemHostGetFlags")) return code;
  Result<PointerAttributes> a = Model().GetPointerAttributes(host);
  if (!a.ok()) return CodeOf(a, "cuMemHostGetFlags");
  if (a->type != MemoryType::kHost) return kErrorInvalidValue;
  *flags = 0;
  return 0;
}

CUresult cuMemHostGetDevicePointer_v2(CUdeviceptr* device_ptr, void* host, unsigned int flags) {
  if (device_ptr == nullptr || flags != 0) return kErrorInvalidValue;
  if (int code = CheckContext("cuMemHostGetDevicePointer")) return code;
  Result<PointerAttributes> a = Model().GetPointerAttributes(host);
  if (!a.ok()) return CodeOf(a, "cuMemHostGetDevicePointer");
  if (a->type != MemoryType::kHost) return kErrorInvalidValue;
  *device_ptr = reinterpret_cast<uintptr_t>(host);  // one address space: mapped memory keeps its address
  return 0;
}

// One attribute of `ptr`; CUDA_ERROR_INVALID_VALUE for memory CUDA does not know.
static CUresult PointerAttribute(void* data, int attribute, const PointerAttributes& a, CUdeviceptr ptr) {
  const bool known = a.type != MemoryType::kUnregistered;
  switch (attribute) {
    case kPointerAttributeContext: *static_cast<CUcontext*>(data) = known ? ContextOf(a.device) : nullptr; return 0;
    case kPointerAttributeMemoryType:
      *static_cast<unsigned int*>(data) = OnDevice(a.type) ? kMemoryTypeDevice : known ? kMemoryTypeHost : 0;
      return 0;
    case kPointerAttributeDevicePointer:
    case kPointerAttributeHostPointer: *static_cast<CUdeviceptr*>(data) = known ? ptr : 0; return 0;
    case kPointerAttributeIsManaged: *static_cast<int*>(data) = a.type == MemoryType::kManaged ? 1 : 0; return 0;
    case kPointerAttributeDeviceOrdinal: *static_cast<int*>(data) = known ? a.device : -2; return 0;
    case kPointerAttributeMapped: *static_cast<int*>(data) = known ? 1 : 0; return 0;
    default: return kErrorInvalidValue;
  }
}

CUresult cuPointerGetAttribute(void* data, int attribute, CUdeviceptr ptr) {
  if (data == nullptr) return kErrorInvalidValue;
  if (int code = CodeOf(Model().DriverReady("cuPointerGetAttribute"), "cuPointerGetAttribute")) return code;
  Result<PointerAttributes> a = Model().GetPointerAttributes(Ptr(ptr));
  if (!a.ok()) return CodeOf(a, "cuPointerGetAttribute");
  if (a->type == MemoryType::kUnregistered) return kErrorInvalidValue;
  return PointerAttribute(data, attribute, *a, ptr);
}

// The plural form answers for unknown memory too, with empty values.
CUresult cuPointerGetAttributes(unsigned int count, int* attributes, void** data, CUdeviceptr ptr) {
  if (attributes == nullptr || data == nullptr) return kErrorInvalidValue;
  if (int code = CodeOf(Model().DriverReady("cuPointerGetAttributes"), "cuPointerGetAttributes")) return code;
  Result<PointerAttributes> a = Model().GetPointerAttributes(Ptr(ptr));
  if (!a.ok()) return CodeOf(a, "cuPointerGetAttributes");
  for (unsigned int i = 0; i < count; ++i) {
    if (int code = PointerAttribute(data[i], attributes[i], *a, ptr)) return code;
  }
  return 0;
}

CUresult cuStreamCreate(CUstream* stream, unsigned int) {
  if (stream == nullptr) return kErrorInvalidValue;
  if (int code = CheckContext("cuStreamCreate")) return code;
  Result<StreamHandle> s = Model().StreamCreate();
  if (!s.ok()) return CodeOf(s, "cuStreamCreate");
  *stream = *s;
  return 0;
}
CUresult cuStreamDestroy_v2(CUstream stream) {
  if (int code = CheckContext("cuStreamDestroy")) return code;
  return CodeOf(Model().StreamDestroy(stream), "cuStreamDestroy");
}
CUresult cuStreamSynchronize(CUstream stream) {
  if (int code = CheckContext("cuStreamSynchronize")) return code;
  return CodeOf(Model().StreamSynchronize(StreamOf(stream)), "cuStreamSynchronize");
}
CUresult cuStreamQuery(CUstream stream) { return cuStreamSynchronize(stream); }  // simcuda's streams are synchronous
CUresult cuStreamWaitEvent(CUstream stream, void* event, unsigned int) {
  if (int code = CheckContext("cuStreamWaitEvent")) return code;
  if (int code = CodeOf(Model().EventQuery(event), "cuStreamWaitEvent")) return code;
  return cuStreamSynchronize(stream);
}
// The callback runs at once: work queued before it has finished.
CUresult cuStreamAddCallback(CUstream stream, void (*callback)(CUstream, CUresult, void*), void* data, unsigned int) {
  if (callback == nullptr) return kErrorInvalidValue;
  const CUresult status = cuStreamSynchronize(stream);
  callback(stream, status, data);
  return status;
}

CUresult cuEventCreate(void** event, unsigned int) {
  if (event == nullptr) return kErrorInvalidValue;
  if (int code = CheckContext("cuEventCreate")) return code;
  Result<EventHandle> e = Model().EventCreate();
  if (!e.ok()) return CodeOf(e, "cuEventCreate");
  *event = *e;
  return 0;
}
CUresult cuEventRecord(void* event, CUstream stream) {
  if (int code = CheckContext("cuEventRecord")) return code;
  return CodeOf(Model().EventRecord(event, StreamOf(stream)), "cuEventRecord");
}
CUresult cuEventQuery(void* event) {
  if (int code = CheckContext("cuEventQuery")) return code;
  return CodeOf(Model().EventQuery(event), "cuEventQuery");
}
CUresult cuEventSynchronize(void* event) {
  if (int code = CheckContext("cuEventSynchronize")) return code;
  return CodeOf(Model().EventSynchronize(event), "cuEventSynchronize");
}
CUresult cuEventDestroy_v2(void* event) {
  if (int code = CheckContext("cuEventDestroy")) return code;
  return CodeOf(Model().EventDestroy(event), "cuEventDestroy");
}
// Work runs synchronously in simcuda: no device time passes between two events.
CUresult cuEventElapsedTime_v2(float* ms, void* start, void* end) {
  if (ms == nullptr) return kErrorInvalidValue;
  if (int code = cuEventQuery(start)) return code;
  if (int code = cuEventQuery(end)) return code;
  *ms = 0.0f;
  return 0;
}
CUresult cuEventElapsedTime(float* ms, void* start, void* end) { return cuEventElapsedTime_v2(ms, start, end); }

// simcuda models no peer access between its devices.
CUresult cuDeviceCanAccessPeer(int* can, CUdevice device, CUdevice peer) {
  if (can == nullptr) return kErrorInvalidValue;
  if (int code = CheckDevice("cuDeviceCanAccessPeer", device)) return code;
  if (int code = CheckDevice("cuDeviceCanAccessPeer", peer)) return code;
  *can = 0;
  return 0;
}

CUresult cuMemGetAddressRange_v2(CUdeviceptr* base, size_t* size, CUdeviceptr ptr) {
  if (int code = CheckContext("cuMemGetAddressRange")) return code;
  Result<std::pair<void*, size_t>> range = Model().AllocationRange(Ptr(ptr));
  if (!range.ok()) return CodeOf(range, "cuMemGetAddressRange");
  if (base != nullptr) *base = reinterpret_cast<uintptr_t>(range->first);
  if (size != nullptr) *size = range->second;
  return 0;
}

CUresult cuProfilerStart() { return 0; }
CUresult cuProfilerStop() { return 0; }

CUresult cuGetErrorName(CUresult code, const char** name) {
  if (name == nullptr) return kErrorInvalidValue;
  *name = DriverErrorName(code);
  return 0;
}
CUresult cuGetErrorString(CUresult code, const char** text) {
  if (text == nullptr) return kErrorInvalidValue;
  *text = DriverErrorString(code);
  return 0;
}

// The private tables the real libcudart and libraries with a static cudart
// (cuBLAS, cuDNN, NCCL, CuPy) fetch by undocumented GUIDs: refused, once
// with the reason.
CUresult cuGetExportTable(const void** table, const void*) {
  static std::atomic<bool> said{false};
  if (table != nullptr) *table = nullptr;
  if (!said.exchange(true)) {
    std::fprintf(stderr,
                 "simcuda: cuGetExportTable refused (CUDA_ERROR_NOT_SUPPORTED): a library with its own static CUDA "
                 "runtime (cuBLAS, cuDNN, NCCL, CuPy, the real libcudart) cannot run over simcuda\n");
  }
  return kErrorNotSupported;
}

CUresult cuModuleLoad(void**, const char*) { return NoDeviceCode("cuModuleLoad"); }
CUresult cuModuleLoadData(void**, const void*) { return NoDeviceCode("cuModuleLoadData"); }
CUresult cuModuleLoadDataEx(void**, const void*, unsigned int, void*, void**) {
  return NoDeviceCode("cuModuleLoadDataEx");
}
CUresult cuModuleGetFunction(void**, void*, const char*) { return NoDeviceCode("cuModuleGetFunction"); }
CUresult cuLibraryLoadData(void**, const void*, void*, void*, unsigned int, void*, void*, unsigned int) {
  return NoDeviceCode("cuLibraryLoadData");
}
CUresult cuLaunchKernel(void*, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned, CUstream, void**,
                        void**) {
  return NoDeviceCode("cuLaunchKernel");
}

CUresult cuGetProcAddress_v2(const char* symbol, void** function, int version, unsigned long long flags, int* status);

}  // extern "C"

namespace faultline::dropin {
namespace {

// Every entry point cuGetProcAddress answers for, by its base name (the
// name without _v2: callers ask for "cuMemAlloc" and a CUDA version).
const std::unordered_map<std::string, void*>& ProcTable() {
  static const auto* table = new std::unordered_map<std::string, void*>{
#define FL_ENTRY(base, fn) {base, reinterpret_cast<void*>(&fn)}
      FL_ENTRY("cuInit", cuInit),
      FL_ENTRY("cuDriverGetVersion", cuDriverGetVersion),
      FL_ENTRY("cuDeviceGetCount", cuDeviceGetCount),
      FL_ENTRY("cuDeviceGet", cuDeviceGet),
      FL_ENTRY("cuDeviceGetName", cuDeviceGetName),
      FL_ENTRY("cuDeviceGetUuid", cuDeviceGetUuid_v2),
      FL_ENTRY("cuDeviceTotalMem", cuDeviceTotalMem_v2),
      FL_ENTRY("cuDeviceGetAttribute", cuDeviceGetAttribute),
      FL_ENTRY("cuDeviceComputeCapability", cuDeviceComputeCapability),
      FL_ENTRY("cuDeviceGetPCIBusId", cuDeviceGetPCIBusId),
      FL_ENTRY("cuDevicePrimaryCtxGetState", cuDevicePrimaryCtxGetState),
      FL_ENTRY("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain),
      FL_ENTRY("cuDevicePrimaryCtxRelease", cuDevicePrimaryCtxRelease_v2),
      FL_ENTRY("cuDevicePrimaryCtxSetFlags", cuDevicePrimaryCtxSetFlags_v2),
      FL_ENTRY("cuCtxGetCurrent", cuCtxGetCurrent),
      FL_ENTRY("cuCtxSetCurrent", cuCtxSetCurrent),
      FL_ENTRY("cuCtxPushCurrent", cuCtxPushCurrent_v2),
      FL_ENTRY("cuCtxPopCurrent", cuCtxPopCurrent_v2),
      FL_ENTRY("cuCtxGetDevice", cuCtxGetDevice),
      FL_ENTRY("cuCtxSynchronize", cuCtxSynchronize),
      FL_ENTRY("cuDevicePrimaryCtxReset", cuDevicePrimaryCtxReset_v2),
      FL_ENTRY("cuDeviceCanAccessPeer", cuDeviceCanAccessPeer),
      FL_ENTRY("cuMemcpyDtoDAsync", cuMemcpyDtoDAsync_v2),
      FL_ENTRY("cuMemsetD8Async", cuMemsetD8Async),
      FL_ENTRY("cuMemAllocManaged", cuMemAllocManaged),
      FL_ENTRY("cuMemHostGetFlags", cuMemHostGetFlags),
      FL_ENTRY("cuMemGetAddressRange", cuMemGetAddressRange_v2),
      FL_ENTRY("cuStreamWaitEvent", cuStreamWaitEvent),
      FL_ENTRY("cuStreamAddCallback", cuStreamAddCallback),
      FL_ENTRY("cuEventCreate", cuEventCreate),
      FL_ENTRY("cuEventRecord", cuEventRecord),
      FL_ENTRY("cuEventQuery", cuEventQuery),
      FL_ENTRY("cuEventSynchronize", cuEventSynchronize),
      FL_ENTRY("cuEventDestroy", cuEventDestroy_v2),
      FL_ENTRY("cuEventElapsedTime", cuEventElapsedTime_v2),
      FL_ENTRY("cuProfilerStart", cuProfilerStart),
      FL_ENTRY("cuProfilerStop", cuProfilerStop),
      FL_ENTRY("cuMemGetInfo", cuMemGetInfo_v2),
      FL_ENTRY("cuMemAlloc", cuMemAlloc_v2),
      FL_ENTRY("cuMemFree", cuMemFree_v2),
      FL_ENTRY("cuMemcpyHtoD", cuMemcpyHtoD_v2),
      FL_ENTRY("cuMemcpyDtoH", cuMemcpyDtoH_v2),
      FL_ENTRY("cuMemcpyDtoD", cuMemcpyDtoD_v2),
      FL_ENTRY("cuMemcpyHtoDAsync", cuMemcpyHtoDAsync_v2),
      FL_ENTRY("cuMemcpyDtoHAsync", cuMemcpyDtoHAsync_v2),
      FL_ENTRY("cuMemcpy", cuMemcpy),
      FL_ENTRY("cuMemcpyAsync", cuMemcpyAsync),
      FL_ENTRY("cuMemsetD8", cuMemsetD8_v2),
      FL_ENTRY("cuMemHostAlloc", cuMemHostAlloc),
      FL_ENTRY("cuMemAllocHost", cuMemAllocHost_v2),
      FL_ENTRY("cuMemFreeHost", cuMemFreeHost),
      FL_ENTRY("cuMemHostRegister", cuMemHostRegister_v2),
      FL_ENTRY("cuMemHostUnregister", cuMemHostUnregister),
      FL_ENTRY("cuMemHostGetDevicePointer", cuMemHostGetDevicePointer_v2),
      FL_ENTRY("cuPointerGetAttribute", cuPointerGetAttribute),
      FL_ENTRY("cuPointerGetAttributes", cuPointerGetAttributes),
      FL_ENTRY("cuStreamCreate", cuStreamCreate),
      FL_ENTRY("cuStreamDestroy", cuStreamDestroy_v2),
      FL_ENTRY("cuStreamSynchronize", cuStreamSynchronize),
      FL_ENTRY("cuStreamQuery", cuStreamQuery),
      FL_ENTRY("cuGetErrorName", cuGetErrorName),
      FL_ENTRY("cuGetErrorString", cuGetErrorString),
      FL_ENTRY("cuGetExportTable", cuGetExportTable),
      FL_ENTRY("cuGetProcAddress", cuGetProcAddress_v2),
      FL_ENTRY("cuModuleLoad", cuModuleLoad),
      FL_ENTRY("cuModuleLoadData", cuModuleLoadData),
      FL_ENTRY("cuModuleLoadDataEx", cuModuleLoadDataEx),
      FL_ENTRY("cuModuleGetFunction", cuModuleGetFunction),
      FL_ENTRY("cuLibraryLoadData", cuLibraryLoadData),
      FL_ENTRY("cuLaunchKernel", cuLaunchKernel),
#undef FL_ENTRY
  };
  return *table;
}

}  // namespace
}  // namespace faultline::dropin

extern "C" {

// CUdriverProcAddressQueryResult: 0 found, 1 not found.
CUresult cuGetProcAddress_v2(const char* symbol, void** function, int, unsigned long long, int* status) {
  if (symbol == nullptr || function == nullptr) return kErrorInvalidValue;
  std::string name = symbol;
  // "_ptsz"/"_ptds" forms are the per-thread default stream's: simcuda's
  // streams are synchronous, so they are the same functions.
  for (const char* suffix : {"_ptsz", "_ptds"}) {
    if (name.size() > 5 && name.compare(name.size() - 5, 5, suffix) == 0) name.resize(name.size() - 5);
  }
  const auto& table = ProcTable();
  auto it = table.find(name);
  if (it == table.end()) {
    *function = nullptr;
    if (status != nullptr) *status = 1;
    return kErrorNotFound;
  }
  *function = it->second;
  if (status != nullptr) *status = 0;
  return 0;
}

CUresult cuGetProcAddress(const char* symbol, void** function, int version, unsigned long long flags) {
  return cuGetProcAddress_v2(symbol, function, version, flags, nullptr);
}

}  // extern "C"

// --- The model table for the stand-in libcudart.
namespace faultline::dropin {
namespace {

template <typename T>
int Out(const Result<T>& result, T* out, const char* api) {
  if (!result.ok()) return CodeOf(result, api);
  if (out != nullptr) *out = *result;
  return 0;
}

const FlSimcudaModel kModel = {
    FL_SIMCUDA_MODEL_ABI,
    /*get_device_count=*/[](int* count) { return Out(Model().GetDeviceCount(), count, "cudaGetDeviceCount"); },
    /*set_device=*/[](int device) { return CodeOf(Model().SetDevice(device), "cudaSetDevice"); },
    /*get_device=*/[](int* device) { return Out(Model().GetDevice(), device, "cudaGetDevice"); },
    /*describe=*/
    [](int device, FlSimcudaDevice* out) {
      Result<SimCudaRuntime::DeviceDescription> d = Model().Describe(device);
      if (!d.ok()) return CodeOf(d, "cudaGetDeviceProperties");
      std::memset(out, 0, sizeof(*out));
      std::snprintf(out->name, sizeof(out->name), "%s", d->name.c_str());
      out->memory_bytes = d->memory_bytes;
      out->major = d->major;
      out->minor = d->minor;
      UuidBytes(d->uuid, reinterpret_cast<char*>(out->uuid));
      out->physical = d->physical;
      return 0;
    },
    /*enter=*/
    [](const char* api, int needs_context) { return CodeOf(Model().EnterRuntimeCall(api, needs_context != 0), api); },
    /*driver_version=*/
    [](int* version) { return Out(Model().DriverGetVersion(), version, "cudaDriverGetVersion"); },
    /*malloc=*/[](void** ptr, size_t bytes) { return Out(Model().Malloc(bytes), ptr, "cudaMalloc"); },
    /*malloc_managed=*/
    [](void** ptr, size_t bytes) { return Out(Model().MallocManaged(bytes), ptr, "cudaMallocManaged"); },
    /*free=*/[](void* ptr) { return CodeOf(Model().Free(ptr), "cudaFree"); },
    /*malloc_host=*/[](void** ptr, size_t bytes) { return Out(Model().MallocHost(bytes), ptr, "cudaHostAlloc"); },
    /*free_host=*/[](void* ptr) { return CodeOf(Model().FreeHost(ptr), "cudaFreeHost"); },
    /*host_register=*/
    [](void* ptr, size_t bytes) { return CodeOf(Model().HostRegister(ptr, bytes), "cudaHostRegister"); },
    /*host_unregister=*/[](void* ptr) { return CodeOf(Model().HostUnregister(ptr), "cudaHostUnregister"); },
    /*pointer_attributes=*/
    [](const void* ptr, int* type, int* device) {
      Result<PointerAttributes> a = Model().GetPointerAttributes(ptr);
      if (!a.ok()) return CodeOf(a, "cudaPointerGetAttributes");
      *type = static_cast<int>(a->type);
      *device = a->device;
      return 0;
    },
    /*memcpy=*/
    [](void* dst, const void* src, size_t bytes, int kind, void* stream, int async) {
      stream = StreamOf(stream);
      if (bytes == 0)
        return CodeOf(Model().EnterRuntimeCall(async ? "cudaMemcpyAsync" : "cudaMemcpy", true), "cudaMemcpy");
      const auto k = static_cast<MemcpyKind>(kind);
      return async ? CodeOf(Model().MemcpyAsync(dst, src, bytes, k, stream), "cudaMemcpyAsync")
                   : CodeOf(Model().Memcpy(dst, src, bytes, k), "cudaMemcpy");
    },
    /*memory_info=*/
    [](size_t* free_bytes, size_t* total_bytes) {
      Result<std::pair<size_t, size_t>> info = Model().MemoryInfo();
      if (!info.ok()) return CodeOf(info, "cudaMemGetInfo");
      *free_bytes = info->first;
      *total_bytes = info->second;
      return 0;
    },
    /*stream_create=*/[](void** stream) { return Out(Model().StreamCreate(), stream, "cudaStreamCreate"); },
    /*stream_synchronize=*/
    [](void* stream) { return CodeOf(Model().StreamSynchronize(StreamOf(stream)), "cudaStreamSynchronize"); },
    /*stream_destroy=*/[](void* stream) { return CodeOf(Model().StreamDestroy(stream), "cudaStreamDestroy"); },
    /*device_synchronize=*/[]() { return CodeOf(Model().DeviceSynchronize(), "cudaDeviceSynchronize"); },
    /*device_reset=*/[]() { return CodeOf(Model().DeviceReset(), "cudaDeviceReset"); },
    /*event_create=*/[](void** event) { return Out(Model().EventCreate(), event, "cudaEventCreate"); },
    /*event_record=*/
    [](void* event, void* stream) { return CodeOf(Model().EventRecord(event, StreamOf(stream)), "cudaEventRecord"); },
    /*event_query=*/[](void* event) { return CodeOf(Model().EventQuery(event), "cudaEventQuery"); },
    /*event_synchronize=*/
    [](void* event) { return CodeOf(Model().EventSynchronize(event), "cudaEventSynchronize"); },
    /*event_destroy=*/[](void* event) { return CodeOf(Model().EventDestroy(event), "cudaEventDestroy"); },
    /*last_error=*/
    [](int clear) {
      Status s = clear ? Model().GetLastError() : Model().PeekAtLastError();
      return s.ok() ? 0 : s.cuda_error()->code;
    },
    /*fail=*/
    [](int code, const char* api, const char* detail) {
      Model().RecordError(static_cast<cudaError_t>(code));
      ReportFailure(api, code, SimCudaErrorName(static_cast<cudaError_t>(code)));
      if (detail != nullptr && *detail != '\0') std::fprintf(stderr, "simcuda: %s: %s\n", api, detail);
      return code;
    },
};

// Arms the report before the model registers its fork handlers (see process_report.h).
__attribute__((constructor)) void StartDriver() {
  StartProcessReport();
  Model().SetInitializationObserver(&ReportInitialized);
}

}  // namespace
}  // namespace faultline::dropin

extern "C" const FlSimcudaModel* faultline_simcuda_model(void) { return &faultline::dropin::kModel; }
