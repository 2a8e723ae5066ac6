#include "calibrate/bench/launch.hpp"

#include <fmt/format.h>

#include <cstdio>
#include <cstdlib>
#include <optional>

#include "core/error.hpp"

extern char** environ;

namespace twin::calib {
namespace {

using Env = std::map<std::string, std::string>;

std::optional<std::string> get(const Env& env, const std::string& name) {
  const auto it = env.find(name);
  if (it == env.end()) return std::nullopt;
  return it->second;
}

/// A launcher variable as a non-negative integer; a present but malformed one is an error
/// (it would otherwise silently become a single-process run).
int integer(const Env& env, const std::string& name, int fallback) {
  const auto text = get(env, name);
  if (!text) return fallback;
  char* end = nullptr;
  const long value = std::strtol(text->c_str(), &end, 10);
  if (text->empty() || *end != '\0' || value < 0 || value > 1'000'000'000)
    throw core::Error(name, *text, "launcher variable is not a non-negative integer");
  return static_cast<int>(value);
}

/// Slurm's tasks-per-node list ("8(x2),4") for node `node`; -1 if it cannot be read.
int slurm_tasks_on_node(const std::string& list, int node) {
  int index = 0;
  std::size_t start = 0;
  while (start <= list.size()) {
    const auto comma = list.find(',', start);
    const std::string item = list.substr(start, comma == std::string::npos ? comma : comma - start);
    int tasks = 0, repeat = 1;
    char tail[8] = {0};
    if (std::sscanf(item.c_str(), "%d(x%d)%7s", &tasks, &repeat, tail) == 2 ||
        (std::sscanf(item.c_str(), "%d%7s", &tasks, tail) == 1)) {
      if (node < index + repeat) return tasks;
      index += repeat;
    } else {
      return -1;
    }
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return -1;
}

}  // namespace

Launch detect_launch(const Env& env) {
  Launch l;
  if (get(env, "OMPI_COMM_WORLD_SIZE")) {
    l.launcher = "Open MPI";
    l.world_size = integer(env, "OMPI_COMM_WORLD_SIZE", 1);
    l.rank = integer(env, "OMPI_COMM_WORLD_RANK", 0);
    l.local_rank = integer(env, "OMPI_COMM_WORLD_LOCAL_RANK", -1);
    l.local_size = integer(env, "OMPI_COMM_WORLD_LOCAL_SIZE", -1);
  } else if (get(env, "PMI_SIZE")) {
    l.launcher = "PMI (MPICH/Intel MPI Hydra or srun --mpi=pmi2)";
    l.world_size = integer(env, "PMI_SIZE", 1);
    l.rank = integer(env, "PMI_RANK", 0);
    l.local_rank = integer(env, "MPI_LOCALRANKID", -1);
    l.local_size = integer(env, "MPI_LOCALNRANKS", -1);
  } else if (get(env, "SLURM_STEP_ID") && get(env, "SLURM_PROCID")) {
    l.launcher = get(env, "PMIX_RANK") ? "Slurm srun (PMIx)" : "Slurm srun";
    l.world_size = integer(env, "SLURM_STEP_NUM_TASKS", integer(env, "SLURM_NTASKS", 0));
    l.rank = integer(env, "SLURM_PROCID", 0);
    l.local_rank = integer(env, "SLURM_LOCALID", -1);
    if (const auto list = get(env, "SLURM_STEP_TASKS_PER_NODE"))
      l.local_size = slurm_tasks_on_node(*list, integer(env, "SLURM_NODEID", 0));
  } else if (get(env, "PMIX_RANK")) {
    l.launcher = "PMIx";
    l.world_size = 0;
    l.rank = integer(env, "PMIX_RANK", 0);
  }
  if (l.launched() && l.world_size > 0 && l.rank >= l.world_size)
    throw core::Error(
        "rank", std::to_string(l.rank),
        fmt::format("{} reports rank {} of {} ranks", l.launcher, l.rank, l.world_size));
  return l;
}

Env process_environment() {
  Env env;
  for (char** e = environ; e != nullptr && *e != nullptr; ++e) {
    const std::string entry = *e;
    const auto eq = entry.find('=');
    if (eq != std::string::npos) env[entry.substr(0, eq)] = entry.substr(eq + 1);
  }
  return env;
}

void check_launch(const Launch& launch, bool built_with_mpi) {
  if (!launch.launched() || built_with_mpi || launch.world_size == 1) return;
  throw core::Error(
      "launcher", launch.launcher,
      fmt::format("this clustertwin-calib was built without MPI, so under a launcher of {} "
                  "each process would benchmark every GPU of its node at once; rebuild with "
                  "MPI (libopenmpi-dev) for one rank per GPU, or run it once per node without "
                  "a launcher",
                  launch.world_size > 0 ? std::to_string(launch.world_size) + " ranks"
                                        : "an unknown number of ranks"));
}

int device_for_rank(int local_rank, int local_size, int visible_gpus, const std::string& host) {
  if (visible_gpus >= local_size) return local_rank;
  if (visible_gpus == 1) return 0;  // the launcher bound one GPU to each rank
  throw core::Error("ranks per node", std::to_string(local_size),
                    fmt::format("{} ranks on {} but they see {} GPUs: ranks would share a GPU "
                                "and measure each other; start at most {} ranks per node",
                                local_size, host, visible_gpus, visible_gpus));
}

void check_distinct_gpus(const std::vector<std::string>& gpu_ids, const std::string& host) {
  for (std::size_t i = 0; i < gpu_ids.size(); ++i)
    for (std::size_t j = i + 1; j < gpu_ids.size(); ++j)
      if (gpu_ids[i] == gpu_ids[j])
        throw core::Error("ranks per GPU", gpu_ids[i],
                          fmt::format("local ranks {} and {} on {} drive the same GPU; bind one "
                                      "GPU per rank (e.g. srun --gpus-per-task=1) or start "
                                      "fewer ranks",
                                      i, j, host));
}

}  // namespace twin::calib
