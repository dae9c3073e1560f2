#include "analysis/result_reader.hpp"

#include <algorithm>
#include <charconv>
#include <cmath>
#include <fstream>
#include <limits>
#include <set>

#include <fmt/format.h>

#include "core/error.hpp"
#include "results/result_store.hpp"

namespace latest::analysis {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

[[noreturn]] void bad(const fs::path& file, std::size_t line, const std::string& why) {
  throw Error(ErrorKind::bad_argument, fmt::format("{}:{}: {}", file.string(), line, why),
              "rerun the measurement for this pair (delete its CSV and rerun the same command to resume), or leave "
              "the directory out");
}

double number(std::string_view s, const fs::path& file, std::size_t line, const char* column) {
  double v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() || !std::isfinite(v))
    bad(file, line, fmt::format("'{}' in column {} is not a finite number", s, column));
  return v;
}

// A latency is at least 0 and below a day: anything else no run can give.
double latency(std::string_view s, const fs::path& file, std::size_t line, const char* column) {
  constexpr double kDayMs = 86'400'000;
  const double v = number(s, file, line, column);
  if (v < 0 || v >= kDayMs)
    bad(file, line, fmt::format("{} ms in column {} cannot be a latency (0 to a day)", s, column));
  return v;
}

// The manifest's fields, checked for their type: `what` names where.
[[noreturn]] void bad_manifest(const fs::path& file, const std::string& what, const std::string& why) {
  throw Error(ErrorKind::bad_argument, fmt::format("{}: {} {}", file.string(), what, why),
              "the manifest is damaged: rerun the measurement into a new directory, or leave this one out");
}

const json& field(const json& object, const char* key, json::value_t type, const fs::path& file, const std::string& where) {
  const std::string what = where.empty() ? key : where + "." + key;
  if (!object.contains(key)) bad_manifest(file, what, "is missing");
  const json& v = object.at(key);
  const bool ok = v.type() == type || (type == json::value_t::number_integer && v.is_number_unsigned()) ||
                  (type == json::value_t::number_float && v.is_number());
  if (!ok) bad_manifest(file, what, fmt::format("is {} where {} belongs", v.type_name(), json(type).type_name()));
  return v;
}

Mhz clock_field(const json& object, const char* key, const fs::path& file, const std::string& where) {
  const json& v = field(object, key, json::value_t::number_integer, file, where);
  const auto mhz = v.get<std::int64_t>();
  if (mhz <= 0 || mhz > 100'000) bad_manifest(file, where + "." + key, fmt::format("{} MHz is no clock", mhz));
  return static_cast<Mhz>(mhz);
}

}  // namespace

PairMeasurements read_pair_csv(const fs::path& file, ClockPair pair) {
  std::ifstream in(file, std::ios::binary);
  if (!in) throw Error(ErrorKind::bad_argument, fmt::format("{}: cannot be read", file.string()));
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  PairMeasurements m;
  m.pair = pair;
  std::size_t line_no = 0, pos = 0, columns = 0;
  while (pos < text.size()) {
    const std::size_t end = text.find('\n', pos);
    ++line_no;
    if (end == std::string::npos) bad(file, line_no, "the last line is cut off (a truncated file?)");
    const std::string_view line(text.data() + pos, end - pos);
    pos = end + 1;
    if (line_no == 1) {
      if (line == kCsvHeader)
        columns = 16;
      else if (line == kCsvHeaderV2)
        columns = 15;
      else if (line == kCsvHeaderV1)
        columns = 12;
      else
        bad(file, 1, "unexpected columns: a result file from another version of latest, or not one at all");
      continue;
    }
    std::string_view fields[16];
    std::size_t count = 0, start = 0;
    for (std::size_t i = 0; i <= line.size(); ++i)
      if (i == line.size() || line[i] == ',') {
        if (count < 16) fields[count] = line.substr(start, i - start);
        ++count;
        start = i + 1;
      }
    if (count != columns) bad(file, line_no, fmt::format("{} fields where {} belong", count, columns));
    const double index = number(fields[0], file, line_no, "index");
    if (index < 1 || index != std::floor(index) || index > 1e9)
      bad(file, line_no, fmt::format("'{}' in column index is not a measurement number", fields[0]));
    if (columns == 16 && fields[15] != "0") {
      if (fields[15] != "1") bad(file, line_no, fmt::format("'{}' in column set_aside is not 0 or 1", fields[15]));
      m.set_aside.push_back(static_cast<int>(index));  // in the file, out of the statistics
      continue;
    }
    m.index.push_back(static_cast<int>(index));
    m.switching_ms.push_back(latency(fields[1], file, line_no, "switching_latency_ms"));
    m.transition_ms.push_back(latency(fields[2], file, line_no, "transition_latency_ms"));
    m.paper_switching_ms.push_back(columns >= 15 && !fields[12].empty()
                                       ? latency(fields[12], file, line_no, "paper_switching_latency_ms")
                                       : std::numeric_limits<double>::quiet_NaN());
    m.true_switching_ms.push_back(fields[10].empty() ? std::numeric_limits<double>::quiet_NaN()
                                                     : latency(fields[10], file, line_no, "true_latency_ms"));
  }
  if (line_no == 0) bad(file, 1, "the file is empty");
  return m;
}

