#pragma once
/// Reader of nccl-tests output (all_reduce_perf, all_gather_perf, ...), as people have it.
///
/// Accepted: current output (`redop root` columns, `#wrong`), older output (no `root` column,
/// `error` instead of `#wrong`), N/A in validation columns, out-of-place and in-place halves,
/// the `# Using devices` block (ranks, hosts, GPU model), several collectives in one file
/// (each introduced by a `*_perf` name in a comment, e.g. "# Collective test starting:
/// all_gather_perf"), and `# Avg bus bandwidth` lines. A row that is cut short or holds
/// something that is not a number is an error naming the line; so is a file that ends without
/// the `# Avg bus bandwidth` line that closes every nccl-tests run (a truncated log).
/// Text outside a table (launcher echo, "NCCL version", warnings) and srun rank labels ("0: ")
/// are skipped. Hand annotations in comments: "N nodes x G" gives the scale (and wins over a
/// device block whose rank lines were elided); "clustertwin annotation: table complete" closes
/// a table published without its closing line. Hosts running different numbers of ranks are
/// an error (a log has one scale).

#include <optional>
#include <string>
#include <vector>

namespace twin::calibrate {

struct NcclTestsRow {
  double size_bytes = 0;
  double count = 0;
  std::string type;
  std::string redop;
  int root = -1;
  double time_us = 0, algbw_GBps = 0, busbw_GBps = 0;  ///< out-of-place
  double inplace_time_us = 0, inplace_algbw_GBps = 0, inplace_busbw_GBps = 0;
  int line = 0;
};

struct NcclTestsRun {
  std::string op;  ///< all_reduce, all_gather, reduce_scatter, alltoall, sendrecv, broadcast, ...
  std::vector<NcclTestsRow> rows;
  std::optional<double> avg_busbw_GBps;
  int header_line = 0;
};

struct NcclTestsLog {
  std::string source;
  std::vector<NcclTestsRun> runs;
  int ranks = 0;  ///< from "# Using devices" (0 if absent)
  int nodes = 0;  ///< distinct hosts, or from an "N nodes x G" annotation in a comment
  int gpus_per_node = 0;
  std::string gpu_model;
  /// Rows left out, with why (e.g. "#wrong" > 0: the collective returned wrong results).
  std::vector<std::string> warnings;
};

/// Parses log text; `source` names it in errors. `default_op` is used for runs whose
/// collective the file does not name (empty: such a run is an error).
NcclTestsLog parse_nccl_tests(const std::string& text, const std::string& source,
                              const std::string& default_op = {});
NcclTestsLog read_nccl_tests(const std::string& path, const std::string& default_op = {});

/// nccl-tests' bus-bandwidth factor: busbw = algbw * factor(n ranks).
double bus_factor(const std::string& op, int ranks);

}  // namespace twin::calibrate
