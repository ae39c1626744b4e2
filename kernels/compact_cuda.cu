// Compiles the unique_and_compact kernels for the GPU.
#include "kernels/compact_kernels.cuh"
#include "kernels/cuda_launch.cuh"

namespace faultline {
namespace kernels {

int LaunchClearTableOnCuda(const ClearTableKernel& k, const LaunchConfig& c) { return LaunchOnCuda(k, c); }
int LaunchInsertNodesOnCuda(const InsertNodesKernel& k, const LaunchConfig& c) { return LaunchOnCuda(k, c); }
int LaunchMarkFirstOnCuda(const MarkFirstKernel& k, const LaunchConfig& c) { return LaunchOnCuda(k, c); }
int LaunchEmitUniqueOnCuda(const EmitUniqueKernel& k, const LaunchConfig& c) { return LaunchOnCuda(k, c); }
int LaunchRelabelOnCuda(const RelabelKernel& k, const LaunchConfig& c) { return LaunchOnCuda(k, c); }

}  // namespace kernels
}  // namespace faultline
