#pragma once
// watch.html: `latest watch`'s page, self-contained like the report: the
// clock against time over the recorded SMs (min to max, the median, NVML's
// reading) with the card's changes marked; histograms of step size, hold
// and SM spread; the detectors' errors against the judge.
#include <filesystem>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "core/watch/detector_judge.hpp"
#include "core/watch/watch.hpp"
#include "report/figures.hpp"

namespace latest::report {

// At most this many points of the clock's band reach the page: bins are
// merged (their min, max and median of medians) above it.
inline constexpr std::size_t kWatchBandPoints = 4000;

std::vector<Figure> watch_figures(const WatchRecording& recording, const WatchAnalysis& analysis,
                                  const std::vector<JudgedChange>& judged);
std::string render_watch_report(const std::vector<Figure>& figures, const nlohmann::json& manifest);

}  // namespace latest::report
