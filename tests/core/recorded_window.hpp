#pragma once
// A window recorded on a real H200 (tests/core/data/README.md gives the
// layout), read back by the replay tests (pooled_detection_test.cpp,
// pooled/detector_answers_test.cpp).
#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <string>
#include <vector>

#include "core/calibration.hpp"
#include "core/planner.hpp"
#include "core/types.hpp"

namespace latest {

struct RecordedWindow {
  std::string name;
  Nanos request_gpu_ns = 0;
  double true_ms = 0, in_effect_us = 0;
  ClockCalibration initial, target;
  WindowRecords records;
  bool complete = false;  // the file held all it announced
};

namespace recorded_window_detail {
template <typename T>
T read(std::ifstream& in) {
  T value{};
  in.read(reinterpret_cast<char*>(&value), sizeof value);
  return value;
}
inline Band band(double mean) {
  Band b;
  b.iteration = {8192, mean, 24};  // the H200's per-SM sd at these lengths, about
  return b;
}
}  // namespace recorded_window_detail

inline RecordedWindow load_recorded_window(const std::filesystem::path& path) {
  using recorded_window_detail::band;
  using recorded_window_detail::read;
  std::ifstream in(path, std::ios::binary);
  double h[10];
  in.read(reinterpret_cast<char*>(h), sizeof h);
  RecordedWindow w;
  w.name = path.filename().string();
  w.request_gpu_ns = static_cast<Nanos>(h[0]);
  w.true_ms = h[1];
  w.in_effect_us = h[2];
  w.initial.mhz = static_cast<Mhz>(h[6]);
  w.target.mhz = static_cast<Mhz>(h[7]);
  w.target.pooled = band(h[8]);
  w.initial.pooled = band(h[9]);
  const auto sms = read<std::int64_t>(in);
  for (std::int64_t s = 0; s < sms && in; ++s) {
    SmRecords r;
    r.sm = static_cast<int>(read<std::int64_t>(in));
    r.first_start_ns = read<std::int64_t>(in);
    r.duration_ns.resize(static_cast<std::size_t>(read<std::int64_t>(in)));
    in.read(reinterpret_cast<char*>(r.duration_ns.data()),
            static_cast<std::streamsize>(r.duration_ns.size() * sizeof(std::uint32_t)));
    const auto sm = static_cast<std::size_t>(r.sm);
    if (w.initial.per_sm.size() <= sm) w.initial.per_sm.resize(sm + 1), w.target.per_sm.resize(sm + 1);
    w.initial.per_sm[sm] = band(read<double>(in));
    w.target.per_sm[sm] = band(read<double>(in));
    w.records.sms.push_back(std::move(r));
  }
  w.complete = in.good();
  return w;
}

// Every recorded window (*.bin) under `dir`, in name order.
inline std::vector<std::filesystem::path> recorded_windows_in(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::recursive_directory_iterator(dir))
    if (entry.path().extension() == ".bin") files.push_back(entry.path());
  std::sort(files.begin(), files.end());
  return files;
}

// An iteration over 1.3 times both its neighbours: a halt or an interrupt
// (round 51 of the former hardware log (git history)). Its SM (index into records.sms), its
// index among that SM's iterations and its start on the GPU's time axis.
struct LongIteration {
  std::size_t sm = 0, i = 0;
  Nanos start = 0;
};
inline std::vector<LongIteration> long_iterations(const WindowRecords& records) {
  std::vector<LongIteration> out;
  for (std::size_t s = 0; s < records.sms.size(); ++s) {
    const std::vector<std::uint32_t>& d = records.sms[s].duration_ns;
    if (d.empty()) continue;
    Nanos start = records.sms[s].first_start_ns + d[0];
    for (std::size_t i = 1; i + 1 < d.size(); start += d[i], ++i)
      if (10ull * d[i] > 13ull * d[i - 1] && 10ull * d[i] > 13ull * d[i + 1]) out.push_back({s, i, start});
  }
  return out;
}

// The tolerances the engine gives the detectors for a window: half the step
// to the nearest of the H200's clocks (345-1980 MHz, 15 MHz apart).
inline double recorded_tolerance_ns(const ClockCalibration& c) {
  static const std::vector<Mhz> clocks = [] {
    std::vector<Mhz> v;
    for (Mhz m = 345; m <= 1980; m += 15) v.push_back(m);
    return v;
  }();
  return neighbour_tolerance_ns(c.mhz, c.pooled.iteration.mean, clocks);
}

}  // namespace latest
