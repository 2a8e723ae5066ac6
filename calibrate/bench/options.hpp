#pragma once
/// clustertwin-calib's command line: every option is parsed and checked here, before the tool
/// touches a GPU, so a typo costs a second, not a GEMM sweep on a borrowed node.
///
/// Defaults follow the methods they reproduce: NCCL sweeps as nccl-tests (-w 5 -n 20, time
/// averaged over ranks as its default -a 1), GEMM as the maximum-achievable-matmul method
/// (random inputs, L2 flushed before every timed call, a sustained warm-up so clocks settle at
/// their thermal steady state, then 100 timed calls per shape with the median reported).

#include <CLI/CLI.hpp>
#include <string>
#include <vector>

namespace twin::calib {

/// How a row's time combines the ranks' times: nccl-tests' default averages them (-a 1);
/// the maximum (-a 3) is what a synchronous training step waits for.
enum class TimeOverRanks { average, maximum };

/// The validated options.
struct Options {
  std::string out_dir = "calibration";
  bool gemm = true, hbm = true, nccl = true;
  std::vector<std::string> ops;
  double min_bytes = 8;
  double max_bytes = 16.0 * 1024 * 1024 * 1024;
  int warmup = 5;  ///< NCCL warm-up calls per size (nccl-tests -w 5)
  int iters = 20;  ///< NCCL timed calls per size (nccl-tests -n 20)
  TimeOverRanks time_over_ranks = TimeOverRanks::average;
  bool check = true;          ///< verify every NCCL result against its known pattern (#wrong)
  double timeout_s = 300;     ///< longest wait for one batch of GPU work before aborting the job
  double gemm_warmup_s = 30;  ///< sustained GEMM load before the first timed shape
  int gemm_warmup = 20;       ///< untimed calls per shape
  int gemm_iters = 100;       ///< timed calls per shape
  bool quick = false;         ///< fewer GEMM shapes and sizes, shorter warm-up (a first look)
  std::string base;           ///< profile the fit starts from ("" = from the GPU's name)
};

/// The collectives clustertwin-calib can run (nccl-tests names without "_perf").
const std::vector<std::string>& calib_ops();

/// "8", "64K", "16M", "1G", "1T" (binary multiples) -> bytes; throws core::Error naming
/// `option` for anything else, including zero and negative sizes.
double parse_bytes(const std::string& text, const std::string& option);

/// Builds the CLI11 description; validated() turns what it parsed into Options.
class OptionParser {
 public:
  OptionParser();
  CLI::App& app() { return app_; }
  /// Throws core::Error naming the option, its value and what would be valid.
  [[nodiscard]] Options validated() const;

 private:
  CLI::App app_;
  Options raw_;
  std::string ops_, min_bytes_ = "8", max_bytes_ = "16G", time_over_ranks_ = "avg";
  bool no_gemm_ = false, no_hbm_ = false, no_nccl_ = false, no_check_ = false;
};

}  // namespace twin::calib
