#include "cli/arguments.hpp"

#include <algorithm>
#include <charconv>
#include <cstdlib>
#include <filesystem>
#include <set>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "core/planner.hpp"

namespace latest::cli {

std::vector<std::string> split(const std::string& text, char sep) {
  std::vector<std::string> parts;
  std::string cur;
  for (char c : text) {
    if (c == sep) {
      parts.push_back(cur);
      cur.clear();
    } else if (c != ' ') {
      cur += c;
    }
  }
  parts.push_back(cur);
  return parts;
}

namespace {

Mhz parse_mhz(const std::string& s, const char* what) {
  Mhz v = 0;
  const auto [ptr, ec] = std::from_chars(s.data(), s.data() + s.size(), v);
  if (s.empty() || ec != std::errc() || ptr != s.data() + s.size() || v <= 0)
    throw Error(ErrorKind::bad_argument, fmt::format("'{}' in {} is not a clock in MHz", s, what),
                "write whole positive numbers of MHz, e.g. 600,900,1200");
  return v;
}

}  // namespace

ClockSet parse_clock_set(const std::string& text) {
  if (text == "all") return {text, {{0, 0, true}}};
  ClockSet set{text, {}};
  std::vector<ClockItem>& items = set.items;
  for (const auto& part : split(text, ',')) {
    const auto ends = split(part, ':');
    if (ends.size() == 2) {
      const ClockItem item{parse_mhz(ends[0], "--freq"), parse_mhz(ends[1], "--freq"), true};
      if (item.low > item.high)
        throw Error(ErrorKind::bad_argument,
                    fmt::format("--freq range {} runs downwards: did you mean {}:{}?", part, item.high, item.low),
                    "write the lower clock first");
      items.push_back(item);
    } else if (ends.size() == 1) {
      const Mhz f = parse_mhz(part, "--freq");
      items.push_back({f, f, false});
    } else {
      throw Error(ErrorKind::bad_argument, fmt::format("'{}' in --freq is neither a clock nor a range LO:HI", part),
                  "e.g. --freq 600,900,1200, --freq 600:1500 or --freq all");
    }
  }
  return set;
}

std::vector<Mhz> parse_route(const std::string& text) {
  std::vector<Mhz> clocks;
  for (const auto& item : split(text, ',')) clocks.push_back(parse_mhz(item, "--measure-route"));
  if (clocks.size() < 2)
    throw Error(ErrorKind::bad_argument, "--measure-route needs at least two clocks: where it starts and where it ends",
                "e.g. --measure-route 1095,1980,1260");
  for (std::size_t i = 1; i < clocks.size(); ++i)
    if (clocks[i] == clocks[i - 1])
      throw Error(ErrorKind::bad_argument, fmt::format("--measure-route requests {} MHz twice in a row", clocks[i]));
  if (clocks.front() == clocks.back())
    throw Error(ErrorKind::bad_argument, "--measure-route ends where it starts: there is no change to measure");
  return clocks;
}

std::vector<Mhz> parse_clock_list(const std::string& text, const std::vector<Mhz>& supported) {
  return resolve_clock_set(parse_clock_set(text), supported);
}

std::vector<Mhz> resolve_clock_set(const ClockSet& set, const std::vector<Mhz>& supported) {
  std::vector<Mhz> clocks;
  std::set<Mhz> listed, seen;
  for (const ClockItem& item : set.items) {
    if (!item.range) {
      check_supported({item.low}, supported);
      if (!listed.insert(item.low).second)
        throw Error(ErrorKind::bad_argument, fmt::format("--freq lists {} MHz twice", item.low), "list each clock once");
      if (seen.insert(item.low).second) clocks.push_back(item.low);
      continue;
    }
    const bool all = item.low == 0 && item.high == 0;
    std::size_t found = 0;
    for (Mhz f : supported)
      if (all || (item.low <= f && f <= item.high)) {
        ++found;
        if (seen.insert(f).second) clocks.push_back(f);
      }
    if (found == 0 && !all)
      throw Error(ErrorKind::bad_argument,
                  fmt::format("the device supports no clock in --freq {}:{}", item.low, item.high),
                  fmt::format("supported: {}–{} MHz; `latest info --clocks` lists them all",
                              supported.empty() ? 0 : supported.front(), supported.empty() ? 0 : supported.back()));
  }
  if (clocks.size() < 2)
    throw Error(ErrorKind::bad_argument, "--freq needs at least two clocks to form a pair",
                "e.g. --freq 600,900,1200,1500, --freq 600:1500 or --freq all");
  return clocks;
}

void check_supported(const std::vector<Mhz>& clocks, const std::vector<Mhz>& supported) {
  for (Mhz f : clocks) {
    if (std::find(supported.begin(), supported.end(), f) != supported.end()) continue;
    auto above = std::lower_bound(supported.begin(), supported.end(), f);
    std::vector<Mhz> nearest;
    if (above != supported.begin()) nearest.push_back(*(above - 1));
    if (above != supported.end()) nearest.push_back(*above);
    throw Error(ErrorKind::bad_argument,
                fmt::format("the device does not support {} MHz; the nearest supported {} {} MHz", f,
                            nearest.size() == 1 ? (f > nearest[0] ? "clock is the highest," : "clock is the lowest,")
                                                : "clocks are",
                            fmt::join(nearest, " and ")),
                fmt::format("supported: {}–{} MHz ({} clocks); `latest info --clocks` lists them all",
                            supported.empty() ? 0 : supported.front(), supported.empty() ? 0 : supported.back(),
                            supported.size()));
  }
}

std::vector<ClockPair> resolve_pairs(const std::string& selection, const std::vector<Mhz>& clocks) {
  if (selection == "all") return ordered_pairs(clocks);
  if (selection == "increasing") return ordered_pairs(clocks, PairDirection::increasing);
  if (selection == "decreasing") return ordered_pairs(clocks, PairDirection::decreasing);
  std::vector<ClockPair> pairs;
  for (const auto& item : split(selection, ',')) {
    const auto ends = split(item, ':');
    if (ends.size() != 2)
      throw Error(ErrorKind::bad_argument, fmt::format("'{}' in --pairs is not INIT:TARGET", item),
                  "use all, increasing, decreasing, or a list such as 1980:990,990:1980");
    const ClockPair p{parse_mhz(ends[0], "--pairs"), parse_mhz(ends[1], "--pairs")};
    if (p.init == p.target)
      throw Error(ErrorKind::bad_argument, fmt::format("--pairs {}:{} does not change the clock", p.init, p.target),
                  "give two different clocks");
    for (Mhz f : {p.init, p.target})
      if (std::find(clocks.begin(), clocks.end(), f) == clocks.end())
        throw Error(ErrorKind::bad_argument, fmt::format("--pairs uses {} MHz, which is not in --freq", f),
                    "add it to --freq, which lists every clock to calibrate");
    if (std::find(pairs.begin(), pairs.end(), p) != pairs.end())
      throw Error(ErrorKind::bad_argument, fmt::format("--pairs lists {}:{} twice", p.init, p.target), "list each pair once");
    pairs.push_back(p);
  }
  return pairs;
}

Detector parse_detector(const std::string& text) {
  if (text == "pooled" || text == "auto") return Detector::pooled;
  if (text == "paper") return Detector::paper;
  throw Error(ErrorKind::bad_argument, fmt::format("unknown --detector '{}'", text),
              "use pooled (the default: all SMs together) or paper (the paper's per-SM rule, for comparison)");
}

Schedule parse_schedule(const std::string& text) {
  if (text == "chained") return Schedule::chained;
  if (text == "paper") return Schedule::paper;
  throw Error(ErrorKind::bad_argument, fmt::format("unknown --schedule '{}'", text),
              "use chained (the default: many switches per launch) or paper (one switch per launch)");
}

DeviceSelection parse_device_selection(const std::string& text) {
  DeviceSelection selection{text, text == "all", {}};
  if (selection.all) return selection;
  for (const auto& item : split(text, ',')) {
    const DeviceSelector sel = parse_device_selector(item);
    for (const auto& earlier : selection.devices)
      if (earlier.text == sel.text)
        throw Error(ErrorKind::bad_argument, fmt::format("--device lists {} twice", item), "name each GPU once");
    selection.devices.push_back(sel);
  }
  return selection;
}

DeviceSelector parse_device_selector(const std::string& d) {
  if (d.rfind("GPU-", 0) == 0 || d.rfind("MIG-", 0) == 0) return {DeviceSelector::Kind::uuid, d};
  if (d.find(':') != std::string::npos) return DeviceSelector::by_bus_id(d);
  char* end = nullptr;
  const long index = std::strtol(d.c_str(), &end, 10);
  if (d.empty() || *end || index < 0)
    throw Error(ErrorKind::bad_argument, fmt::format("--device '{}' is neither an index, a UUID nor a PCI bus id", d),
                "e.g. --device 0, --device GPU-8f3c..., --device 00000000:17:00.0");
  return {DeviceSelector::Kind::index, d, static_cast<int>(index)};
}

std::string expand_output(const std::string& pattern, const OutputPlaceholders& v) {
  std::string out;
  for (std::size_t i = 0; i < pattern.size(); ++i) {
    if (pattern[i] != '%') {
      out += pattern[i];
      continue;
    }
    const char c = i + 1 < pattern.size() ? pattern[++i] : '\0';
    switch (c) {
      case 'h': out += v.host; break;
      case 'u': out += v.uuid; break;
      case 'i': out += std::to_string(v.index); break;
      case 'j': out += v.job.empty() ? std::string("nojob") : v.job; break;
      case '%': out += '%'; break;
      default:
        throw Error(ErrorKind::bad_argument,
                    fmt::format("--output '{}': '%{}' is no placeholder", pattern, c == '\0' ? std::string() : std::string(1, c)),
                    "use %h (host), %u (GPU UUID), %i (GPU index), %j (Slurm job id) or %% (a percent sign)");
    }
  }
  return out;
}

bool output_per_gpu(const std::string& pattern) {
  for (std::size_t i = 0; i + 1 < pattern.size(); ++i)
    if (pattern[i] == '%') {
      if (pattern[i + 1] == 'u' || pattern[i + 1] == 'i') return true;
      ++i;  // %% and the others
    }
  return false;
}

std::string unwritable_output(const std::string& path) {
  // The first part of the path that exists decides: a file there can hold no directory.
  for (std::filesystem::path p = path; !p.empty(); p = p.parent_path()) {
    std::error_code ec;
    if (!std::filesystem::exists(p, ec)) {
      if (p == p.parent_path()) break;
      continue;
    }
    if (!std::filesystem::is_directory(p, ec))
      return p == std::filesystem::path(path) ? fmt::format("{} is a file, not a directory", path)
                                               : fmt::format("cannot write {}: {} is a file", path, p.string());
    break;
  }
  return fmt::format("cannot write the output directory {}", path);
}

}  // namespace latest::cli
