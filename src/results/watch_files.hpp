#pragma once
// `latest watch`'s result directory (docs/methodology.md, "Watching the
// card's own clock"): steps.csv (every change of every recorded SM),
// clock.csv (the clock over the SMs a millisecond at a time),
// telemetry.csv (the driver's readings), windows.bin (each SM's records
// around the changes, bounded) and manifest.json. Each is written
// atomically; a kill before the end leaves the files of the last watch.
#include <cstdint>
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/watch/detector_judge.hpp"
#include "core/watch/watch.hpp"

namespace latest {

inline constexpr const char* kStepsCsvHeader =
    "step,sm,group,departure_ms,arrival_ms,departure_uncertainty_us,arrival_uncertainty_us,before_mhz,after_mhz,"
    "kind,ramp_levels_mhz,card_spread_us,held_before_ms,holds_ms,nvml_sm_mhz,nvml_reasons,power_w,arrival_gpu_ns";

std::string steps_csv(const WatchRecording& recording, const WatchAnalysis& analysis);
std::string clock_csv(const WatchRecording& recording, const WatchAnalysis& analysis);
std::string telemetry_csv(const WatchRecording& recording);

// Every recorded SM's iterations around one change of the card.
struct RecordWindow {
  int step = 0;  // its row in steps.csv
  std::vector<SmRecords> sms;
};

// The windows kept: `half_width_ns` each side of at most `max_windows`
// changes spread evenly over the recording, the judged ones where any
// were; at 8 bytes an iteration an SM.
std::vector<RecordWindow> windows_around(const WatchRecording& recording, const WatchAnalysis& analysis,
                                         const std::vector<JudgedChange>& judged, Nanos half_width_ns,
                                         std::size_t max_windows);
std::string windows_bin(const std::vector<RecordWindow>& windows);
// Throws Error(bad_argument) naming what is wrong with the file.
std::vector<RecordWindow> read_windows_bin(const std::string& contents);

// The detectors against the judge, a row per change of the card.
std::string judged_csv(const WatchRecording& recording, const std::vector<JudgedChange>& judged);

// Counts, the distributions of step size, hold and SM spread, the judge's
// evidence, and the detectors' errors against it.
nlohmann::json watch_summary(const WatchRecording& recording, const WatchAnalysis& analysis,
                             const std::vector<JudgedChange>& judged);

}  // namespace latest
