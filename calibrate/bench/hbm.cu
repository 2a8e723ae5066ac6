// HBM bandwidth: a grid-stride copy of 16-byte vectors, timed with CUDA events.
#include <cuda_runtime.h>

#include <stdexcept>
#include <string>

namespace twin::calib {

__global__ void copy_kernel(const float4* __restrict__ src, float4* __restrict__ dst, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

/// Average time in microseconds of copying `bytes` (a multiple of 16) device to device.
double time_copy_us(void* src, void* dst, size_t bytes, int warmup, int iters) {
  int device = 0, sms = 0;
  cudaGetDevice(&device);
  cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device);
  const size_t n = bytes / sizeof(float4);
  const int blocks = sms * 8, threads = 512;
  cudaEvent_t start, stop;
  cudaEventCreate(&start);
  cudaEventCreate(&stop);
  for (int i = 0; i < warmup; ++i)
    copy_kernel<<<blocks, threads>>>(static_cast<const float4*>(src), static_cast<float4*>(dst), n);
  cudaEventRecord(start);
  for (int i = 0; i < iters; ++i)
    copy_kernel<<<blocks, threads>>>(static_cast<const float4*>(src), static_cast<float4*>(dst), n);
  cudaEventRecord(stop);
  const cudaError_t status = cudaEventSynchronize(stop);
  float ms = 0;
  cudaEventElapsedTime(&ms, start, stop);
  cudaEventDestroy(start);
  cudaEventDestroy(stop);
  if (status != cudaSuccess) throw std::runtime_error(std::string("copy kernel: ") + cudaGetErrorString(status));
  return 1e3 * ms / iters;
}

}  // namespace twin::calib
