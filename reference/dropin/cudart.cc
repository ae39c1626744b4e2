// The stand-in libcudart (libcudart.so.13, and libcudart.so.12 when built
// with FL_CUDART_MAJOR=12): the runtime API calls simcuda models, as a layer
// over the stand-in libcuda.so.1, which holds the process state (as the
// real runtime is a layer over the real driver). Every other exported name
// is a generated stub that returns cudaErrorNotSupported (801).
// Registration of device code is accepted; a launch is refused with
// cudaErrorNoKernelImageForDevice (209), naming the kernel: simcuda runs no
// device code, and the process keeps working.
#include <cuda_runtime_api.h>
#include <cxxabi.h>
#include <dlfcn.h>

#include <atomic>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <string>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "reference/dropin/model_api.h"

#ifndef FL_CUDART_MAJOR
#define FL_CUDART_MAJOR 13
#endif
#if FL_CUDART_MAJOR == 12
#include "reference/dropin/cuda12_device_prop.h"
// The CUDA 12 runtime this library stands in for (cudaRuntimeGetVersion).
#define FL_CUDART_VERSION 12090
#else
#define FL_CUDART_VERSION CUDART_VERSION
#endif

namespace {

struct ErrorText {
  int code;
  const char* name;
  const char* string;
};
// The real runtime's names and messages, printed from it at build time.
constexpr ErrorText kErrorTexts[] = {
#include "reference/dropin/cudart_errors.inc"
};

// What the stand-in driver gives the runtime.
struct Driver {
  const FlSimcudaModel* model = nullptr;
  using GetProcAddress = int (*)(const char*, void**, int, unsigned long long, int*);
  GetProcAddress get_proc_address = nullptr;
  using DeviceGetAttribute = int (*)(int*, int, int);
  DeviceGetAttribute device_get_attribute = nullptr;
};

// Opens libcuda.so.1 as the real runtime does, once. Without it every call
// fails with cudaErrorInsufficientDriver (35), as the real runtime's do.
const Driver& TheDriver() {
  static const Driver driver = [] {
    Driver d;
    void* handle = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);
    if (handle == nullptr) return d;
    auto model = reinterpret_cast<const FlSimcudaModel* (*)()>(dlsym(handle, "faultline_simcuda_model"));
    if (model == nullptr || model()->abi != FL_SIMCUDA_MODEL_ABI) {
      std::fprintf(stderr,
                   "simcuda: the libcuda.so.1 on the library path is not simcuda's stand-in driver of this build; "
                   "run the program under ci/simcuda.sh (every CUDA call fails with "
                   "cudaErrorInsufficientDriver)\n");
      return d;
    }
    d.model = model();
    d.get_proc_address = reinterpret_cast<Driver::GetProcAddress>(dlsym(handle, "cuGetProcAddress_v2"));
    d.device_get_attribute = reinterpret_cast<Driver::DeviceGetAttribute>(dlsym(handle, "cuDeviceGetAttribute"));
    return d;
  }();
  return driver;
}

const FlSimcudaModel* Model() { return TheDriver().model; }

cudaError_t Err(int code) { return static_cast<cudaError_t>(code); }

// Records a failure found here (a bad argument) as the model records its own.
cudaError_t Fail(cudaError_t code, const char* api, const char* detail = nullptr) {
  return Model() != nullptr ? Err(Model()->fail(code, api, detail)) : code;
}

#define FL_MODEL_OR_RETURN()                                    \
  do {                                                          \
    if (Model() == nullptr) return cudaErrorInsufficientDriver; \
  } while (0)

// The kernels registered by the program's fat binaries: host stub -> device name.
std::mutex g_kernels_mu;
std::unordered_map<const void*, std::string>& Kernels() {
  static auto* kernels = new std::unordered_map<const void*, std::string>();
  return *kernels;
}

