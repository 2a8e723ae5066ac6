// Fuzzes the hardware-profile reader (JSON). A profile that parses must write back to JSON that
// parses to the same text (the writer and reader agree). Bad input must end in core::Error; any
// other exception or a sanitizer report is a bug.
#include <cstddef>
#include <cstdint>
#include <string>

#include "calibrate/profile.hpp"
#include "core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  const std::string text(reinterpret_cast<const char*>(data), size);
  twin::calibrate::Profile profile;
  try {
    profile = twin::calibrate::parse_profile(text, "fuzz");
  } catch (const twin::core::Error&) {
    return 0;
  }
  const std::string once = twin::calibrate::to_json(profile);
  const std::string twice = twin::calibrate::to_json(twin::calibrate::parse_profile(once, "again"));
  if (once != twice) __builtin_trap();
  return 0;
}
