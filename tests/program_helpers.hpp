#pragma once
// Helpers shared by the kernel-cost and step-program test suites.

#include <gtest/gtest.h>

#include <map>
#include <string>
#include <vector>

#include "calibrate/profile.hpp"
#include "workload/kernel_cost.hpp"
#include "workload/model.hpp"
#include "workload/parallelism.hpp"
#include "workload/step_program.hpp"

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

/// H100 FP8 kernel costs (Transformer Engine's recipe).
inline const workload::KernelCoster& h100_fp8() {
  static const calibrate::Profile h100 = calibrate::load_profile("h100-sxm");
  static const workload::KernelCoster coster(h100, "fp8");
  return coster;
}

/// `kernels` by name (a later kernel of the same name replaces an earlier one).
inline std::map<std::string, workload::Kernel> by_name(
    const std::vector<workload::Kernel>& kernels) {
  std::map<std::string, workload::Kernel> out;
  for (const auto& k : kernels) out[k.name] = k;
  return out;
}

/// The forward (or backward) kernels of every block of `prog` by name.
inline std::map<std::string, workload::Kernel> kernels_by_name(const workload::ChunkProgram& prog,
                                                               bool forward = true) {
  std::map<std::string, workload::Kernel> out;
  for (const auto& b : prog.blocks)
    for (const auto& k : forward ? b.forward : b.backward) out[k.name] = k;
  return out;
}

/// Llama 3 8B at 2,048 tokens: the program tests' dense model.
inline workload::ModelSpec small_model() {
  workload::ModelSpec m = workload::model_preset("llama3-8b");
  m.seq_len = 2048;
  return m;
}

/// The program's block labelled `label` ("dense layer", "output layer + loss").
inline workload::BlockProgram block_of(const workload::ChunkProgram& prog,
                                       const std::string& label) {
  for (const auto& b : prog.blocks)
    if (b.label == label) return b;
  ADD_FAILURE() << "no block " << label;
  return {};
}

/// The forward or backward kernels of the program's block labelled `label`.
inline std::vector<workload::Kernel> block_kernels(const workload::ChunkProgram& prog,
                                                   const std::string& label, bool forward = true) {
  workload::BlockProgram b = block_of(prog, label);
  return forward ? b.forward : b.backward;
}

/// The kernels' names, in order.
inline std::vector<std::string> names(const std::vector<workload::Kernel>& kernels) {
  std::vector<std::string> out;
  for (const auto& k : kernels) out.push_back(k.name);
  return out;
}

}  // namespace twin::test