std::string KernelName(const void* function) {
  std::string mangled;
  {
    std::lock_guard<std::mutex> lock(g_kernels_mu);
    auto it = Kernels().find(function);
    if (it == Kernels().end()) return "an unregistered function";
    mangled = it->second;
  }
  int status = 0;
  char* demangled = abi::__cxa_demangle(mangled.c_str(), nullptr, nullptr, &status);
  std::string name = status == 0 && demangled != nullptr ? demangled : mangled;
  std::free(demangled);
  return name;
}

// A launch: the launch's own checks (initialization, fork, context), then
// the refusal, said once per kernel.
cudaError_t RefuseLaunch(const void* function, const char* api) {
  FL_MODEL_OR_RETURN();
  if (int code = Model()->enter(api, 1)) return Err(code);
  const std::string name = KernelName(function);
  static std::mutex mu;
  static auto* said = new std::unordered_set<std::string>();
  std::string detail;
  {
    std::lock_guard<std::mutex> lock(mu);
    if (said->insert(name).second) {
      detail = "cannot launch kernel '" + name +
               "': simcuda runs no device code (returns cudaErrorNoKernelImageForDevice, 209; the process keeps "
               "working)";
    }
  }
  return Fail(cudaErrorNoKernelImageForDevice, api, detail.c_str());
}

// The launch configuration __cudaPushCallConfiguration keeps for the launch stub.
struct CallConfiguration {
  dim3 grid;
  dim3 block;
  size_t shared_memory;
  void* stream;
};
thread_local std::vector<CallConfiguration> t_call_configurations;

// cudaMemcpyDefault: the direction from the pointers (unified addressing).
int CopyKind(void* dst, const void* src, cudaMemcpyKind kind) {
  if (kind != cudaMemcpyDefault) return static_cast<int>(kind);
  auto on_device = [](const void* p) {
    int type = 0, device = -1;
    return Model()->pointer_attributes(p, &type, &device) == 0 && (type == 2 || type == 3);  // device, managed
  };
  const bool d = on_device(dst), s = on_device(src);
  return d ? (s ? cudaMemcpyDeviceToDevice : cudaMemcpyHostToDevice)
           : (s ? cudaMemcpyDeviceToHost : cudaMemcpyHostToHost);
}

cudaError_t Memcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream, bool async,
                   const char* api) {
  FL_MODEL_OR_RETURN();
  if (kind < cudaMemcpyHostToHost || kind > cudaMemcpyDefault) return Fail(cudaErrorInvalidMemcpyDirection, api);
  return Err(Model()->memcpy(dst, src, bytes, CopyKind(dst, src, kind), stream, async ? 1 : 0));
}

cudaError_t Memset(void* dst, int value, size_t bytes, const char* api) {
  FL_MODEL_OR_RETURN();
  if (int code = Model()->enter(api, 1)) return Err(code);
  int type = 0, device = -1;
  if (int code = Model()->pointer_attributes(dst, &type, &device)) return Err(code);
  if (type != 2 && type != 3) return Fail(cudaErrorInvalidValue, api, nullptr);
  std::memset(dst, value, bytes);
  return cudaSuccess;
}

int Attribute(int attribute, int device) {
  int value = 0;
  TheDriver().device_get_attribute(&value, attribute, device);
  return value;
}

}  // namespace

