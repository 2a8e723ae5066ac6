#pragma once
// Host entry points of the device kernels (kernels.cu, hbm.cu). Each launches on `stream` and
// checks the launch itself; completion and its errors are seen when the stream is waited on.

#include <cuda_runtime.h>

#include <cstddef>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "calibrate/bench/nccl_pattern.hpp"

namespace twin::calib {

/// Throws when the last kernel launch failed (bad configuration, no kernel image for this GPU):
/// a launch that did not happen must never be timed as a fast one.
void check_kernel_launch(const char* what);

void fill_random_bf16(void* data, std::size_t n, std::uint64_t seed, cudaStream_t stream);
void fill_random_fp8(void* data, std::size_t n, std::uint64_t seed, cudaStream_t stream);
/// data[i] = pattern(rank, i) for i < n.
void fill_pattern(float* data, std::size_t n, int rank, cudaStream_t stream);
/// Adds to *wrong (device memory) the number of recv[i], i < n, that differ from expected().
void count_wrong(const float* recv, std::size_t n, CollOp op, int rank, int nranks, std::size_t c,
                 unsigned long long* wrong, cudaStream_t stream);
/// One grid-stride device-to-device copy of `bytes` (a multiple of 16).
void launch_copy(const void* src, void* dst, std::size_t bytes, int blocks, cudaStream_t stream);

}  // namespace twin::calib
