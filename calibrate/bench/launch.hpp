#pragma once
/// How clustertwin-calib was started, read from the environment a launcher leaves, and the
/// rules that keep one process per GPU.
///
/// Launchers and the variables they set (each rank sees its own values):
///   Open MPI mpirun/prterun  OMPI_COMM_WORLD_{SIZE,RANK,LOCAL_RANK,LOCAL_SIZE}
///   MPICH/Intel MPI (Hydra)  PMI_{SIZE,RANK}, MPI_LOCALRANKID, MPI_LOCALNRANKS
///   Slurm srun (any --mpi)   SLURM_STEP_ID, SLURM_PROCID, SLURM_STEP_NUM_TASKS, SLURM_LOCALID,
///                            SLURM_NODEID, SLURM_STEP_TASKS_PER_NODE ("8(x2)" or "8,4");
///                            with --mpi=pmix also PMIX_RANK
///   any PMIx server          PMIX_RANK (world size not in the environment)
/// Open MPI is checked first: under an allocation its ranks also inherit the allocation's
/// SLURM_* variables, which describe the launcher's daemons, not the ranks. A batch script's
/// own SLURM_PROCID is not a launch: only a job step (SLURM_STEP_ID) is.
///
/// One rank per GPU: a build without MPI started by a launcher would run one full-node
/// benchmark per process on the same GPUs, so it refuses; more ranks on a node than GPUs they
/// can see, or two ranks on one physical GPU, is refused too.

#include <map>
#include <string>
#include <vector>

namespace twin::calib {

struct Launch {
  std::string launcher;  ///< "" when started directly
  int world_size = 1;    ///< 0 when the launcher does not say (PMIx alone)
  int rank = 0;
  int local_rank = -1, local_size = -1;  ///< -1 when the launcher does not say
  [[nodiscard]] bool launched() const { return !launcher.empty(); }
};

Launch detect_launch(const std::map<std::string, std::string>& environment);
/// The current process's environment as a map.
std::map<std::string, std::string> process_environment();

/// Throws core::Error when this build cannot serve the launch (a build without MPI under a
/// launcher of more than one rank, or of an unknown number of ranks).
void check_launch(const Launch& launch, bool built_with_mpi);

/// The CUDA device index a rank uses: its local rank when the node's ranks see every GPU, 0
/// when the launcher gave each rank one GPU. Throws core::Error naming the host when more ranks
/// share the node than GPUs they see.
int device_for_rank(int local_rank, int local_size, int visible_gpus, const std::string& host);

/// Throws core::Error naming the ranks when two ranks of a node picked the same physical GPU
/// (`gpu_ids[i]` is the UUID of local rank i's device).
void check_distinct_gpus(const std::vector<std::string>& gpu_ids, const std::string& host);

}  // namespace twin::calib
