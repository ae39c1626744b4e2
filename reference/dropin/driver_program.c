/* A plain C program against the driver API (linked with -lcuda, as such
 * programs are): dropin_programs_test runs it under ci/simcuda.sh. */
#include <stdio.h>

typedef int CUresult;
typedef int CUdevice;
typedef void* CUcontext;
typedef unsigned long long CUdeviceptr;
CUresult cuInit(unsigned int flags);
CUresult cuDeviceGetCount(int* count);
CUresult cuDeviceGet(CUdevice* device, int ordinal);
CUresult cuDeviceGetName(char* name, int length, CUdevice device);
CUresult cuDevicePrimaryCtxRetain(CUcontext* context, CUdevice device);
CUresult cuCtxSetCurrent(CUcontext context);
CUresult cuMemAlloc_v2(CUdeviceptr* ptr, size_t bytes);
CUresult cuMemcpyHtoD_v2(CUdeviceptr dst, const void* src, size_t bytes);
CUresult cuMemcpyDtoH_v2(void* dst, CUdeviceptr src, size_t bytes);
CUresult cuMemFree_v2(CUdeviceptr ptr);

int main(void) {
  int count = -1;
  CUdevice device = -1;
  char name[64] = "";
  CUcontext context = NULL;
  CUdeviceptr ptr = 0;
  int in[4] = {1, 2, 3, 4}, out[4] = {0, 0, 0, 0};
  printf("count before init %d\n", cuDeviceGetCount(&count));
  printf("init %d\n", cuInit(0));
  CUresult r = cuDeviceGetCount(&count); /* before printf reads count: argument order is unspecified */
  printf("count %d %d\n", r, count);
  printf("get %d\n", cuDeviceGet(&device, count - 1));
  r = cuDeviceGetName(name, sizeof(name), device);
  printf("name %d %s\n", r, name);
  printf("alloc without context %d\n", cuMemAlloc_v2(&ptr, 16));
  printf("retain %d\n", cuDevicePrimaryCtxRetain(&context, device));
  printf("set current %d\n", cuCtxSetCurrent(context));
  printf("alloc %d\n", cuMemAlloc_v2(&ptr, 16));
  printf("htod %d\n", cuMemcpyHtoD_v2(ptr, in, sizeof(in)));
  r = cuMemcpyDtoH_v2(out, ptr, sizeof(out));
  printf("dtoh %d %d %d %d %d\n", r, out[0], out[1], out[2], out[3]);
  printf("free %d\n", cuMemFree_v2(ptr));
  return 0;
}
