// Fuzzes the nccl-tests log reader. An odd input length makes runs the log does not name default
// to all_reduce (as `--op all_reduce` does), so seed logs are used as they are. Bad input must end
// in core::Error; any other exception or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "calibrate/nccl_tests.hpp"
#include "core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string default_op = size % 2 == 1 ? "all_reduce" : "";
  const std::string text(reinterpret_cast<const char*>(data), size);
  try {
    const twin::calibrate::NcclTestsLog log =
        twin::calibrate::parse_nccl_tests(text, "fuzz", default_op);
    for (const auto& run : log.runs) {
      if (run.rows.empty()) __builtin_trap();  // the reader promises rows for every run
      (void)twin::calibrate::bus_factor(run.op, log.ranks);
    }
  } catch (const twin::core::Error&) {
  }
  return 0;
}
