#include "results/watch_files.hpp"

#include <algorithm>
#include <cmath>
#include <cstring>

#include <fmt/format.h>

#include "core/error.hpp"
#include "core/statistics.hpp"

namespace latest {
namespace {

double ms_since(const WatchRecording& r, Nanos t) { return static_cast<double>(t - r.start_gpu_ns) / 1e6; }

std::string optional_ms(const std::optional<Nanos>& ns) {
  return ns ? fmt::format("{:.3f}", static_cast<double>(*ns) / 1e6) : "";
}

std::string levels_text(const std::vector<double>& levels) {
  std::string out;
  for (const double l : levels) out += fmt::format("{}{:.1f}", out.empty() ? "" : " ", l);
  return out;
}

constexpr char kWindowsMagic[8] = {'L', 'T', 'W', 'I', 'N', 'D', '1', '\n'};

template <typename T>
void put(std::string& out, T v) {
  out.append(reinterpret_cast<const char*>(&v), sizeof v);
}

class Reader {
 public:
  explicit Reader(const std::string& s) : s_(s) {}
  template <typename T>
  T get() {
    T v{};
    need(sizeof v);
    std::memcpy(&v, s_.data() + at_, sizeof v);
    at_ += sizeof v;
    return v;
  }
  void words(std::vector<std::uint32_t>& out, std::uint32_t n) {
    need(std::size_t{n} * 4);
    out.resize(n);
    std::memcpy(out.data(), s_.data() + at_, std::size_t{n} * 4);
    at_ += std::size_t{n} * 4;
  }
  bool done() const { return at_ == s_.size(); }
  // A count read from the file, checked against the bytes left at `each`
  // bytes an item at least, before anything is allocated for it.
  std::size_t count(std::size_t each) {
    const auto n = get<std::uint32_t>();
    if (each > 0 && n > (s_.size() - at_) / each)
      throw Error(ErrorKind::bad_argument, fmt::format("windows.bin names {} items at byte {}, more than it holds", n, at_),
                  "the file is damaged: take it again from the watch's output");
    return n;
  }

