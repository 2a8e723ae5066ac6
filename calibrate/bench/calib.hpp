#pragma once
// Shared pieces of clustertwin-calib: options, error checks, the measurement routines.

#include <cuda_runtime.h>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "calibrate/raw_data.hpp"

namespace twin::calib {

struct Options {
  std::string out_dir = "calibration";
  bool gemm = true, hbm = true, nccl = true;
  std::vector<std::string> ops = {"all_reduce", "all_gather", "reduce_scatter", "alltoall",
                                  "sendrecv"};
  double min_bytes = 8;
  double max_bytes = 16.0 * 1024 * 1024 * 1024;
  int warmup = 5;      // as nccl-tests' default -w 5
  int iters = 20;      // as nccl-tests' default -n 20
  bool quick = false;  // fewer shapes and sizes, for a smoke run
};

/// Rank layout: one process per GPU under MPI, or one process driving every local GPU.
struct World {
  int rank = 0, size = 1, local_rank = 0;
  int local_gpus = 0;
  int nodes = 1;
  std::string host;
  bool mpi = false;
};

inline void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

/// GEMM throughput over transformer shapes (bf16; fp8 where the GPU has it) on the current GPU.
std::map<std::string, std::vector<calibrate::GemmSample>> run_gemm(const Options& options);
/// Device-to-device copy bandwidth (counting read + write) on the current GPU.
std::vector<calibrate::HbmSample> run_hbm(const Options& options);
/// NCCL collectives; writes nccl-tests-style text for each op into `text` (rank 0).
std::map<std::string, calibrate::CollectiveSamples> run_nccl(
    const Options& options, const World& world, std::map<std::string, std::string>& text);

}  // namespace twin::calib
