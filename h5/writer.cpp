// HDF5 writing helper (see writer.hpp).
#include "h5/writer.hpp"

#include <H5Cpp.h>

#include <algorithm>
#include <filesystem>

#include "core/error.hpp"

namespace twin::h5 {

struct Context {
  std::string path, what, field;

  [[noreturn]] void fail(const H5::Exception& e) const {
    const std::string reason = "cannot write " + what + ": " + e.getDetailMsg();
    if (!field.empty()) throw core::Error(core::Error::Kind::io, field, path, reason);
    throw core::Error(core::Error::Kind::io, "", "", reason, path);
  }
};

struct Group::Impl {
  H5::Group group;
};

struct Table::Impl {
  std::vector<H5::DataSet> columns;
};

struct File::Impl {
  H5::H5File file;
};

namespace {

H5::StrType text_type(std::size_t width) {
  return H5::StrType(H5::PredType::C_S1, std::max<std::size_t>(1, width));
}

template <class T>
void write_column(H5::Group& g, const std::string& name, const std::vector<T>& values,
                  const H5::PredType& type) {
  const hsize_t dims[1] = {values.size()};
  H5::DataSet set = g.createDataSet(name, type, H5::DataSpace(1, dims));
  if (!values.empty()) set.write(values.data(), type);
}

}  // namespace

Group::Group(std::shared_ptr<Context> context, std::shared_ptr<Impl> impl)
    : context_(std::move(context)), impl_(std::move(impl)) {}

Group Group::group(const std::string& name) {
  try {
    return Group(context_, std::make_shared<Impl>(Impl{impl_->group.createGroup(name)}));
  } catch (const H5::Exception& e) {
    context_->fail(e);
  }
}

void Group::attribute(const std::string& name, double value) {
  try {
    impl_->group.createAttribute(name, H5::PredType::NATIVE_DOUBLE, H5::DataSpace(H5S_SCALAR))
        .write(H5::PredType::NATIVE_DOUBLE, &value);
  } catch (const H5::Exception& e) {
    context_->fail(e);
  }
}

void Group::attribute(const std::string& name, int value) {
  try {
    impl_->group.createAttribute(name, H5::PredType::NATIVE_INT, H5::DataSpace(H5S_SCALAR))
        .write(H5::PredType::NATIVE_INT, &value);
  } catch (const H5::Exception& e) {
    context_->fail(e);
  }
}

void Group::attribute(const std::string& name, const std::string& value) {
  try {
    const H5::StrType type = text_type(value.size());
    impl_->group.createAttribute(name, type, H5::DataSpace(H5S_SCALAR))
        .write(type, value.empty() ? std::string(" ") : value);
  } catch (const H5::Exception& e) {
    context_->fail(e);
  }
}

void Group::column(const std::string& name, const std::vector<double>& values) {
  try {
    write_column(impl_->group, name, values, H5::PredType::NATIVE_DOUBLE);
  } catch (const H5::Exception& e) {
    context_->fail(e);
  }
}

void Group::column(const std::string& name, const std::vector<int>& values) {
  try {
    write_column(impl_->group, name, values, H5::PredType::NATIVE_INT);
  } catch (const H5::Exception& e) {
    context_->fail(e);
  }
}

void Group::column(const std::string& name, const std::vector<std::string>& values) {
  try {
    std::size_t width = 1;
    for (const auto& v : values) width = std::max(width, v.size());
    std::vector<char> packed(values.size() * width, '\0');
    for (std::size_t i = 0; i < values.size(); ++i)
      std::copy(values[i].begin(), values[i].end(),
                packed.begin() + static_cast<std::ptrdiff_t>(i * width));
    const H5::StrType type = text_type(width);
    const hsize_t dims[1] = {values.size()};
    H5::DataSet set = impl_->group.createDataSet(name, type, H5::DataSpace(1, dims));
    if (!values.empty()) set.write(packed.data(), type);
  } catch (const H5::Exception& e) {
    context_->fail(e);
  }
}

std::size_t Group::size() const {
  try {
    return static_cast<std::size_t>(impl_->group.getNumObjs());
  } catch (const H5::Exception& e) {
    context_->fail(e);
  }
}

Table::Table(Group group, const std::vector<std::string>& columns)
    : context_(group.context_), impl_(std::make_unique<Impl>()) {
  try {
    for (const auto& name : columns) {
      hsize_t dims[1] = {0}, max[1] = {H5S_UNLIMITED}, chunk[1] = {4096};
      H5::DSetCreatPropList props;
      props.setChunk(1, chunk);
      impl_->columns.push_back(group.impl_->group.createDataSet(
          name, H5::PredType::NATIVE_DOUBLE, H5::DataSpace(1, dims, max), props));
    }
  } catch (const H5::Exception& e) {
    context_->fail(e);
  }
}

void Table::append_columns(const std::vector<std::vector<double>>& columns) {
  if (columns.empty() || columns.front().empty()) return;
  try {
    const hsize_t n = columns.front().size();
    const hsize_t size[1] = {rows_ + n}, offset[1] = {rows_}, count[1] = {n};
    for (std::size_t c = 0; c < columns.size() && c < impl_->columns.size(); ++c) {
      H5::DataSet& column = impl_->columns[c];
      column.extend(size);
      H5::DataSpace space = column.getSpace();
      space.selectHyperslab(H5S_SELECT_SET, count, offset);
      H5::DataSpace block(1, count);
      column.write(columns[c].data(), H5::PredType::NATIVE_DOUBLE, block, space);
    }
    rows_ += n;
  } catch (const H5::Exception& e) {
    context_->fail(e);
  }
}

Table::~Table() = default;
Table::Table(Table&&) noexcept = default;
Table& Table::operator=(Table&&) noexcept = default;

void Table::append(const std::vector<double>& row) {
  try {
    const hsize_t size[1] = {rows_ + 1}, offset[1] = {rows_}, count[1] = {1};
    for (std::size_t c = 0; c < row.size() && c < impl_->columns.size(); ++c) {
      H5::DataSet& column = impl_->columns[c];
      column.extend(size);
      H5::DataSpace space = column.getSpace();
      space.selectHyperslab(H5S_SELECT_SET, count, offset);
      H5::DataSpace one(1, count);
      column.write(&row[c], H5::PredType::NATIVE_DOUBLE, one, space);
    }
    ++rows_;
  } catch (const H5::Exception& e) {
    context_->fail(e);
  }
}

File::File(const std::string& path, const std::string& what, const std::string& field)
    : context_(std::make_shared<Context>(Context{path, what, field})),
      impl_(std::make_unique<Impl>()) {
  try {
    H5::Exception::dontPrint();
    impl_->file = H5::H5File(path, H5F_ACC_TRUNC);
  } catch (const H5::Exception& e) {
    // HDF5 locks a file while a process has it open: on an existing file the usual cause of
    // "H5Fcreate failed" is another run still writing it. Say so instead of HDF5's call name.
    std::error_code ec;
    if (std::filesystem::exists(path, ec)) {
      const std::string reason =
          "cannot write " + what +
          ": the file exists and is locked, most likely by another clustertwin run still writing "
          "it (HDF5 locks open files); wait for that run or choose another --out (HDF5: " +
          e.getDetailMsg() + ")";
      if (!field.empty()) throw core::Error(field, path, reason);
      throw core::Error("", "", reason, path);
    }
    context_->fail(e);
  }
}

File::~File() = default;

Group File::root() {
  try {
    return Group(context_, std::make_shared<Group::Impl>(Group::Impl{impl_->file.openGroup("/")}));
  } catch (const H5::Exception& e) {
    context_->fail(e);
  }
}

void File::flush() {
  try {
    impl_->file.flush(H5F_SCOPE_GLOBAL);
  } catch (const H5::Exception& e) {
    context_->fail(e);
  }
}

}  // namespace twin::h5
