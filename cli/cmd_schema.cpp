#include <fmt/format.h>

#include "cli/commands.hpp"
#include "twin/scenario_schema.hpp"

namespace twin::cli {

// The scenario schema: every field with its type, unit, default, valid values and meaning.
// docs/scenarios.md is `clustertwin schema --markdown`.
Action add_schema(CLI::App& app) {
  auto* cmd = app.add_subcommand(
      "schema",
      "Print every scenario field: dotted path, type, unit, default, valid values and "
      "meaning (--markdown: the reference page docs/scenarios.md)");
  auto markdown = std::make_shared<bool>(false);
  cmd->add_flag("--markdown", *markdown, "Print the Markdown reference page");
  return [markdown] {
    fmt::print("{}", *markdown ? sim::schema_markdown() : sim::schema_text());
    return 0;
  };
}

}  // namespace twin::cli
