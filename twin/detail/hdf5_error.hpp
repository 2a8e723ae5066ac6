#pragma once
/// The message when an HDF5 result file cannot be created. HDF5 locks a file while a process has
/// it open, so the usual cause of "H5Fcreate failed" on an existing file is another run still
/// writing it; say so instead of passing HDF5's bare call name through.

#include <filesystem>
#include <string>

#include "core/error.hpp"

namespace twin::sim::detail {

inline core::Error hdf5_create_error(const std::string& path, const std::string& hdf5_detail) {
  std::error_code ec;
  const std::string name = std::filesystem::path(path).filename().string();
  if (std::filesystem::exists(path, ec))
    return core::Error("--out", path,
                       "cannot write " + name +
                           ": the file exists and is locked, most likely by another clustertwin "
                           "run still writing it (HDF5 locks open files); wait for that run or "
                           "choose another --out (HDF5: " +
                           hdf5_detail + ")");
  return core::Error("--out", path, "cannot create " + name + " (HDF5: " + hdf5_detail + ")");
}

}  // namespace twin::sim::detail
