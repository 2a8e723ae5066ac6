#include <fmt/format.h>
#include <unistd.h>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "core/file.hpp"
#include "core/parallel.hpp"
#include "twin/campaign.hpp"

namespace twin::cli {

Action add_campaign(CLI::App& app) {
  auto* cmd = app.add_subcommand("campaign",
                                 "Monte Carlo of a whole training run: failures, "
                                 "stragglers, checkpoints and recovery");
  auto opts = std::make_shared<ScenarioOptions>();
  auto options = std::make_shared<sim::CampaignOptions>();
  opts->add_to(*cmd);
  cmd->add_option("--trials", options->trials, "Monte Carlo trials")
      ->capture_default_str()
      ->check(whole_number(1, kMaxTrials));
  cmd->add_option("--seed", options->seed, "Seed, 0 to 2^64 - 1 (same seed, same results)")
      ->capture_default_str()
      ->check(seed_value());
  cmd->add_option("--threads", options->threads, "Worker threads (0: all cores)")
      ->capture_default_str()
      ->check(whole_number(0, kMaxThreads));
  cmd->add_option("--out", options->out_dir, "Write campaign.h5 here, trial by trial");
  return [opts, options] {
    const sim::Scenario scenario = opts->load();
    if (!options->out_dir.empty()) core::prepare_output_dir(options->out_dir);
    sim::CampaignOptions o = *options;
    o.threads = core::worker_threads(o.threads, o.trials);
    o.progress = !opts->json && isatty(STDERR_FILENO) != 0;
    o.cancel = interrupt_token();
    sim::CampaignReport report;
    try {
      report = sim::run_campaign(scenario, o);
    } catch (const core::Cancelled&) {
      if (o.progress) fmt::print(stderr, "\n");  // end the progress bar's line
      throw;
    }
    fmt::print("{}",
               opts->json ? sim::campaign_json(report) : sim::campaign_text(scenario, report));
    return 0;
  };
}

}  // namespace twin::cli
