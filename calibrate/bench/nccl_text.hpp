#pragma once
/// The NCCL sweep's sizes and its text, in nccl-tests' conventions so that our parser (and any
/// script written for nccl-tests) reads it unchanged.
///
/// For a requested size S (bytes, doubling from --min-bytes), nccl-tests takes count = S / 4
/// floats and derives each op's call (src/*.cu, GetCollByteCount):
///   op              elements per call (printed "count")   send bytes      recv bytes
///   all_reduce      count                                  4 count         4 count
///   all_gather      count / n              (per rank)      4 c             4 c n
///   reduce_scatter  count / n              (per rank)      4 c n           4 c
///   alltoall        count / n              (per peer)      4 c n           4 c n
///   sendrecv        count                                  4 count         4 count
/// The "size" column is max(send, recv) bytes; algbw = size / time; busbw = algbw x
/// bus_factor(op, n). Sizes whose call count is 0 or repeats the previous row's are skipped:
/// nccl-tests prints them, and duplicates over-weight the small-size (latency) end of a fit.
/// `redop` is "sum" for reductions and "none" otherwise; `root` is -1 (no rooted ops here).
///
/// Each timed call i uses buffers shifted by size x (i mod (capacity / size)), as nccl-tests
/// does, so consecutive calls do not reuse the same (possibly cached) addresses.

#include <cstddef>
#include <string>
#include <vector>

#include "calibrate/bench/nccl_pattern.hpp"
#include "calibrate/bench/options.hpp"

namespace twin::calib {

/// Throws core::Error for an op clustertwin-calib does not run.
CollOp coll_op(const std::string& name);
bool is_reduction(CollOp op);

struct SweepPoint {
  std::size_t count = 0;       ///< elements per NCCL call (the printed count)
  std::size_t size_bytes = 0;  ///< max(send, recv) bytes per rank (the printed size)
};

/// The rows of one op's sweep from min_bytes to max_bytes (doubling).
std::vector<SweepPoint> sweep_points(CollOp op, int nranks, double min_bytes, double max_bytes);

/// Byte offset of timed call `iter` into buffers of `capacity_bytes`.
std::size_t buffer_shift(std::size_t iter, std::size_t size_bytes, std::size_t capacity_bytes);

/// "# clustertwin-calib all_gather_perf ..." through the two column-header lines.
std::string log_header(const std::string& op, int local_gpus, double min_bytes, double max_bytes,
                       const Options& options, const std::string& devices);
/// One result row; `wrong` < 0 prints N/A (check disabled).
std::string log_row(const std::string& op, const SweepPoint& point, double time_us, double algbw,
                    double busbw, double wrong);
std::string log_footer(double avg_busbw_GBps);

}  // namespace twin::calib
