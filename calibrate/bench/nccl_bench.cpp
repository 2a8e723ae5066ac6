// NCCL collective sweeps in the manner of nccl-tests: warm-up, then timed iterations, sizes
// doubling from min to max, out-of-place, float sums; output in nccl-tests' text layout.
#include <cuda_runtime.h>
#include <fmt/format.h>
#include <nccl.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <map>

#include "calibrate/bench/calib.hpp"
#include "calibrate/nccl_tests.hpp"

#ifdef CLUSTERTWIN_WITH_MPI
#include <mpi.h>
#endif

namespace twin::calib {
namespace {

void check_nccl(ncclResult_t status, const char* what) {
  if (status != ncclSuccess)
    throw std::runtime_error(std::string(what) + ": " + ncclGetErrorString(status));
}

struct Local {
  int device = 0;
  ncclComm_t comm = nullptr;
  cudaStream_t stream = nullptr;
  void* send = nullptr;
  void* recv = nullptr;
};

/// Issues one collective on every GPU this process drives.
void launch(const std::string& op, std::vector<Local>& locals, int nranks, int first_rank,
            size_t count) {
  check_nccl(ncclGroupStart(), "ncclGroupStart");
  for (std::size_t i = 0; i < locals.size(); ++i) {
    Local& l = locals[i];
    const int rank = first_rank + static_cast<int>(i);
    if (op == "all_reduce") {
      check_nccl(ncclAllReduce(l.send, l.recv, count, ncclFloat, ncclSum, l.comm, l.stream),
                 "ncclAllReduce");
    } else if (op == "all_gather") {
      check_nccl(ncclAllGather(l.send, l.recv, count / nranks, ncclFloat, l.comm, l.stream),
                 "ncclAllGather");
    } else if (op == "reduce_scatter") {
      check_nccl(
          ncclReduceScatter(l.send, l.recv, count / nranks, ncclFloat, ncclSum, l.comm, l.stream),
          "ncclReduceScatter");
    } else if (op == "alltoall") {
      const size_t chunk = count / nranks;
      for (int peer = 0; peer < nranks; ++peer) {
        check_nccl(ncclSend(static_cast<float*>(l.send) + peer * chunk, chunk, ncclFloat, peer,
                            l.comm, l.stream),
                   "ncclSend");
        check_nccl(ncclRecv(static_cast<float*>(l.recv) + peer * chunk, chunk, ncclFloat, peer,
                            l.comm, l.stream),
                   "ncclRecv");
      }
    } else if (op == "sendrecv") {
      check_nccl(ncclSend(l.send, count, ncclFloat, (rank + 1) % nranks, l.comm, l.stream),
                 "ncclSend");
      check_nccl(ncclRecv(l.recv, count, ncclFloat, (rank + nranks - 1) % nranks, l.comm, l.stream),
                 "ncclRecv");
    } else {
      throw std::runtime_error("unknown collective " + op);
    }
  }
  check_nccl(ncclGroupEnd(), "ncclGroupEnd");
}

void synchronize(std::vector<Local>& locals) {
  for (auto& l : locals) {
    check_cuda(cudaSetDevice(l.device), "cudaSetDevice");
    check_cuda(cudaStreamSynchronize(l.stream), "cudaStreamSynchronize");
  }
}

double max_over_ranks(double value, const World& world) {
#ifdef CLUSTERTWIN_WITH_MPI
  if (world.mpi) {
    double out = 0;
    MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, MPI_MAX, MPI_COMM_WORLD);
    return out;
  }
#endif
  (void)world;
  return value;
}

void barrier(const World& world) {
#ifdef CLUSTERTWIN_WITH_MPI
  if (world.mpi) MPI_Barrier(MPI_COMM_WORLD);
#endif
  (void)world;
}

/// "#  Rank  0 Group  0 Pid 123 on host device  0 [0x18] NVIDIA H100 80GB HBM3" lines, gathered
/// on rank 0 so the log says how many nodes and GPUs per node it ran on.
std::string device_lines(const std::vector<Local>& locals, const World& world) {
  std::string mine;
  for (std::size_t i = 0; i < locals.size(); ++i) {
    cudaDeviceProp prop{};
    cudaGetDeviceProperties(&prop, locals[i].device);
    const int rank = world.mpi ? world.rank : static_cast<int>(i);
    mine += fmt::format("#  Rank {:>2} Group  0 Pid {:>6} on {:>10} device {:>2} [0x{:02x}] {}\n",
                        rank, static_cast<int>(getpid()), world.host, locals[i].device,
                        prop.pciBusID, prop.name);
  }
#ifdef CLUSTERTWIN_WITH_MPI
  if (world.mpi) {
    constexpr int kLine = 256;
    std::vector<char> line(kLine, '\0'), all(static_cast<std::size_t>(kLine) * world.size, '\0');
    std::copy_n(mine.begin(), std::min<std::size_t>(mine.size(), kLine - 1), line.begin());
    MPI_Gather(line.data(), kLine, MPI_CHAR, all.data(), kLine, MPI_CHAR, 0, MPI_COMM_WORLD);
    std::string out;
    for (int r = 0; r < world.size; ++r)
      out += std::string(all.data() + static_cast<std::size_t>(r) * kLine);
    return out;
  }
#endif
  return mine;
}

}  // namespace

