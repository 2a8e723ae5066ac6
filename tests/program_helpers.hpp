#pragma once
// Helpers shared by the kernel-cost and step-program test suites.

#include "calibrate/profile.hpp"
#include "workload/kernel_cost.hpp"
#include "workload/parallelism.hpp"

namespace twin::test {

/// The program tests' layouts: 8 GPUs in one pipeline stage, TP `tp` x DP 8 / tp.
inline workload::ParallelismSpec one_stage(int tp) {
  workload::ParallelismSpec p;
  p.tp = tp;
  p.pp = 1;
  p.dp = 8 / tp;
  return p;
}

/// A step of 8 sequences: one micro-batch per DP rank of one_stage(1).
inline workload::TrainingSpec eight_sequences() {
  workload::TrainingSpec t;
  t.global_batch = 8;
  return t;
}

/// H100 BF16 kernel costs (the coster keeps a reference to the profile, so both live here).
inline const workload::KernelCoster& h100_bf16() {
  static const calibrate::Profile h100 = calibrate::load_profile("h100-sxm");
  static const workload::KernelCoster coster(h100, "bf16");
  return coster;
}

}  // namespace twin::test
