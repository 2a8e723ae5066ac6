#pragma once
/// Megatron-Core's pipeline layout (`pipeline_model_parallel_layout`): what each virtual pipeline
/// stage holds, written one character per layer. E is the embedding, t a transformer layer, m a
/// multi-token-prediction layer, L the output layer and loss; '|' ends a virtual stage, "(...)*n"
/// repeats a group and "x*n" a character n times, commas are decoration. DeepSeek-V3's H100
/// recipe runs "Et|(tt|)*30mL" on 8 stages of 4 chunks: the embedding with one layer first, 30
/// virtual stages of two layers, the MTP module with the loss last.
///
/// Virtual stage i runs on pipeline rank i mod pp as its chunk i / pp, the order of
/// Layout::chunk_layers. Megatron-Core's `account_for_embedding_in_pipeline_split` and
/// `account_for_loss_in_pipeline_split` are the layout that counts the embedding and the loss as
/// one layer each and splits evenly: for 94 layers on 8 x 4, "Ett|(ttt|)*30ttL".
///
/// The step model keeps the embedding on the first virtual stage and the output layer, the loss
/// and the MTP module on the last, as a layout must place E and L (Megatron-Core's own check); an
/// MTP layer anywhere else is refused.

#include <string>
#include <vector>

#include "workload/model.hpp"

namespace twin::workload {

struct PipelineLayout {
  std::vector<int> chunk_layers;  ///< transformer layers of virtual stage i, i = chunk * pp + rank
  int virtual_stages = 1;         ///< chunks per pipeline rank
};

/// Parses and checks `text` for `model` on `pp` pipeline ranks; throws core::Error naming
/// parallelism.pipeline_layout with the reason.
PipelineLayout parse_pipeline_layout(const std::string& text, const ModelSpec& model, int pp);

}  // namespace twin::workload
