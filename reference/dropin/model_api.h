// Declares the private interface between the drop-in libraries: the table of
// simcuda model calls that libcuda.so.1 (which holds the process state, as
// the real driver does) gives the stand-in libcudart. Plain C, so that the
// two libraries share no C++ symbols; each call returns a cudaError_t code.
#ifndef FAULTLINE_REFERENCE_DROPIN_MODEL_API_H_
#define FAULTLINE_REFERENCE_DROPIN_MODEL_API_H_

#include <stddef.h>

#ifdef __cplusplus
extern "C" {
#endif

// Bumped whenever the table changes: libcudart refuses a libcuda of another build.
#define FL_SIMCUDA_MODEL_ABI 2

typedef struct FlSimcudaDevice {
  char name[256];
  size_t memory_bytes;
  int major;
  int minor;
  unsigned char uuid[16];
  int physical;
} FlSimcudaDevice;

typedef struct FlSimcudaModel {
  int abi;
  int (*get_device_count)(int* count);
  int (*set_device)(int device);
  int (*get_device)(int* device);
  int (*describe)(int device, FlSimcudaDevice* out);
  // The checks of runtime call `api` (and its context when needs_context).
  int (*enter)(const char* api, int needs_context);
  int (*driver_version)(int* version);
  int (*malloc)(void** ptr, size_t bytes);
  int (*malloc_managed)(void** ptr, size_t bytes);
  int (*free)(void* ptr);
  int (*malloc_host)(void** ptr, size_t bytes);
  int (*free_host)(void* ptr);
  int (*host_register)(void* ptr, size_t bytes);
  int (*host_unregister)(void* ptr);
  // type: 0 unregistered, 1 host, 2 device (cudaMemoryType).
  int (*pointer_attributes)(const void* ptr, int* type, int* device);
  // kind: 0 host-host, 1 host-device, 2 device-host, 3 device-device.
  int (*memcpy)(void* dst, const void* src, size_t bytes, int kind, void* stream, int async);
  int (*memory_info)(size_t* free_bytes, size_t* total_bytes);
  int (*stream_create)(void** stream);
  int (*stream_synchronize)(void* stream);
  int (*stream_destroy)(void* stream);
  int (*device_synchronize)(void);
  int (*device_reset)(void);
  int (*event_create)(void** event);
  int (*event_record)(void* event, void* stream);
  int (*event_query)(void* event);
  int (*event_synchronize)(void* event);
  int (*event_destroy)(void* event);
  // cudaGetLastError (clear) / cudaPeekAtLastError.
  int (*last_error)(int clear);
  // Records a failure found outside the model: the thread's last error and
  // the process report's first failing call; prints `detail` once on stderr.
  int (*fail)(int code, const char* api, const char* detail);
} FlSimcudaModel;

// Exported by the stand-in libcuda.so.1 beside the driver API.
const FlSimcudaModel* faultline_simcuda_model(void);

#ifdef __cplusplus
}
#endif

#endif  // FAULTLINE_REFERENCE_DROPIN_MODEL_API_H_
