// Declares the backend singletons behind GetRuntime (internal to the runtime).
#ifndef FAULTLINE_REFERENCE_RUNTIME_BACKENDS_H_
#define FAULTLINE_REFERENCE_RUNTIME_BACKENDS_H_

#include <string>

#include "reference/runtime/runtime.h"

namespace faultline {

DeviceRuntime& CpuRuntimeInstance();
DeviceRuntime& SimCudaRuntimeInstance();
DeviceRuntime& CudaRuntimeInstance();

// Returns whether a real CUDA device is usable, without initializing CUDA in
// this process when it has not been initialized yet (a forked probe asks).
bool CudaDevicePresent();

// Returns whether this process image has already made calls into backend
// `kind` (then asking it again cannot change whether a fork is safe).
bool BackendInitialized(RuntimeKind kind);

// Formats a pointer as hexadecimal text for error messages.
std::string PointerText(const void* p);

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_RUNTIME_BACKENDS_H_
