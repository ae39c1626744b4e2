// Provides the vocabulary shared by CUDA kernels and their host twins:
// FL_HOST_DEVICE, ThreadIndex and grid-stride helpers. Must stay includable by
// nvcc and by the host compiler alike (no exceptions; the only project header
// is the runtime's plain launch_config.h).
#ifndef FAULTLINE_KERNELS_KERNEL_API_H_
#define FAULTLINE_KERNELS_KERNEL_API_H_

#include <cstddef>
#include <cstdint>

#include "reference/runtime/launch_config.h"

#if defined(__CUDACC__)
#define FL_HOST_DEVICE __host__ __device__
#define FL_INLINE __forceinline__
#else
#define FL_HOST_DEVICE
#define FL_INLINE inline
#endif

namespace faultline {
namespace kernels {

// Identifies one thread of a 1-D launch: the same fields as blockIdx.x,
// threadIdx.x, blockDim.x and gridDim.x.
struct ThreadIndex {
  unsigned block;
  unsigned thread;
  unsigned block_dim;
  unsigned grid_dim;

  FL_HOST_DEVICE FL_INLINE uint64_t global() const { return static_cast<uint64_t>(block) * block_dim + thread; }
  FL_HOST_DEVICE FL_INLINE uint64_t stride() const { return static_cast<uint64_t>(grid_dim) * block_dim; }
};

using ::faultline::BufferUse;
using ::faultline::LaunchConfig;

// Returns a launch that covers n items with grid-stride loops.
inline LaunchConfig LaunchFor(uint64_t n, unsigned block = 256, void* stream = nullptr) {
  uint64_t grid = (n + block - 1) / block;
  if (grid == 0) grid = 1;
  if (grid > 65535) grid = 65535;  // kernels loop over the rest
  return LaunchConfig{static_cast<unsigned>(grid), block, stream};
}

// Atomic compare-and-swap and minimum. Host twins run one simulated thread
// at a time, so there the plain read-modify-write is already atomic.
FL_HOST_DEVICE FL_INLINE unsigned long long AtomicCas(unsigned long long* address, unsigned long long expected,
                                                      unsigned long long desired) {
#if defined(__CUDA_ARCH__)
  return atomicCAS(address, expected, desired);
#else
  const unsigned long long old = *address;
  if (old == expected) *address = desired;
  return old;
#endif
}

FL_HOST_DEVICE FL_INLINE void AtomicMin(unsigned long long* address, unsigned long long value) {
#if defined(__CUDA_ARCH__)
  atomicMin(address, value);
#else
  if (value < *address) *address = value;
#endif
}

}  // namespace kernels
}  // namespace faultline

#endif  // FAULTLINE_KERNELS_KERNEL_API_H_