extern "C" {

// Called by every generated stub: the name is not simulated.
int faultline_cudart_not_simulated(const char* name, int* said) {
  if (!__atomic_exchange_n(said, 1, __ATOMIC_RELAXED)) {
    std::fprintf(stderr, "simcuda: %s is not simulated; it returns cudaErrorNotSupported (801)\n", name);
  }
  return Fail(cudaErrorNotSupported, name);
}

// --- Errors and versions.
const char* cudaGetErrorName(cudaError_t error) {
  for (const ErrorText& e : kErrorTexts) {
    if (e.code == error) return e.name;
  }
  return "unrecognized error code";
}

const char* cudaGetErrorString(cudaError_t error) {
  for (const ErrorText& e : kErrorTexts) {
    if (e.code == error) return e.string;
  }
  return "unrecognized error code";
}

cudaError_t cudaGetLastError() {
  FL_MODEL_OR_RETURN();
  return Err(Model()->last_error(1));
}
cudaError_t cudaPeekAtLastError() {
  FL_MODEL_OR_RETURN();
  return Err(Model()->last_error(0));
}

cudaError_t cudaRuntimeGetVersion(int* version) {
  if (version == nullptr) return cudaErrorInvalidValue;
  *version = FL_CUDART_VERSION;
  return cudaSuccess;
}

cudaError_t cudaDriverGetVersion(int* version) {
  if (version == nullptr) return cudaErrorInvalidValue;
  if (Model() == nullptr) {
    *version = 0;  // no driver: 0, and no error
    return cudaSuccess;
  }
  return Err(Model()->driver_version(version));
}

cudaError_t cudaGetDriverEntryPointByVersion(const char* symbol, void** function, unsigned int version,
                                             unsigned long long flags, cudaDriverEntryPointQueryResult* status) {
  FL_MODEL_OR_RETURN();
  if (symbol == nullptr || function == nullptr) return Fail(cudaErrorInvalidValue, "cudaGetDriverEntryPointByVersion");
  if (int code = Model()->enter("cudaGetDriverEntryPointByVersion", 0)) return Err(code);
  int found = 1;
  TheDriver().get_proc_address(symbol, function, static_cast<int>(version), flags, &found);
  if (status != nullptr) *status = found == 0 ? cudaDriverEntryPointSuccess : cudaDriverEntryPointSymbolNotFound;
  return cudaSuccess;
}

cudaError_t cudaGetDriverEntryPoint(const char* symbol, void** function, unsigned long long flags,
                                    cudaDriverEntryPointQueryResult* status) {
  return cudaGetDriverEntryPointByVersion(symbol, function, FL_CUDART_VERSION, flags, status);
}

// --- Devices.
cudaError_t cudaGetDeviceCount(int* count) {
  FL_MODEL_OR_RETURN();
  if (count == nullptr) return Fail(cudaErrorInvalidValue, "cudaGetDeviceCount");
  return Err(Model()->get_device_count(count));
}

cudaError_t cudaSetDevice(int device) {
  FL_MODEL_OR_RETURN();
  return Err(Model()->set_device(device));
}

cudaError_t cudaGetDevice(int* device) {
  FL_MODEL_OR_RETURN();
  if (device == nullptr) return Fail(cudaErrorInvalidValue, "cudaGetDevice");
  return Err(Model()->get_device(device));
}

cudaError_t cudaInitDevice(int device, unsigned int, unsigned int) {
  FL_MODEL_OR_RETURN();
  int current = 0;
  if (int code = Model()->get_device(&current)) return Err(code);
  if (int code = Model()->set_device(device)) return Err(code);
  return Err(Model()->set_device(current));
}

cudaError_t cudaSetDeviceFlags(unsigned int) {
  FL_MODEL_OR_RETURN();
  return Err(Model()->enter("cudaSetDeviceFlags", 0));
}

cudaError_t cudaGetDeviceFlags(unsigned int* flags) {
  FL_MODEL_OR_RETURN();
  if (flags == nullptr) return Fail(cudaErrorInvalidValue, "cudaGetDeviceFlags");
  *flags = 0;
  return Err(Model()->enter("cudaGetDeviceFlags", 0));
}

}  // extern "C"

