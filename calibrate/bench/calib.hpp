#pragma once
// Shared pieces of clustertwin-calib: the rank layout, error checks, waiting with a timeout,
// and the three measurement routines.

#include <cuda_runtime.h>

#include <functional>
#include <map>
#include <stdexcept>
#include <string>
#include <vector>

#include "calibrate/bench/gpu_monitor.hpp"
#include "calibrate/bench/launch.hpp"
#include "calibrate/bench/options.hpp"
#include "calibrate/raw_data.hpp"

namespace twin::calib {

/// Rank layout: one process per GPU under MPI, or one process driving every local GPU.
struct World {
  int rank = 0, size = 1;
  int local_rank = 0, local_size = 1;
  int local_gpus = 0;  ///< GPUs this process sees
  int device = 0;      ///< the GPU this rank measures (MPI mode)
  int nodes = 1;
  std::string host;
  bool mpi = false;  ///< MPI initialized with more than one rank
};

inline void check_cuda(cudaError_t status, const char* what) {
  if (status != cudaSuccess)
    throw std::runtime_error(std::string(what) + ": " + cudaGetErrorString(status));
}

/// Polls `done` (which returns true when the work finished and throws on an error) until it
/// says so, calling `between` between polls; throws after `timeout_s` naming `what`. This
/// replaces blocking synchronizations, which wait forever on a dead link or a hung peer.
void wait_until(const std::function<bool()>& done, double timeout_s, const std::string& what,
                const std::function<void()>& between = {});
/// wait_until for a stream's completion (cudaStreamQuery).
void wait_stream(cudaStream_t stream, double timeout_s, const std::string& what);

// MPI helpers (world.cpp); in a single-process world they are identities.
World start_world(const Launch& launch, int& argc, char**& argv);
/// Prints the error with the rank and host; with several MPI ranks aborts the whole job
/// (MPI_Abort), so no rank is left waiting for one that failed. Returns otherwise.
void fail_world(const World& world, const std::string& message, int code);
void finish_world(const World& world);
double sum_over_ranks(double value, const World& world);
double max_over_ranks(double value, const World& world);
void barrier(const World& world);
void broadcast_bytes(void* data, int bytes, const World& world);
/// Concatenation of every rank's text on rank 0 (each at most 1023 bytes), in rank order.
std::string gather_text(const std::string& mine, const World& world);
/// Every rank of this node's `mine`, in local-rank order.
std::vector<std::string> allgather_on_node(const std::string& mine, const World& world);

/// GEMM throughput over transformer shapes (bf16; fp8 where the GPU has it) on the current GPU.
std::map<std::string, std::vector<calibrate::GemmSample>> run_gemm(const Options& options,
                                                                   const GpuMonitor& monitor);
/// Device-to-device copy bandwidth (counting read + write) on the current GPU, with working
/// sets from kHbmMinWorkingSetOverL2 x L2 upwards.
std::vector<calibrate::HbmSample> run_hbm(const Options& options, double l2_bytes);
/// NCCL collectives; writes nccl-tests-style text for each op into `text` (rank 0).
std::map<std::string, calibrate::CollectiveSamples> run_nccl(
    const Options& options, const World& world, std::map<std::string, std::string>& text);

}  // namespace twin::calib