std::vector<GpuResults> read_results(const std::vector<fs::path>& dirs) {
  std::map<std::string, GpuResults> by_gpu;
  std::vector<std::string> order;
  for (const auto& dir : dirs) {
    const fs::path path = dir / "manifest.json";
    if (!fs::exists(dir))
      throw Error(ErrorKind::not_found, fmt::format("{} does not exist", dir.string()),
                  "give the --output directory of a measurement run");
    if (!fs::is_directory(dir))
      throw Error(ErrorKind::bad_argument, fmt::format("{} is a file, not a result directory", dir.string()),
                  fmt::format("give the directory that holds it: {}",
                              dir.has_parent_path() ? dir.parent_path().string() : std::string(".")));
    if (!fs::exists(path))
      throw Error(ErrorKind::bad_argument, fmt::format("{} has no manifest.json: not a latest result directory", dir.string()),
                  "give the --output directory of a measurement run");
    json manifest;
    try {
      std::ifstream in(path);
      manifest = json::parse(in);
    } catch (const json::exception& e) {
      throw Error(ErrorKind::bad_argument, fmt::format("{}: not valid JSON ({})", path.string(), e.what()),
                  "latest writes its manifests whole (atomically), so this one was cut short or edited, or is "
                  "not latest's: give a directory that does not hold it, or move it aside");
    }
    if (!manifest.is_object()) bad_manifest(path, "the document", fmt::format("is {} where object belongs", manifest.type_name()));
    const int schema = manifest.contains("schema_version") && manifest["schema_version"].is_number_integer()
                           ? manifest["schema_version"].get<int>()
                           : 0;
    if (schema < 1 || schema > kManifestSchemaVersion)
      throw Error(ErrorKind::bad_argument,
                  fmt::format("{}: result schema {} is not one this latest reads (1 to {})", path.string(), schema,
                              kManifestSchemaVersion),
                  "analyse it with the latest version that wrote it");
    const json& device = field(manifest, "device", json::value_t::object, path, "");
    const std::string host = field(manifest, "host", json::value_t::string, path, "").get<std::string>();
    const std::string uuid = field(device, "uuid", json::value_t::string, path, "device").get<std::string>();
    const std::string key = host + "/" + uuid;
    if (!by_gpu.count(key)) order.push_back(key);
    GpuResults& g = by_gpu[key];
    g.host = host;
    g.uuid = uuid;
    g.name = device.contains("name") ? field(device, "name", json::value_t::string, path, "device").get<std::string>() : "";
    g.gpu_index = device.contains("index") ? static_cast<int>(field(device, "index", json::value_t::number_integer, path, "device").get<std::int64_t>()) : 0;
    g.dirs.push_back(dir);
    g.manifests.push_back(manifest);
    if (manifest.contains("settings")) {
      const json& settings = field(manifest, "settings", json::value_t::object, path, "");
      if (settings.contains("freq_mhz")) {
        const json& freq = field(settings, "freq_mhz", json::value_t::array, path, "settings");
        for (std::size_t i = 0; i < freq.size(); ++i) {
          const std::string where = fmt::format("settings.freq_mhz[{}]", i);
          if (!freq[i].is_number_integer()) bad_manifest(path, where, fmt::format("is {} where a clock belongs", freq[i].type_name()));
          const Mhz f = freq[i].get<Mhz>();
          if (f <= 0) bad_manifest(path, where, fmt::format("{} MHz is no clock", f));
          if (std::find(g.requested_clocks.begin(), g.requested_clocks.end(), f) == g.requested_clocks.end())
            g.requested_clocks.push_back(f);
        }
      }
    }
    const json& pairs = field(manifest, "pairs", json::value_t::array, path, "");
    for (std::size_t i = 0; i < pairs.size(); ++i) {
      const std::string where = fmt::format("pairs[{}]", i);
      const json& p = pairs[i];
      if (!p.is_object()) bad_manifest(path, where, fmt::format("is {} where object belongs", p.type_name()));
      const ClockPair pair{clock_field(p, "init_mhz", path, where), clock_field(p, "target_mhz", path, where)};
      const auto k = std::make_pair(pair.init, pair.target);
      const std::string status = field(p, "status", json::value_t::string, path, where).get<std::string>();
      if (status != "measured") {
        g.skipped[k] = p.contains("reason") ? field(p, "reason", json::value_t::string, path, where).get<std::string>()
                                            : "skipped";
        continue;
      }
      const std::string name = field(p, "file", json::value_t::string, path, where).get<std::string>();
      if (name.empty() || fs::path(name).is_absolute() || name.find("..") != std::string::npos)
        bad_manifest(path, where + ".file", fmt::format("'{}' is not a file of this directory", name));
      const fs::path csv = dir / name;
      if (!fs::exists(csv))
        throw Error(ErrorKind::bad_argument, fmt::format("{}: the manifest lists {}, which is missing", path.string(), csv.string()));
      PairMeasurements m = read_pair_csv(csv, pair);
      auto [it, fresh] = g.pairs.try_emplace(k, std::move(m));
      if (!fresh) {  // the same pair from another run on this GPU: more measurements of it
        auto& into = it->second;
        into.index.insert(into.index.end(), m.index.begin(), m.index.end());
        into.switching_ms.insert(into.switching_ms.end(), m.switching_ms.begin(), m.switching_ms.end());
        into.transition_ms.insert(into.transition_ms.end(), m.transition_ms.begin(), m.transition_ms.end());
        into.paper_switching_ms.insert(into.paper_switching_ms.end(), m.paper_switching_ms.begin(),
                                       m.paper_switching_ms.end());
        into.true_switching_ms.insert(into.true_switching_ms.end(), m.true_switching_ms.begin(), m.true_switching_ms.end());
      }
      g.skipped.erase(k);
      if (p.contains("target_not_reached") && p["target_not_reached"].is_boolean() &&
          p["target_not_reached"].get<bool>())
        g.target_not_reached.insert(k);
    }
  }
  std::vector<GpuResults> out;
  for (const auto& key : order) {
    GpuResults g = std::move(by_gpu[key]);
    std::sort(g.requested_clocks.begin(), g.requested_clocks.end());
    out.push_back(std::move(g));
  }
  return out;
}

}  // namespace latest::analysis