namespace {

// Fills the fields CUDA 12's and 13's cudaDeviceProp share.
template <typename Prop>
cudaError_t FillProperties(Prop* prop, int device) {
  FL_MODEL_OR_RETURN();
  if (prop == nullptr) return Fail(cudaErrorInvalidValue, "cudaGetDeviceProperties");
  FlSimcudaDevice d;
  if (int code = Model()->describe(device, &d)) return Err(code);
  std::memset(prop, 0, sizeof(*prop));
  std::memcpy(prop->name, d.name, sizeof(prop->name));
  std::memcpy(prop->uuid.bytes, d.uuid, sizeof(prop->uuid.bytes));
  prop->totalGlobalMem = d.memory_bytes;
  prop->major = d.major;
  prop->minor = d.minor;
  prop->maxThreadsPerBlock = Attribute(1, device);
  for (int i = 0; i < 3; ++i) {
    prop->maxThreadsDim[i] = Attribute(2 + i, device);
    prop->maxGridSize[i] = Attribute(5 + i, device);
  }
  prop->sharedMemPerBlock = Attribute(8, device);
  prop->totalConstMem = Attribute(9, device);
  prop->warpSize = Attribute(10, device);
  prop->memPitch = Attribute(11, device);
  prop->regsPerBlock = Attribute(12, device);
  prop->textureAlignment = Attribute(14, device);
  prop->multiProcessorCount = Attribute(16, device);
  prop->integrated = Attribute(18, device);
  prop->canMapHostMemory = Attribute(19, device);
  prop->surfaceAlignment = Attribute(30, device);
  prop->concurrentKernels = Attribute(31, device);
  prop->ECCEnabled = Attribute(32, device);
  prop->pciBusID = Attribute(33, device);
  prop->pciDeviceID = Attribute(34, device);
  prop->pciDomainID = Attribute(50, device);
  prop->memoryBusWidth = Attribute(37, device);
  prop->l2CacheSize = Attribute(38, device);
  prop->maxThreadsPerMultiProcessor = Attribute(39, device);
  prop->asyncEngineCount = Attribute(40, device);
  prop->unifiedAddressing = Attribute(41, device);
  prop->streamPrioritiesSupported = Attribute(78, device);
  prop->globalL1CacheSupported = Attribute(79, device);
  prop->localL1CacheSupported = Attribute(80, device);
  prop->sharedMemPerMultiprocessor = Attribute(81, device);
  prop->regsPerMultiprocessor = Attribute(82, device);
  prop->managedMemory = Attribute(83, device);
  prop->concurrentManagedAccess = Attribute(89, device);
  prop->cooperativeLaunch = Attribute(95, device);
  prop->sharedMemPerBlockOptin = Attribute(97, device);
  prop->hostRegisterSupported = Attribute(99, device);
  prop->maxBlocksPerMultiProcessor = Attribute(106, device);
  prop->memoryPoolsSupported = Attribute(115, device);
  return cudaSuccess;
}

}  // namespace

