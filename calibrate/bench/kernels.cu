// Device kernels of clustertwin-calib other than the HBM copy: random GEMM inputs, the NCCL data
// pattern and its check. Every launch is checked by the caller through check_kernel_launch.
#include <cuda_bf16.h>
#include <cuda_fp8.h>
#include <cuda_runtime.h>

#include <cstdint>

#include "calibrate/bench/kernels.hpp"
#include "calibrate/bench/nccl_pattern.hpp"

namespace twin::calib {
namespace {

constexpr int kThreads = 256;
constexpr int kMaxBlocks = 4096;

int blocks_for(std::size_t n) {
  const std::size_t wanted = (n + kThreads - 1) / kThreads;
  return static_cast<int>(wanted < kMaxBlocks ? (wanted > 0 ? wanted : 1) : kMaxBlocks);
}

/// Uniform in [-1, 1) from a 64-bit mix of (seed, index) (SplitMix64's finalizer): inputs with
/// the bit activity of real weights and activations, not zeros.
__device__ float uniform(std::uint64_t seed, std::size_t i) {
  std::uint64_t z = seed + 0x9E3779B97F4A7C15ull * (static_cast<std::uint64_t>(i) + 1);
  z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ull;
  z = (z ^ (z >> 27)) * 0x94D049BB133111EBull;
  z ^= z >> 31;
  return static_cast<float>(z >> 40) * (2.0f / 16777216.0f) - 1.0f;
}

__global__ void fill_bf16_kernel(__nv_bfloat16* data, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    data[i] = __float2bfloat16(uniform(seed, i));
}

__global__ void fill_fp8_kernel(__nv_fp8_e4m3* data, std::size_t n, std::uint64_t seed) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    data[i] = __nv_fp8_e4m3(uniform(seed, i));
}

__global__ void fill_pattern_kernel(float* data, std::size_t n, int rank) {
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    data[i] = pattern(rank, i);
}

__global__ void count_wrong_kernel(const float* recv, std::size_t n, CollOp op, int rank,
                                   int nranks, std::size_t c, unsigned long long* wrong) {
  unsigned long long mine = 0;
  for (std::size_t i = blockIdx.x * static_cast<std::size_t>(blockDim.x) + threadIdx.x; i < n;
       i += static_cast<std::size_t>(gridDim.x) * blockDim.x)
    if (!(recv[i] == expected(op, rank, nranks, c, i))) ++mine;
  if (mine > 0) atomicAdd(wrong, mine);
}

}  // namespace

void check_kernel_launch(const char* what) {
  const cudaError_t status = cudaGetLastError();
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + " launch: " + cudaGetErrorString(status));
}

void fill_random_bf16(void* data, std::size_t n, std::uint64_t seed, cudaStream_t stream) {
  fill_bf16_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<__nv_bfloat16*>(data), n,
                                                           seed);
  check_kernel_launch("bf16 random fill");
}

void fill_random_fp8(void* data, std::size_t n, std::uint64_t seed, cudaStream_t stream) {
  fill_fp8_kernel<<<blocks_for(n), kThreads, 0, stream>>>(static_cast<__nv_fp8_e4m3*>(data), n,
                                                          seed);
  check_kernel_launch("fp8 random fill");
}

void fill_pattern(float* data, std::size_t n, int rank, cudaStream_t stream) {
  fill_pattern_kernel<<<blocks_for(n), kThreads, 0, stream>>>(data, n, rank);
  check_kernel_launch("NCCL pattern fill");
}

void count_wrong(const float* recv, std::size_t n, CollOp op, int rank, int nranks, std::size_t c,
                 unsigned long long* wrong, cudaStream_t stream) {
  count_wrong_kernel<<<blocks_for(n), kThreads, 0, stream>>>(recv, n, op, rank, nranks, c, wrong);
  check_kernel_launch("NCCL data check");
}

}  // namespace twin::calib
