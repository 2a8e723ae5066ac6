#pragma once
/// The host's side of a step: the CPU issues every kernel, and a GPU whose kernels are shorter
/// than their issue waits for the host.
///
/// Per kernel the host spends h (Python module code, the dispatcher, autograd, the launch); the
/// device runs kernel i once it is issued and the one before it has ended:
///   issue_i = i h,  end_i = max(end_(i-1), issue_i) + d_i      (i = 1 .. n, host and device
///                                                               aligned at the chunk's start)
/// so a chunk whose kernels are long runs at the device's pace and one of tiny kernels at the
/// host's, n h. Host and device are taken to start each pipeline chunk together: Megatron's
/// batched P2P exchange synchronizes the CPU with the GPU (batch_p2p_sync) before each
/// micro-batch's chunk, and FSDP's rate limiter (limit_all_gathers) holds the CPU at most two
/// layers ahead; a host that runs further ahead between chunks is not modelled.
/// h by training.framework, measured on an H200 node's host (PyTorch 2.11, CUDA 13.0, an 8-layer
/// pre-norm GPT layer of hidden 256 on 2 x 64 tokens, forward + backward, every kernel shorter
/// than its issue: data/calibration/h200-sxm-2026-12-04-host-cost.json, bench/gpu/host_cost.py):
///   eager      25.4 us (301 kernels in 7.64 ms: modules, dispatcher and autograd)
///   megatron   as eager: Megatron-LM's layers are eager PyTorch modules under autograd
///   te         as eager: Transformer Engine's modules are issued from Python as well (its own
///              per-module CPU work on top is not in the data)
///   compiled   47.3 us (torch.compile, Inductor's default mode, one compiled graph per layer:
///              269 kernels in 12.7 ms, the guards and AOTAutograd's wrappers included)
///   cuda_graphs 0: the captured step is replayed by one launch (measured: the same step as a
///              CUDA graph in 0.74 ms, 2.4 us per kernel, device-bound)
/// A faster host CPU than the measured node's issues proportionally faster.

#include <string>
#include <vector>

#include "workload/kernel_cost.hpp"
#include "workload/parallelism.hpp"

namespace twin::workload {

/// The host's cost per kernel, s, for the training stack; throws core::Error naming
/// training.framework for an unknown one.
double host_issue_s(const TrainingSpec& t);
/// The frameworks host_issue_s knows.
const std::vector<std::string>& framework_names();

/// How long the device waits for the host while running `kernels` in order when each takes
/// `host_s` to issue (the equation above): the chunk's time less the kernels' own.
double host_wait_s(const std::vector<const Kernel*>& kernels, double host_s);

}  // namespace twin::workload