 private:
  void need(std::size_t n) const {
    if (s_.size() - at_ < n)
      throw Error(ErrorKind::bad_argument, fmt::format("windows.bin ends early, at byte {}", at_),
                  "the file is cut short: take it again from the watch's output");
  }
  const std::string& s_;
  std::size_t at_ = 0;
};

}  // namespace

std::string steps_csv(const WatchRecording& r, const WatchAnalysis& a) {
  std::string out = std::string(kStepsCsvHeader) + "\n";
  for (std::size_t k = 0; k < a.steps.size(); ++k) {
    const CardStep& card = a.steps[k];
    for (std::size_t i = 0; i < card.sms.size(); ++i) {
      const SmStep& s = card.sms[i];
      const TelemetrySample* t = sample_at(r.samples, s.arrival_ns);
      std::string nvml = ",,";
      if (t)
        nvml = fmt::format("{},{:#x},{}", t->telemetry.sm_mhz ? std::to_string(*t->telemetry.sm_mhz) : "",
                           t->telemetry.throttle.raw_reasons,
                           t->telemetry.power_w ? fmt::format("{:.1f}", *t->telemetry.power_w) : "");
      out += fmt::format("{},{},{},{:.6f},{:.6f},{:.3f},{:.3f},{:.2f},{:.2f},{},{},{:.3f},{},{},{},{}\n", k, s.sm,
                         card.groups[i], ms_since(r, s.departure_ns), ms_since(r, s.arrival_ns),
                         s.departure_uncertainty_ns / 1e3, s.arrival_uncertainty_ns / 1e3, s.before_mhz, s.after_mhz,
                         s.jump() ? "jump" : "ramp", levels_text(s.ramp_levels_mhz),
                         static_cast<double>(card.spread_ns()) / 1e3, optional_ms(s.held_before_ns),
                         optional_ms(s.holds_ns), nvml, s.arrival_ns);
    }
  }
  return out;
}

std::string clock_csv(const WatchRecording& r, const WatchAnalysis& a) {
  std::string out = "time_ms,min_mhz,median_mhz,max_mhz\n";
  for (const ClockBand& b : a.band)
    out += fmt::format("{:.3f},{:.2f},{:.2f},{:.2f}\n", ms_since(r, b.start_ns), b.min_mhz, b.median_mhz, b.max_mhz);
  return out;
}

std::string telemetry_csv(const WatchRecording& r) {
  std::string out = "time_ms,sm_mhz,power_w,temperature_c,reasons\n";
  for (const TelemetrySample& s : r.samples) {
    const Telemetry& t = s.telemetry;
    out += fmt::format("{:.3f},{},{},{},{:#x}\n", ms_since(r, s.gpu_ns), t.sm_mhz ? std::to_string(*t.sm_mhz) : "",
                       t.power_w ? fmt::format("{:.1f}", *t.power_w) : "",
                       t.temperature_c ? fmt::format("{:.0f}", *t.temperature_c) : "", t.throttle.raw_reasons);
  }
  return out;
}

std::vector<RecordWindow> windows_around(const WatchRecording& r, const WatchAnalysis& a,
                                         const std::vector<JudgedChange>& judged, Nanos half_width,
                                         std::size_t max_windows) {
  // The judged changes where there are any (else every change), spread
  // evenly over the recording.
  std::vector<std::size_t> candidates;
  for (const JudgedChange& j : judged)
    if (j.skipped.empty()) candidates.push_back(static_cast<std::size_t>(j.step));
  if (candidates.empty())
    for (std::size_t k = 0; k < a.steps.size(); ++k) candidates.push_back(k);
  std::vector<RecordWindow> out;
  const std::size_t n = std::min(max_windows, candidates.size());
  for (std::size_t i = 0; i < n; ++i) {
    const std::size_t k = candidates[i * candidates.size() / n];
    const Nanos at = a.steps[k].arrival_ns();
    RecordWindow w;
    w.step = static_cast<int>(k);
    for (const SmRecords& sm : r.sms) w.sms.push_back(slice_records(sm, at - half_width, at + half_width));
    out.push_back(std::move(w));
  }
  return out;
}

std::string windows_bin(const std::vector<RecordWindow>& windows) {
  std::string out(kWindowsMagic, sizeof kWindowsMagic);
  put<std::uint32_t>(out, static_cast<std::uint32_t>(windows.size()));
  for (const RecordWindow& w : windows) {
    put<std::int32_t>(out, w.step);
    put<std::uint32_t>(out, static_cast<std::uint32_t>(w.sms.size()));
    for (const SmRecords& sm : w.sms) {
      put<std::int32_t>(out, sm.sm);
      put<std::int64_t>(out, sm.first_start_ns);
      put<std::uint32_t>(out, static_cast<std::uint32_t>(sm.duration_ns.size()));
      out.append(reinterpret_cast<const char*>(sm.duration_ns.data()), sm.duration_ns.size() * 4);
      out.append(reinterpret_cast<const char*>(sm.cycles.data()), sm.cycles.size() * 4);
    }
  }
  return out;
}

std::vector<RecordWindow> read_windows_bin(const std::string& contents) {
  if (contents.size() < sizeof kWindowsMagic || std::memcmp(contents.data(), kWindowsMagic, sizeof kWindowsMagic) != 0)
    throw Error(ErrorKind::bad_argument, "not a windows.bin of `latest watch` (its first bytes differ)",
                "pass the windows.bin a watch wrote");
  const std::string body = contents.substr(sizeof kWindowsMagic);
  Reader in(body);
  // The least a window (step, SM count), an SM (id, start, count) and an iteration take.
  std::vector<RecordWindow> out(in.count(8));
  for (RecordWindow& w : out) {
    w.step = in.get<std::int32_t>();
    w.sms.resize(in.count(16));
    for (SmRecords& sm : w.sms) {
      sm.sm = in.get<std::int32_t>();
      sm.first_start_ns = in.get<std::int64_t>();
      const auto n = static_cast<std::uint32_t>(in.count(8));
      in.words(sm.duration_ns, n);
      in.words(sm.cycles, n);
    }
  }
  if (!in.done()) throw Error(ErrorKind::bad_argument, "windows.bin has bytes after its last window", "take it again");
  return out;
}

std::string judged_csv(const WatchRecording& r, const std::vector<JudgedChange>& judged) {
  std::string out =
      "step,before_mhz,after_mhz,request_ms,judge_arrival_ms,judge_uncertainty_us,target_iteration_us,pooled_outcome,"
      "pooled_error_us,pooled_misfits,pooled_sm_error_min_us,pooled_sm_error_max_us,paper_outcome,paper_error_us,"
      "skipped\n";
  const auto us = [](const std::optional<double>& ns) { return ns ? fmt::format("{:.3f}", *ns / 1e3) : ""; };
  for (const JudgedChange& j : judged) {
    const auto [lo, hi] = std::minmax_element(j.pooled_sm_errors_ns.begin(), j.pooled_sm_errors_ns.end());
    const bool any = !j.pooled_sm_errors_ns.empty();
    const std::string request = j.request_ns != 0 ? fmt::format("{:.6f}", ms_since(r, j.request_ns)) : std::string();
    out += fmt::format("{},{:.2f},{:.2f},{},{:.6f},{:.3f},{:.3f},{},{},{:#x},{},{},{},{},{}\n", j.step, j.before_mhz,
                       j.after_mhz, request, ms_since(r, j.judge_arrival_ns),
                       j.judge_uncertainty_ns / 1e3, j.target_iteration_ns / 1e3, to_string(j.pooled),
                       us(j.pooled_error_ns), j.pooled_misfits, any ? us(*lo) : "", any ? us(*hi) : "",
                       to_string(j.paper), us(j.paper_error_ns), j.skipped);
  }
  return out;
}

namespace {

// A detector's errors against the judge: µs and target iterations.
nlohmann::json detector_errors(const std::vector<JudgedChange>& judged, bool pooled) {
  std::vector<double> us, iterations;
  for (const JudgedChange& j : judged) {
    const auto& e = pooled ? j.pooled_error_ns : j.paper_error_ns;
    if (!e) continue;
    us.push_back(*e / 1e3);
    if (j.target_iteration_ns > 0) iterations.push_back(*e / j.target_iteration_ns);
  }
  if (us.empty()) return {{"accepted", 0}};
  const auto of = [](const std::vector<double>& xs) {
    const Summary s = summarise(xs);
    std::vector<double> abs;
    for (const double x : xs) abs.push_back(std::abs(x));
    const Summary a = summarise(abs);
    return nlohmann::json{{"median", s.median}, {"min", s.min}, {"max", s.max}, {"abs_median", a.median}, {"abs_p99", a.p99}};
  };
  return {{"accepted", us.size()}, {"us", of(us)}, {"target_iterations", of(iterations)}};
}

}  // namespace

nlohmann::json watch_summary(const WatchRecording& r, const WatchAnalysis& a, const std::vector<JudgedChange>& judged) {
  std::vector<double> size, hold, spread;
  std::size_t sm_steps = 0, ramps = 0;
  for (const CardStep& c : a.steps) {
    size.push_back(c.after_mhz() - c.before_mhz());
    spread.push_back(static_cast<double>(c.spread_ns()) / 1e3);
    for (const SmStep& s : c.sms) {
      ++sm_steps;
      ramps += s.jump() ? 0 : 1;
      if (s.holds_ns) hold.push_back(static_cast<double>(*s.holds_ns) / 1e6);
    }
  }
  const auto dist = [](const std::vector<double>& xs) {
    if (xs.empty()) return nlohmann::json(nullptr);
    const Summary s = summarise(xs);
    return nlohmann::json{{"n", s.n}, {"min", s.min}, {"median", s.median}, {"p95", s.p95}, {"max", s.max}};
  };
  const JudgeEvidence& j = a.judge;
  return {{"card_steps", a.steps.size()},
          {"sm_steps", sm_steps},
          {"ramps", ramps},
          {"step_mhz", dist(size)},
          {"hold_ms", dist(hold)},
          {"sm_spread_us", dist(spread)},
          {"recorded_sms", r.sms.size()},
          {"judge",
           {{"cycles_per_iteration", {{"median", j.cycles_median}, {"p01", j.cycles_p01}, {"p99", j.cycles_p99}}},
            {"nvml_minus_sms_mhz", {{"median", j.nvml_minus_sms_median_mhz}, {"max_abs", j.nvml_minus_sms_max_abs_mhz}}},
            {"wiggle_1ms_mhz", {{"sd", j.wiggle_sd_mhz}, {"max_abs", j.wiggle_max_abs_mhz}}}}},
          {"detectors",
           {{"judged", std::count_if(judged.begin(), judged.end(), [](const JudgedChange& c) { return c.skipped.empty(); })},
            {"pooled", detector_errors(judged, true)},
            {"paper", detector_errors(judged, false)}}}};
}

}  // namespace latest
