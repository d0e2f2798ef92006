// tests/core/faults/fault_data.cpp — parses tests/data/fault_cases.json (path fixed at
// configure time: QKSCOPE_FAULT_CASES, tests/CMakeLists.txt) with nlohmann/json.
#include "faults/fault_data.hpp"

#include <cmath>
#include <fstream>
#include <limits>
#include <stdexcept>

#include <nlohmann/json.hpp>

namespace qktest {
namespace {

const nlohmann::json& data() {
  static const nlohmann::json root = [] {
    std::ifstream in(QKSCOPE_FAULT_CASES);
    if (!in) throw std::runtime_error("cannot open " QKSCOPE_FAULT_CASES);
    return nlohmann::json::parse(in);  // throws nlohmann::json::parse_error with the position
  }();
  return root;
}

[[noreturn]] void fail(const std::string& where, const std::string& what) {
  throw std::runtime_error(std::string(QKSCOPE_FAULT_CASES) + ": " + where + ": " + what);
}

/// An array of equal-length rows, or one vector read as one row, entry by entry.
template <class M, class Get>
M grid(const DataNode& n, const Get& get) {
  if (!n.is_array() || n.size() == 0) fail(n.where(), "not a non-empty array");
  const bool rows = n[0].is_array();
  const std::size_t r = rows ? n.size() : 1, c = rows ? n[0].size() : n.size();
  M m(static_cast<Eigen::Index>(r), static_cast<Eigen::Index>(c));
  for (std::size_t i = 0; i < r; ++i) {
    const DataNode row = rows ? n[i] : n;
    if (!row.is_array() || row.size() != c) fail(row.where(), "rows of different lengths");
    for (std::size_t j = 0; j < c; ++j) m(Eigen::Index(i), Eigen::Index(j)) = get(row[j]);
  }
  return m;
}

}  // namespace

DataNode::DataNode(const nlohmann::json* node, std::string where) : node_(node), where_(std::move(where)) {}

DataNode DataNode::operator[](const std::string& key) const {
  if (!node_->is_object()) fail(where_, "not an object");
  const auto it = node_->find(key);
  if (it == node_->end()) fail(where_ + "/" + key, "missing");
  return {&*it, where_ + "/" + key};
}

DataNode DataNode::operator[](std::size_t i) const {
  if (!node_->is_array() || i >= node_->size()) fail(where_ + "/" + std::to_string(i), "missing");
  return {&(*node_)[i], where_ + "/" + std::to_string(i)};
}

std::size_t DataNode::size() const {
  if (!node_->is_array()) fail(where_, "not an array");
  return node_->size();
}

bool DataNode::is_null() const { return node_->is_null(); }
bool DataNode::is_array() const { return node_->is_array(); }

bool DataNode::boolean() const {
  if (!node_->is_boolean()) fail(where_, "not true or false");
  return node_->get<bool>();
}

const std::string& DataNode::text() const {
  if (!node_->is_string()) fail(where_, "not a string");
  return node_->get_ref<const std::string&>();
}

double DataNode::number() const {
  if (node_->is_number()) return node_->get<double>();
  if (node_->is_string()) {
    const auto& s = node_->get_ref<const std::string&>();
    constexpr double inf = std::numeric_limits<double>::infinity();
    if (s == "inf") return inf;
    if (s == "-inf") return -inf;
    if (s == "nan") return std::numeric_limits<double>::quiet_NaN();
  }
  fail(where_, "not a number, \"inf\", \"-inf\" or \"nan\"");
}

std::vector<double> DataNode::values() const {
  if (!node_->is_array()) return {number()};
  const auto m = matrix();
  return {m.data(), m.data() + m.size()};
}

qkscope::MatrixD DataNode::matrix() const {
  return grid<qkscope::MatrixD>(*this, [](const DataNode& x) { return x.number(); });
}

qkscope::KeepMask DataNode::keep() const {
  return grid<qkscope::KeepMask>(*this, [](const DataNode& x) { return x.boolean(); });
}

DataNode fault_case(const std::string& id) {
  const DataNode cases(&data().at("cases"), "/cases");
  for (std::size_t i = 0; i < cases.size(); ++i)
    if (cases[i]["id"].text() == id) return cases[i];
  fail("/cases", "no case with id " + id);
}

}  // namespace qktest
