#pragma once
/// The executor of the step program: Megatron's (interleaved) 1F1B order run as a discrete-event
/// simulation of every pipeline stage, with the communication costs the network simulation gave
/// (twin/step_sim.cpp builds them) and the compute each chunk's kernels take.

#include <string>
#include <utility>
#include <vector>

#include "calibrate/kernel_profile.hpp"
#include "twin/step_sim.hpp"
#include "workload/parallelism.hpp"
#include "workload/step_program.hpp"

namespace twin::sim::detail {

/// Communication costs of one stage (seconds per call), from the network simulation.
struct StageComm {
  double tp_slot_s = 0;  ///< one TP "all-reduce" slot (AR, or AG + RS with sequence parallelism)
  double ep_s = 0;       ///< one all-to-all
  double p2p_s = 0;      ///< activation to the next stage
  double cp_s = 0;       ///< one ring-attention K/V exchange step
  /// Per chunk: the gradient synchronization, FSDP's gathers and reduce-scatters, HSDP's
  /// cross-replica all-reduce and the distributed optimizer's all-gather of the updated
  /// parameters.
  std::vector<double> dp_sync_s, fsdp_gather_s, fsdp_scatter_s, hsdp_reduce_s, param_gather_s;
  /// Per chunk, FSDP: the embedding's all-gather before each forward and its gradient's
  /// reduce-scatter after each backward (0 where the chunk holds no embedding).
  std::vector<double> embedding_gather_s, embedding_scatter_s;
  /// Tied embeddings over a pipeline: the all-reduce of the embedding's gradient between the
  /// first and last stage after the step's gradient synchronization (0 on other stages).
  double tied_embedding_s = 0;
};

struct Instance {
  double step_s = 0;
  int critical_stage = 0;
  std::vector<TimelineOp> timeline;
  std::vector<std::pair<std::string, double>> breakdown;
};

/// How much compute slows while NCCL kernels run beside it: the SMs its channels take
/// (tensor-core kernels lose channels / SMs of their throughput) and the HBM traffic it adds
/// (memory-bound kernels lose nccl_hbm_bytes_per_byte x comm rate / achievable HBM).
struct Contention {
  double sm_slowdown = 0;      ///< extra time fraction of a compute-bound kernel beside NCCL
  double ep_sm_slowdown = 0;   ///< the same beside the MoE dispatcher's all-to-alls
  double dp_hbm_slowdown = 0;  ///< of a memory-bound kernel beside data-parallel traffic
  /// From the GPU's kernel profile: NCCL's channels out of its SMs (or, for the flex
  /// dispatcher's all-to-alls, the SMs it holds) and the HBM traffic of data-parallel
  /// communication at the line rate of the GPU's NICs (`nics_per_gpu` of `nic_Bps` each; under 1
  /// where GPUs share a NIC), out of `hbm_Bps` achievable.
  [[nodiscard]] static Contention of(const calibrate::KernelProfile& k, bool flex_dispatch,
                                     double nics_per_gpu, double nic_Bps, double hbm_Bps);
  [[nodiscard]] double extra(double tensor_s, double memory_s, double window_s) const {
    const double total = tensor_s + memory_s;
    if (!(total > 0) || !(window_s > 0)) return 0.0;
    const double share = std::min(1.0, window_s / total);
    return share * (tensor_s * sm_slowdown + memory_s * dp_hbm_slowdown);
  }
};

/// Runs the DES of all stages for one instance; `scale[s]` multiplies stage s's compute.
Instance run_instance(const workload::ParallelismSpec& p, const workload::TrainingSpec& t,
                      const workload::Layout& layout,
                      const std::vector<std::vector<workload::ChunkProgram>>& cost,
                      const std::vector<StageComm>& comm, const std::vector<double>& optimizer_s,
                      const std::vector<double>& scale, const Contention& contention);

}  // namespace twin::sim::detail
