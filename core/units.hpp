#pragma once
/// Units. Values carry their unit in their name (`bandwidth_Bps`, `latency_s`, `bytes`); these
/// helpers are the only places where one unit becomes another, so a factor of 8 or 1e9 is never
/// written twice.
///
/// Conventions: network line rates are given in decimal gigabits per second (Gb/s) as vendors
/// quote them; bandwidths inside the simulator are bytes per second (B/s); GB means 1e9 bytes
/// (as nccl-tests reports), GiB means 2^30 bytes.

#include <cstdint>

namespace twin::core {

inline constexpr double kBitsPerByte = 8.0;
inline constexpr double kGiga = 1e9;
inline constexpr double kNanosPerSecond = 1e9;
inline constexpr std::uint64_t kKiB = 1024;
inline constexpr std::uint64_t kMiB = 1024 * kKiB;
inline constexpr std::uint64_t kGiB = 1024 * kMiB;

/// Line rate in Gb/s to bytes per second.
constexpr double gbps_to_Bps(double gbps) {
  return gbps * kGiga / kBitsPerByte;
}
/// Bytes per second to decimal GB/s (the unit nccl-tests and datasheets use for bandwidth).
constexpr double Bps_to_GBps(double Bps) {
  return Bps / kGiga;
}
/// Decimal GB/s to bytes per second.
constexpr double GBps_to_Bps(double GBps) {
  return GBps * kGiga;
}
constexpr double ns_to_s(double ns) {
  return ns / kNanosPerSecond;
}
/// Seconds to microseconds (nccl-tests' time column, Chrome/Perfetto trace timestamps).
inline constexpr double kMicrosPerSecond = 1e6;
constexpr double s_to_us(double s) {
  return s * kMicrosPerSecond;
}
constexpr double us_to_s(double us) {
  return us / kMicrosPerSecond;
}

}  // namespace twin::core
