#include "analysis/result_reader.hpp"

#include <algorithm>
#include <charconv>
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
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size())
    bad(file, line, fmt::format("'{}' in column {} is not a number", s, column));
  return v;
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
        columns = 15;
      else if (line == kCsvHeaderV1)
        columns = 12;
      else
        bad(file, 1, "unexpected columns: a result file from another version of latest, or not one at all");
      continue;
    }
    std::string_view fields[15];
    std::size_t count = 0, start = 0;
    for (std::size_t i = 0; i <= line.size(); ++i)
      if (i == line.size() || line[i] == ',') {
        if (count < 15) fields[count] = line.substr(start, i - start);
        ++count;
        start = i + 1;
      }
    if (count != columns) bad(file, line_no, fmt::format("{} fields where {} belong", count, columns));
    m.index.push_back(static_cast<int>(number(fields[0], file, line_no, "index")));
    m.switching_ms.push_back(number(fields[1], file, line_no, "switching_latency_ms"));
    m.transition_ms.push_back(number(fields[2], file, line_no, "transition_latency_ms"));
    m.paper_switching_ms.push_back(columns == 15 && !fields[12].empty()
                                       ? number(fields[12], file, line_no, "paper_switching_latency_ms")
                                       : std::numeric_limits<double>::quiet_NaN());
  }
  if (line_no == 0) bad(file, 1, "the file is empty");
  return m;
}

std::vector<GpuResults> read_results(const std::vector<fs::path>& dirs) {
  std::map<std::string, GpuResults> by_gpu;
  std::vector<std::string> order;
  for (const auto& dir : dirs) {
    const fs::path path = dir / "manifest.json";
    if (!fs::exists(path))
      throw Error(ErrorKind::bad_argument, fmt::format("{} has no manifest.json: not a latest result directory", dir.string()),
                  "give the --output directory of a measurement run");
    json manifest;
    try {
      std::ifstream in(path);
      manifest = json::parse(in);
    } catch (const json::exception& e) {
      throw Error(ErrorKind::bad_argument, fmt::format("{}: not valid JSON ({})", path.string(), e.what()));
    }
    const int schema = manifest.value("schema_version", 0);
    if (schema != 1 && schema != kManifestSchemaVersion)
      throw Error(ErrorKind::bad_argument,
                  fmt::format("{}: result schema {} is not one this latest reads (1 and {})", path.string(), schema,
                              kManifestSchemaVersion),
                  "analyse it with the latest version that wrote it");
    const json device = manifest.value("device", json::object());
    const std::string host = manifest.value("host", "unknown-host");
    const std::string uuid = device.value("uuid", "unknown-gpu");
    const std::string key = host + "/" + uuid;
    if (!by_gpu.count(key)) order.push_back(key);
    GpuResults& g = by_gpu[key];
    g.host = host;
    g.uuid = uuid;
    g.name = device.value("name", "");
    g.gpu_index = device.value("index", 0);
    g.dirs.push_back(dir);
    g.manifests.push_back(manifest);
    for (const auto& f : manifest.value("settings", json::object()).value("freq_mhz", json::array()))
      if (std::find(g.requested_clocks.begin(), g.requested_clocks.end(), f.get<Mhz>()) == g.requested_clocks.end())
        g.requested_clocks.push_back(f.get<Mhz>());
    for (const auto& p : manifest.value("pairs", json::array())) {
      const ClockPair pair{p.at("init_mhz").get<Mhz>(), p.at("target_mhz").get<Mhz>()};
      const auto k = std::make_pair(pair.init, pair.target);
      if (p.value("status", "") != "measured") {
        g.skipped[k] = p.value("reason", "skipped");
        continue;
      }
      const fs::path csv = dir / p.value("file", "");
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
      }
      g.skipped.erase(k);
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
