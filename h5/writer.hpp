#pragma once
/// Writing HDF5 files: the one place that knows the HDF5 C++ API's writing side.
///
/// Every output of the twin (results.h5 of a step, campaign.h5, sweep.h5, the raw calibration
/// data) is plain: groups, 1-D datasets (doubles, ints, fixed-length strings), scalar attributes
/// (doubles, ints, fixed-length strings) and row-appended tables of double columns (chunked,
/// unlimited, flushed per row by the caller), so h5py and h5dump read them without our code.
/// Any HDF5 failure becomes a core::Error naming the file and what was being written.

#include <memory>
#include <string>
#include <vector>

namespace twin::h5 {

struct Context;

/// A group of an open file (the root included). Cheap to copy; valid while its File lives.
class Group {
 public:
  /// A child group `name` (may be a path below this group).
  Group group(const std::string& name);

  /// Scalar attributes. A string is stored fixed-length (at least one character: an empty one
  /// is written as " ").
  void attribute(const std::string& name, double value);
  void attribute(const std::string& name, int value);
  void attribute(const std::string& name, const std::string& value);

  /// 1-D datasets of `values.size()` elements; strings fixed-length, as wide as the longest
  /// (at least 1), zero-padded.
  void column(const std::string& name, const std::vector<double>& values);
  void column(const std::string& name, const std::vector<int>& values);
  void column(const std::string& name, const std::vector<std::string>& values);
  /// The `member` of every row as one column: a list of records written column by column.
  template <class Row, class T>
  void column(const std::string& name, const std::vector<Row>& rows, T Row::*member) {
    std::vector<T> values;
    values.reserve(rows.size());
    for (const Row& row : rows) values.push_back(row.*member);
    column(name, values);
  }

  /// Number of objects (groups, datasets) directly below.
  [[nodiscard]] std::size_t size() const;

 private:
  friend class File;
  friend class Table;
  struct Impl;
  Group(std::shared_ptr<Context> context, std::shared_ptr<Impl> impl);
  std::shared_ptr<Context> context_;
  std::shared_ptr<Impl> impl_;
};

/// Double columns of equal length in one group, grown one row at a time.
class Table {
 public:
  Table(Group group, const std::vector<std::string>& columns);
  ~Table();
  Table(Table&&) noexcept;
  Table& operator=(Table&&) noexcept;
  void append(const std::vector<double>& row);
  /// Appends `columns[c].size()` rows at once (every column as long as the first).
  void append_columns(const std::vector<std::vector<double>>& columns);
  [[nodiscard]] std::size_t rows() const { return rows_; }

 private:
  struct Impl;
  std::shared_ptr<Context> context_;
  std::unique_ptr<Impl> impl_;
  std::size_t rows_ = 0;
};

/// A file created (truncated) for writing; closed when destroyed.
class File {
 public:
  /// `what` names the output in errors ("campaign.h5"). With `field` set (e.g. "--out") errors
  /// name that option with the path as its value; otherwise they are attributed to the path.
  File(const std::string& path, const std::string& what, const std::string& field = {});
  ~File();
  File(const File&) = delete;
  File& operator=(const File&) = delete;

  Group root();
  /// Pushes what was written to disk, so a killed run keeps it.
  void flush();

 private:
  struct Impl;
  std::shared_ptr<Context> context_;
  std::unique_ptr<Impl> impl_;
};

}  // namespace twin::h5
