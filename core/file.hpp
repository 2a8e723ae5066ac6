#pragma once
/// Reading input files and checking output places before any work starts.
///
/// Inputs are read only from regular files of bounded size: a device (/dev/zero), a FIFO or a
/// directory would otherwise be read forever or fail deep inside a parser. Outputs (`--out`) are
/// checked up front so a long run does not end in "cannot write" after its work is done.

#include <cstdint>
#include <string>

namespace twin::core {

/// Largest input file read (scenarios, logs, profiles are kilobytes; 64 MiB is generous).
inline constexpr std::uintmax_t kMaxInputBytes = 64ull << 20;

/// The whole text of a regular file. Throws core::Error naming `path` (as the file) and `what`
/// (e.g. "scenario file") when it is missing, not a regular file, unreadable or larger than
/// `max_bytes`.
std::string read_text_file(const std::string& path, const std::string& what,
                           std::uintmax_t max_bytes = kMaxInputBytes);

/// Makes sure `dir` is (or can be created as) a writable directory; `flag` ("--out") names the
/// option in the error. Throws core::Error when it is a file or device, or cannot be created or
/// written.
void prepare_output_dir(const std::string& dir, const std::string& flag = "--out");

}  // namespace twin::core