extern "C" {

#if FL_CUDART_MAJOR == 12
// CUDA 12 programs call cudaGetDeviceProperties_v2 (the header renames the
// call); both names fill CUDA 12's layout here, with its extra fields.
static cudaError_t GetDeviceProperties12(faultline::dropin::CudaDeviceProp12* prop, int device) {
  if (cudaError_t e = FillProperties(prop, device)) return e;
  prop->clockRate = Attribute(13, device);
  prop->memoryClockRate = Attribute(36, device);
  prop->deviceOverlap = Attribute(15, device);
  prop->kernelExecTimeoutEnabled = Attribute(17, device);
  prop->computeMode = Attribute(20, device);
  return cudaSuccess;
}
cudaError_t GetDevicePropertiesV2(faultline::dropin::CudaDeviceProp12* prop,
                                  int device) __asm__("cudaGetDeviceProperties_v2");
cudaError_t GetDevicePropertiesV2(faultline::dropin::CudaDeviceProp12* prop, int device) {
  return GetDeviceProperties12(prop, device);
}
cudaError_t GetDevicePropertiesV1(faultline::dropin::CudaDeviceProp12* prop,
                                  int device) __asm__("cudaGetDeviceProperties");
cudaError_t GetDevicePropertiesV1(faultline::dropin::CudaDeviceProp12* prop, int device) {
  return GetDeviceProperties12(prop, device);
}
#else
cudaError_t cudaGetDeviceProperties(cudaDeviceProp* prop, int device) { return FillProperties(prop, device); }
#endif

cudaError_t cudaDeviceGetAttribute(int* value, cudaDeviceAttr attribute, int device) {
  FL_MODEL_OR_RETURN();
  if (value == nullptr) return Fail(cudaErrorInvalidValue, "cudaDeviceGetAttribute");
  FlSimcudaDevice d;
  if (int code = Model()->describe(device, &d)) return Err(code);  // initializes, checks the device
  if (TheDriver().device_get_attribute(value, attribute, device) != 0) {
    return Fail(cudaErrorInvalidValue, "cudaDeviceGetAttribute", "an attribute simcuda does not describe");
  }
  return cudaSuccess;
}

cudaError_t cudaDeviceGetPCIBusId(char* text, int length, int device) {
  FL_MODEL_OR_RETURN();
  if (text == nullptr || length <= 0) return Fail(cudaErrorInvalidValue, "cudaDeviceGetPCIBusId");
  FlSimcudaDevice d;
  if (int code = Model()->describe(device, &d)) return Err(code);
  std::snprintf(text, static_cast<size_t>(length), "00000000:%02X:00.0", Attribute(33, device));
  return cudaSuccess;
}

// simcuda models no peer access between its devices.
cudaError_t cudaDeviceCanAccessPeer(int* can, int device, int peer) {
  FL_MODEL_OR_RETURN();
  if (can == nullptr) return Fail(cudaErrorInvalidValue, "cudaDeviceCanAccessPeer");
  FlSimcudaDevice d;
  if (int code = Model()->describe(device, &d)) return Err(code);
  if (int code = Model()->describe(peer, &d)) return Err(code);
  *can = 0;
  return cudaSuccess;
}

cudaError_t cudaDeviceSynchronize() {
  FL_MODEL_OR_RETURN();
  return Err(Model()->device_synchronize());
}

cudaError_t cudaDeviceReset() {
  FL_MODEL_OR_RETURN();
  return Err(Model()->device_reset());
}

// Creates the context, as on a GPU (PyTorch's first tensor on a device asks this first).
cudaError_t cudaDeviceGetStreamPriorityRange(int* least, int* greatest) {
  FL_MODEL_OR_RETURN();
  if (int code = Model()->enter("cudaDeviceGetStreamPriorityRange", 1)) return Err(code);
  if (least != nullptr) *least = 0;
  if (greatest != nullptr) *greatest = -5;
  return cudaSuccess;
}

cudaError_t cudaMemGetInfo(size_t* free_bytes, size_t* total_bytes) {
  FL_MODEL_OR_RETURN();
  if (free_bytes == nullptr || total_bytes == nullptr) return Fail(cudaErrorInvalidValue, "cudaMemGetInfo");
  return Err(Model()->memory_info(free_bytes, total_bytes));
}

// --- Memory.
cudaError_t cudaMalloc(void** ptr, size_t bytes) {
  FL_MODEL_OR_RETURN();
  if (ptr == nullptr) return Fail(cudaErrorInvalidValue, "cudaMalloc");
  if (bytes == 0) {  // succeeds with a null pointer, as the real runtime
    *ptr = nullptr;
    return Err(Model()->enter("cudaMalloc", 1));
  }
  return Err(Model()->malloc(ptr, bytes));
}

cudaError_t cudaMallocAsync(void** ptr, size_t bytes, cudaStream_t) { return cudaMalloc(ptr, bytes); }

cudaError_t cudaMallocManaged(void** ptr, size_t bytes, unsigned int) {
  FL_MODEL_OR_RETURN();
  if (ptr == nullptr) return Fail(cudaErrorInvalidValue, "cudaMallocManaged");
  return Err(Model()->malloc_managed(ptr, bytes));
}

cudaError_t cudaFree(void* ptr) {
  FL_MODEL_OR_RETURN();
  return Err(Model()->free(ptr));
}

cudaError_t cudaFreeAsync(void* ptr, cudaStream_t) { return cudaFree(ptr); }

cudaError_t cudaHostAlloc(void** ptr, size_t bytes, unsigned int) {
  FL_MODEL_OR_RETURN();
  if (ptr == nullptr) return Fail(cudaErrorInvalidValue, "cudaHostAlloc");
  return Err(Model()->malloc_host(ptr, bytes));
}

cudaError_t cudaMallocHost(void** ptr, size_t bytes) { return cudaHostAlloc(ptr, bytes, 0); }

cudaError_t cudaFreeHost(void* ptr) {
  FL_MODEL_OR_RETURN();
  return Err(Model()->free_host(ptr));
}

cudaError_t cudaHostRegister(void* ptr, size_t bytes, unsigned int) {
  FL_MODEL_OR_RETURN();
  return Err(Model()->host_register(ptr, bytes));
}

cudaError_t cudaHostUnregister(void* ptr) {
  FL_MODEL_OR_RETURN();
  return Err(Model()->host_unregister(ptr));
}

cudaError_t cudaHostGetDevicePointer(void** device_ptr, void* host, unsigned int flags) {
  FL_MODEL_OR_RETURN();
  if (device_ptr == nullptr || flags != 0) return Fail(cudaErrorInvalidValue, "cudaHostGetDevicePointer");
  int type = 0, device = -1;
  if (int code = Model()->pointer_attributes(host, &type, &device)) return Err(code);
  if (type != 1) return Fail(cudaErrorInvalidValue, "cudaHostGetDevicePointer");
  *device_ptr = host;  // one address space: mapped memory keeps its address
  return cudaSuccess;
}

cudaError_t cudaHostGetFlags(unsigned int* flags, void* host) {
  FL_MODEL_OR_RETURN();
  if (flags == nullptr) return Fail(cudaErrorInvalidValue, "cudaHostGetFlags");
  int type = 0, device = -1;
  if (int code = Model()->pointer_attributes(host, &type, &device)) return Err(code);
  if (type != 1) return Fail(cudaErrorInvalidValue, "cudaHostGetFlags");
  *flags = 0;
  return cudaSuccess;
}

cudaError_t cudaPointerGetAttributes(cudaPointerAttributes* attributes, const void* ptr) {
  FL_MODEL_OR_RETURN();
  if (attributes == nullptr) return Fail(cudaErrorInvalidValue, "cudaPointerGetAttributes");
  int type = 0, device = -1;
  if (int code = Model()->pointer_attributes(ptr, &type, &device)) return Err(code);
  attributes->type = static_cast<cudaMemoryType>(type);
  attributes->device = type == 0 ? -2 : device;
  attributes->devicePointer = type == 0 ? nullptr : const_cast<void*>(ptr);
  attributes->hostPointer = type == 0 || type == 1 ? const_cast<void*>(ptr) : nullptr;
  return cudaSuccess;
}

cudaError_t cudaMemcpy(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind) {
  return Memcpy(dst, src, bytes, kind, nullptr, false, "cudaMemcpy");
}

cudaError_t cudaMemcpyAsync(void* dst, const void* src, size_t bytes, cudaMemcpyKind kind, cudaStream_t stream) {
  return Memcpy(dst, src, bytes, kind, stream, true, "cudaMemcpyAsync");
}

cudaError_t cudaMemset(void* dst, int value, size_t bytes) { return Memset(dst, value, bytes, "cudaMemset"); }

cudaError_t cudaMemsetAsync(void* dst, int value, size_t bytes, cudaStream_t) {
  return Memset(dst, value, bytes, "cudaMemsetAsync");
}

// --- Streams and events (simcuda's streams run synchronously).
cudaError_t cudaStreamCreate(cudaStream_t* stream) {
  FL_MODEL_OR_RETURN();
  if (stream == nullptr) return Fail(cudaErrorInvalidValue, "cudaStreamCreate");
  return Err(Model()->stream_create(reinterpret_cast<void**>(stream)));
}

cudaError_t cudaStreamCreateWithFlags(cudaStream_t* stream, unsigned int) { return cudaStreamCreate(stream); }

cudaError_t cudaStreamCreateWithPriority(cudaStream_t* stream, unsigned int, int) { return cudaStreamCreate(stream); }

cudaError_t cudaStreamDestroy(cudaStream_t stream) {
  FL_MODEL_OR_RETURN();
  return Err(Model()->stream_destroy(stream));
}

// cudaStreamLegacy and cudaStreamPerThread reach the model as the default
// stream (the driver's StreamOf folds them).
cudaError_t cudaStreamSynchronize(cudaStream_t stream) {
  FL_MODEL_OR_RETURN();
  return Err(Model()->stream_synchronize(stream));
}

cudaError_t cudaStreamQuery(cudaStream_t stream) { return cudaStreamSynchronize(stream); }

cudaError_t cudaStreamWaitEvent(cudaStream_t stream, cudaEvent_t, unsigned int) {
  return cudaStreamSynchronize(stream);
}

cudaError_t cudaStreamGetPriority(cudaStream_t stream, int* priority) {
  if (priority == nullptr) return Fail(cudaErrorInvalidValue, "cudaStreamGetPriority");
  *priority = 0;
  return cudaStreamSynchronize(stream);
}

// simcuda captures no graphs.
cudaError_t cudaStreamIsCapturing(cudaStream_t stream, cudaStreamCaptureStatus* status) {
  FL_MODEL_OR_RETURN();
  if (status == nullptr) return Fail(cudaErrorInvalidValue, "cudaStreamIsCapturing");
  if (int code = Model()->enter("cudaStreamIsCapturing", 1)) return Err(code);
  *status = cudaStreamCaptureStatusNone;
  return cudaSuccess;
}

cudaError_t cudaThreadExchangeStreamCaptureMode(cudaStreamCaptureMode* mode) {
  if (mode == nullptr) return Fail(cudaErrorInvalidValue, "cudaThreadExchangeStreamCaptureMode");
  thread_local cudaStreamCaptureMode t_mode = cudaStreamCaptureModeGlobal;
  std::swap(*mode, t_mode);
  return cudaSuccess;
}

cudaError_t cudaEventCreate(cudaEvent_t* event) {
  FL_MODEL_OR_RETURN();
  if (event == nullptr) return Fail(cudaErrorInvalidValue, "cudaEventCreate");
  return Err(Model()->event_create(reinterpret_cast<void**>(event)));
}

cudaError_t cudaEventCreateWithFlags(cudaEvent_t* event, unsigned int) { return cudaEventCreate(event); }

cudaError_t cudaEventRecord(cudaEvent_t event, cudaStream_t stream) {
  FL_MODEL_OR_RETURN();
  return Err(Model()->event_record(event, stream));
}

cudaError_t cudaEventRecordWithFlags(cudaEvent_t event, cudaStream_t stream, unsigned int) {
  return cudaEventRecord(event, stream);
}

cudaError_t cudaEventQuery(cudaEvent_t event) {
  FL_MODEL_OR_RETURN();
  return Err(Model()->event_query(event));
}

cudaError_t cudaEventSynchronize(cudaEvent_t event) {
  FL_MODEL_OR_RETURN();
  return Err(Model()->event_synchronize(event));
}

cudaError_t cudaEventDestroy(cudaEvent_t event) {
  FL_MODEL_OR_RETURN();
  return Err(Model()->event_destroy(event));
}

// Work runs synchronously in simcuda: no time passes between two events on the device.
cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t end) {
  if (ms == nullptr) return Fail(cudaErrorInvalidValue, "cudaEventElapsedTime");
  if (cudaError_t e = cudaEventQuery(start)) return e;
  if (cudaError_t e = cudaEventQuery(end)) return e;
  *ms = 0.0f;
  return cudaSuccess;
}

