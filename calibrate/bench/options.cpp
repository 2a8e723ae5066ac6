#include "calibrate/bench/options.hpp"

#include <fmt/format.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <set>

#include "calibrate/profile.hpp"
#include "core/error.hpp"
#include "core/text.hpp"

namespace twin::calib {
namespace {

// --quick: a first look in a few minutes (two GEMM dtypes x six shapes, five HBM sizes, NCCL
// up to 1 GiB), unless the options below are given explicitly.
constexpr double kQuickMaxBytes = 1024.0 * 1024 * 1024;
constexpr double kQuickGemmWarmupS = 10;
constexpr int kQuickGemmIters = 50;

std::vector<std::string> split_list(const std::string& text) {
  std::vector<std::string> out;
  std::size_t start = 0;
  for (;;) {
    const auto comma = text.find(',', start);
    out.push_back(text.substr(start, comma == std::string::npos ? comma : comma - start));
    if (comma == std::string::npos) break;
    start = comma + 1;
  }
  return out;
}

bool given(const CLI::App& app, const std::string& name) {
  const CLI::Option* option = app.get_option_no_throw(name);
  return option != nullptr && option->count() > 0;
}

}  // namespace

const std::vector<std::string>& calib_ops() {
  static const std::vector<std::string> ops = {"all_reduce", "all_gather", "reduce_scatter",
                                               "alltoall", "sendrecv"};
  return ops;
}

double parse_bytes(const std::string& text, const std::string& option) {
  std::size_t digits = 0;
  while (digits < text.size() && (std::isdigit(static_cast<unsigned char>(text[digits])) != 0))
    ++digits;
  const std::string unit = text.substr(digits);
  double scale = 0;
  if (unit.empty() || unit == "B")
    scale = 1;
  else if (unit == "K" || unit == "KiB")
    scale = 1024.0;
  else if (unit == "M" || unit == "MiB")
    scale = 1024.0 * 1024;
  else if (unit == "G" || unit == "GiB")
    scale = 1024.0 * 1024 * 1024;
  else if (unit == "T" || unit == "TiB")
    scale = 1024.0 * 1024 * 1024 * 1024;
  if (digits == 0 || scale == 0)
    throw core::Error(option, text,
                      "not a size: a whole number of bytes with an optional binary unit "
                      "(8, 64K, 16M, 1G, 1T)");
  const double bytes = std::stod(text.substr(0, digits)) * scale;
  if (!(bytes > 0)) throw core::Error(option, text, "a size must be at least 1 byte");
  return bytes;
}

OptionParser::OptionParser()
    : app_{"clustertwin-calib: GEMM, HBM and NCCL microbenchmarks for a calibration profile"} {
  for (const auto& op : calib_ops()) ops_ += (ops_.empty() ? "" : ",") + op;
  app_.add_option("--out", raw_.out_dir, "Output folder")->capture_default_str();
  app_.add_flag("--no-gemm", no_gemm_, "Skip the cuBLASLt GEMM sweep");
  app_.add_flag("--no-hbm", no_hbm_, "Skip the HBM copy sweep");
  app_.add_flag("--no-nccl", no_nccl_, "Skip the NCCL sweeps");
  app_.add_option("--ops", ops_, "NCCL collectives, comma-separated")->capture_default_str();
  app_.add_option("--min-bytes", min_bytes_, "Smallest NCCL size (K/M/G/T binary)")
      ->capture_default_str();
  app_.add_option("--max-bytes", max_bytes_, "Largest NCCL size (K/M/G/T binary; --quick: 1G)")
      ->capture_default_str();
  app_.add_option("--warmup", raw_.warmup, "NCCL warm-up calls per size")->capture_default_str();
  app_.add_option("--iters", raw_.iters, "NCCL timed calls per size")->capture_default_str();
  app_.add_option("--time-over-ranks", time_over_ranks_,
                  "A row's time over ranks: avg (nccl-tests' default) or max")
      ->capture_default_str();
  app_.add_flag("--no-check", no_check_, "Skip the NCCL data check (#wrong shows N/A)");
  app_.add_option("--timeout", raw_.timeout_s,
                  "Seconds to wait for one batch of GPU work before aborting the whole job")
      ->capture_default_str();
  app_.add_option("--gemm-warmup-s", raw_.gemm_warmup_s,
                  "Seconds of sustained GEMM load before the first timed shape (--quick: 10)")
      ->capture_default_str();
  app_.add_option("--gemm-warmup", raw_.gemm_warmup, "Untimed GEMM calls per shape")
      ->capture_default_str();
  app_.add_option("--gemm-iters", raw_.gemm_iters, "Timed GEMM calls per shape (--quick: 50)")
      ->capture_default_str();
  app_.add_option("--base", raw_.base,
                  "Profile the fit starts from (default: the shipped profile of the GPU found)");
  app_.add_flag("--quick", raw_.quick, "Fewer shapes and sizes, shorter warm-up (a first look)");
}

Options OptionParser::validated() const {
  Options o = raw_;
  o.gemm = !no_gemm_;
  o.hbm = !no_hbm_;
  o.nccl = !no_nccl_;
  o.check = !no_check_;
  if (!o.gemm && !o.hbm && !o.nccl)
    throw core::Error("--no-gemm --no-hbm --no-nccl", "", "nothing left to measure");
  if (o.out_dir.empty()) throw core::Error("--out", "", "an output folder is required");

  std::set<std::string> seen;
  o.ops.clear();
  for (const auto& op : split_list(ops_)) {
    if (std::find(calib_ops().begin(), calib_ops().end(), op) == calib_ops().end())
      throw core::Error("--ops", op,
                        "unknown collective" + core::did_you_mean(op, calib_ops()) +
                            "; valid: " + core::quoted_list(calib_ops()));
    if (!seen.insert(op).second) throw core::Error("--ops", op, "listed twice");
    o.ops.push_back(op);
  }

  o.min_bytes = parse_bytes(min_bytes_, "--min-bytes");
  o.max_bytes = given(app_, "--max-bytes") || !o.quick ? parse_bytes(max_bytes_, "--max-bytes")
                                                       : kQuickMaxBytes;
  if (o.max_bytes < o.min_bytes)
    throw core::Error("--max-bytes", max_bytes_,
                      fmt::format("smaller than --min-bytes {}", min_bytes_));
  if (o.warmup < 0) throw core::Error("--warmup", std::to_string(o.warmup), "must be 0 or more");
  if (o.iters < 1) throw core::Error("--iters", std::to_string(o.iters), "must be at least 1");
  if (time_over_ranks_ == "avg")
    o.time_over_ranks = TimeOverRanks::average;
  else if (time_over_ranks_ == "max")
    o.time_over_ranks = TimeOverRanks::maximum;
  else
    throw core::Error("--time-over-ranks", time_over_ranks_, "valid: 'avg' or 'max'");
  if (!(o.timeout_s > 0) || !std::isfinite(o.timeout_s))
    throw core::Error("--timeout", fmt::format("{}", o.timeout_s), "must be a positive time");

  if (o.quick && !given(app_, "--gemm-warmup-s")) o.gemm_warmup_s = kQuickGemmWarmupS;
  if (o.quick && !given(app_, "--gemm-iters")) o.gemm_iters = kQuickGemmIters;
  if (!(o.gemm_warmup_s >= 0) || !std::isfinite(o.gemm_warmup_s))
    throw core::Error("--gemm-warmup-s", fmt::format("{}", o.gemm_warmup_s), "must be 0 or more");
  if (o.gemm_warmup < 0)
    throw core::Error("--gemm-warmup", std::to_string(o.gemm_warmup), "must be 0 or more");
  if (o.gemm_iters < 1)
    throw core::Error("--gemm-iters", std::to_string(o.gemm_iters), "must be at least 1");
  // An unknown --base is found now, not after the sweeps (load_profile throws naming it).
  if (!o.base.empty()) (void)calibrate::load_profile(o.base);
  return o;
}

}  // namespace twin::calib
