// The latency table loader behind include/latest/latency_table.h. The JSON
// reader stays in here: the public headers need only the C++ standard
// library, and the C API only C.
#include <latest/latency_table.h>

#include "table/table_data.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <utility>
#include <vector>

#include <nlohmann/json.hpp>

namespace latest::table_detail {

int statistic_index(const char* name) {
  if (!name) return -1;
  for (std::size_t i = 0; i < kStatistics.size(); ++i)
    if (std::strcmp(name, kStatistics[i]) == 0) return static_cast<int>(i);
  return -1;
}

int find_measured(const latest_table* t, unsigned a, unsigned b, const Entry** out) {
  const auto it = t->pairs.find({a, b});
  if (it == t->pairs.end())
    return std::binary_search(t->clocks.begin(), t->clocks.end(), a) && std::binary_search(t->clocks.begin(), t->clocks.end(), b) && a != b
               ? LATEST_ERR_NOT_MEASURED  // both clocks listed, the pair not: never measured
               : LATEST_ERR_UNKNOWN_PAIR;
  if (!it->second.measured) return LATEST_ERR_NOT_MEASURED;
  *out = &it->second;
  return LATEST_OK;
}

int lookup(const latest_table* t, unsigned a, unsigned b, int k, double* out, bool transition) {
  if (!t || !out || k < 0 || k >= static_cast<int>(kStatistics.size())) return LATEST_ERR_BAD_ARGUMENT;
  const Entry* e = nullptr;
  if (const int rc = find_measured(t, a, b, &e); rc != LATEST_OK) return rc;
  *out = (transition ? e->transition : e->switching)[static_cast<std::size_t>(k)];
  return LATEST_OK;
}

}  // namespace latest::table_detail

namespace {
using nlohmann::json;
using namespace latest::table_detail;

// A load that failed: the status and the message.
struct Failure {
  int status;
  std::string what;
};

}  // namespace

