// NCCL collective sweeps in the manner of nccl-tests (sizes, counts, columns and bus factors in
// calibrate/bench/nccl_text.hpp): per size, warm-up calls, a barrier, then --iters back-to-back
// out-of-place float calls timed by the host clock, each on buffers shifted as nccl-tests does;
// the row's time is the average over ranks (nccl-tests' default) or the maximum
// (--time-over-ranks max). Then one call on the known data pattern is checked element by element
// on the GPU (#wrong, summed over ranks); any wrong element stops the run.
//
// Every wait polls cudaStreamQuery and ncclCommGetAsyncError with --timeout (as nccl-tests'
// testStreamSynchronize): a dead link or a failed peer ends in an error, the communicators are
// aborted (ncclCommAbort) and the caller aborts the MPI job, instead of a hang.
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include "calibrate/bench/calib.hpp"
#include "calibrate/bench/kernels.hpp"
#include "calibrate/bench/nccl_text.hpp"
#include "calibrate/nccl_tests.hpp"

namespace twin::calib {
namespace {

void check_nccl(ncclResult_t status, const char* what) {
  if (status != ncclSuccess)
    throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(status));
}

struct Local {
  int device = 0;
  int rank = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  void* send = nullptr;
  void* recv = nullptr;
  unsigned long long* wrong = nullptr;  ///< device counter of the data check
};

/// The GPUs this process drives. On destruction the communicators are destroyed after a clean
/// run and aborted otherwise (so no kernel waits forever on a peer), then memory is freed.
struct Locals {
  std::vector<Local> all;
  bool clean = false;
  ~Locals() {
    for (auto& l : all) {
      cudaSetDevice(l.device);
      if (l.comm != nullptr) clean ? ncclCommDestroy(l.comm) : ncclCommAbort(l.comm);
    }
    for (auto& l : all) {
      cudaSetDevice(l.device);
      cudaFree(l.send);
      cudaFree(l.recv);
      cudaFree(l.wrong);
      if (l.stream != nullptr) cudaStreamDestroy(l.stream);
    }
  }
};

/// Issues one collective on every GPU this process drives, at byte offset `shift`.
void launch(CollOp op, std::vector<Local>& locals, int nranks, std::size_t c, std::size_t shift) {
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (Local& l : locals) {
    float* send = reinterpret_cast<float*>(static_cast<char*>(l.send) + shift);
    float* recv = reinterpret_cast<float*>(static_cast<char*>(l.recv) + shift);
    switch (op) {
      case CollOp::all_reduce:
        check_nccl(ncclAllReduce(send, recv, c, ncclFloat, ncclSum, l.comm, l.stream),
                   "ncclAllReduce");
        break;
      case CollOp::all_gather:
        check_nccl(ncclAllGather(send, recv, c, ncclFloat, l.comm, l.stream), "ncclAllGather");
        break;
      case CollOp::reduce_scatter:
        check_nccl(ncclReduceScatter(send, recv, c, ncclFloat, ncclSum, l.comm, l.stream),
                   "ncclReduceScatter");
        break;
      case CollOp::alltoall:
        for (int peer = 0; peer < nranks; ++peer) {
          const std::size_t at = static_cast<std::size_t>(peer) * c;
          check_nccl(ncclSend(send + at, c, ncclFloat, peer, l.comm, l.stream), "ncclSend");
          check_nccl(ncclRecv(recv + at, c, ncclFloat, peer, l.comm, l.stream), "ncclRecv");
        }
        break;
      case CollOp::sendrecv:
        check_nccl(ncclSend(send, c, ncclFloat, (l.rank + 1) % nranks, l.comm, l.stream),
                   "ncclSend");
        check_nccl(ncclRecv(recv, c, ncclFloat, (l.rank + nranks - 1) % nranks, l.comm, l.stream),
                   "ncclRecv");
        break;
    }
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");
}

/// Waits for every local stream, polling NCCL's asynchronous error (see the header comment).
void wait_all(std::vector<Local>& locals, double timeout_s, const std::string& what) {
  for (Local& l : locals) {
    check_cuda(cudaSetDevice(l.device), "cudaSetDevice");
    wait_until(
        [&] {
          ncclResult_t async = ncclSuccess;
          check_nccl(ncclCommGetAsyncError(l.comm, &async), "ncclCommGetAsyncError");
          if (async != ncclSuccess && async != ncclInProgress)
            throw std::runtime_error(fmt::format("{}: NCCL asynchronous error on rank {}: {}", what,
                                                 l.rank, ncclGetErrorString(async)));
          const cudaError_t status = cudaStreamQuery(l.stream);
          if (status == cudaErrorNotReady) return false;
          check_cuda(status, what.c_str());
          return true;
        },
        timeout_s, what);
  }
}

/// "#  Rank  0 Group  0 Pid 123 on host device  0 [0x18] NVIDIA H100 80GB HBM3" lines, gathered
/// on rank 0 so the log says how many nodes and GPUs per node it ran on.
std::string device_lines(const std::vector<Local>& locals, const World& world) {
  std::string mine;
  for (const Local& l : locals) {
    cudaDeviceProp prop{};
    check_cuda(cudaGetDeviceProperties(&prop, l.device), "cudaGetDeviceProperties");
    mine += fmt::format("#  Rank {:>2} Group  0 Pid {:>6} on {:>10} device {:>2} [0x{:02x}] {}\n",
                        l.rank, static_cast<int>(getpid()), world.host, l.device, prop.pciBusID,
                        prop.name);
  }
  return gather_text(mine, world);
}

/// Allocates send/recv buffers of the largest size that fits on every rank (halving).
std::size_t allocate(std::vector<Local>& locals, double max_bytes, const World& world) {
  std::size_t bytes = static_cast<std::size_t>(max_bytes);
  for (;;) {
    bool ok = true;
    for (Local& l : locals) {
      check_cuda(cudaSetDevice(l.device), "cudaSetDevice");
      if (cudaMalloc(&l.send, bytes) != cudaSuccess || cudaMalloc(&l.recv, bytes) != cudaSuccess)
        ok = false;
    }
    if (max_over_ranks(ok ? 0.0 : 1.0, world) == 0.0) return bytes;
    for (Local& l : locals) {
      cudaSetDevice(l.device);
      cudaFree(l.send);
      cudaFree(l.recv);
      l.send = l.recv = nullptr;
    }
    (void)cudaGetLastError();  // the failed allocation's error is expected here
    bytes /= 2;
    if (world.rank == 0)
      fmt::print("  nccl: buffers do not fit; max size lowered to {} B\n", bytes);
    if (bytes < 1024) throw std::runtime_error("cannot allocate NCCL buffers");
  }
}

/// Wrong elements of one checked call, summed over this process's GPUs.
double data_check(CollOp op, std::vector<Local>& locals, int nranks, std::size_t c,
                  double timeout_s) {
  for (Local& l : locals) {
    check_cuda(cudaSetDevice(l.device), "cudaSetDevice");
    fill_pattern(static_cast<float*>(l.send), send_elements(op, nranks, c), l.rank, l.stream);
    // 0xff bytes are NaN floats: an element the collective did not write counts as wrong.
    check_cuda(
        cudaMemsetAsync(l.recv, 0xff, recv_elements(op, nranks, c) * sizeof(float), l.stream),
        "cudaMemsetAsync");
    check_cuda(cudaMemsetAsync(l.wrong, 0, sizeof(unsigned long long), l.stream),
               "cudaMemsetAsync");
  }
  launch(op, locals, nranks, c, 0);
  double wrong = 0;
  for (Local& l : locals) {
    check_cuda(cudaSetDevice(l.device), "cudaSetDevice");
    count_wrong(static_cast<const float*>(l.recv), recv_elements(op, nranks, c), op, l.rank, nranks,
                c, l.wrong, l.stream);
  }
  wait_all(locals, timeout_s, "NCCL data check");
  for (Local& l : locals) {
    unsigned long long count = 0;
    check_cuda(cudaSetDevice(l.device), "cudaSetDevice");
    check_cuda(cudaMemcpy(&count, l.wrong, sizeof count, cudaMemcpyDeviceToHost), "cudaMemcpy");
    wrong += static_cast<double>(count);
  }
  return wrong;
}

}  // namespace

std::map<std::string, calibrate::CollectiveSamples> run_nccl(
    const Options& options, const World& world, std::map<std::string, std::string>& text) {
  Locals locals;
  int nranks = 0;
  if (world.mpi) {
    nranks = world.size;
    ncclUniqueId id{};
    if (world.rank == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
    broadcast_bytes(&id, static_cast<int>(sizeof id), world);
    Local l;
    l.device = world.device;
    l.rank = world.rank;
    check_cuda(cudaSetDevice(l.device), "cudaSetDevice");
    locals.all.push_back(l);
    // A rank whose init fails throws; main aborts the job, which releases the ranks waiting.
    check_nccl(ncclCommInitRank(&locals.all[0].comm, nranks, id, world.rank), "ncclCommInitRank");
  } else {
    nranks = world.local_gpus;
    std::vector<ncclComm_t> comms(static_cast<std::size_t>(nranks), nullptr);
    std::vector<int> devices(static_cast<std::size_t>(nranks));
    for (int d = 0; d < nranks; ++d) devices[static_cast<std::size_t>(d)] = d;
    check_nccl(ncclCommInitAll(comms.data(), nranks, devices.data()), "ncclCommInitAll");
    for (int d = 0; d < nranks; ++d) {
      Local l;
      l.device = d;
      l.rank = d;
      l.comm = comms[static_cast<std::size_t>(d)];
      locals.all.push_back(l);
    }
  }
  for (Local& l : locals.all) {
    check_cuda(cudaSetDevice(l.device), "cudaSetDevice");
    check_cuda(cudaStreamCreate(&l.stream), "cudaStreamCreate");
    check_cuda(cudaMalloc(reinterpret_cast<void**>(&l.wrong), sizeof(unsigned long long)),
               "cudaMalloc check counter");
  }
  const std::size_t capacity = allocate(locals.all, options.max_bytes, world);
  for (Local& l : locals.all) {  // defined contents for the shifted timed calls
    check_cuda(cudaSetDevice(l.device), "cudaSetDevice");
    fill_pattern(static_cast<float*>(l.send), capacity / sizeof(float), l.rank, l.stream);
  }
  wait_all(locals.all, options.timeout_s, "NCCL buffer fill");

  const std::string devices = device_lines(locals.all, world);
  std::map<std::string, calibrate::CollectiveSamples> out;
  for (const auto& name : options.ops) {
    const CollOp op = coll_op(name);
    calibrate::CollectiveSamples samples;
    samples.ranks = nranks;
    samples.nodes = world.nodes;
    std::string log = log_header(name, static_cast<int>(locals.all.size()), options.min_bytes,
                                 static_cast<double>(capacity), options, devices);
    if (world.rank == 0) fmt::print("{}", log);
    const double factor = calibrate::bus_factor(name, nranks);
    double busbw_sum = 0;
    for (const SweepPoint& point :
         sweep_points(op, nranks, options.min_bytes, static_cast<double>(capacity))) {
      const std::string what = fmt::format("{} of {} B", name, point.size_bytes);
      for (int i = 0; i < options.warmup; ++i)
        launch(op, locals.all, nranks, point.count,
               buffer_shift(static_cast<std::size_t>(i), point.size_bytes, capacity));
      wait_all(locals.all, options.timeout_s, what + " (warm-up)");
      barrier(world);
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < options.iters; ++i)
        launch(op, locals.all, nranks, point.count,
               buffer_shift(static_cast<std::size_t>(i), point.size_bytes, capacity));
      wait_all(locals.all, options.timeout_s, what);
      const double mine_us =
          1e6 * std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() /
          options.iters;
      const double us = options.time_over_ranks == TimeOverRanks::average
                            ? sum_over_ranks(mine_us, world) / (world.mpi ? world.size : 1)
                            : max_over_ranks(mine_us, world);
      const double wrong =
          options.check
              ? sum_over_ranks(data_check(op, locals.all, nranks, point.count, options.timeout_s),
                               world)
              : -1;
      const double algbw = static_cast<double>(point.size_bytes) / (us * 1e-6) / 1e9;
      const double busbw = algbw * factor;
      busbw_sum += busbw;
      const std::string row = log_row(name, point, us, algbw, busbw, wrong);
      log += row;
      if (world.rank == 0) fmt::print("{}", row);
      if (wrong > 0)
        throw std::runtime_error(fmt::format(
            "{}: {:.0f} wrong elements in the data check; the results of this node cannot be "
            "trusted",
            what, wrong));
      samples.size_bytes.push_back(static_cast<double>(point.size_bytes));
      samples.time_us.push_back(us);
      samples.algbw_GBps.push_back(algbw);
      samples.busbw_GBps.push_back(busbw);
    }
    const std::string footer = log_footer(
        samples.busbw_GBps.empty() ? 0.0
                                   : busbw_sum / static_cast<double>(samples.busbw_GBps.size()));
    log += footer;
    if (world.rank == 0) fmt::print("{}", footer);
    text[name] = log;
    out[name] = std::move(samples);
  }
  locals.clean = true;
  return out;
}

}  // namespace twin::calib