// --- Device code: registered, never run.
// One handle for every fat binary: kernels are found by their host stub,
// so the handle need not tell fat binaries apart (and nothing is allocated
// that the unregistration at exit would have to free).
void** __cudaRegisterFatBinary(void*) {
  static void* handle = nullptr;
  return &handle;
}

void __cudaRegisterFatBinaryEnd(void**) {}

void __cudaUnregisterFatBinary(void**) {}

void __cudaRegisterFunction(void**, const char* host_function, char*, const char* device_name, int, uint3*, uint3*,
                            dim3*, dim3*, int*) {
  std::lock_guard<std::mutex> lock(g_kernels_mu);
  Kernels()[host_function] = device_name != nullptr ? device_name : "";
}

void __cudaRegisterVar(void**, char*, char*, const char*, int, size_t, int, int) {}

void __cudaRegisterManagedVar(void**, void**, char*, const char*, int, size_t, int, int) {}

char __cudaInitModule(void**) { return 1; }

unsigned __cudaPushCallConfiguration(dim3 grid, dim3 block, size_t shared_memory, void* stream) {
  t_call_configurations.push_back({grid, block, shared_memory, stream});
  return 0;
}

cudaError_t __cudaPopCallConfiguration(dim3* grid, dim3* block, size_t* shared_memory, void* stream) {
  if (t_call_configurations.empty()) return cudaErrorMissingConfiguration;
  const CallConfiguration c = t_call_configurations.back();
  t_call_configurations.pop_back();
  if (grid != nullptr) *grid = c.grid;
  if (block != nullptr) *block = c.block;
  if (shared_memory != nullptr) *shared_memory = c.shared_memory;
  if (stream != nullptr) *static_cast<void**>(stream) = c.stream;
  return cudaSuccess;
}

