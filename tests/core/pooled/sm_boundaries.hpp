#pragma once
// One SM's records with the Boundaries over them, for the tests of
// src/core/pooled/: Boundaries keeps references to the records and to its
// storage, so the three live together. Of internal linkage, as the
// Boundaries it holds.
#include <cstdint>
#include <utility>
#include <vector>

#include "core/pooled/boundaries.hpp"
#include "core/pooled_detection.hpp"

namespace latest::pooled {
namespace {

struct SmBoundaries {
  SmRecords records;
  Boundaries::Marks marks;
  std::vector<std::uint8_t> uneven;
  Boundaries e{records, PooledSettings{}.long_iteration, marks, uneven};  // 1.3
  explicit SmBoundaries(SmRecords r) : records(std::move(r)) {}
};

}  // namespace
}  // namespace latest::pooled
