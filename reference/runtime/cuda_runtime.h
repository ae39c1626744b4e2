// Provides helpers of the real CUDA backend that kernel launchers need.
#ifndef FAULTLINE_REFERENCE_RUNTIME_CUDA_RUNTIME_H_
#define FAULTLINE_REFERENCE_RUNTIME_CUDA_RUNTIME_H_

#include "reference/base/status.h"
#include "reference/runtime/runtime.h"

namespace faultline {

// Converts a cudaError_t returned by libcudart into a Status (OK for
// cudaSuccess), keeping name, code, string, the API call and file:line.
Status CudaStatus(int code, const char* api, SourceLocation loc, const std::string& detail = "");

}  // namespace faultline

#endif  // FAULTLINE_REFERENCE_RUNTIME_CUDA_RUNTIME_H_
