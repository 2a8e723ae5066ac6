#pragma once
/// Seeded, portable random numbers.
///
/// The standard library's distributions are implementation-defined, so the same seed can give
/// different numbers with another standard library. Determinism is a requirement here (the same
/// scenario and seed give bit-identical results), so the generator (xoshiro256**, seeded through
/// splitmix64) and the distributions are written out. An Rng is passed explicitly to whatever
/// needs randomness; there is no global generator.

#include <cstdint>

namespace twin::core {

/// splitmix64 finalizer: a fast, well-mixed 64-bit hash of one value.
std::uint64_t mix64(std::uint64_t x);

/// Deterministic hash of several values, e.g. (seed, src, dst, label) for per-flow ECMP.
std::uint64_t hash_combine(std::uint64_t seed, std::uint64_t a, std::uint64_t b = 0,
                           std::uint64_t c = 0);

class Rng {
 public:
  explicit Rng(std::uint64_t seed);

  /// Next raw 64-bit value (xoshiro256**).
  std::uint64_t next_u64();
  /// Uniform in [0, 1) with 53 random bits.
  double uniform();
  /// Uniform integer in [0, n) without modulo bias; n > 0.
  std::uint64_t uniform_index(std::uint64_t n);
  /// Exponential with the given rate (events per unit time); rate > 0.
  double exponential(double rate);
  /// Weibull with shape k and scale lambda (k < 1: decreasing hazard, infant mortality).
  double weibull(double shape, double scale);
  /// An independent stream derived from this seed and a stream number (for per-trial RNGs).
  [[nodiscard]] Rng split(std::uint64_t stream) const;

 private:
  std::uint64_t seed_;
  std::uint64_t s_[4];
};

}  // namespace twin::core
