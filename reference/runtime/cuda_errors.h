// Provides the CUDA error vocabulary shared by the simulated and the real
// backend: the toolkit's enum values with their names and strings, and the
// conversion of a failed call into a Status.
#ifndef FAULTLINE_REFERENCE_RUNTIME_CUDA_ERRORS_H_
#define FAULTLINE_REFERENCE_RUNTIME_CUDA_ERRORS_H_

#include <driver_types.h>  // cudaError_t values from the CUDA toolkit

#include <string>

#include "reference/base/status.h"
#include "reference/runtime/runtime.h"

namespace faultline {

// Returns the enum name of a CUDA error ("cudaErrorInitializationError"), as
// cudaGetErrorName does, for the errors simcuda can raise.
const char* SimCudaErrorName(cudaError_t code);
// Returns the message of a CUDA error ("initialization error"), as
// cudaGetErrorString does, for the errors simcuda can raise.
const char* SimCudaErrorString(cudaError_t code);
// Lists every error simcuda can raise (for the table conformance test).
const cudaError_t* SimCudaErrors(int* count);

// The driver API's (CUresult) name and text for the codes faultline meets
// from cuInit: 3 CUDA_ERROR_NOT_INITIALIZED, 34 CUDA_ERROR_STUB_LIBRARY,
// 100 CUDA_ERROR_NO_DEVICE; "CUDA_ERROR_<code>" / "unknown error" otherwise.
// (cuGetErrorName itself is a stub in the stub library.)
const char* DriverErrorName(int code);
const char* DriverErrorString(int code);

// Builds the Status of a failed CUDA call: "<api> failed: <string>" plus
// `detail`, keeping name, code, string, api and the caller's file:line.
Status CudaCallError(int code, const char* name, const char* string, const char* api, SourceLocation loc,
                     const std::string& detail = "");

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_RUNTIME_CUDA_ERRORS_H_
