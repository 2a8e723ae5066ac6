#include "cli/options.hpp"

#include <fmt/format.h>

#include <limits>

namespace twin::cli {

CLI::Validator whole_number(std::uint64_t min, std::uint64_t max, const std::string& why) {
  const std::string range = fmt::format("an integer from {} to {}", min, max);
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        if (text.empty() || text.size() > 20 ||
            text.find_first_not_of("0123456789") != std::string::npos)
          return "'" + text + "' is not " + range + " (digits only)";
        std::uint64_t value = 0;
        for (char ch : text) {
          const auto digit = static_cast<std::uint64_t>(ch - '0');
          if (value > (std::numeric_limits<std::uint64_t>::max() - digit) / 10)
            return "'" + text + "' is larger than " + range;
          value = value * 10 + digit;
        }
        if (value < min || value > max)
          return "'" + text + "' is not " + range + (why.empty() ? "" : " (" + why + ")");
        return {};
      },
      range, "WHOLE_NUMBER");
}

CLI::Validator seed_value() {
  return whole_number(0, std::numeric_limits<std::uint64_t>::max());
}

}  // namespace twin::cli