cudaError_t __cudaGetKernel(cudaKernel_t* kernel, const void* function) {
  if (kernel == nullptr) return cudaErrorInvalidValue;
  *kernel = reinterpret_cast<cudaKernel_t>(const_cast<void*>(function));
  return cudaSuccess;
}

cudaError_t __cudaLaunchKernel(cudaKernel_t kernel, dim3, dim3, void**, size_t, cudaStream_t) {
  return RefuseLaunch(reinterpret_cast<const void*>(kernel), "cudaLaunchKernel");
}

cudaError_t __cudaLaunchKernel_ptsz(cudaKernel_t kernel, dim3, dim3, void**, size_t, cudaStream_t) {
  return RefuseLaunch(reinterpret_cast<const void*>(kernel), "cudaLaunchKernel");
}

cudaError_t cudaLaunchKernel(const void* function, dim3, dim3, void**, size_t, cudaStream_t) {
  return RefuseLaunch(function, "cudaLaunchKernel");
}

cudaError_t cudaLaunchKernelExC(const cudaLaunchConfig_t*, const void* function, void**) {
  return RefuseLaunch(function, "cudaLaunchKernelExC");
}

cudaError_t cudaLaunchCooperativeKernel(const void* function, dim3, dim3, void**, size_t, cudaStream_t) {
  return RefuseLaunch(function, "cudaLaunchCooperativeKernel");
}

cudaChannelFormatDesc cudaCreateChannelDesc(int x, int y, int z, int w, cudaChannelFormatKind kind) {
  return cudaChannelFormatDesc{x, y, z, w, kind};
}

cudaError_t cudaProfilerStart() { return cudaSuccess; }
cudaError_t cudaProfilerStop() { return cudaSuccess; }

}  // extern "C"
