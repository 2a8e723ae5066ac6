#pragma once
/// Small text helpers shared by the error paths: "did you mean" suggestions and readable numbers.

#include <cstdint>
#include <string>
#include <string_view>
#include <vector>

namespace twin::core {

/// Edit distance (insertions, deletions, substitutions) between two strings.
std::size_t edit_distance(std::string_view a, std::string_view b);

/// The candidate closest to `word` if it is close enough to be a likely typo, else empty.
std::string closest_match(std::string_view word, const std::vector<std::string>& candidates);

/// " (did you mean 'x'?)" or "" — ready to append to an error reason.
std::string did_you_mean(std::string_view word, const std::vector<std::string>& candidates);

/// Integer with thousands separators: 12288 -> "12,288".
std::string with_commas(std::int64_t value);

/// 64-bit FNV-1a hash of `text` as 16 hex digits: a stable fingerprint (same text, same value
/// on every platform and run), not a cryptographic one.
std::string fingerprint(std::string_view text);

/// Comma-separated list of quoted names: "'a', 'b', 'c'".
std::string quoted_list(const std::vector<std::string>& names);

}  // namespace twin::core
