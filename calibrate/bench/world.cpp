// clustertwin-calib's process world: MPI when launched by mpirun/srun (one rank per GPU),
// otherwise one process; error exits that abort the whole job; waits with a timeout.
#include <fmt/format.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>

#include "calibrate/bench/calib.hpp"
#include "core/error.hpp"

#ifdef CLUSTERTWIN_WITH_MPI
#include <mpi.h>
#endif

namespace twin::calib {
namespace {

#ifdef CLUSTERTWIN_WITH_MPI
void check_mpi(int status, const char* what) {
  if (status != MPI_SUCCESS)
    throw std::runtime_error(fmt::format("{}: MPI error {}", what, status));
}
#endif

std::string hostname() {
  char host[256] = {0};
  if (gethostname(host, sizeof host - 1) != 0) return "unknown-host";
  return host;
}

}  // namespace

void wait_until(const std::function<bool()>& done, double timeout_s, const std::string& what,
                const std::function<void()>& between) {
  const auto start = std::chrono::steady_clock::now();
  while (!done()) {
    const double waited =
        std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (waited > timeout_s)
      throw std::runtime_error(fmt::format(
          "{}: not finished after {:.0f} s (--timeout); a GPU, link or peer rank is stuck", what,
          timeout_s));
    if (between) between();
  }
}

void wait_stream(cudaStream_t stream, double timeout_s, const std::string& what) {
  wait_until(
      [&] {
        const cudaError_t status = cudaStreamQuery(stream);
        if (status == cudaErrorNotReady) return false;
        check_cuda(status, what.c_str());
        return true;
      },
      timeout_s, what);
}

World start_world(const Launch& launch, int& argc, char**& argv) {
  World w;
  w.host = hostname();
#ifdef CLUSTERTWIN_WITH_MPI
  if (launch.launched()) {
    check_mpi(MPI_Init(&argc, &argv), "MPI_Init");
    check_mpi(MPI_Comm_rank(MPI_COMM_WORLD, &w.rank), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(MPI_COMM_WORLD, &w.size), "MPI_Comm_size");
    w.mpi = w.size > 1;
    if (launch.world_size > 1 && w.size != launch.world_size)
      throw core::Error("launcher", launch.launcher,
                        fmt::format("started {} ranks but MPI sees {}: the MPI library did not "
                                    "connect to the launcher (with Slurm, try srun --mpi=pmix)",
                                    launch.world_size, w.size));
    MPI_Comm local;
    check_mpi(
        MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, w.rank, MPI_INFO_NULL, &local),
        "MPI_Comm_split_type");
    check_mpi(MPI_Comm_rank(local, &w.local_rank), "MPI_Comm_rank");
    check_mpi(MPI_Comm_size(local, &w.local_size), "MPI_Comm_size");
    int is_leader = w.local_rank == 0 ? 1 : 0;
    check_mpi(MPI_Allreduce(&is_leader, &w.nodes, 1, MPI_INT, MPI_SUM, MPI_COMM_WORLD),
              "MPI_Allreduce");
    MPI_Comm_free(&local);
  }
#else
  (void)launch;
#endif
  (void)argc;
  (void)argv;
  return w;
}

void fail_world(const World& world, const std::string& message, int code) {
  if (world.mpi)
    fmt::print(stderr, "clustertwin-calib: rank {} on {}: error: {}\n", world.rank, world.host,
               message);
  else
    fmt::print(stderr, "clustertwin-calib: error: {}\n", message);
  std::fflush(stderr);
#ifdef CLUSTERTWIN_WITH_MPI
  if (world.mpi) MPI_Abort(MPI_COMM_WORLD, code);
#else
  (void)code;  // without MPI the caller exits with it
#endif
}

void finish_world(const World& world) {
#ifdef CLUSTERTWIN_WITH_MPI
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Finalize();
#endif
  (void)world;
}

namespace {

enum class Reduction { sum, max };

/// `value` reduced over every rank (itself without MPI).
double over_ranks(double value, Reduction how, const World& world) {
#ifdef CLUSTERTWIN_WITH_MPI
  if (world.mpi) {
    double out = 0;
    check_mpi(MPI_Allreduce(&value, &out, 1, MPI_DOUBLE, how == Reduction::sum ? MPI_SUM : MPI_MAX,
                            MPI_COMM_WORLD),
              "MPI_Allreduce");
    return out;
  }
#endif
  (void)how;
  (void)world;
  return value;
}

}  // namespace

double sum_over_ranks(double value, const World& world) {
  return over_ranks(value, Reduction::sum, world);
}

double max_over_ranks(double value, const World& world) {
  return over_ranks(value, Reduction::max, world);
}

void barrier(const World& world) {
#ifdef CLUSTERTWIN_WITH_MPI
  if (world.mpi) check_mpi(MPI_Barrier(MPI_COMM_WORLD), "MPI_Barrier");
#endif
  (void)world;
}

void broadcast_bytes(void* data, int bytes, const World& world) {
#ifdef CLUSTERTWIN_WITH_MPI
  if (world.mpi) check_mpi(MPI_Bcast(data, bytes, MPI_BYTE, 0, MPI_COMM_WORLD), "MPI_Bcast");
#endif
  (void)data;
  (void)bytes;
  (void)world;
}

namespace {
constexpr int kLine = 1024;

std::vector<char> fixed_line(const std::string& text) {
  std::vector<char> line(kLine, '\0');
  std::copy_n(text.begin(), std::min<std::size_t>(text.size(), kLine - 1), line.begin());
  return line;
}
}  // namespace

std::string gather_text(const std::string& mine, const World& world) {
#ifdef CLUSTERTWIN_WITH_MPI
  if (world.mpi) {
    const std::vector<char> line = fixed_line(mine);
    std::vector<char> all(static_cast<std::size_t>(kLine) * world.size, '\0');
    check_mpi(
        MPI_Gather(line.data(), kLine, MPI_CHAR, all.data(), kLine, MPI_CHAR, 0, MPI_COMM_WORLD),
        "MPI_Gather");
    std::string out;
    for (int r = 0; r < world.size; ++r)
      out += std::string(all.data() + static_cast<std::size_t>(r) * kLine);
    return out;
  }
#endif
  (void)world;
  return mine;
}

std::vector<std::string> allgather_on_node(const std::string& mine, const World& world) {
#ifdef CLUSTERTWIN_WITH_MPI
  if (world.mpi) {
    MPI_Comm local;
    check_mpi(MPI_Comm_split_type(MPI_COMM_WORLD, MPI_COMM_TYPE_SHARED, world.rank, MPI_INFO_NULL,
                                  &local),
              "MPI_Comm_split_type");
    const std::vector<char> line = fixed_line(mine);
    std::vector<char> all(static_cast<std::size_t>(kLine) * world.local_size, '\0');
    check_mpi(MPI_Allgather(line.data(), kLine, MPI_CHAR, all.data(), kLine, MPI_CHAR, local),
              "MPI_Allgather");
    MPI_Comm_free(&local);
    std::vector<std::string> out;
    for (int r = 0; r < world.local_size; ++r)
      out.emplace_back(all.data() + static_cast<std::size_t>(r) * kLine);
    return out;
  }
#endif
  (void)world;
  return {mine};
}

}  // namespace twin::calib
