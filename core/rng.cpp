#include "core/rng.hpp"

#include <cmath>
#include <stdexcept>

namespace twin::core {

std::uint64_t mix64(std::uint64_t x) {
  x += 0x9E3779B97F4A7C15ULL;
  x = (x ^ (x >> 30)) * 0xBF58476D1CE4E5B9ULL;
  x = (x ^ (x >> 27)) * 0x94D049BB133111EBULL;
  return x ^ (x >> 31);
}

std::uint64_t hash_combine(std::uint64_t seed, std::uint64_t a, std::uint64_t b, std::uint64_t c) {
  std::uint64_t h = mix64(seed);
  h = mix64(h ^ a);
  h = mix64(h ^ b);
  return mix64(h ^ c);
}

namespace {
std::uint64_t rotl(std::uint64_t x, int k) {
  return (x << k) | (x >> (64 - k));
}
}  // namespace

Rng::Rng(std::uint64_t seed) : seed_(seed) {
  std::uint64_t x = seed;
  for (auto& word : s_) {
    x += 0x9E3779B97F4A7C15ULL;
    word = mix64(x);
  }
}

std::uint64_t Rng::next_u64() {
  const std::uint64_t result = rotl(s_[1] * 5, 7) * 9;
  const std::uint64_t t = s_[1] << 17;
  s_[2] ^= s_[0];
  s_[3] ^= s_[1];
  s_[1] ^= s_[2];
  s_[0] ^= s_[3];
  s_[2] ^= t;
  s_[3] = rotl(s_[3], 45);
  return result;
}

double Rng::uniform() {
  return static_cast<double>(next_u64() >> 11) * 0x1.0p-53;
}

std::uint64_t Rng::uniform_index(std::uint64_t n) {
  if (n == 0) throw std::invalid_argument("Rng::uniform_index: n must be positive");
  // Rejection sampling: discard the top partial block so every residue is equally likely.
  const std::uint64_t limit = ~std::uint64_t{0} - (~std::uint64_t{0} % n);
  std::uint64_t v;
  do {
    v = next_u64();
  } while (v >= limit);
  return v % n;
}

double Rng::exponential(double rate) {
  if (!(rate > 0)) throw std::invalid_argument("Rng::exponential: rate must be positive");
  // 1 - U lies in (0, 1], so the log is finite.
  return -std::log1p(-uniform()) / rate;
}

double Rng::weibull(double shape, double scale) {
  if (!(shape > 0) || !(scale > 0))
    throw std::invalid_argument("Rng::weibull: shape and scale must be positive");
  return scale * std::pow(-std::log1p(-uniform()), 1.0 / shape);
}

Rng Rng::split(std::uint64_t stream) const {
  return Rng(hash_combine(seed_, stream, 0x5EED));
}

}  // namespace twin::core
