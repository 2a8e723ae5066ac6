#include "calibrate/nccl_tests.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <fstream>
#include <map>
#include <regex>
#include <set>
#include <sstream>

#include "core/error.hpp"
#include "core/file.hpp"
#include "core/text.hpp"

namespace twin::calibrate {
namespace {

std::vector<std::string> split_ws(const std::string& s) {
  std::istringstream in(s);
  std::vector<std::string> out;
  for (std::string t; in >> t;) out.push_back(t);
  return out;
}

const std::vector<std::string>& known_ops() {
  static const std::vector<std::string> ops = {
      "all_reduce", "all_gather", "reduce_scatter", "alltoall", "sendrecv",
      "broadcast",  "reduce",     "gather",         "scatter",  "hypercube"};
  return ops;
}

/// More ranks than any log could come from: counts above it are garbled text, not a cluster.
constexpr int kMaxRanks = 1 << 22;

struct Columns {
  int size = -1, count = -1, type = -1, redop = -1, root = -1;
  int time = -1, algbw = -1, busbw = -1, check = -1;              ///< out-of-place
  int in_time = -1, in_algbw = -1, in_busbw = -1, in_check = -1;  ///< in-place
  bool counts_wrong = false;  ///< "#wrong" (a count); old logs' "error" is a relative error
  int total = 0;
};

/// Maps a header like "size count type redop root time algbw busbw #wrong time ..." to columns.
/// Each of time/algbw/busbw/#wrong belongs to the timing block (out-of-place, then in-place)
/// opened by the last "time" before it.
Columns parse_header(const std::vector<std::string>& names) {
  Columns c;
  c.total = static_cast<int>(names.size());
  int timing_block = -1;
  for (int i = 0; i < c.total; ++i) {
    const std::string& n = names[i];
    const bool in_place = timing_block >= 1;
    if (n == "size")
      c.size = i;
    else if (n == "count")
      c.count = i;
    else if (n == "type")
      c.type = i;
    else if (n == "redop")
      c.redop = i;
    else if (n == "root")
      c.root = i;
    else if (n == "time")
      (++timing_block == 0 ? c.time : c.in_time) = i;
    else if (n == "algbw")
      (in_place ? c.in_algbw : c.algbw) = i;
    else if (n == "busbw")
      (in_place ? c.in_busbw : c.busbw) = i;
    else if (n == "#wrong" || n == "error") {
      (in_place ? c.in_check : c.check) = i;
      c.counts_wrong = n == "#wrong";
    }
  }
  return c;
}

double number(const std::string& token, const std::string& what, const std::string& source,
              int line) {
  char* end = nullptr;
  const double v = std::strtod(token.c_str(), &end);
  if (end == token.c_str() || *end != '\0' || !std::isfinite(v))
    throw core::Error(fmt::format("line {}", line), token,
                      fmt::format("{} is not a finite number (garbled row?)", what), source);
  return v;
}

/// Names the collective of a run whose file does not: busbw / algbw = 2(n-1)/n > 1 happens
/// only for all-reduce; every other collective's factor is at most 1 and ambiguous.
void infer_op(NcclTestsRun& run, const std::string& source) {
  std::vector<double> ratios;
  for (const auto& row : run.rows)
    if (row.algbw_GBps > 0) ratios.push_back(row.busbw_GBps / row.algbw_GBps);
  std::sort(ratios.begin(), ratios.end());
  if (!ratios.empty() && ratios[ratios.size() / 2] > 1.05) {
    run.op = "all_reduce";
    return;
  }
  throw core::Error(fmt::format("line {}", run.header_line), "",
                    "cannot tell which collective this run measured (no '*_perf' name before "
                    "its header, and busbw/algbw does not single one out); name it with --op",
                    source);
}

}  // namespace

double bus_factor(const std::string& op, int ranks) {
  const double n = ranks;
  if (ranks <= 1) return 0.0;
  if (op == "all_reduce") return 2.0 * (n - 1) / n;
  // nccl-tests' *GetBw (src/<op>.cu): every rank receives (or sends) all but its own 1/n of
  // the data for the gathering and scattering ops, including gather, scatter and hypercube.
  if (op == "all_gather" || op == "reduce_scatter" || op == "alltoall" || op == "gather" ||
      op == "scatter" || op == "hypercube")
    return (n - 1) / n;
  return 1.0;  // broadcast, reduce, sendrecv: bus bandwidth equals algorithm bandwidth
}

NcclTestsLog parse_nccl_tests(const std::string& text, const std::string& source,
                              const std::string& default_op) {
  NcclTestsLog log;
  log.source = source;
  std::istringstream in(text);
  std::string line;
  int line_no = 0;
  std::string pending_op;
  std::set<std::string> hosts;
  std::map<std::string, int> ranks_on_host;
  Columns columns;
  bool have_columns = false;
  NcclTestsRun* run = nullptr;
  static const std::regex perf_name(R"(\b([a-z_]+?)_perf\b)");
  static const std::regex device_line(
      R"(#\s*Rank\s+(\d+).*\bon\s+(\S+)\s+device\s+(\d+)\s+\[[^\]]*\]\s+(.*\S))");
  static const std::regex annotation(R"((\d+)\s+nodes?\s*x\s*(\d+))");
  static const std::regex avg_line(R"(#\s*Avg bus bandwidth\s*:\s*(\S+))");
  static const std::regex rank_label(R"(^\s*\d+:\s)");
  static const std::regex table_complete(R"(#\s*clustertwin annotation:\s*table complete)");
  int annotated_nodes = 0, annotated_gpus = 0;
  int highest_rank = -1;  // nccl-tests numbers ranks globally: "Rank 127" means 128 of them
  int highest_device = -1;

  while (std::getline(in, line)) {
    ++line_no;
    if (!line.empty() && line.back() == '\r') line.pop_back();
    // A launcher's rank label ("0: " from srun --label) before nccl-tests' own text.
    line = std::regex_replace(line, rank_label, "");
    const auto tokens = split_ws(line);
    if (tokens.empty()) continue;
    if (tokens[0][0] == '#') {
      std::smatch m;
      if (std::regex_search(line, m, device_line)) {
        ++log.ranks;
        const double rank = number(m[1], "rank", source, line_no);
        if (rank >= kMaxRanks)
          throw core::Error(fmt::format("line {}", line_no), m[1].str(),
                            fmt::format("rank number beyond {} (garbled device line?)", kMaxRanks),
                            source);
        highest_rank = std::max(highest_rank, static_cast<int>(rank));
        hosts.insert(m[2]);
        ++ranks_on_host[m[2]];
        // A device index past any node's GPU count is garbled text: it is not used for a split.
        const double device = number(m[3], "device", source, line_no);
        if (device < kMaxRanks) highest_device = std::max(highest_device, static_cast<int>(device));
        log.gpu_model = m[4];
        continue;
      }
      if (run != nullptr && std::regex_search(line, table_complete)) {
        run = nullptr;  // a published table without its closing line, marked so by hand
        have_columns = false;
        continue;
      }
      if (std::regex_search(line, m, avg_line)) {
        if (run == nullptr)
          throw core::Error(fmt::format("line {}", line_no), "",
                            "'Avg bus bandwidth' before any result row", source);
        run->avg_busbw_GBps = number(m[1], "average bus bandwidth", source, line_no);
        run = nullptr;
        have_columns = false;
        continue;
      }
      if (std::regex_search(line, m, perf_name)) {
        const std::string op = m[1];
        if (std::find(known_ops().begin(), known_ops().end(), op) != known_ops().end())
          pending_op = op;
      }
      if (annotated_nodes == 0 && std::regex_search(line, m, annotation)) {
        const double nodes = number(m[1], "node count", source, line_no);
        const double gpus = number(m[2], "GPUs per node", source, line_no);
        if (nodes < 1 || gpus < 1 || nodes * gpus > kMaxRanks)
          throw core::Error(fmt::format("line {}", line_no), m.str(0),
                            fmt::format("not a cluster of at most {} GPUs", kMaxRanks), source);
        annotated_nodes = static_cast<int>(nodes);
        annotated_gpus = static_cast<int>(gpus);
      }
      // The column header: "#  size  count  type ..." (the units line below it is skipped).
      std::vector<std::string> names(tokens.begin() + (tokens[0] == "#" ? 1 : 0), tokens.end());
      if (!names.empty() && names[0].rfind('#', 0) == 0) names[0] = names[0].substr(1);
      if (names.size() >= 6 && names[0] == "size" && names[1] == "count") {
        columns = parse_header(names);
        have_columns = true;
        const bool in_place_partial =
            columns.in_time >= 0 && (columns.in_algbw < 0 || columns.in_busbw < 0);
        if (columns.size < 0 || columns.time < 0 || columns.algbw < 0 || columns.busbw < 0 ||
            in_place_partial)
          throw core::Error(fmt::format("line {}", line_no), line,
                            "column header lacks size/time/algbw/busbw in each timing block "
                            "(nccl-tests writes 'time algbw busbw' out-of-place and in-place)",
                            source);
        // An unnamed run is resolved after its rows are read (see infer_op).
        const std::string op = !pending_op.empty() ? pending_op : default_op;
        log.runs.push_back(NcclTestsRun{op, {}, std::nullopt, line_no});
        run = &log.runs.back();
        pending_op.clear();
      }
      continue;
    }
    // A data row.
    if (!have_columns || run == nullptr) {
      // Outside a table, text is the launcher's or NCCL's (mpirun echo, "NCCL version ...",
      // warnings); a number there is a row without its header.
      char* end = nullptr;
      (void)std::strtod(tokens[0].c_str(), &end);
      if (end == tokens[0].c_str() || *end != '\0') continue;
      throw core::Error(fmt::format("line {}", line_no), tokens[0],
                        "data before a column header (not nccl-tests output?)", source);
    }
    if (static_cast<int>(tokens.size()) != columns.total)
      throw core::Error(fmt::format("line {}", line_no), line,
                        fmt::format("expected {} columns, found {} (truncated or garbled row)",
                                    columns.total, tokens.size()),
                        source);
    NcclTestsRow row;
    row.line = line_no;
    row.size_bytes = number(tokens[columns.size], "size", source, line_no);
    if (columns.count >= 0) row.count = number(tokens[columns.count], "count", source, line_no);
    if (columns.type >= 0) row.type = tokens[columns.type];
    if (columns.redop >= 0) row.redop = tokens[columns.redop];
    if (columns.root >= 0) {
      const double root = number(tokens[columns.root], "root", source, line_no);
      if (root < -1 || root > kMaxRanks)
        throw core::Error(fmt::format("line {}", line_no), tokens[columns.root],
                          "root is not a rank", source);
      row.root = static_cast<int>(root);
    }
    row.time_us = number(tokens[columns.time], "time", source, line_no);
    row.algbw_GBps = number(tokens[columns.algbw], "algbw", source, line_no);
    row.busbw_GBps = number(tokens[columns.busbw], "busbw", source, line_no);
    if (columns.in_time >= 0) {
      row.inplace_time_us = number(tokens[columns.in_time], "in-place time", source, line_no);
      row.inplace_algbw_GBps = number(tokens[columns.in_algbw], "in-place algbw", source, line_no);
      row.inplace_busbw_GBps = number(tokens[columns.in_busbw], "in-place busbw", source, line_no);
    }
    // nccl-tests counts wrong results per row; such a row measured broken hardware or a broken
    // build, not the fabric: it is reported and left out of every fit.
    double wrong = 0;
    for (int check_column : {columns.check, columns.in_check}) {
      if (check_column < 0) continue;
      const std::string& check = tokens[static_cast<std::size_t>(check_column)];
      if (check == "N/A") continue;
      const double value = number(check, "#wrong/error", source, line_no);
      if (columns.counts_wrong && value > 0) wrong += value;
    }
    if (wrong > 0) {
      log.warnings.push_back(
          fmt::format("{}: line {}: {:.0f} wrong result(s) at {:.0f} bytes (#wrong): row excluded",
                      source, line_no, wrong, row.size_bytes));
      continue;
    }
    if (row.size_bytes < 0 || row.time_us < 0 || row.busbw_GBps < 0)
      throw core::Error(fmt::format("line {}", line_no), line, "negative size, time or bandwidth",
                        source);
    run->rows.push_back(row);
  }

  if (log.runs.empty())
    throw core::Error("", "", "no nccl-tests results found (no 'size count type ...' header)",
                      source);
  if (run != nullptr)
    throw core::Error(fmt::format("line {}", line_no), "",
                      "file ends inside a run, without its '# Avg bus bandwidth' line "
                      "(truncated log?)",
                      source);
  for (auto& r : log.runs) {
    if (r.rows.empty())
      throw core::Error(fmt::format("line {}", r.header_line), r.op, "run has no result rows",
                        source);
    if (r.op.empty()) infer_op(r, source);
  }
  if (annotated_nodes > 0) {
    // An explicit "N nodes x G" annotation wins over a device block that was cut short.
    log.nodes = annotated_nodes;
    log.gpus_per_node = annotated_gpus;
    log.ranks = annotated_nodes * annotated_gpus;
  } else if (highest_rank >= log.ranks) {
    // The device block was cut short (a README keeping a few ranks' lines): the rank count is
    // known. One process per GPU numbers devices 0..G-1 on each node, so the highest device a
    // listed line names is at least G - 1, and the last rank, on the last node's last GPU,
    // names exactly G - 1: the split is inferred from it and said, never assumed silently.
    const int ranks = highest_rank + 1, gpn = highest_device + 1;
    const bool splits = gpn > 0 && ranks % gpn == 0 &&
                        static_cast<int>(hosts.size()) <= ranks / gpn &&
                        std::all_of(ranks_on_host.begin(), ranks_on_host.end(),
                                    [&](const auto& h) { return h.second <= gpn; });
    if (splits) {
      log.nodes = ranks / gpn;
      log.gpus_per_node = gpn;
    }
    log.warnings.push_back(
        splits ? fmt::format("the '# Using devices' block lists {} of the log's {} ranks "
                             "(abbreviated); the highest device it names, {}, makes it {} "
                             "node(s) x {} GPUs (--nodes or --gpus-per-node to say otherwise)",
                             log.ranks, ranks, highest_device, log.nodes, gpn)
               : fmt::format("the '# Using devices' block lists {} of the log's {} ranks "
                             "(abbreviated): it does not say how they split into nodes",
                             log.ranks, ranks));
    log.ranks = ranks;
  } else if (!hosts.empty()) {
    // One scale per log: nodes x GPUs per node only means something when every host runs the
    // same number of ranks.
    const auto& [first_host, first_count] = *ranks_on_host.begin();
    for (const auto& [host, count] : ranks_on_host)
      if (count != first_count)
        throw core::Error("# Using devices", host,
                          fmt::format("hosts run different numbers of ranks ({} on {}, {} on {}): "
                                      "a log must come from one scale (nodes x GPUs per node)",
                                      first_count, first_host, count, host),
                          source);
    log.nodes = static_cast<int>(hosts.size());
    log.gpus_per_node = log.ranks / log.nodes;
  }
  return log;
}

NcclTestsLog read_nccl_tests(const std::string& path, const std::string& default_op) {
  return parse_nccl_tests(core::read_text_file(path, "nccl-tests log"), path, default_op);
}

}  // namespace twin::calibrate