std::map<std::string, calibrate::CollectiveSamples> run_nccl(
    const Options& options, const World& world, std::map<std::string, std::string>& text) {
  std::vector<Local> locals;
  int nranks = 0, first_rank = 0;
  if (world.mpi) {
    nranks = world.size;
    first_rank = world.rank;
    ncclUniqueId id;
    if (world.rank == 0) check_nccl(ncclGetUniqueId(&id), "ncclGetUniqueId");
#ifdef CLUSTERTWIN_WITH_MPI
    MPI_Bcast(&id, sizeof id, MPI_BYTE, 0, MPI_COMM_WORLD);
#endif
    Local l;
    l.device = world.local_rank % world.local_gpus;
    check_cuda(cudaSetDevice(l.device), "cudaSetDevice");
    check_nccl(ncclCommInitRank(&l.comm, nranks, id, world.rank), "ncclCommInitRank");
    locals.push_back(l);
  } else {
    nranks = world.local_gpus;
    std::vector<ncclComm_t> comms(static_cast<std::size_t>(nranks));
    std::vector<int> devices(static_cast<std::size_t>(nranks));
    for (int d = 0; d < nranks; ++d) devices[static_cast<std::size_t>(d)] = d;
    check_nccl(ncclCommInitAll(comms.data(), nranks, devices.data()), "ncclCommInitAll");
    for (int d = 0; d < nranks; ++d)
      locals.push_back(Local{d, comms[static_cast<std::size_t>(d)], nullptr, nullptr, nullptr});
  }

  // Buffers for the largest size that fits: halve until both allocations succeed everywhere.
  size_t bytes = static_cast<size_t>(options.max_bytes);
  for (;;) {
    bool ok = true;
    for (auto& l : locals) {
      cudaSetDevice(l.device);
      if (l.stream == nullptr) check_cuda(cudaStreamCreate(&l.stream), "cudaStreamCreate");
      if (cudaMalloc(&l.send, bytes) != cudaSuccess || cudaMalloc(&l.recv, bytes) != cudaSuccess)
        ok = false;
    }
    ok = max_over_ranks(ok ? 0.0 : 1.0, world) == 0.0;
    if (ok) break;
    for (auto& l : locals) {
      cudaSetDevice(l.device);
      cudaFree(l.send);
      cudaFree(l.recv);
      l.send = l.recv = nullptr;
    }
    cudaGetLastError();  // clear the allocation error
    bytes /= 2;
    if (world.rank == 0)
      fmt::print("  nccl: buffers do not fit; max size lowered to {} B\n", bytes);
    if (bytes < 1024) throw std::runtime_error("cannot allocate NCCL buffers");
  }
  for (auto& l : locals) {
    cudaSetDevice(l.device);
    cudaMemset(l.send, 0, bytes);
  }

  const std::string devices = device_lines(locals, world);
  std::map<std::string, calibrate::CollectiveSamples> out;
  for (const auto& op : options.ops) {
    calibrate::CollectiveSamples samples;
    samples.ranks = nranks;
    samples.nodes = world.nodes;
    std::string log =
        fmt::format("# clustertwin-calib {}_perf\n# Collective test starting: {}_perf\n", op, op);
    log += fmt::format(
        "# nThread 1 nGpus {} minBytes {:.0f} maxBytes {} step: 2(factor) warmup iters: {} iters: "
        "{}\n",
        locals.size(), options.min_bytes, bytes, options.warmup, options.iters);
    log += "#\n# Using devices\n" + devices + "#\n";
    log += "#       size         count      type   redop    root     time   algbw   busbw #wrong\n";
    log += "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)\n";
    const double factor = calibrate::bus_factor(op, nranks);
    double busbw_sum = 0;
    for (double size = options.min_bytes; size <= static_cast<double>(bytes); size *= 2) {
      // Whole floats, divisible among ranks where the op splits the buffer (as nccl-tests does).
      const size_t per = (op == "all_reduce" || op == "sendrecv") ? 1 : static_cast<size_t>(nranks);
      const size_t count = std::max<size_t>(per, static_cast<size_t>(size) / 4 / per * per);
      const double actual = static_cast<double>(count) * 4;
      for (int i = 0; i < options.warmup; ++i) launch(op, locals, nranks, first_rank, count);
      synchronize(locals);
      barrier(world);
      const auto start = std::chrono::steady_clock::now();
      for (int i = 0; i < options.iters; ++i) launch(op, locals, nranks, first_rank, count);
      synchronize(locals);
      const double seconds =
          std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
      const double us = max_over_ranks(1e6 * seconds / options.iters, world);
      const double algbw = actual / (us * 1e-6) / 1e9;
      const double busbw = algbw * factor;
      busbw_sum += busbw;
      log += fmt::format(
          "{:>12.0f}  {:>12}     float     sum      -1  {:>7.2f}  {:>6.2f}  {:>6.2f}     N/A\n",
          actual, count, us, algbw, busbw);
      samples.size_bytes.push_back(actual);
      samples.time_us.push_back(us);
      samples.algbw_GBps.push_back(algbw);
      samples.busbw_GBps.push_back(busbw);
    }
    log += fmt::format("# Avg bus bandwidth    : {:.4f}\n#\n",
                       samples.busbw_GBps.empty()
                           ? 0.0
                           : busbw_sum / static_cast<double>(samples.busbw_GBps.size()));
    if (world.rank == 0) fmt::print("{}", log);
    text[op] = log;
    out[op] = std::move(samples);
  }
  for (auto& l : locals) {
    cudaSetDevice(l.device);
    cudaFree(l.send);
    cudaFree(l.recv);
    cudaStreamDestroy(l.stream);
    ncclCommDestroy(l.comm);
  }
  return out;
}

}  // namespace twin::calib