namespace {

[[noreturn]] void invalid(const std::string& path, const std::string& where, const std::string& why) {
  throw Failure{LATEST_ERR_INVALID_TABLE, path + ": " + where + " " + why};
}

const json& member(const json& o, const char* key, json::value_t type, const std::string& path, const std::string& where) {
  const std::string at = where.empty() ? key : where + "." + key;
  if (!o.is_object() || !o.contains(key)) invalid(path, at, "is missing");
  const json& v = o.at(key);
  const bool ok = v.type() == type || (type == json::value_t::number_unsigned && v.is_number_integer() && v.get<std::int64_t>() >= 0) ||
                  (type == json::value_t::number_float && v.is_number());
  if (!ok) invalid(path, at, std::string("is ") + v.type_name() + " where " + json(type).type_name() + " belongs");
  return v;
}

unsigned clock(const json& v, const std::string& path, const std::string& where) {
  if (!v.is_number_integer() || v.get<std::int64_t>() <= 0 || v.get<std::int64_t>() > 100000)
    invalid(path, where, "is not a clock in MHz");
  return v.get<unsigned>();
}

Stats statistics(const json& o, const char* key, const std::string& path, const std::string& where) {
  const json& s = member(o, key, json::value_t::object, path, where);
  Stats out{};
  for (std::size_t i = 0; i < kStatistics.size(); ++i) {
    const double v = member(s, kStatistics[i], json::value_t::number_float, path, where + "." + key).get<double>();
    if (!std::isfinite(v) || v < 0) invalid(path, where + "." + key + "." + kStatistics[i], "is not a latency (finite, at least 0)");
    out[i] = v;
  }
  // min <= p05 <= median <= p95 <= p99 <= max, and the mean within [min, max].
  const bool ordered = out[0] <= out[1] && out[1] <= out[2] && out[2] <= out[4] && out[4] <= out[5] &&
                       out[5] <= out[6] && out[0] <= out[3] && out[3] <= out[6];
  if (!ordered) invalid(path, where + "." + key, "holds statistics out of order (min <= p05 <= median <= p95 <= p99 <= max)");
  return out;
}

// A measured pair's "flags" (optional: tables before them have none); names
// this library does not know are left out, so newer tables still load.
unsigned flags(const json& pair, const std::string& path, const std::string& where) {
  if (!pair.contains("flags")) return 0;
  const json& names = member(pair, "flags", json::value_t::array, path, where);
  unsigned bits = 0;
  for (const json& name : names) {
    if (!name.is_string()) invalid(path, where + ".flags", "holds something other than names");
    if (name == "noisy") bits |= LATEST_FLAG_NOISY;
    if (name == "target_not_reached") bits |= LATEST_FLAG_TARGET_NOT_REACHED;
  }
  return bits;
}

latest_table parse_text(const std::string& text, const std::string& path) {
  json doc;
  try {
    doc = json::parse(text);
  } catch (const json::exception& e) {
    throw Failure{LATEST_ERR_INVALID_JSON, path + ": not valid JSON (" + e.what() + ")"};
  }
  if (!doc.is_object()) invalid(path, "the document", "is not an object");
  if (doc.contains("run_key") && doc.contains("pairs"))
    throw Failure{LATEST_ERR_INVALID_TABLE, path + ": this is a result manifest (a run's record), not a latency table"};
  if (doc.contains("kind") && doc["kind"] != "latest latency table")
    throw Failure{LATEST_ERR_INVALID_TABLE, path + ": this is a " + doc["kind"].dump() + ", not a latency table"};
  if (!doc.contains("schema_version") || !doc["schema_version"].is_number_integer())
    invalid(path, "schema_version", "is missing or not an integer");
  if (doc["schema_version"].get<std::int64_t>() != LATEST_TABLE_SCHEMA_VERSION)
    throw Failure{LATEST_ERR_SCHEMA_VERSION, path + ": schema version " + doc["schema_version"].dump() +
                                                 ", this library reads " + std::to_string(LATEST_TABLE_SCHEMA_VERSION)};
  latest_table t;
  const json& gpu = member(doc, "gpu", json::value_t::object, path, "");
  t.model = member(gpu, "model", json::value_t::string, path, "gpu").get<std::string>();
  const json& uuids = member(gpu, "uuids", json::value_t::array, path, "gpu");
  for (std::size_t i = 0; i < uuids.size(); ++i) {
    if (!uuids[i].is_string()) invalid(path, "gpu.uuids[" + std::to_string(i) + "]", "is not a string");
    t.uuids.push_back(uuids[i].get<std::string>());
  }
  const json& conditions = member(doc, "conditions", json::value_t::object, path, "");
  const json& memory = member(conditions, "memory_mhz", json::value_t::array, path, "conditions");
  for (std::size_t i = 0; i < memory.size(); ++i)
    t.memory_mhz.push_back(clock(memory[i], path, "conditions.memory_mhz[" + std::to_string(i) + "]"));
  const json& clocks = member(doc, "clocks_mhz", json::value_t::array, path, "");
  for (std::size_t i = 0; i < clocks.size(); ++i) t.clocks.push_back(clock(clocks[i], path, "clocks_mhz[" + std::to_string(i) + "]"));
  if (!std::is_sorted(t.clocks.begin(), t.clocks.end()) ||
      std::adjacent_find(t.clocks.begin(), t.clocks.end()) != t.clocks.end())
    invalid(path, "clocks_mhz", "is not ascending without repeats");
  const json& pairs = member(doc, "pairs", json::value_t::array, path, "");
  for (std::size_t i = 0; i < pairs.size(); ++i) {
    const std::string where = "pairs[" + std::to_string(i) + "]";
    const json& p = pairs[i];
    if (!p.is_object()) invalid(path, where, "is not an object");
    const unsigned a = clock(member(p, "init_mhz", json::value_t::number_unsigned, path, where), path, where + ".init_mhz");
    const unsigned b = clock(member(p, "target_mhz", json::value_t::number_unsigned, path, where), path, where + ".target_mhz");
    if (a == b || !std::binary_search(t.clocks.begin(), t.clocks.end(), a) ||
        !std::binary_search(t.clocks.begin(), t.clocks.end(), b))
      invalid(path, where, "is not a pair of two of the table's clocks");
    const std::string status = member(p, "status", json::value_t::string, path, where).get<std::string>();
    Entry e;
    if (status == "measured") {
      e.measured = true;
      const auto n = member(p, "n", json::value_t::number_unsigned, path, where).get<std::int64_t>();
      if (n < 1) invalid(path, where + ".n", "is not a count of measurements");
      e.switching = statistics(p, "switching_ms", path, where);
      e.transition = statistics(p, "transition_ms", path, where);
      e.flags = flags(p, path, where);
    } else if (status != "skipped" && status != "missing") {
      invalid(path, where + ".status", "'" + status + "' is none of measured, skipped, missing");
    }
    if (!t.pairs.emplace(std::make_pair(a, b), e).second) invalid(path, where, "repeats a pair listed before");
  }
  return t;
}

latest_table parse(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw Failure{LATEST_ERR_UNREADABLE, path + ": cannot be opened"};
  std::stringstream text;
  text << in.rdbuf();
  if (in.bad()) throw Failure{LATEST_ERR_UNREADABLE, path + ": cannot be read"};
  return parse_text(text.str(), path);
}

void write_error(char* err, std::size_t len, const std::string& what) {
  if (!err || len == 0) return;
  const std::size_t n = std::min(len - 1, what.size());
  std::memcpy(err, what.data(), n);
  err[n] = '\0';
}

}  // namespace

