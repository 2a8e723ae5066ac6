#pragma once
/// MoE dispatch traffic: how often a token's experts fall on a given GPU or node under balanced
/// routing, and what the flex dispatcher (DeepEP / HybridEP) sends over the rails and over
/// NVLink. The all-to-all dispatcher's traffic is one copy per (token, expert) and needs none of
/// this (step_program.hpp).

#include <vector>

#include "workload/model.hpp"

namespace twin::workload {

/// The chance that a token's top_k distinct experts, chosen uniformly among `experts` (the
/// balanced routing the published MoE benchmarks force), include at least one of a set of
/// `in_set`: 1 - C(experts - in_set, top_k) / C(experts, top_k).
double expert_hit_probability(int experts, int in_set, int top_k);
/// The same for the model's routing and the `in_set` consecutive experts a GPU or node holds.
/// With group-limited routing (G groups of E/G, the token's top_k among its M best groups, each
/// group as likely as any under balance): a set of j whole groups is hit when j' >= 1 of them
/// are selected (hypergeometric over G, j, M) and one of the top_k lands in them,
/// sum_j' P(j') hit(M E/G, j' E/G, top_k); a set inside one group when that group is selected
/// and one lands in the set, (M / G) hit(M E/G, in_set, top_k). Otherwise ungrouped.
double expert_hit_probability(const ModelSpec& model, int in_set);

/// The flex dispatcher's traffic (DeepEP / HybridEP) for EP groups that span `nodes` nodes
/// with `per_node` members on each. A token goes once to every node hosting one of its experts,
/// over the rail (to the member with the sender's local index: `rails`), and from there, or from
/// its own node, once to every GPU hosting one of them, over NVLink (`local`: the members on
/// one node). Bytes are per rank as an all-to-all's (its send buffer, an equal share per peer):
///   rail peer:  token_bytes x P(node hit)          rail all-to-all:  nodes x that
///   local peer: nodes x token_bytes x P(GPU hit)   (its own tokens and those it forwards)
///                                                  local all-to-all: per_node x that
/// DeepEP pipelines the NVLink forwarding with the RDMA transfers in chunks: a dispatch takes
/// the longer of the two (twin/step_sim.cpp). The combine moves the same bytes back, reduced
/// per node before crossing.
/// The SMs the flex dispatcher's kernels hold while a dispatch or combine runs beside compute
/// (training.moe_a2a_overlap): Megatron-Core's moe_deepep_num_sms, 20 by default ("Number of SMs
/// to use for DeepEP", megatron/core/transformer/transformer_config.py). NCCL's all-to-all holds
/// its channels instead (kernels.nccl_channels).
inline constexpr double kFlexDispatchSms = 20;

struct FlexDispatch {
  std::vector<std::vector<int>> rails, local;
  int nodes = 0, per_node = 0;
  double rail_bytes = 0, local_bytes = 0;
};
/// `groups`: the EP groups (ranks); `gpus_per_node`: ranks per host; `token_bytes`: what one
/// token's hidden state weighs times the tokens a rank dispatches (with the load imbalance).
/// Throws core::Error (training.moe_dispatcher) when a group spans its nodes unevenly.
FlexDispatch flex_dispatch(const ModelSpec& model, int ep,
                           const std::vector<std::vector<int>>& groups, int gpus_per_node,
                           double token_bytes);

}  // namespace twin::workload
