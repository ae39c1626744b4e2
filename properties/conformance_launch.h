// Provides LaunchEmptyKernelOnCuda: a kernel the conformance scenarios can
// launch on real CUDA with any launch configuration (kernels/ launches only
// with the configurations it computes). Plain declarations, so that the
// nvcc-compiled conformance_launch.cu and the host code share them.
#ifndef FAULTLINE_PROPERTIES_CONFORMANCE_LAUNCH_H_
#define FAULTLINE_PROPERTIES_CONFORMANCE_LAUNCH_H_

#include "reference/runtime/launch_config.h"

namespace faultline {
namespace conformance {

// Launches a kernel that does nothing with `config` through cudaLaunchKernel
// (as kernels/cuda_launch.cuh launches) and returns the launch's cudaError_t;
// does not synchronize.
int LaunchEmptyKernelOnCuda(const LaunchConfig& config);

}  // namespace conformance
}  // namespace faultline

#endif  // FAULTLINE_PROPERTIES_CONFORMANCE_LAUNCH_H_