namespace latest::table_detail {
// The fuzzer's way in (fuzz/fuzz_table.cpp): a table from memory, the status.
int parse_for_fuzzing(const std::string& text) {
  try {
    const latest_table t = parse_text(text, "fuzz input");
    double v = 0;
    for (const auto& [k, e] : t.pairs) lookup(&t, k.first, k.second, statistic_index("p99"), &v, false);
    return LATEST_OK;
  } catch (const Failure& f) {
    return f.status;
  }
}
}  // namespace latest::table_detail

extern "C" {

int latest_table_load(const char* path, latest_table** out, char* err, size_t err_len) {
  if (out) *out = nullptr;
  if (!path || !out) {
    write_error(err, err_len, "latest_table_load: path and out must not be NULL");
    return LATEST_ERR_BAD_ARGUMENT;
  }
  try {
    *out = new latest_table(parse(path));
    write_error(err, err_len, "");
    return LATEST_OK;
  } catch (const Failure& f) {
    write_error(err, err_len, f.what);
    return f.status;
  } catch (const std::exception& e) {  // out of memory and the like
    write_error(err, err_len, std::string(path) + ": " + e.what());
    return LATEST_ERR_UNREADABLE;
  }
}

void latest_table_free(latest_table* t) { delete t; }

int latest_table_latency_ms(const latest_table* t, unsigned init_mhz, unsigned target_mhz, const char* statistic,
                            double* out_ms) {
  return lookup(t, init_mhz, target_mhz, statistic_index(statistic), out_ms, false);
}

int latest_table_transition_ms(const latest_table* t, unsigned init_mhz, unsigned target_mhz, const char* statistic,
                               double* out_ms) {
  return lookup(t, init_mhz, target_mhz, statistic_index(statistic), out_ms, true);
}

int latest_table_flags(const latest_table* t, unsigned init_mhz, unsigned target_mhz, unsigned* out_flags) {
  if (!t || !out_flags) return LATEST_ERR_BAD_ARGUMENT;
  const Entry* e = nullptr;
  if (const int rc = find_measured(t, init_mhz, target_mhz, &e); rc != LATEST_OK) return rc;
  *out_flags = e->flags;
  return LATEST_OK;
}

int latest_table_clocks(const latest_table* t, unsigned* out, size_t capacity, size_t* count) {
  if (!t || !count) return LATEST_ERR_BAD_ARGUMENT;
  *count = t->clocks.size();
  if (capacity == 0 && !out) return LATEST_OK;
  if (!out || capacity < t->clocks.size()) return LATEST_ERR_BAD_ARGUMENT;
  std::copy(t->clocks.begin(), t->clocks.end(), out);
  return LATEST_OK;
}

int latest_table_matches_device(const latest_table* t, const char* device, unsigned memory_mhz, int* matches) {
  if (!t || !device || !matches) return LATEST_ERR_BAD_ARGUMENT;
  const bool same_card = t->model == device || std::find(t->uuids.begin(), t->uuids.end(), device) != t->uuids.end();
  const bool same_memory = memory_mhz == 0 || t->memory_mhz.empty() ||
                           std::find(t->memory_mhz.begin(), t->memory_mhz.end(), memory_mhz) != t->memory_mhz.end();
  *matches = same_card && same_memory ? 1 : 0;
  return LATEST_OK;
}

const char* latest_table_model(const latest_table* t) { return t ? t->model.c_str() : ""; }

const char* latest_status_text(int status) {
  switch (status) {
    case LATEST_OK: return "ok";
    case LATEST_ERR_UNREADABLE: return "the file cannot be read";
    case LATEST_ERR_INVALID_JSON: return "not valid JSON";
    case LATEST_ERR_SCHEMA_VERSION: return "a table schema version this library does not read";
    case LATEST_ERR_INVALID_TABLE: return "not a valid latency table";
    case LATEST_ERR_UNKNOWN_PAIR: return "a clock the table does not list";
    case LATEST_ERR_NOT_MEASURED: return "the pair was skipped or not measured";
    case LATEST_ERR_BAD_ARGUMENT: return "a bad argument";
  }
  return "an unknown status";
}

}  // extern "C"
