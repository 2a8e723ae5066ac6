#include "workload/step_program.hpp"

#include <algorithm>

namespace twin::workload {
namespace {

struct Compute {
  const calibrate::Profile& profile;
  double peak;  // FLOP/s of the training dtype
  double hbm;   // achievable bytes/s
  double seconds = 0;
  double flops = 0;
  void gemm(double m, double n, double k, double count = 1.0) {
    const double f = 2.0 * m * n * k * count;
    seconds += f / (peak * profile.gemm_efficiency(m, n, k));
    flops += f;
  }
  void memory(double bytes) { seconds += bytes / hbm; }
};

}  // namespace

ChunkCost chunk_cost(const ModelSpec& model, const ParallelismSpec& p, const TrainingSpec& t,
                     const Layout& layout, const calibrate::Profile& profile, int stage,
                     int chunk) {
  const double T = static_cast<double>(p.micro_batch) * model.seq_len;
  const double h = model.hidden, tp = p.tp, s = model.seq_len;
  const double f = model.ffn_hidden, fe = model.expert_ffn_hidden;
  const double up_matrices = model.mlp_matrices() - 1;  // gate + up (swiglu) or up (gelu)
  Compute fwd{profile, profile.peak_flops(t.precision),
              profile.hbm_GBps.value * 1e9 * profile.hbm_efficiency.value};
  Compute scores{profile, fwd.peak, fwd.hbm};
  ChunkCost c;
  const int first_layer = (chunk * layout.pp + stage) * layout.layers_per_chunk;
  for (int i = 0; i < layout.layers_per_chunk; ++i) {
    const int layer = first_layer + i;
    const bool moe = model.moe() && (layer + 1) % model.moe_layer_every == 0;
    fwd.gemm(T, (h + 2.0 * model.kv_width()) / tp, h);  // QKV
    fwd.gemm(T, h, h / tp);                             // attention output projection
    // Flash attention: the causal mask skips half the score FLOPs; model FLOPs count them all.
    const double head_dim = h / model.heads;
    const double score_flops = 4.0 * T * s * h / tp;
    const double score_time =
        0.5 * score_flops / (fwd.peak * profile.gemm_efficiency(T, s, head_dim));
    fwd.seconds += score_time;
    fwd.flops += score_flops;
    scores.seconds += score_time;
    scores.flops += score_flops;
    c.params += model.attention_params() / tp;
    if (moe) {
      const double local_experts = static_cast<double>(model.experts) / layout.ep;
      // Every rank receives, on average, its tokens' top_k assignments (times the imbalance).
      const double routed = T * model.top_k * model.capacity_factor;
      const double per_expert = routed / local_experts;
      fwd.gemm(T, model.experts, h);  // router
      fwd.gemm(per_expert, up_matrices * fe / tp, h, local_experts);
      fwd.gemm(per_expert, h, fe / tp, local_experts);
      if (model.shared_experts > 0) {
        fwd.gemm(T, up_matrices * fe * model.shared_experts / tp, h);
        fwd.gemm(T, h, fe * model.shared_experts / tp);
      }
      fwd.memory(2.0 * T * (10 * h + 3 * fe * model.top_k / tp));
      const double expert_params = local_experts * model.expert_params() / tp;
      c.params += expert_params + model.shared_experts * model.expert_params() / tp +
                  h * model.experts / tp;
      c.expert_params += expert_params;
      c.ep_alltoalls += 2;
      c.ep_bytes = T / tp * model.top_k * model.capacity_factor * h * 2.0;
    } else {
      fwd.gemm(T, up_matrices * f / tp, h);
      fwd.gemm(T, h, f / tp);
      fwd.memory(2.0 * T * (10 * h + 3 * f / tp));
      c.params += model.dense_mlp_params() / tp;
    }
    c.tp_collectives += tp > 1 ? 2 : 0;
  }
  if (stage == 0 && chunk == 0) c.params += static_cast<double>(model.vocab) * h / tp;  // embedding
  if (stage == layout.pp - 1 && chunk == p.virtual_stages - 1) {
    fwd.gemm(T, model.vocab / tp, h);              // output layer
    fwd.memory(2.0 * 3.0 * T * model.vocab / tp);  // softmax + cross-entropy
    c.params += static_cast<double>(model.vocab) * h / tp;
  }
  c.forward_s = fwd.seconds;
  c.forward_flops = fwd.flops;
  c.backward_s = 2.0 * fwd.seconds;
  if (p.recompute == "full") {
    c.backward_s += fwd.seconds;
    c.recompute_flops = fwd.flops;
  } else if (p.recompute == "selective") {
    c.backward_s += scores.seconds;
    c.recompute_flops = scores.flops;
  }
  c.tp_bytes = T * h * 2.0;
  c.p2p_bytes = T * h * 2.0 / (p.sequence_parallel ? tp : 1.0);
  return c;
}

double optimizer_seconds(double local_params, const calibrate::Profile& profile) {
  return 36.0 * local_params / (profile.hbm_GBps.value * 1e9 * profile.hbm_efficiency.value);
}

}  // namespace twin::workload
