#pragma once
/// One training step of the scenario's job on its cluster: a discrete-event simulation of each
/// pipeline stage's compute stream and its data-parallel communication stream.
///
/// Rank classes: every data-parallel replica of a stage does the same work at the same time, so
/// a stage is one rank class simulated once (pp timelines for any number of GPUs). Collectives
/// are solved on the fabric for all the groups that run them at once (all TP groups of a stage;
/// all DP groups of a stage; all EP groups). A straggler GPU splits its replica off as a second
/// instance whose stage runs slower; data-parallel synchronization makes the step wait for the
/// slowest instance, so the step time is the maximum over instances.
///
/// Schedule: interleaved 1F1B (Narayanan et al. 2021; v = 1 is plain 1F1B). Stage r runs
/// min(m v, (pp - r - 1) 2 + (v - 1) pp) warm-up forwards, then alternates one forward and one
/// backward, then drains backwards. A forward of (chunk c, micro-batch i) on stage r waits for
/// the same on stage r - 1 (or chunk c - 1 on the last stage) plus the activation transfer; a
/// backward likewise from stage r + 1. Plain 1F1B (v = 1) sends with blocking send/recv: the
/// sending stage's compute stream also waits for the transfer; the interleaved schedule overlaps
/// it. TP and EP collectives are blocking inside each op (a full recompute reissues the forward's
/// TP collectives in backward).
/// Gradient synchronization (ZeRO 0: all-reduce; 1, 2: reduce-scatter) of a chunk starts on the
/// communication stream when its last backward ends; FSDP (ZeRO 3) all-gathers each layer's
/// parameters one layer ahead (an op lasts the longer of its work and its gathers, plus the
/// first layer's gather) and reduce-scatters its gradients after each backward;
/// HSDP adds an all-reduce of gradient shards across replicas. Compute that starts while the
/// communication stream is busy is slowed by the profile's overlap factor. The optimizer
/// follows the last communication.

#include <map>
#include <string>
#include <vector>

#include "core/cancel.hpp"
#include "twin/cluster.hpp"
#include "twin/scenario.hpp"
#include "workload/memory.hpp"
#include "workload/parallelism.hpp"
#include "workload/step_program.hpp"

namespace twin::sim {

struct TimelineOp {
  int stage = 0;
  std::string stream;  ///< compute or comm
  std::string name;    ///< F c3 mb5, B c0 mb1, DP all_reduce c2, FSDP all_gather ...
  double start_s = 0, end_s = 0;
  int chunk = -1, micro_batch = -1;  ///< compute ops of the pipeline schedule
  bool forward = false;
  /// Compute ops: their kernels' time and the TP and EP collectives inside [start_s, end_s]
  /// (the rest of the span is waiting for overlapped data-parallel traffic).
  double compute_s = 0, tp_s = 0, ep_s = 0;
  /// Compute ops fed by another stage: the activation (forward) or gradient (backward) transfer
  /// they waited for, from the producing op's end (both 0 when none).
  double p2p_start_s = 0, p2p_end_s = 0;
};

struct StepReport {
  int gpus = 0;
  int micro_batches = 0;
  double step_time_s = 0;
  double tokens_per_step = 0;
  double tokens_per_s = 0;
  double model_flops_per_step = 0;
  /// How the model FLOPs count attention scores (training.model_flops: full_square or causal).
  std::string model_flops = "full_square";
  double hardware_flops_per_step = 0;
  double tflops_per_gpu = 0;
  double hfu_tflops_per_gpu = 0;
  double mfu = 0;
  double peak_tflops = 0;
  std::vector<std::pair<std::string, double>> breakdown;  ///< seconds on the critical stage
  workload::MemoryBreakdown memory;
  double memory_capacity_GB = 0;
  double time_to_train_days = 0;
  double gpu_hours = 0;
  double cost = 0;
  int critical_stage = 0;
  std::vector<TimelineOp> timeline;  ///< the critical instance, every stage
  std::vector<std::pair<std::string, double>> link_utilization;  ///< mean, by link kind
  std::vector<double> link_bytes;                                ///< per step, by LinkId
  std::vector<std::pair<std::string, double>> collective_times;  ///< name, seconds each
  workload::StepProgram program;                                 ///< the kernels that were run
  int virtual_stages = 1;                                        ///< used (resolves auto)
  std::vector<int> stage_layers;  ///< layers per stage used (resolves auto)
  std::string attention;          ///< the attention kernel run (resolves auto)
};

/// Where the step's time goes on its critical stage, as shares of the step: the stage's compute
/// split as its kernels' time splits by workload::KernelClassTimes (GEMMs, the attention core,
/// memory-bound kernels, kernels at their launch floor), and the rest (exposed communication,
/// pipeline bubble and transfers, optimizer). They add up to 1.
struct TimeShares {
  double gemm = 0, attention = 0, memory = 0, launch = 0, outside_kernels = 0;
};
TimeShares step_time_shares(const StepReport& report);
/// The names of TimeShares' parts, in order, and the part called `name` of `s` (throws
/// core::Error for another name).
const std::vector<std::string>& time_share_classes();
double time_share(const TimeShares& s, const std::string& name);

/// Throws core::Error when the scenario has no job, the parallelism is impossible or the
/// model does not fit in GPU memory. `per_rank` simulates every data-parallel replica with its
/// own TP/EP/pipeline groups solved separately (the check on the rank-class abstraction; cost
/// grows with dp). With `cancel` set, throws core::Cancelled at the start and between replicas
/// once it is cancelled.
/// Throws core::Error naming `model` when the scenario has no job to simulate.
void require_job(const Scenario& scenario);

StepReport simulate_step(const Cluster& cluster, const std::string& engine = "native",
                         bool per_rank = false, const core::CancelToken* cancel = nullptr);
/// The same on a cluster built from `scenario` (one step: nothing to share).
StepReport simulate_step(const Scenario& scenario, const std::string& engine = "native",
                         bool per_rank = false, const core::CancelToken* cancel = nullptr);

std::string step_summary_text(const Scenario& scenario, const StepReport& report);
std::string step_summary_json(const Scenario& scenario, const StepReport& report);
/// Chrome / Perfetto trace events: one process per stage, one thread per stream.
std::string step_trace_json(const StepReport& report);
/// results.h5: /timeline (stage, stream, start, end, name), /links (bytes, utilization),
/// /breakdown; attributes with the summary numbers.
void write_step_hdf5(const std::string& path, const StepReport& report,
                     const std::vector<double>& link_capacity_Bps);

}  // namespace twin::sim
