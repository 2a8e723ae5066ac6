#include "core/error.hpp"

namespace twin::core {

Error::Error(std::string field, std::string value, std::string reason, std::string file)
    : Error(Kind::input, std::move(field), std::move(value), std::move(reason), std::move(file)) {}

Error::Error(Kind kind, std::string field, std::string value, std::string reason, std::string file)
    : std::runtime_error(format(file, field, value, reason)),
      kind_(kind),
      file_(std::move(file)),
      field_(std::move(field)),
      value_(std::move(value)),
      reason_(std::move(reason)) {}

Error Error::in_file(const std::string& file) const {
  return Error(kind_, field_, value_, reason_, file_.empty() ? file : file_);
}

std::string Error::format(const std::string& file, const std::string& field,
                          const std::string& value, const std::string& reason) {
  std::string out;
  if (!file.empty()) out += file + ": ";
  if (!field.empty()) {
    out += field;
    if (!value.empty()) out += " = " + value;
    out += ": ";
  }
  return out + reason;
}

}  // namespace twin::core
