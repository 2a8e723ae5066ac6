#include <fmt/format.h>
#include <unistd.h>

#include "cli/commands.hpp"
#include "twin/campaign.hpp"

namespace twin::cli {

Action add_campaign(CLI::App& app) {
  auto* cmd = app.add_subcommand("campaign",
                                 "Monte Carlo of a whole training run: failures, "
                                 "stragglers, checkpoints and recovery");
  auto opts = std::make_shared<ScenarioOptions>();
  auto options = std::make_shared<sim::CampaignOptions>();
  opts->add_to(*cmd);
  cmd->add_option("--trials", options->trials, "Monte Carlo trials")->capture_default_str();
  cmd->add_option("--seed", options->seed, "Seed (same seed, same results)")->capture_default_str();
  cmd->add_option("--threads", options->threads, "Worker threads (0: all cores)")
      ->capture_default_str();
  cmd->add_option("--out", options->out_dir, "Write campaign.h5 here, trial by trial");
  return [opts, options] {
    const sim::Scenario scenario = opts->load();
    sim::CampaignOptions o = *options;
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
