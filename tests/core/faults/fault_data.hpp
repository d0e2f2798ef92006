// tests/core/faults/fault_data.hpp — read access to tests/data/fault_cases.json, the fault
// cases the tests in this folder check (format: tests/data/README.md). The file is parsed
// once, at first use, by nlohmann/json (fault_data.cpp); this header only needs its
// forward declarations, so the test files do not compile the parser.
#pragma once

#include <cstddef>
#include <string>
#include <vector>

#include <nlohmann/json_fwd.hpp>

#include "qkscope/types.hpp"

namespace qktest {

/// One value of the data file, with its JSON pointer for error messages. Numbers may be
/// written as the strings "inf", "-inf" and "nan" (JSON has no literal for them). A
/// missing key or a value of the wrong kind throws std::runtime_error naming the pointer,
/// which Catch2 reports as a failure of the test that asked.
class DataNode {
 public:
  DataNode(const nlohmann::json* node, std::string where);

  DataNode operator[](const std::string& key) const;  // object member
  DataNode operator[](std::size_t i) const;           // array element
  std::size_t size() const;                           // array length
  bool is_null() const;
  bool is_array() const;
  bool boolean() const;
  const std::string& text() const;
  double number() const;
  /// A number, a vector or a matrix (array of equal-length rows), flattened row-major.
  std::vector<double> values() const;
  /// A matrix; a vector is read as one row. (rows, cols)
  qkscope::MatrixD matrix() const;
  /// A matrix of booleans (true = may attend); a vector is read as one row.
  qkscope::KeepMask keep() const;
  const std::string& where() const { return where_; }

 private:
  const nlohmann::json* node_;
  std::string where_;
};

/// The case with this id ("B01", ...), or std::runtime_error when there is none.
DataNode fault_case(const std::string& id);

}  // namespace qktest
