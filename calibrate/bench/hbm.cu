// HBM bandwidth kernel: a grid-stride copy of 16-byte vectors (every load and store a full
// 128-bit transaction), so the copy is limited by memory, not by instruction issue.
#include <cuda_runtime.h>

#include "calibrate/bench/kernels.hpp"

namespace twin::calib {
namespace {

__global__ void copy_kernel(const float4* __restrict__ src, float4* __restrict__ dst, size_t n) {
  for (size_t i = blockIdx.x * static_cast<size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<size_t>(gridDim.x) * blockDim.x)
    dst[i] = src[i];
}

}  // namespace

void launch_copy(const void* src, void* dst, std::size_t bytes, int blocks, cudaStream_t stream) {
  copy_kernel<<<blocks, 512, 0, stream>>>(static_cast<const float4*>(src),
                                          static_cast<float4*>(dst), bytes / sizeof(float4));
  check_kernel_launch("HBM copy");
}

}  // namespace twin::calib
