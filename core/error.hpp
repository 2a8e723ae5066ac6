#pragma once
/// Errors with context.
///
/// Every error a user can cause (a bad scenario field, an impossible fabric, a malformed log)
/// is a twin::core::Error that says where (file, field or line), what (the offending value) and
/// why, including what would be valid. Libraries throw; only the CLI and GUI decide how to show
/// it. Nothing in a library calls exit().

#include <stdexcept>
#include <string>

namespace twin::core {

class Error : public std::runtime_error {
 public:
  /// `field` is a dotted path such as "fabric.tiers"; `value` is the offending value as text.
  Error(std::string field, std::string value, std::string reason, std::string file = {});

  [[nodiscard]] const std::string& file() const { return file_; }
  [[nodiscard]] const std::string& field() const { return field_; }
  [[nodiscard]] const std::string& value() const { return value_; }
  [[nodiscard]] const std::string& reason() const { return reason_; }

  /// The same error attributed to a file (used when a library error surfaces while loading one).
  [[nodiscard]] Error in_file(const std::string& file) const;

 private:
  static std::string format(const std::string& file, const std::string& field,
                            const std::string& value, const std::string& reason);
  std::string file_, field_, value_, reason_;
};

}  // namespace twin::core
