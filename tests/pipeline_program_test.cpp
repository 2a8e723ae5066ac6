// Closed-form checks of the pipeline in the step program: balanced uneven stages, blocking
// sends of plain 1F1B, scatter-gather, and what full and partial recompute rerun.

#include <fmt/format.h>
#include <gtest/gtest.h>

#include "program_helpers.hpp"
#include "test_helpers.hpp"
#include "twin/scenario.hpp"
#include "twin/step_sim.hpp"
#include "workload/kernel_cost.hpp"
#include "workload/memory.hpp"
#include "workload/pipeline_layout.hpp"
#include "workload/step_program.hpp"

namespace twin::workload {
namespace {

using test::eight_sequences;
using test::h100_bf16;
using test::one_stage;
using test::small_model;

TEST(Pipeline, BalancedSplitOf126LayersOn16Stages) {
  // One layer takes 1; the embedding 0.05 and the output layer + loss 0.6 of a layer: the
  // slowest stage is 8 layers, so the first and last stage give up one each: 7, 8 x 14, 7.
  const auto split = balance_stage_layers(126, 16, 1.0, 0.05, 0.6);
  std::vector<int> expected(16, 8);
  expected.front() = 7;
  expected.back() = 7;
  EXPECT_EQ(split, expected);
  // Even work splits evenly.
  EXPECT_EQ(balance_stage_layers(32, 4, 1.0, 0.0, 0.0), std::vector<int>(4, 8));
}

TEST(Pipeline, AutoStageLayersRunsLlama405bOn16Stages) {
  const sim::Scenario s =
      sim::load_scenario("", {"model.preset=llama3-405b", "parallelism.pp=16", "parallelism.dp=32",
                              "parallelism.virtual_stages=1", "parallelism.stage_layers=auto",
                              "parallelism.recompute=full", "training.global_batch=512"});
  const sim::StepReport r = sim::simulate_step(s);
  ASSERT_EQ(r.stage_layers.size(), 16u);
  int sum = 0;
  for (int n : r.stage_layers) sum += n;
  EXPECT_EQ(sum, 126);
  EXPECT_EQ(r.stage_layers.back(), 7);  // the output layer of a 128K vocabulary is worth ~1
}

// DeepSeek-V3's H100 recipe: the embedding with one layer, 30 virtual stages of two, the MTP
// module with the loss alone, on 8 ranks of 4 chunks; virtual stage i is chunk i / 8 of rank i % 8.
TEST(PipelineLayout, MegatronLayoutStringsGiveEveryChunksLayers) {
  ModelSpec m;
  m.layers = 61;
  m.mtp_layers = 1;
  const PipelineLayout l = parse_pipeline_layout("Et|(tt|)*30mL", m, 8);
  EXPECT_EQ(l.virtual_stages, 4);
  std::vector<int> expected(32, 2);
  expected.front() = 1;
  expected.back() = 0;
  EXPECT_EQ(l.chunk_layers, expected);
  // x*n repeats one character; commas and blanks are decoration.
  m.layers = 94;
  m.mtp_layers = 0;
  const PipelineLayout accounted = parse_pipeline_layout("Et*2|(t*3|)*30, ttL", m, 8);
  EXPECT_EQ(accounted.chunk_layers.front(), 2);
  EXPECT_EQ(accounted.chunk_layers[1], 3);
  EXPECT_EQ(accounted.chunk_layers.back(), 2);
  EXPECT_EQ(accounted.chunk_layers.size(), 32u);
}

TEST(PipelineLayout, BadLayoutsNameTheReason) {
  ModelSpec m;
  m.layers = 4;
  auto reason = [&](const std::string& text, int pp) {
    return test::error_of([&] { parse_pipeline_layout(text, m, pp); });
  };
  EXPECT_EQ(reason("Ett|tL", 2).field(), "parallelism.pipeline_layout");
  EXPECT_NE(reason("Ett|tt|L", 2).reason().find("not a multiple of parallelism.pp (2)"),
            std::string::npos);
  EXPECT_NE(reason("Ett|tL", 2).reason().find("places 3 transformer layers"), std::string::npos);
  EXPECT_NE(reason("tEt|ttL", 2).reason().find("embedding (E) comes first"), std::string::npos);
  EXPECT_NE(reason("Ett|tLt", 2).reason().find("(L) come last"), std::string::npos);
  EXPECT_NE(reason("Ett|tmtL", 2).reason().find("model.mtp_layers is 0"), std::string::npos);
  EXPECT_NE(reason("Etx|ttL", 2).reason().find("unknown layer 'x'"), std::string::npos);
  EXPECT_NE(reason("E(t|)*2ttL", 2).reason().find("has 3 virtual stages"), std::string::npos);
  EXPECT_NE(reason("E((t)*2)*2|L", 2).reason().find("do not nest"), std::string::npos);
  EXPECT_NE(reason("E(tt|L", 2).reason().find("not closed"), std::string::npos);
  EXPECT_NE(reason("Et*|tttL", 2).reason().find("(...)*n or x*n"), std::string::npos);
  EXPECT_NE(reason("E()*2tt|ttL", 2).reason().find("empty"), std::string::npos);
  EXPECT_NE(reason("E*tt|ttL", 2).reason().find("(...)*n or x*n"), std::string::npos);
  EXPECT_NE(reason("Et*999999999|L", 2).reason().find("more than"), std::string::npos);
  m.mtp_layers = 1;
  EXPECT_NE(reason("Ettm|ttL", 2).reason().find("on the last stage"), std::string::npos);
  EXPECT_NE(reason("Ett|tmtL", 2).reason().find("come before the MTP"), std::string::npos);
}

// A layout puts the loss alone in the last chunk: the chunks a step runs are the layout's, and
// virtual_stages must agree with it.
TEST(PipelineLayout, TheStepRunsTheLayoutsChunks) {
  const std::vector<std::string> base = {"cluster.nodes=64",        "model.preset=llama3-8b",
                                         "parallelism.pp=4",        "parallelism.dp=16",
                                         "parallelism.tp=8",        "parallelism.virtual_stages=2",
                                         "training.global_batch=64"};
  auto with = [&](std::vector<std::string> more) {
    more.insert(more.begin(), base.begin(), base.end());
    return sim::load_scenario("", more);
  };
  const sim::StepReport r =
      sim::simulate_step(with({"parallelism.pipeline_layout=E(tttt|)*7ttttL"}));
  EXPECT_EQ(r.stage_layers, (std::vector<int>{8, 8, 8, 8}));
  // Virtual stage i on rank i mod 4: 5 + 5, 5 + 5, 5 + 2, 5 + the loss alone.
  const sim::StepReport last_alone =
      sim::simulate_step(with({"parallelism.pipeline_layout=Et*5|(t*5|)*5t*2|L"}));
  EXPECT_EQ(last_alone.stage_layers, (std::vector<int>{10, 10, 7, 5}));
  EXPECT_GT(last_alone.step_time_s, 0);
  auto field = [&](std::vector<std::string> more) {
    return test::error_of([&] { sim::simulate_step(with(more)); }).field();
  };
  EXPECT_EQ(field({"parallelism.pipeline_layout=E(tt|)*15ttL"}), "parallelism.virtual_stages");
  EXPECT_EQ(field({"parallelism.pipeline_layout=E(tttt|)*7ttttL", "parallelism.stage_layers=auto"}),
            "parallelism.pipeline_layout");
}

// With interleaving, auto balances the virtual stages, since the schedule moves chunk by chunk
// in lock step. On DeepSeek-V3's 1,024-GPU run (8 ranks x 4 chunks, the MTP module and two
// output layers over a 129K vocabulary with the loss) it finds the recipe's own layout,
// Et|(tt|)*30mL: one layer beside the embedding, the loss and MTP module alone, two layers in
// every other chunk. Balancing the ranks instead split the last rank's 5 layers 2, 1, 1, 1.
TEST(Pipeline, AutoStageLayersBalancesEveryChunkWhenInterleaved) {
  const std::string path = std::string(CLUSTERTWIN_SOURCE_DIR) +
                           "/scenarios/validation/megatron-bridge/"
                           "mb-25.09-deepseekv3-dropless-1024gpu-fp8.yaml";
  const sim::Scenario recipe = sim::load_scenario(path, {});
  ASSERT_EQ(recipe.parallelism.pipeline_layout, "Et|(tt|)*30mL");
  sim::Scenario balanced = recipe;
  balanced.parallelism.pipeline_layout.clear();
  balanced.parallelism.stage_layers_auto = true;
  const sim::StepReport r = sim::simulate_step(balanced);
  std::vector<int> chunk_layers;
  for (int c = 0; c < 4; ++c)
    for (int s = 0; s < 8; ++s)
      chunk_layers.push_back(
          r.program.chunks[static_cast<std::size_t>(s)][static_cast<std::size_t>(c)].layers);
  std::vector<int> expected(32, 2);
  expected.front() = 1;
  expected.back() = 0;
  EXPECT_EQ(chunk_layers, expected);
  EXPECT_DOUBLE_EQ(r.step_time_s, sim::simulate_step(recipe).step_time_s);
}

TEST(Pipeline, PlainOneFOneBSendsBlockTheSendingStage) {
  // Two stages, no interleaving: each forward of stage 0 hands its activation over with a
  // blocking send, so stage 0's next op starts no earlier than that transfer's end (which is
  // when stage 1's forward of the same micro-batch may start).
  const sim::StepReport r = sim::simulate_step(sim::load_scenario(
      "", {"cluster.nodes=2", "model.preset=llama3-8b", "parallelism.tp=8", "parallelism.pp=2",
           "parallelism.dp=1", "parallelism.virtual_stages=1", "training.global_batch=8"}));
  std::vector<const sim::TimelineOp*> stage0;
  std::vector<double> arrives(8, -1.0);
  for (const auto& op : r.timeline) {
    if (op.stream != "compute" || op.micro_batch < 0) continue;
    if (op.stage == 0) stage0.push_back(&op);
    if (op.stage == 1 && op.forward)
      arrives[static_cast<std::size_t>(op.micro_batch)] = op.p2p_end_s;
  }
  int checked = 0;
  for (std::size_t i = 0; i + 1 < stage0.size(); ++i) {
    if (!stage0[i]->forward) continue;
    const double arrival = arrives[static_cast<std::size_t>(stage0[i]->micro_batch)];
    ASSERT_GT(arrival, stage0[i]->end_s);  // the transfer takes time
    EXPECT_GE(stage0[i + 1]->start_s, arrival - 1e-12);
    ++checked;
  }
  EXPECT_GE(checked, 6);
}

TEST(Pipeline, ScatterGatherSendsOneTpShareAndGathersItOnNvlink) {
  // Llama 3 8B, TP 8 x PP 2 on 2 nodes, no sequence parallelism: each TP rank holds the whole
  // activation T h 2 = 2048 x 4096 x 2 bytes. Scatter-gather sends 1/8 of it across the fabric
  // and the next stage all-gathers T h 2 in its node; without it all 8 ranks send T h 2 each.
  auto run = [](bool scatter_gather) {
    return sim::simulate_step(sim::load_scenario(
        "", {"cluster.nodes=2", "model.preset=llama3-8b", "model.seq_len=2048", "parallelism.tp=8",
             "parallelism.pp=2", "parallelism.dp=1", "parallelism.sequence_parallel=false",
             "parallelism.virtual_stages=1", "training.global_batch=8",
             fmt::format("training.pp_scatter_gather={}", scatter_gather)}));
  };
  auto seconds = [](const sim::StepReport& r, const std::string& name) {
    for (const auto& [n, s] : r.collective_times)
      if (n == name) return s;
    return -1.0;
  };
  const sim::StepReport split = run(true), whole = run(false);
  const double activation = 2048.0 * 4096 * 2;
  EXPECT_DOUBLE_EQ(split.program.chunks[0][0].p2p_bytes, activation / 8);
  EXPECT_DOUBLE_EQ(whole.program.chunks[0][0].p2p_bytes, activation);
  // 2 MiB vs 16 MiB over one 400 Gb/s NIC per rank: the bandwidth term shrinks 8x; latency
  // keeps the ratio below 8.
  const double send_split = seconds(split, "PP send/recv s0");
  const double send_whole = seconds(whole, "PP send/recv s0");
  ASSERT_GT(send_split, 0);
  EXPECT_GT(send_whole / send_split, 4.0);
  EXPECT_GT(seconds(split, "PP all_gather s1"), 0);
  EXPECT_LT(seconds(whole, "PP all_gather s1"), 0);  // not issued
  EXPECT_LT(split.step_time_s, whole.step_time_s);
}

TEST(Pipeline, FullRecomputeReissuesTheForwardTpCollectives) {
  const ModelSpec m = small_model();
  ParallelismSpec p = one_stage(2);
  TrainingSpec t = eight_sequences();
  const KernelCoster& c = h100_bf16();
  for (const char* recompute : {"none", "selective", "full"}) {
    p.recompute = recompute;
    const ChunkProgram prog = chunk_program(m, p, t, make_layout(m, p, t, 8), c, 0, 0);
    EXPECT_EQ(prog.tp_collectives, 2 * m.layers);  // two slots per layer and direction
    EXPECT_EQ(prog.recompute_tp_collectives, p.recompute == "full" ? 2 * m.layers : 0);
  }
}

// recompute_layers (Megatron-Core's recompute_method block): the first N layers of a chunk rerun
// their forward, the others keep their activations. Everything that full recompute adds scales
// with N / L: the backward time, the reissued TP collectives, the hardware FLOPs; the memory is
// N layers' inputs plus (L - N) layers' full activations.
TEST(Pipeline, RecomputeLayersRecomputesTheFirstLayersOfEachChunk) {
  const ModelSpec m = small_model();  // 32 layers, one chunk
  ParallelismSpec p = one_stage(2);
  TrainingSpec t = eight_sequences();
  const KernelCoster& c = h100_bf16();
  const Layout layout = make_layout(m, p, t, 8);
  auto program = [&](const char* recompute, int layers) {
    ParallelismSpec q = p;
    q.recompute = recompute;
    q.recompute_layers = layers;
    return chunk_program(m, q, t, layout, c, 0, 0);
  };
  const ChunkProgram none = program("none", 0), all = program("full", 0),
                     twelve = program("full", 12);
  const double L = m.layers;
  EXPECT_NEAR(twelve.backward_s - none.backward_s, 12 / L * (all.backward_s - none.backward_s),
              1e-12);
  EXPECT_DOUBLE_EQ(twelve.forward_s, all.forward_s);
  EXPECT_EQ(twelve.recompute_tp_collectives, 2 * 12);
  EXPECT_EQ(all.recompute_tp_collectives, 2 * m.layers);
  // The recomputed forward's TP transfers overlap the recomputed layers' GEMMs only.
  const double slot = 20e-6;
  EXPECT_NEAR(tp_overlap(twelve, true, slot, true).overlapped_s,
              12 / L * tp_overlap(all, true, slot, true).overlapped_s, 1e-15);
  EXPECT_DOUBLE_EQ(tp_overlap(twelve, true, slot).overlapped_s,
                   tp_overlap(all, true, slot).overlapped_s);
  ASSERT_EQ(twelve.blocks.size(), 4U);  // embedding, 12 recomputed, 20 kept, output layer
  EXPECT_EQ(twelve.blocks[1].label, "dense layer (recomputed)");
  EXPECT_EQ(twelve.blocks[1].count, 12);
  EXPECT_EQ(twelve.blocks[2].label, "dense layer");
  EXPECT_EQ(twelve.blocks[2].count, 20);
  EXPECT_TRUE(twelve.blocks[2].recompute.empty());
  // As many layers as the chunk has, or more, is every layer.
  EXPECT_DOUBLE_EQ(program("full", 32).backward_s, all.backward_s);
  // Memory: 12 layer inputs (2 s b h / t with SP) and 20 layers of everything.
  ParallelismSpec q = p;
  const double kept = memory_per_gpu(m, q, t, layout).activations_GB / L;
  q.recompute = "full";
  const double input = memory_per_gpu(m, q, t, layout).activations_GB / L;
  EXPECT_NEAR(input, 2.0 * 2048 * 4096 / 2 / 1e9, 1e-12);
  q.recompute_layers = 12;
  EXPECT_NEAR(memory_per_gpu(m, q, t, layout).activations_GB, 12 * input + 20 * kept, 1e-9);
  EXPECT_NE(activation_table(m, q, t, 1.0).find("the first 12 layers of each chunk recomputed"),
            std::string::npos);
}

// The hardware FLOPs of recompute_layers: the recomputed share of the layers' forward.
TEST(Pipeline, RecomputeLayersCountsItsShareOfTheHardwareFlops) {
  const std::vector<std::string> base = {"cluster.nodes=4",          "fabric.tiers=2",
                                         "fabric.switch_radix=16",   "model.preset=llama3-8b",
                                         "parallelism.tp=2",         "parallelism.pp=2",
                                         "parallelism.dp=8",         "parallelism.virtual_stages=2",
                                         "training.global_batch=64", "parallelism.recompute=full"};
  auto step = [&](std::vector<std::string> extra) {
    extra.insert(extra.begin(), base.begin(), base.end());
    return sim::simulate_step(sim::load_scenario("", extra));
  };
  const sim::StepReport all = step({}), three = step({"parallelism.recompute_layers=3"});
  // 32 layers in 4 chunks of 8: 3 of each 8 recomputed.
  EXPECT_NEAR(three.hardware_flops_per_step - three.model_flops_per_step,
              3.0 / 8 * (all.hardware_flops_per_step - all.model_flops_per_step),
              1e-9 * all.model_flops_per_step);
  EXPECT_LT(three.step_time_s, all.step_time_s);
}

}  // namespace
}  // namespace twin::workload
