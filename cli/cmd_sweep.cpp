// clustertwin sweep: threads on one machine, or MPI ranks across machines when launched with
// mpirun (rank r runs points r, r + size, ...; rank 0 gathers rows in point order and writes).
#include <fmt/format.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <thread>

#include "cli/commands.hpp"
#include "cli/options.hpp"
#include "core/error.hpp"
#include "core/file.hpp"
#include "core/parallel.hpp"
#include "twin/sweep.hpp"

#ifdef CLUSTERTWIN_WITH_MPI
#include <mpi.h>
#endif

namespace twin::cli {
namespace {

struct SweepArgs {
  ScenarioOptions scenario;
  std::vector<std::string> vary;
  sim::SweepSettings settings;
  std::string out_dir;
  int threads = 0;
  std::size_t max_points = sim::kDefaultMaxPoints;
};

struct World {
  int rank = 0, size = 1;
};

World mpi_world() {
  World w;
#ifdef CLUSTERTWIN_WITH_MPI
  if (std::getenv("OMPI_COMM_WORLD_SIZE") != nullptr || std::getenv("PMI_SIZE") != nullptr) {
    int initialized = 0;
    MPI_Initialized(&initialized);
    if (!initialized) MPI_Init(nullptr, nullptr);
    MPI_Comm_rank(MPI_COMM_WORLD, &w.rank);
    MPI_Comm_size(MPI_COMM_WORLD, &w.size);
  }
#endif
  return w;
}

void mpi_done() {
#ifdef CLUSTERTWIN_WITH_MPI
  int initialized = 0, finalized = 0;
  MPI_Initialized(&initialized);
  MPI_Finalized(&finalized);
  if (initialized && !finalized) MPI_Finalize();
#endif
}

/// Rank 0's loop: reused rows, its own points (threads) and, under MPI, the other ranks' rows,
/// recorded in point order.
void record_points(const SweepArgs& args, const sim::ScenarioText& scenario,
                   const std::vector<sim::SweepPoint>& points,
                   const std::vector<sim::SweepPoint>& todo,
                   const std::map<std::string, sim::PointResult>& done_before, const World& world,
                   bool progress, const std::function<void(const sim::PointResult&)>& record) {
  if (world.size == 1) {
    std::map<int, sim::PointResult> reused;
    for (const auto& p : points)
      if (done_before.count(p.label)) {
        reused[p.index] = done_before.at(p.label);
        reused[p.index].index = p.index;
      }
    // New results arrive in order among themselves; interleave the reused ones by index.
    auto flush_reused = [&](int upto) {
      while (!reused.empty() && reused.begin()->first < upto) {
        record(reused.begin()->second);
        reused.erase(reused.begin());
      }
    };
    sim::run_points(
        scenario, todo, args.settings,
        core::worker_threads(args.threads, static_cast<int>(todo.size())),
        [&](const sim::PointResult& r) {
          flush_reused(r.index);
          record(r);
        },
        progress, interrupt_token());
    flush_reused(static_cast<int>(points.size()));
  } else {
#ifdef CLUSTERTWIN_WITH_MPI
    // Rank 0 walks the points in order: its own it computes, others it receives.
    for (const auto& p : points) {
      if (done_before.count(p.label)) {
        sim::PointResult r = done_before.at(p.label);
        r.index = p.index;
        record(r);
      } else if (p.index % world.size == 0) {
        record(sim::run_point(scenario, p, args.settings, interrupt_token()));
      } else {
        MPI_Status status;
        MPI_Probe(p.index % world.size, p.index, MPI_COMM_WORLD, &status);
        int count = 0;
        MPI_Get_count(&status, MPI_CHAR, &count);
        std::string row(static_cast<std::size_t>(count), '\0');
        MPI_Recv(row.data(), count, MPI_CHAR, p.index % world.size, p.index, MPI_COMM_WORLD,
                 MPI_STATUS_IGNORE);
        auto parsed = sim::read_csv(sim::csv_header(args.settings) + row, args.settings);
        sim::PointResult r;
        if (!parsed.empty()) {
          r = parsed.begin()->second;
        } else {  // an "error" row: keep what the rank said
          r.index = p.index;
          r.label = p.label;
          r.status = "error";
          r.reason = row;
        }
        r.index = p.index;
        record(r);
      }
    }
#endif
  }
}

int run_sweep(const SweepArgs& args) {
  std::vector<sim::Vary> vary;
  for (const auto& v : args.vary) vary.push_back(sim::parse_vary(v, args.max_points));
  // The scenario file is read once; every point is parsed from this text in memory.
  const sim::ScenarioText scenario = sim::ScenarioText::read(args.scenario.path);
  const auto points = sim::sweep_points(scenario, args.scenario.overrides, vary, args.max_points);
  if (!args.out_dir.empty()) core::prepare_output_dir(args.out_dir);
  const World world = mpi_world();

  // Resume: rows already in OUT/sweep.csv are reused when their fingerprint (scenario after
  // overrides, options, profile, version) matches this run's; others are recomputed, and a
  // directory of another study is refused rather than overwritten.
  const std::string study = sim::study_fingerprint(scenario, args.scenario.overrides, vary);
  std::vector<std::string> fingerprints;
  for (const auto& p : points)
    fingerprints.push_back(sim::point_fingerprint(study, scenario, p, args.settings).text());
  std::map<std::string, sim::PointResult> done_before;
  const std::string csv_path = args.out_dir.empty() ? "" : args.out_dir + "/sweep.csv";
  if (!csv_path.empty() && std::filesystem::exists(csv_path)) {
    std::map<std::string, sim::PointResult> earlier;
    try {
      earlier = sim::read_csv(core::read_text_file(csv_path, "sweep.csv"), args.settings);
    } catch (const core::Error& e) {
      throw core::Error("--out", csv_path, e.reason());
    }
    const sim::ResumePlan plan = sim::plan_resume(earlier, points, fingerprints, csv_path);
    done_before = plan.reuse;
    if (world.rank == 0) {
      for (const auto& note : plan.notes) fmt::print(stderr, "sweep: {}\n", note);
      if (!done_before.empty())
        fmt::print(stderr, "sweep: reusing {} finished point(s) from {}\n", done_before.size(),
                   csv_path);
    }
  }
#ifdef CLUSTERTWIN_WITH_MPI
  if (world.size > 1) MPI_Barrier(MPI_COMM_WORLD);  // everyone has read the old rows
#endif

  std::vector<sim::SweepPoint> todo;
  for (const auto& p : points)
    if (!done_before.count(p.label) && p.index % world.size == world.rank) todo.push_back(p);

  if (world.rank != 0) {  // compute this rank's points and send each row to rank 0
#ifdef CLUSTERTWIN_WITH_MPI
    sim::run_points(
        scenario, todo, args.settings, 1,
        [&](const sim::PointResult& r) {
          const std::string row = sim::csv_row(r, args.settings);
          MPI_Send(row.data(), static_cast<int>(row.size()), MPI_CHAR, 0, r.index, MPI_COMM_WORLD);
        },
        false, interrupt_token());
#endif
    mpi_done();
    return 0;
  }

  std::ofstream csv;
  std::unique_ptr<sim::SweepHdf5> h5;
  if (!args.out_dir.empty()) {
    std::filesystem::create_directories(args.out_dir);
    csv.open(csv_path);
    if (!csv) throw core::Error("--out", args.out_dir, "cannot write sweep.csv");
    csv << sim::csv_header(args.settings) << std::flush;
    h5 = std::make_unique<sim::SweepHdf5>(args.out_dir + "/sweep.h5");
  }
  std::vector<sim::PointResult> results;
  auto record = [&](sim::PointResult r) {
    r.fingerprint = fingerprints[static_cast<std::size_t>(r.index)];
    if (csv.is_open()) csv << sim::csv_row(r, args.settings) << std::flush;
    if (h5) h5->write(r);
    results.push_back(std::move(r));
  };

  // On Ctrl-C: every row recorded so far is complete and on disk; a rerun resumes from them.
  const bool progress = !args.scenario.json && isatty(STDERR_FILENO) != 0;
  auto interrupted = [&] {
    if (progress) fmt::print(stderr, "\n");  // end the progress bar's line
    return core::Cancelled(fmt::format(
        "{} of {} points finished{}", results.size(), points.size(),
        csv_path.empty()
            ? ""
            : " (in " + csv_path + " and sweep.h5; the same command resumes from them)"));
  };
  try {
    record_points(args, scenario, points, todo, done_before, world, progress, record);
  } catch (const core::Cancelled&) {
    throw interrupted();
  }
  sim::mark_pareto(results);
  fmt::print("{}", args.scenario.json ? sim::sweep_results_json(results)
                                      : sim::sweep_results_table(results, args.settings));
  mpi_done();
  return 0;
}

}  // namespace

Action add_sweep(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "sweep", "Capacity planning: run the cross product of varied scenario fields");
  auto args = std::make_shared<SweepArgs>();
  args->scenario.add_to(*cmd);
  cmd->add_option("--vary", args->vary, "key=v1,v2,... or key=from:to:step (repeatable)")
      ->required();
  cmd->add_flag("--campaign", args->settings.campaign, "Also run a failure campaign per point");
  cmd->add_option("--trials", args->settings.trials, "Campaign trials per point")
      ->capture_default_str()
      ->check(whole_number(1, kMaxTrials));
  cmd->add_option("--seed", args->settings.seed, "Campaign seed (0 to 2^64 - 1)")
      ->capture_default_str()
      ->check(seed_value());
  cmd->add_option("--threads", args->threads, "Threads (0: all cores; 1 per rank under mpirun)")
      ->check(whole_number(0, kMaxThreads));
  cmd->add_option("--max-points", args->max_points,
                  "Refuse sweeps of more points than this (counted before any work)")
      ->capture_default_str()
      ->check(whole_number(1, 10'000'000));
  cmd->add_option("--out", args->out_dir,
                  "Write sweep.h5 and sweep.csv (a rerun reuses the points whose fingerprint "
                  "matches)");
  return [args] {
    try {
      return run_sweep(*args);
    } catch (...) {
      mpi_done();
      throw;
    }
  };
}

}  // namespace twin::cli
