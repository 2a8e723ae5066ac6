#include "calibrate/bench/nccl_text.hpp"

#include <fmt/format.h>

#include <cmath>

#include "core/error.hpp"
#include "core/text.hpp"

namespace twin::calib {

CollOp coll_op(const std::string& name) {
  if (name == "all_reduce") return CollOp::all_reduce;
  if (name == "all_gather") return CollOp::all_gather;
  if (name == "reduce_scatter") return CollOp::reduce_scatter;
  if (name == "alltoall") return CollOp::alltoall;
  if (name == "sendrecv") return CollOp::sendrecv;
  throw core::Error("op", name, "clustertwin-calib runs " + core::quoted_list(calib_ops()));
}

bool is_reduction(CollOp op) {
  return op == CollOp::all_reduce || op == CollOp::reduce_scatter;
}

std::vector<SweepPoint> sweep_points(CollOp op, int nranks, double min_bytes, double max_bytes) {
  std::vector<SweepPoint> points;
  const bool split =
      op == CollOp::all_gather || op == CollOp::reduce_scatter || op == CollOp::alltoall;
  const std::size_t n = static_cast<std::size_t>(nranks);
  for (double size = min_bytes; size <= max_bytes; size *= 2) {
    const std::size_t count = static_cast<std::size_t>(size) / sizeof(float);
    const std::size_t c = split ? count / n : count;
    if (c == 0) continue;
    const std::size_t bytes =
        sizeof(float) * std::max(send_elements(op, nranks, c), recv_elements(op, nranks, c));
    if (!points.empty() && points.back().size_bytes == bytes) continue;
    points.push_back({c, bytes});
  }
  return points;
}

std::size_t buffer_shift(std::size_t iter, std::size_t size_bytes, std::size_t capacity_bytes) {
  const std::size_t steps = size_bytes > 0 ? capacity_bytes / size_bytes : 1;
  return steps > 0 ? size_bytes * (iter % steps) : 0;
}

std::string log_header(const std::string& op, int local_gpus, double min_bytes, double max_bytes,
                       const Options& options, const std::string& devices) {
  std::string text =
      fmt::format("# clustertwin-calib {0}_perf\n# Collective test starting: {0}_perf\n", op);
  text += fmt::format(
      "# nThread 1 nGpus {} minBytes {:.0f} maxBytes {:.0f} step: 2(factor) warmup iters: {} "
      "iters: {} validation: {}\n",
      local_gpus, min_bytes, max_bytes, options.warmup, options.iters, options.check ? 1 : 0);
  text += fmt::format("# time: {} over ranks, host timer around {} back-to-back calls\n",
                      options.time_over_ranks == TimeOverRanks::average ? "average" : "maximum",
                      options.iters);
  text += "#\n# Using devices\n" + devices + "#\n";
  text += "#       size         count      type   redop    root     time   algbw   busbw #wrong\n";
  text += "#        (B)    (elements)                               (us)  (GB/s)  (GB/s)       \n";
  return text;
}

std::string log_row(const std::string& op, const SweepPoint& point, double time_us, double algbw,
                    double busbw, double wrong) {
  const std::string check = wrong < 0 ? "N/A" : fmt::format("{:.0f}", wrong);
  return fmt::format(
      "{:>12}  {:>12}     float  {:>6}      -1  {:>7.2f}  {:>6.2f}  {:>6.2f}  {:>5}\n",
      point.size_bytes, point.count, is_reduction(coll_op(op)) ? "sum" : "none", time_us, algbw,
      busbw, check);
}

std::string log_footer(double avg_busbw_GBps) {
  return fmt::format("# Avg bus bandwidth    : {:.4f}\n#\n", avg_busbw_GBps);
}

}  // namespace twin::calib
