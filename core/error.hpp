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
  /// What went wrong, for code that handles some errors and passes others on (instead of
  /// matching field names).
  enum class Kind {
    input,           ///< a value the user gave is invalid (the default)
    not_supported,   ///< valid, but this model or algorithm cannot do it for these inputs
    not_calibrated,  ///< the hardware profile lacks the figure this needs
    does_not_fit,    ///< valid, but the job does not fit this configuration: memory, or the
                     ///< work does not divide (layers over pp x virtual_stages, ...)
    io,              ///< a file cannot be read or written
  };

  /// `field` is a dotted path such as "fabric.tiers"; `value` is the offending value as text.
  Error(std::string field, std::string value, std::string reason, std::string file = {});
  Error(Kind kind, std::string field, std::string value, std::string reason, std::string file = {});

  [[nodiscard]] Kind kind() const { return kind_; }
  [[nodiscard]] const std::string& file() const { return file_; }
  [[nodiscard]] const std::string& field() const { return field_; }
  [[nodiscard]] const std::string& value() const { return value_; }
  [[nodiscard]] const std::string& reason() const { return reason_; }

  /// The same error attributed to a file (used when a library error surfaces while loading one).
  [[nodiscard]] Error in_file(const std::string& file) const;

 private:
  static std::string format(const std::string& file, const std::string& field,
                            const std::string& value, const std::string& reason);
  Kind kind_ = Kind::input;
  std::string file_, field_, value_, reason_;
};

}  // namespace twin::core
