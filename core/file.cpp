#include "core/file.hpp"

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>
#include <system_error>

#include "core/error.hpp"

namespace twin::core {

namespace fs = std::filesystem;

std::string read_text_file(const std::string& path, const std::string& what,
                           std::uintmax_t max_bytes) {
  std::error_code ec;
  const fs::file_status status = fs::status(path, ec);
  if (ec || !fs::exists(status))
    throw Error("", "", "cannot open " + what + ": no such file", path);
  if (fs::is_directory(status))
    throw Error("", "", "cannot read " + what + ": it is a directory", path);
  if (!fs::is_regular_file(status))
    throw Error("", "",
                "cannot read " + what +
                    ": not a regular file (a device, FIFO or socket would be read forever)",
                path);
  const std::uintmax_t size = fs::file_size(path, ec);
  if (!ec && size > max_bytes)
    throw Error("", "",
                what + " is " + std::to_string(size) + " bytes, more than the " +
                    std::to_string(max_bytes >> 20) + " MiB an input may have",
                path);
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Error("", "", "cannot open " + what + " (permission?)", path);
  std::string text;
  text.resize(static_cast<std::size_t>(ec ? 0 : size));
  in.read(text.data(), static_cast<std::streamsize>(text.size()));
  text.resize(static_cast<std::size_t>(in.gcount()));
  // A file that grew while being read: take what is there, up to the cap.
  char extra[4096];
  while (in.read(extra, sizeof extra) || in.gcount() > 0) {
    text.append(extra, static_cast<std::size_t>(in.gcount()));
    if (text.size() > max_bytes)
      throw Error("", "",
                  what + " grew past the " + std::to_string(max_bytes >> 20) +
                      " MiB an input may have while it was read",
                  path);
  }
  return text;
}

void prepare_output_dir(const std::string& dir, const std::string& flag) {
  if (dir.empty()) throw Error(flag, "", "an empty path is not a directory");
  std::error_code ec;
  const fs::file_status status = fs::status(dir, ec);
  if (fs::exists(status)) {
    if (!fs::is_directory(status))
      throw Error(flag, dir,
                  fs::is_regular_file(status)
                      ? "is an existing file; --out names a directory to write results into"
                      : "is not a directory (a device or special file); --out names a directory");
  } else {
    fs::create_directories(dir, ec);
    if (ec) throw Error(flag, dir, "cannot create the directory: " + ec.message());
  }
  if (::access(dir.c_str(), W_OK | X_OK) != 0)
    throw Error(flag, dir, "the directory is not writable");
}

}  // namespace twin::core
