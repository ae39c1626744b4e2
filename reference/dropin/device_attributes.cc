// Implements DeviceAttribute from a table of CUdevice_attribute values (cuda.h).
#include "reference/dropin/device_attributes.h"

namespace faultline::dropin {

std::optional<int> DeviceAttribute(int attribute, int major, int minor, int physical) {
  switch (attribute) {
    case 1: return 1024;  // MAX_THREADS_PER_BLOCK
    case 2:
    case 3: return 1024;        // MAX_BLOCK_DIM_X, _Y
    case 4: return 64;          // MAX_BLOCK_DIM_Z
    case 5: return 2147483647;  // MAX_GRID_DIM_X
    case 6:
    case 7: return 65535;             // MAX_GRID_DIM_Y, _Z
    case 8: return 49152;             // MAX_SHARED_MEMORY_PER_BLOCK
    case 9: return 65536;             // TOTAL_CONSTANT_MEMORY
    case 10: return 32;               // WARP_SIZE
    case 11: return 2147483647;       // MAX_PITCH
    case 12: return 65536;            // MAX_REGISTERS_PER_BLOCK
    case 13: return 1980000;          // CLOCK_RATE (kHz)
    case 14: return 512;              // TEXTURE_ALIGNMENT
    case 15: return 1;                // GPU_OVERLAP
    case 16: return 132;              // MULTIPROCESSOR_COUNT
    case 17: return 0;                // KERNEL_EXEC_TIMEOUT
    case 18: return 0;                // INTEGRATED
    case 19: return 1;                // CAN_MAP_HOST_MEMORY
    case 20: return 0;                // COMPUTE_MODE (default)
    case 30: return 512;              // SURFACE_ALIGNMENT
    case 31: return 1;                // CONCURRENT_KERNELS
    case 32: return 1;                // ECC_ENABLED
    case 33: return 0x18 + physical;  // PCI_BUS_ID
    case 34: return 0;                // PCI_DEVICE_ID
    case 35: return 0;                // TCC_DRIVER
    case 36: return 2619000;          // MEMORY_CLOCK_RATE (kHz)
    case 37: return 5120;             // GLOBAL_MEMORY_BUS_WIDTH
    case 38: return 52428800;         // L2_CACHE_SIZE
    case 39: return 2048;             // MAX_THREADS_PER_MULTIPROCESSOR
    case 40: return 3;                // ASYNC_ENGINE_COUNT
    case 41: return 1;                // UNIFIED_ADDRESSING
    case 50: return 0;                // PCI_DOMAIN_ID
    case 75: return major;            // COMPUTE_CAPABILITY_MAJOR
    case 76: return minor;            // COMPUTE_CAPABILITY_MINOR
    case 78: return 1;                // STREAM_PRIORITIES_SUPPORTED
    case 79:
    case 80: return 1;       // GLOBAL_L1_CACHE_SUPPORTED, LOCAL_L1_CACHE_SUPPORTED
    case 81: return 233472;  // MAX_SHARED_MEMORY_PER_MULTIPROCESSOR
    case 82: return 65536;   // MAX_REGISTERS_PER_MULTIPROCESSOR
    case 83: return 1;       // MANAGED_MEMORY
    case 84: return 0;       // MULTI_GPU_BOARD
    case 87: return 2;       // SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO
    case 88: return 0;       // PAGEABLE_MEMORY_ACCESS
    case 89: return 1;       // CONCURRENT_MANAGED_ACCESS
    case 95: return 1;       // COOPERATIVE_LAUNCH
    case 97: return 232448;  // MAX_SHARED_MEMORY_PER_BLOCK_OPTIN
    case 99: return 1;       // HOST_REGISTER_SUPPORTED
    case 106: return 32;     // MAX_BLOCKS_PER_MULTIPROCESSOR
    case 115: return 1;      // MEMORY_POOLS_SUPPORTED
    default: return std::nullopt;
  }
}

}  // namespace faultline::dropin
