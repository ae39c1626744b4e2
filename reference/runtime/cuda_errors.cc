// Implements the CUDA error table. Names and strings are those of libcudart
// (a test compares them with cudaGetErrorName/cudaGetErrorString).
#include "reference/runtime/cuda_errors.h"

namespace faultline {
namespace {

struct ErrorEntry {
  cudaError_t code;
  const char* name;
  const char* string;
};

constexpr ErrorEntry kErrors[] = {
    {cudaSuccess, "cudaSuccess", "no error"},
    {cudaErrorInvalidValue, "cudaErrorInvalidValue", "invalid argument"},
    {cudaErrorMemoryAllocation, "cudaErrorMemoryAllocation", "out of memory"},
    {cudaErrorInitializationError, "cudaErrorInitializationError", "initialization error"},
    {cudaErrorStubLibrary, "cudaErrorStubLibrary", "CUDA driver is a stub library"},
    {cudaErrorInsufficientDriver, "cudaErrorInsufficientDriver",
     "CUDA driver version is insufficient for CUDA runtime version"},
    {cudaErrorNoDevice, "cudaErrorNoDevice", "no CUDA-capable device is detected"},
    {cudaErrorDevicesUnavailable, "cudaErrorDevicesUnavailable", "CUDA-capable device(s) is/are busy or unavailable"},
    {cudaErrorInvalidConfiguration, "cudaErrorInvalidConfiguration", "invalid configuration argument"},
    {cudaErrorInvalidDevice, "cudaErrorInvalidDevice", "invalid device ordinal"},
    {cudaErrorInvalidResourceHandle, "cudaErrorInvalidResourceHandle", "invalid resource handle"},
    {cudaErrorNotReady, "cudaErrorNotReady", "device not ready"},
    {cudaErrorIllegalAddress, "cudaErrorIllegalAddress", "an illegal memory access was encountered"},
    {cudaErrorHostMemoryAlreadyRegistered, "cudaErrorHostMemoryAlreadyRegistered",
     "part or all of the requested memory range is already mapped"},
    {cudaErrorHostMemoryNotRegistered, "cudaErrorHostMemoryNotRegistered",
     "pointer does not correspond to a registered memory region"},
    // What the drop-in libraries answer for device code and unmodelled calls.
    {cudaErrorInvalidDeviceFunction, "cudaErrorInvalidDeviceFunction", "invalid device function"},
    {cudaErrorNoKernelImageForDevice, "cudaErrorNoKernelImageForDevice",
     "no kernel image is available for execution on the device"},
    {cudaErrorSymbolNotFound, "cudaErrorSymbolNotFound", "named symbol not found"},
    {cudaErrorNotSupported, "cudaErrorNotSupported", "operation not supported"},
    {cudaErrorInvalidMemcpyDirection, "cudaErrorInvalidMemcpyDirection", "invalid copy direction for memcpy"},
    {cudaErrorMissingConfiguration, "cudaErrorMissingConfiguration", "__global__ function call is not configured"},
};

const ErrorEntry* Find(cudaError_t code) {
  for (const ErrorEntry& e : kErrors) {
    if (e.code == code) return &e;
  }
  return nullptr;
}

}  // namespace

const char* SimCudaErrorName(cudaError_t code) {
  const ErrorEntry* e = Find(code);
  return e ? e->name : "cudaErrorUnknown";
}

const char* SimCudaErrorString(cudaError_t code) {
  const ErrorEntry* e = Find(code);
  return e ? e->string : "unknown error";
}

const cudaError_t* SimCudaErrors(int* count) {
  static cudaError_t codes[sizeof(kErrors) / sizeof(kErrors[0])];
  *count = 0;
  for (const ErrorEntry& e : kErrors) codes[(*count)++] = e.code;
  return codes;
}

Status CudaCallError(int code, const char* name, const char* string, const char* api, SourceLocation loc,
                     const std::string& detail) {
  CudaErrorInfo info{code, name, string, api, loc.file, loc.line};
  std::string message = std::string(api) + " failed: " + string;
  if (!detail.empty()) message += "; " + detail;
  return Status(std::move(info), std::move(message));
}

const char* DriverErrorName(int code) {
  switch (code) {
    case 0: return "CUDA_SUCCESS";
    case 1: return "CUDA_ERROR_INVALID_VALUE";
    case 2: return "CUDA_ERROR_OUT_OF_MEMORY";
    case 3: return "CUDA_ERROR_NOT_INITIALIZED";
    case 34: return "CUDA_ERROR_STUB_LIBRARY";
    case 46: return "CUDA_ERROR_DEVICE_UNAVAILABLE";
    case 100: return "CUDA_ERROR_NO_DEVICE";
    case 101: return "CUDA_ERROR_INVALID_DEVICE";
    case 201: return "CUDA_ERROR_INVALID_CONTEXT";
    case 400: return "CUDA_ERROR_INVALID_HANDLE";
    case 500: return "CUDA_ERROR_NOT_FOUND";
    case 600: return "CUDA_ERROR_NOT_READY";
    case 700: return "CUDA_ERROR_ILLEGAL_ADDRESS";
    case 712: return "CUDA_ERROR_HOST_MEMORY_ALREADY_REGISTERED";
    case 713: return "CUDA_ERROR_HOST_MEMORY_NOT_REGISTERED";
    case 801: return "CUDA_ERROR_NOT_SUPPORTED";
    default: return "CUDA_ERROR_UNKNOWN";
  }
}

const char* DriverErrorString(int code) {
  switch (code) {
    case 0: return "no error";
    case 1: return "invalid argument";
    case 2: return "out of memory";
    case 3: return "initialization error";
    case 34: return "CUDA driver is a stub library";
    case 46: return "CUDA-capable device(s) is/are busy or unavailable";
    case 100: return "no CUDA-capable device is detected";
    case 101: return "invalid device ordinal";
    case 201: return "invalid device context";
    case 400: return "invalid resource handle";
    case 500: return "named symbol not found";
    case 600: return "device not ready";
    case 700: return "an illegal memory access was encountered";
    case 712: return "part or all of the requested memory range is already mapped";
    case 713: return "pointer does not correspond to a registered memory region";
    case 801: return "operation not supported";
    default: return "unknown error";
  }
}

}  // namespace faultline
