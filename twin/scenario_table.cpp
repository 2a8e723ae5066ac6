// The scenario schema table: every field a scenario may state, in reading order, with its unit,
// valid values and meaning. Adding a field is one entry here (plus the struct member it fills
// and a test); the reader, writer, --set/--vary checks, the app's form and docs/scenarios.md
// follow from it.
#include <fmt/format.h>
#include <fmt/ranges.h>

#include <algorithm>
#include <cmath>

#include "calibrate/profile.hpp"
#include "core/error.hpp"
#include "core/text.hpp"
#include "netsim/collective.hpp"
#include "topology/spec.hpp"
#include "twin/detail/scenario_fields.hpp"
#include "twin/detail/schema_entry.hpp"
#include "workload/host_issue.hpp"
#include "workload/model.hpp"

namespace twin::sim::detail {
namespace {

using topology::ClusterSpec;
using topology::FabricSpec;
using workload::ModelSpec;
using workload::ParallelismSpec;
using workload::TrainingSpec;

/// Token budgets above this are typos (1e30), and would overflow the integer GPU-hour lines.
constexpr double kMaxTokens = 1e18;
constexpr double kMaxCount = 1 << 20;

void top_level(std::vector<Entry>& t) {
  t.push_back(with_default(plain("schema_version", at(&Scenario::schema_version), "", between(1, 1),
                                 "Version of this schema; required (this build reads 1)"),
                           "required"));
  t.push_back(plain("name", at(&Scenario::name), "", kAny, "Name shown in reports"));
  t.push_back(plain("description", at(&Scenario::description), "", kAny, "What the scenario is"));
  t.push_back(plain("lesson", at(&Scenario::lesson), "", kAny,
                    "Teaching scenarios: the lesson the app shows beside the scenario"));
}

void cluster(std::vector<Entry>& t) {
  const auto c = [](auto member) { return at(&Scenario::cluster, member); };
  t.push_back(
      plain("cluster.nodes", c(&ClusterSpec::nodes), "", at_least(1), "Compute nodes (hosts)"));
  t.push_back(plain("cluster.gpus_per_node", c(&ClusterSpec::gpus_per_node), "", between(1, 72),
                    "GPUs per node"));
  t.push_back(plain("cluster.gpu", c(&ClusterSpec::gpu), "", kAny,
                    "Hardware profile: a shipped name (h100-sxm, h200-sxm, a100-sxm-80gb, "
                    "a100-sxm-40gb) or a path to a profile .json; NVLink, NIC and compute "
                    "figures come from it"));
  t.push_back(plain("cluster.nics_per_node", c(&ClusterSpec::nics_per_node), "", between(1, 72),
                    "Compute NICs per node; with at most one per GPU, GPU g uses NIC floor(g x "
                    "nics / gpus); with more, a whole number k per GPU (e.g. 16 x 100 Gb/s for 8 "
                    "GPUs), GPU g uses NICs g k .. g k + k - 1 and splits its traffic evenly "
                    "over them"));
  t.push_back(with_default(plain("cluster.nic_gbps", c(&ClusterSpec::nic_gbps), "Gb/s", positive(),
                                 "NIC line rate (overrides the profile's)"),
                           "profile"));
  t.push_back(
      with_default(plain("cluster.nvlink_GBps", c(&ClusterSpec::nvlink_GBps), "GB/s", positive(),
                         "NVLink bandwidth per GPU per direction (overrides the "
                         "profile's)"),
                   "profile"));
  t.push_back(with_default(
      plain("cluster.nvlink_latency_ns", c(&ClusterSpec::nvlink_latency_ns), "ns", at_least(0),
            "GPU-to-GPU NVLink/NVSwitch latency (overrides the profile's)"),
      "profile"));
  t.push_back(with_default(
      plain("cluster.gpu_power_w", c(&ClusterSpec::gpu_power_w), "W", at_least(0),
            "Board power limit of each GPU (nvidia-smi -pl): GEMM and attention rates scale with "
            "the sustained SM clock at this limit (the profile's kernels.power_clock: 700 W "
            "H100/H200 SXM, 400 W A100); 0 is the profile's reference limit"),
      "profile"));
  t.push_back(plain("cluster.pcie_GBps", c(&ClusterSpec::pcie_GBps), "GB/s", positive(),
                    "GPU-to-NIC PCIe bandwidth per direction (PCIe 5.0 x16: 63)"));
  t.push_back(plain("cluster.pcie_latency_ns", c(&ClusterSpec::pcie_latency_ns), "ns", at_least(0),
                    "GPU-to-NIC PCIe latency"));
  t.push_back(plain("cluster.node_states", c(&ClusterSpec::node_states), "", kAny,
                    "Slurm `sinfo -N -h -o \"%N %T\"` output (relative to the scenario): "
                    "drained and down hosts are left out of placement and the spare pool"));
}

void fabric(std::vector<Entry>& t) {
  const auto f = [](auto member) { return at(&Scenario::fabric, member); };
  t.push_back(
      plain("fabric.kind", f(&FabricSpec::kind), "", one_of({"fat_tree"}), "Fabric family"));
  t.push_back(plain("fabric.file", f(&FabricSpec::file), "", kAny,
                    "An ibnetdiscover dump of a real fabric (relative to the scenario); when set "
                    "the fabric is imported and the generator's sizes are ignored"));
  t.push_back(plain("fabric.lfts", f(&FabricSpec::lfts), "", kAny,
                    "The subnet's unicast forwarding tables for fabric.file (dump_lfts.sh / "
                    "ibroute output, relative to the scenario); routes then follow them"));
  t.push_back(plain("fabric.tiers", f(&FabricSpec::tiers), "", between(2, 3),
                    "Switch tiers: 2 (leaf-spine) or 3 (leaf-spine-core)"));
  t.push_back(plain("fabric.switch_radix", f(&FabricSpec::switch_radix), "", between(4, 4096),
                    "Ports per switch, even (Quantum-2 QM9700: 64)"));
  t.push_back(plain("fabric.switch_port_gbps", f(&FabricSpec::switch_port_gbps), "Gb/s", positive(),
                    "Line rate of a switch port"));
  t.push_back(plain("fabric.switch_ports_per_cage", f(&FabricSpec::switch_ports_per_cage), "",
                    between(1, 8), "Ports per transceiver cage (QM9700: 2 per OSFP)"));
  t.push_back(plain("fabric.rail_optimized", f(&FabricSpec::rail_optimized), "", kAny,
                    "NIC i of every node on leaf group i (rail i); else a node's NICs share a "
                    "leaf"));
  t.push_back(plain("fabric.oversubscription", f(&FabricSpec::oversubscription), "", at_least(1),
                    "Leaf down-ports per up-port (1: non-blocking)"));
  t.push_back(plain("fabric.spine_oversubscription", f(&FabricSpec::spine_oversubscription), "",
                    at_least(1), "Spine down-ports per up-port (3 tiers)"));
  t.push_back(plain("fabric.reserved_ports_per_leaf", f(&FabricSpec::reserved_ports_per_leaf), "",
                    at_least(0), "Leaf ports kept out of the design (spares, storage)"));
  t.push_back(plain("fabric.management_nodes", f(&FabricSpec::management_nodes), "",
                    between(0, kMaxCount),
                    "Fabric-manager (UFM) hosts, each taking one node slot"));
  t.push_back(plain("fabric.management_ports_per_node", f(&FabricSpec::management_ports_per_node),
                    "", at_least(0), "Leaf ports per management host, on rails 0..k-1"));
  t.push_back(with_default(plain("fabric.leaf_spine_gbps", f(&FabricSpec::leaf_spine_gbps), "Gb/s",
                                 at_least(0), "Leaf-spine cable rate (0: switch port)"),
                           "0"));
  t.push_back(plain("fabric.spine_core_gbps", f(&FabricSpec::spine_core_gbps), "Gb/s", at_least(0),
                    "Spine-core cable rate (0: switch port)"));
  t.push_back(plain("fabric.cable_latency_ns", f(&FabricSpec::cable_latency_ns), "ns", at_least(0),
                    "Propagation delay per cable (~5 ns per metre of fibre)"));
  t.push_back(plain("fabric.switch_latency_ns", f(&FabricSpec::switch_latency_ns), "ns",
                    at_least(0), "Port-to-port forwarding latency of one switch"));
  Entry routing_entry = custom(
      "fabric.routing", FieldType::text, "", std::string(topology::to_string(FabricSpec{}.routing)),
      "Path choice: dmodk (destination-mod-k, InfiniBand's default), ecmp (per-flow hash), "
      "adaptive",
      [](MapReader& r, Scenario& s) {
        std::string routing(topology::to_string(s.fabric.routing));
        r.get("routing", routing);
        try {
          s.fabric.routing = topology::parse_routing_mode(routing, r.field("routing"));
        } catch (const core::Error& e) {
          throw r.error("routing", routing, e.reason());
        }
      },
      [](YAML::Emitter& out, const Scenario& s) {
        out << std::string(topology::to_string(s.fabric.routing));
      });
  routing_entry.field.bounds.choices = topology::routing_mode_names();
  t.push_back(std::move(routing_entry));
  t.push_back(plain("fabric.routing_seed", f(&FabricSpec::routing_seed), "", kAny,
                    "Seed of the per-flow ECMP hash"));
}

void model(std::vector<Entry>& t) {
  const auto m = [](auto member) { return at(&Scenario::model, member); };
  Entry preset = custom(
      "model.preset", FieldType::text, "", "", "A named model; the fields below override it",
      [](MapReader& r, Scenario& s) {
        std::string name;
        r.get("preset", name);
        if (name.empty()) return;
        try {
          s.model = workload::model_preset(name);
        } catch (const core::Error& e) {
          throw r.error("preset", name, e.reason());
        }
      },
      [](YAML::Emitter& out, const Scenario&) { out << YAML::Null; });
  preset.field.bounds.choices = workload::model_presets();
  t.push_back(std::move(preset));
  t.push_back(custom(
      "model.name", FieldType::text, "", "custom", "Name shown in reports",
      [](MapReader& r, Scenario& s) {
        r.get("name", s.model.name);
        if (s.model.name.empty()) s.model.name = "custom";
      },
      [](YAML::Emitter& out, const Scenario& s) { out << s.model.name; }));
  const std::string required = "preset's";
  t.push_back(with_default(
      plain("model.layers", m(&ModelSpec::layers), "", at_least(1), "Transformer layers"),
      required));
  t.push_back(with_default(
      plain("model.hidden", m(&ModelSpec::hidden), "", at_least(1), "Hidden size"), required));
  t.push_back(with_default(
      plain("model.heads", m(&ModelSpec::heads), "", at_least(1), "Attention (query) heads"),
      required));
  t.push_back(custom(
      "model.kv_heads", FieldType::integer, "", "heads",
      "Key/value heads (grouped-query attention; = heads for multi-head)",
      [](MapReader& r, Scenario& s) {
        r.get("kv_heads", s.model.kv_heads);
        if (s.model.kv_heads == 0) s.model.kv_heads = s.model.heads;
      },
      [](YAML::Emitter& out, const Scenario& s) { out << s.model.kv_heads; }));
  t.back().field.bounds = at_least(0);
  t.back().number = [](const Scenario& s) { return std::optional<double>(s.model.kv_heads); };
  t.push_back(plain("model.head_dim", m(&ModelSpec::head_dim), "", at_least(0),
                    "Width of one attention head (0: hidden / heads)"));
  t.push_back(plain("model.q_lora_rank", m(&ModelSpec::q_lora_rank), "", at_least(0),
                    "Multi-head latent attention: rank of the query bottleneck (0: full rank)"));
  t.push_back(plain("model.kv_lora_rank", m(&ModelSpec::kv_lora_rank), "", at_least(0),
                    "Multi-head latent attention: rank of the shared key/value latent (0: "
                    "standard attention)"));
  t.push_back(plain("model.qk_rope_head_dim", m(&ModelSpec::qk_rope_head_dim), "", at_least(0),
                    "Multi-head latent attention: rotary width added to each query/key head"));
  t.push_back(plain("model.v_head_dim", m(&ModelSpec::v_head_dim), "", at_least(0),
                    "Multi-head latent attention: width of a value head (0: head_dim)"));
  t.push_back(plain("model.ffn_hidden", m(&ModelSpec::ffn_hidden), "", at_least(0),
                    "Dense MLP hidden size"));
  t.push_back(with_default(
      plain("model.vocab", m(&ModelSpec::vocab), "", at_least(1), "Vocabulary size"), required));
  t.push_back(with_default(
      plain("model.seq_len", m(&ModelSpec::seq_len), "tokens", at_least(1), "Sequence length"),
      required));
  t.push_back(plain("model.mlp", m(&ModelSpec::mlp), "", one_of({"swiglu", "gelu"}),
                    "MLP kind: swiglu (3 matrices) or gelu (2)"));
  t.push_back(plain("model.experts", m(&ModelSpec::experts), "", at_least(0),
                    "Routed experts per MoE layer (0: dense)"));
  t.push_back(plain("model.top_k", m(&ModelSpec::top_k), "", at_least(0),
                    "Experts each token is routed to"));
  t.push_back(plain("model.expert_ffn_hidden", m(&ModelSpec::expert_ffn_hidden), "", at_least(0),
                    "Hidden size of one expert's MLP"));
  t.push_back(plain("model.shared_experts", m(&ModelSpec::shared_experts), "", at_least(0),
                    "Experts every token passes through"));
  t.push_back(plain("model.moe_layer_every", m(&ModelSpec::moe_layer_every), "", at_least(1),
                    "Every k-th layer is MoE"));
  t.push_back(plain("model.capacity_factor", m(&ModelSpec::capacity_factor), "", at_least(1),
                    "Tokens per expert relative to a perfect balance (load imbalance)"));
  t.push_back(plain("model.router_groups", m(&ModelSpec::router_groups), "", at_least(0),
                    "Group-limited routing: the experts form this many equal groups in order "
                    "(Megatron-Core moe_router_num_groups; 0: ungrouped)"));
  t.push_back(plain("model.router_group_topk", m(&ModelSpec::router_group_topk), "", at_least(0),
                    "Group-limited routing: a token's experts come from its best this-many groups "
                    "(DeepSeek-V3: 4 of 8, node-limited routing)"));
  t.push_back(plain("model.qk_norm", m(&ModelSpec::qk_norm), "", kAny,
                    "Queries and keys RMS-normed per head before rotary (Megatron-Core "
                    "qk_layernorm: Qwen3, OLMo 2, Gemma 3)"));
  t.push_back(plain("model.tied_embeddings", m(&ModelSpec::tied_embeddings), "", kAny,
                    "The output layer is the input embedding's matrix (GPT-3, BLOOM, MPT): V h "
                    "parameters once; with pipeline parallelism the first and last stages "
                    "all-reduce its gradient at the end of each step"));
  t.push_back(plain("model.mtp_layers", m(&ModelSpec::mtp_layers), "", at_least(0),
                    "Multi-token prediction modules on the last stage, each one layer like the "
                    "last, a 2h x h projection and its own loss (DeepSeek-V3: 1; Megatron-Core "
                    "mtp_num_layers)"));
  t.push_back(plain("model.sliding_window", m(&ModelSpec::sliding_window), "tokens", at_least(0),
                    "Sliding-window attention: tokens each query sees in a windowed layer, "
                    "itself included (0: none)"));
  t.push_back(plain("model.full_attention_every", m(&ModelSpec::full_attention_every), "",
                    at_least(0),
                    "With model.sliding_window: every k-th layer attends to the whole causal "
                    "prefix, the others to the window (0: every layer windowed)"));
}

void parallelism(std::vector<Entry>& t) {
  const auto p = [](auto member) { return at(&Scenario::parallelism, member); };
  t.push_back(plain("parallelism.tp", p(&ParallelismSpec::tp), "", at_least(1),
                    "Tensor parallelism (within a node's NVLink domain)"));
  t.push_back(plain("parallelism.pp", p(&ParallelismSpec::pp), "", at_least(1), "Pipeline stages"));
  t.push_back(
      plain("parallelism.dp", p(&ParallelismSpec::dp), "", at_least(1), "Data-parallel replicas"));
  t.push_back(plain("parallelism.ep", p(&ParallelismSpec::ep), "", at_least(1),
                    "Expert parallelism (divides model.experts; ep x expert_tp divides tp x dp x "
                    "cp: EP groups fold over the TP and DP ranks)"));
  t.push_back(plain("parallelism.expert_tp", p(&ParallelismSpec::expert_tp), "", at_least(0),
                    "Expert tensor parallelism: each expert split over this many ranks (0: as "
                    "tp; divides tp)"));
  t.push_back(plain("parallelism.zero", p(&ParallelismSpec::zero), "", between(0, 3),
                    "ZeRO stage: 0 all-reduce, 1-2 distributed optimizer, 3 FSDP"));
  t.push_back(plain("parallelism.hsdp_shard", p(&ParallelismSpec::hsdp_shard), "", at_least(0),
                    "HSDP: shard over this many DP ranks, replicate across the rest (0: off)"));
  t.push_back(plain("parallelism.cp", p(&ParallelismSpec::cp), "", at_least(1),
                    "Context parallelism: the sequence split over cp ranks (ring attention)"));
  // virtual_stages and stage_layers are read together (one knows the other's auto).
  Entry virtual_stages = custom(
      "parallelism.virtual_stages", FieldType::integer, "", "1",
      "Interleaved 1F1B chunks per stage, or auto (the fastest that fits in memory)",
      [](MapReader& r, Scenario& s) { read_pipeline_fields(r, s.parallelism); },
      [](YAML::Emitter& out, const Scenario& s) {
        if (s.parallelism.virtual_stages == 0)
          out << "auto";
        else
          out << s.parallelism.virtual_stages;
      });
  virtual_stages.field.bounds = at_least(1);
  virtual_stages.field.keywords = {"auto"};
  t.push_back(std::move(virtual_stages));
  Entry stage_layers = custom(
      "parallelism.stage_layers", FieldType::list, "", "even split",
      "Layers per pipeline stage: a list, or auto (balances the time of every virtual stage, "
      "the embedding on the first and the output layer + loss on the last)",
      [](MapReader& r, Scenario&) { (void)r.raw("stage_layers"); },
      [](YAML::Emitter& out, const Scenario& s) { write_stage_layers(out, s.parallelism); });
  stage_layers.field.keywords = {"auto"};
  t.push_back(std::move(stage_layers));
  t.push_back(plain("parallelism.pipeline_layout", p(&ParallelismSpec::pipeline_layout), "", kAny,
                    "Megatron-Core's pipeline_model_parallel_layout instead of stage_layers: "
                    "each virtual stage's layers, E embedding, t transformer layer, m MTP "
                    "layer, L output layer + loss, '|' between stages, (...)*n and x*n repeat "
                    "(e.g. Et|(tt|)*30mL); virtual_stages must match"));
  t.push_back(plain("parallelism.micro_batch", p(&ParallelismSpec::micro_batch), "sequences",
                    at_least(1), "Sequences per micro-batch"));
  t.push_back(plain("parallelism.sequence_parallel", p(&ParallelismSpec::sequence_parallel), "",
                    kAny,
                    "Megatron sequence parallelism (TP all-reduce as all-gather + "
                    "reduce-scatter)"));
  t.push_back(plain("parallelism.recompute", p(&ParallelismSpec::recompute), "",
                    one_of({"none", "selective", "full"}), "Activation recomputation"));
  t.push_back(plain("parallelism.recompute_layers", p(&ParallelismSpec::recompute_layers), "layers",
                    at_least(0),
                    "With recompute: full, only the first N layers of each pipeline chunk are "
                    "recomputed and the others keep their activations (Megatron-Core "
                    "recompute_method block, recompute_num_layers N); 0: every layer"));
  t.push_back(custom_list(
      "parallelism.recompute_modules",
      "With recompute: selective, the parts of a layer recomputed in backward (Megatron-Core "
      "recompute_modules): core_attn (the default), layernorm, mlp, moe_act, shared_experts, "
      "mla_up_proj",
      [](MapReader& r, Scenario& s) {
        const YAML::Node modules = r.raw("recompute_modules");
        if (!modules.IsDefined() || modules.IsNull()) return;
        if (!modules.IsSequence())
          throw r.error("recompute_modules", modules.IsScalar() ? modules.Scalar() : "",
                        "expected a list such as [layernorm, moe_act]");
        s.parallelism.recompute_modules.clear();
        for (const auto& n : modules) {
          if (!n.IsScalar())
            throw r.error("recompute_modules", "", "expected module names such as moe_act");
          s.parallelism.recompute_modules.push_back(n.Scalar());
        }
      },
      [](YAML::Emitter& out, const Scenario& s) {
        out << YAML::Flow << YAML::BeginSeq;
        for (const auto& m : s.parallelism.recompute_modules) out << m;
        out << YAML::EndSeq;
      }));
}

void training(std::vector<Entry>& t) {
  const auto tr = [](auto member) { return at(&Scenario::training, member); };
  t.push_back(plain("training.global_batch", tr(&TrainingSpec::global_batch), "sequences",
                    positive(), "Sequences per optimizer step (a multiple of dp x micro_batch)"));
  Entry tokens = plain("training.tokens", tr(&TrainingSpec::tokens), "tokens", positive(),
                       "Token budget of the whole run (at most 1e18)");
  tokens.check = [](const Scenario& s) -> Problem {
    if (s.training.tokens > kMaxTokens)
      return std::pair{fmt::format("{}", s.training.tokens),
                       fmt::format("more than {:g} tokens is beyond any data set (Llama 3 "
                                   "trained on 15e12)",
                                   kMaxTokens)};
    return std::nullopt;
  };
  t.push_back(std::move(tokens));
  t.push_back(plain("training.precision", tr(&TrainingSpec::precision), "",
                    one_of({"bf16", "fp16", "fp8"}),
                    "GEMM precision (fp16: the BF16 tensor-core rate plus dynamic loss scaling; "
                    "fp8: Transformer Engine)"));
  t.push_back(plain("training.fp8_recipe", tr(&TrainingSpec::fp8_recipe), "",
                    one_of({"delayed", "tensorwise"},
                           "delayed: scales from the amax history, tensorwise: current scaling "
                           "from each tensor's own amax"),
                    "FP8 scaling (with training.precision fp8): delayed (Transformer Engine's "
                    "DelayedScaling, Megatron-Core's default) or tensorwise (Float8CurrentScaling: "
                    "an amax pass and a scale kernel before every cast, per tensor)"));
  std::vector<std::string> attention_kinds, attention_why;
  for (const auto& choice : calibrate::attention_choices()) {
    attention_kinds.push_back(choice.name);
    attention_why.push_back(fmt::format("{}: {}", choice.name, choice.description));
  }
  t.push_back(plain("training.attention", tr(&TrainingSpec::attention), "",
                    one_of(attention_kinds, fmt::format("{}", fmt::join(attention_why, ", "))),
                    "Attention kernels: auto (what Transformer Engine runs: its FusedAttention, "
                    "cuDNN, which it prefers to FlashAttention on Hopper and later, where the "
                    "profile measures it, else the GPU's flash kernels), the GPU's current flash "
                    "kernels, FlashAttention-2, FlashAttention 1, cuDNN's fused attention, or "
                    "unfused (s^2 scores in HBM)"));
  t.push_back(plain("training.framework", tr(&TrainingSpec::framework), "",
                    one_of(workload::framework_names()),
                    "What issues the kernels: te (Megatron-Core with Transformer Engine), "
                    "megatron (Megatron-LM), eager (plain PyTorch, FSDP stacks), compiled "
                    "(torch.compile); each kernel costs the host a measured time to issue "
                    "(25.4 us eager, 47.3 us compiled), and a chunk of kernels shorter than that "
                    "runs at the host's pace"));
  t.push_back(plain("training.cuda_graphs", tr(&TrainingSpec::cuda_graphs), "", kAny,
                    "The step's kernels replayed from captured CUDA graphs: no per-kernel host "
                    "cost"));
  t.push_back(plain("training.fused_kernels", tr(&TrainingSpec::fused_kernels), "", kAny,
                    "Fused element-wise kernels (norms, activations, rotary, bias+dropout+add)"));
  t.push_back(plain("training.cross_entropy", tr(&TrainingSpec::cross_entropy), "",
                    one_of({"auto", "fused", "unfused"},
                           "fused: one pass over the bf16 logits, unfused: fp32 softmax op by op, "
                           "auto: as training.fused_kernels"),
                    "Loss over the vocabulary: fused (one pass, Transformer Engine / apex "
                    "xentropy), unfused (fp32 logits softmaxed op by op, Megatron's "
                    "VocabParallelCrossEntropy), auto: fused when training.fused_kernels"));
  t.push_back(plain("training.model_flops", tr(&TrainingSpec::model_flops), "",
                    one_of({"full_square", "causal"},
                           "full_square: every s x s score, causal: the scores the causal mask "
                           "or the sliding window keeps"),
                    "How model FLOPs (model TFLOP/s, MFU) count attention scores: full_square "
                    "(PaLM's MFU, Narayanan et al.'s Megatron-LM formula, NeMo 24.x and "
                    "MosaicML's tables) or causal (Megatron-LM's num_floating_point_operations "
                    "and NeMo / Megatron-Bridge's flops formulas since 2025); the step time does "
                    "not depend on it"));
  t.push_back(plain("training.tp_comm_overlap", tr(&TrainingSpec::tp_comm_overlap), "", kAny,
                    "Overlap TP communication with GEMMs (Megatron-Core with sequence parallelism; "
                    "the GEMMs run in Transformer Engine's userbuffers chunks)"));
  t.push_back(plain("training.overlap_grad_reduce", tr(&TrainingSpec::overlap_grad_reduce), "",
                    kAny, "Overlap the DP gradient reduce-scatter with backward"));
  t.push_back(plain("training.overlap_param_gather", tr(&TrainingSpec::overlap_param_gather), "",
                    kAny, "Overlap the parameter all-gather with the next forward"));
  t.push_back(plain("training.moe_a2a_overlap", tr(&TrainingSpec::moe_a2a_overlap), "", kAny,
                    "Hide MoE all-to-alls behind another micro-batch's compute (Megatron-Core "
                    "combined 1F1B, overlap_moe_expert_parallel_comm)"));
  t.push_back(plain("training.moe_dispatcher", tr(&TrainingSpec::moe_dispatcher), "",
                    one_of({"alltoall", "flex"},
                           "alltoall: Megatron-Core's all-to-all dispatcher, flex: DeepEP / "
                           "HybridEP"),
                    "MoE token dispatch: alltoall (one copy per token and expert, NCCL "
                    "all-to-all, sorted by local expert) or flex (DeepEP / HybridEP: one copy per "
                    "destination GPU, one per destination node across nodes, forwarded over "
                    "NVLink)"));
  t.push_back(plain("training.pp_scatter_gather", tr(&TrainingSpec::pp_scatter_gather), "", kAny,
                    "Without sequence parallelism, send 1/tp of each pipeline activation per TP "
                    "rank and all-gather it on the next stage (Megatron-LM, DeepSpeed)"));
  t.push_back(plain("training.param_gather_dtype", tr(&TrainingSpec::param_gather_dtype), "",
                    one_of({"bf16", "fp32"}),
                    "Parameters all-gathered by FSDP / ZeRO in bf16 or fp32 (FSDP param_dtype "
                    "unset): fp32 doubles the gather traffic, and autocast casts each weight to "
                    "16 bits where a GEMM uses it (and its gradient back)"));
  t.push_back(plain("training.grad_reduce_dtype", tr(&TrainingSpec::grad_reduce_dtype), "",
                    one_of({"bf16", "fp32"}),
                    "Gradients reduced and kept in bf16 or fp32 (FSDP reduce_dtype, Megatron "
                    "grad_reduce_in_fp32): fp32 doubles the gradient traffic and buffers"));
  t.push_back(plain("training.grad_sync", tr(&TrainingSpec::grad_sync), "",
                    one_of({"auto", "all_reduce"}),
                    "Gradient synchronization with zero 1: auto reduce-scatters (Megatron's "
                    "distributed optimizer); all_reduce all-reduces the whole gradient, then "
                    "all-gathers the updated parameters (DeepSpeed's BF16_Optimizer)"));
  t.push_back(plain("training.grad_accumulation", tr(&TrainingSpec::grad_accumulation), "",
                    one_of({"fused", "add", "cast_add"}),
                    "How each micro-batch's weight gradients reach the fp32 gradient buffer: "
                    "fused into the weight-gradient GEMM (Megatron gradient_accumulation_fusion; "
                    "FSDP), add (one kernel a parameter after the backward, 10 B each), cast_add "
                    "(cast to fp32, then add: DeepSpeed's BF16_Optimizer, 18 B each)"));
  t.push_back(plain("training.recompute_early_stop", tr(&TrainingSpec::recompute_early_stop), "",
                    kAny,
                    "Full recompute stops once the layer's saved tensors exist again (PyTorch "
                    ">= 2.1 non-reentrant checkpointing: the residual add and, in 16 bits, the "
                    "MLP's output GEMM are not rerun); false reruns the whole forward (Megatron, "
                    "DeepSpeed)"));
  t.push_back(plain("training.memory_reserve_GB", tr(&TrainingSpec::memory_reserve_GB), "GB",
                    at_least(0), "GPU memory kept free (CUDA context, NCCL buffers, allocator)"));
  t.push_back(plain("training.price_per_gpu_hour", tr(&TrainingSpec::price_per_gpu_hour), "USD",
                    at_least(0), "Illustrative price for the cost line"));
}

}  // namespace

// The remaining sections (perturbations, failures, recovery, costs, collectives, validation)
// and the section rules are in scenario_table_ops.cpp.
void add_operations_fields(std::vector<Entry>& t);
std::vector<Section> operations_sections();

const std::vector<Entry>& schema_entries() {
  static const std::vector<Entry> table = [] {
    std::vector<Entry> t;
    top_level(t);
    cluster(t);
    fabric(t);
    model(t);
    parallelism(t);
    training(t);
    add_operations_fields(t);
    return t;
  }();
  return table;
}

const std::vector<Section>& schema_sections() {
  static const std::vector<Section> sections = [] {
    std::vector<Section> s;
    Section cluster;
    cluster.path = "cluster";
    cluster.after = [](const MapReader& r, Scenario& sc) {
      // A profile name must exist even when the scenario never runs a step (fabric-only).
      const std::string& gpu = sc.cluster.gpu;
      const bool is_path = gpu.find('/') != std::string::npos ||
                           (gpu.size() > 5 && gpu.compare(gpu.size() - 5, 5, ".json") == 0);
      const auto names = calibrate::shipped_profile_names();
      if (!is_path && std::find(names.begin(), names.end(), gpu) == names.end())
        throw r.error("gpu", gpu,
                      "no hardware profile of that name; shipped: " + core::quoted_list(names) +
                          core::did_you_mean(gpu, names) + " (or a path to a profile .json)");
    };
    s.push_back(cluster);
    for (const char* job : {"model", "parallelism", "training"}) {
      Section sec;
      sec.path = job;
      sec.present = [](const Scenario& sc) { return sc.has_job; };
      s.push_back(sec);
    }
    for (auto& sec : operations_sections()) s.push_back(std::move(sec));
    return s;
  }();
  return sections;
}

}  // namespace twin::sim::detail
