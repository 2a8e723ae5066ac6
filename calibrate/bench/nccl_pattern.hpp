#pragma once
/// The data check of the NCCL sweeps, shared by the GPU kernels and the CPU tests.
///
/// Every rank fills its send buffer with pattern(rank, i) = (7 rank + i) mod 13: small integers,
/// so float sums over up to 2^20 ranks stay exact and any lost, duplicated or misplaced element
/// changes a value. expected() is what element i of a rank's receive buffer must hold after the
/// collective, from the collective's definition (c = elements per call, as passed to NCCL):
///   all_reduce      recv[i]        = sum_s pattern(s, i)                      i < c
///   all_gather      recv[s c + j]  = pattern(s, j)                            j < c
///   reduce_scatter  recv[j]        = sum_s pattern(s, rank c + j)             j < c
///   alltoall        recv[p c + j]  = pattern(p, rank c + j)                   j < c
///   sendrecv        recv[j]        = pattern((rank - 1) mod n, j)             j < c

#include <cstddef>

#ifdef __CUDACC__
#define TWIN_HOST_DEVICE __host__ __device__
#else
#define TWIN_HOST_DEVICE
#endif

namespace twin::calib {

enum class CollOp : int { all_reduce, all_gather, reduce_scatter, alltoall, sendrecv };

TWIN_HOST_DEVICE inline float pattern(int rank, std::size_t i) {
  return static_cast<float>((7 * static_cast<std::size_t>(rank) + i) % 13);
}

TWIN_HOST_DEVICE inline std::size_t send_elements(CollOp op, int nranks, std::size_t c) {
  return op == CollOp::reduce_scatter || op == CollOp::alltoall
             ? c * static_cast<std::size_t>(nranks)
             : c;
}

TWIN_HOST_DEVICE inline std::size_t recv_elements(CollOp op, int nranks, std::size_t c) {
  return op == CollOp::all_gather || op == CollOp::alltoall ? c * static_cast<std::size_t>(nranks)
                                                            : c;
}

TWIN_HOST_DEVICE inline float expected(CollOp op, int rank, int nranks, std::size_t c,
                                       std::size_t i) {
  const std::size_t r = static_cast<std::size_t>(rank);
  float sum = 0;
  switch (op) {
    case CollOp::all_reduce:
      for (int s = 0; s < nranks; ++s) sum += pattern(s, i);
      return sum;
    case CollOp::all_gather:
      return pattern(static_cast<int>(i / c), i % c);
    case CollOp::reduce_scatter:
      for (int s = 0; s < nranks; ++s) sum += pattern(s, r * c + i);
      return sum;
    case CollOp::alltoall:
      return pattern(static_cast<int>(i / c), r * c + i % c);
    case CollOp::sendrecv:
      return pattern((rank + nranks - 1) % nranks, i);
  }
  return -1;
}

}  // namespace twin::calib
