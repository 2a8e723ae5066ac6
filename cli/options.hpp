#pragma once
/// Strict command-line values shared by the subcommands: integers that are exactly integers in
/// range (no sign, exponent or fraction silently clamped or truncated), and the caps that keep a
/// typo from asking for billions of trials or threads.

#include <CLI/CLI.hpp>
#include <cstdint>
#include <string>

#include "core/parallel.hpp"

namespace twin::cli {

/// Exit codes (README "Exit codes"): 0 success, 2 bad input (any core::Error and every
/// command-line error), 3 an internal fault (a bug: please report it).
inline constexpr int kExitOk = 0;
inline constexpr int kExitBadInput = 2;
inline constexpr int kExitInternal = 3;

/// Threads one process may start: more than this is a typo, not a machine.
inline constexpr std::uint64_t kMaxThreads = core::kMaxWorkerThreads;
/// Monte Carlo trials per campaign: each trial's results are kept for the percentiles.
inline constexpr std::uint64_t kMaxTrials = 1'000'000;

/// Accepts a decimal integer in [min, max] written with digits only; the error names the range
/// and, when given, why the limit exists.
CLI::Validator whole_number(std::uint64_t min, std::uint64_t max, const std::string& why = {});

/// A seed: any integer in [0, 2^64 - 1], digits only.
CLI::Validator seed_value();

}  // namespace twin::cli
