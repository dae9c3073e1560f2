#include "cli/measure_command.hpp"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <limits>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "analysis/result_reader.hpp"
#include "cli/analysis_commands.hpp"
#include "cli/arguments.hpp"
#include "cli/gpu_workers.hpp"
#include "cli/parse_errors.hpp"
#include "cli/run_session.hpp"
#include "cli/skip_reasons.hpp"
#include "core/error.hpp"
#include "results/atomic_file.hpp"
#include "results/result_store.hpp"

namespace latest::cli {
namespace {
namespace fs = std::filesystem;

constexpr int kDefaultMinMeasurements = 25;

int min_measurements(const MeasureOptions& o) {
  return o.min_measurements.value_or(std::min(kDefaultMinMeasurements, o.max_measurements));
}

nlohmann::json settings_json(const EngineSettings& s, const MeasureOptions& o) {
  auto opt = [](const auto& v) { return v ? nlohmann::json(*v) : nlohmann::json(nullptr); };
  return {{"freq_mhz", s.clocks},
          {"pairs", o.pairs},
          {"rse", s.rse},
          {"min_measurements", s.min_measurements},
          {"max_measurements", s.max_measurements},
          {"rse_check_every", s.rse_check_every},
          {"throttle_check_every", s.throttle_check_every},
          {"thermal_cooldown_s", s.thermal_cooldown_s},
          {"max_attempts", s.max_attempts},
          {"max_failed_measurements", s.max_failed_measurements},
          {"max_band_overlap", s.max_band_overlap},
          {"include_inseparable", s.include_inseparable},
          {"save_traces", s.save_traces},
          {"trace_first", s.trace_first},
          {"detector", to_string(s.detector)},
          {"schedule", to_string(s.schedule)},
          {"confidence", s.detection.confidence},
          {"confirmation_iterations", s.detection.confirmation_iterations},
          {"min_confirmation_iterations", s.detection.min_confirmation_iterations},
          {"precheck_iterations", s.detection.precheck_iterations},
          {"tol", "half the mean-duration step to the nearest other supported clock"},
          {"delay_iterations", s.plan.delay_iterations},
          {"window_confirmation_iterations", s.plan.confirmation_iterations},
          {"max_recorded_iterations", s.plan.max_recorded_iterations},
          {"min_iteration_fmas", s.plan.min_iteration_fmas},
          {"iteration_fmas", opt(s.plan.iteration_fmas)},
          {"capture_ms", opt(s.plan.capture_ms)},
          {"wakeup_ms", opt(s.plan.wakeup_ms)},
          {"pilot_capture_ms", s.plan.pilot_capture_ms},
          {"max_capture_ms", s.plan.max_capture_ms},
          {"capture_factor", s.plan.capture_factor},
          {"pilot_measurements", s.plan.pilot_measurements},
          {"calibration_iterations", s.plan.calibration_iterations},
          {"calibration_settle_ms", s.plan.calibration_settle_ms},
          {"backend", o.backend.backend},
          {"device", o.devices.text},
          {"sim_profile", o.backend.sim_profile},
          {"seed", o.backend.seed},
          {"sim_thermal_at_s", o.backend.sim_thermal_at_s},
          {"sim_power_cap_mhz", opt(o.backend.sim_power_cap_mhz)},
          {"sim_ramp", opt(o.backend.sim_ramp)},
          {"clock_control", o.backend.clock_control},
          {"clock_api", o.backend.clock_api},
          {"read_only", o.backend.read_only},
          {"allow_busy_gpu", o.backend.allow_busy},
          {"warps", o.backend.warps}};
}

// The plan, once phase 1 and the pilot have run: the model of
// core/planner.hpp (plan_cost) from what they measured.
nlohmann::json plan_json(const EngineSettings& s, const RunState& st, std::int64_t traces_upto) {
  nlohmann::json skipped = nlohmann::json::array();
  std::size_t measured = 0;
  for (const auto& c : st.checks) {
    if (!c.skip.skipped()) {
      ++measured;
      continue;
    }
    skipped.push_back({{"init_mhz", c.pair.init}, {"target_mhz", c.pair.target}, {"reason", describe(c.skip)}});
  }
  nlohmann::json j = {{"gpu_seconds", st.cost.planned_gpu_seconds},
                      {"spent_gpu_seconds", st.cost.gpu_seconds},  // phase 1, the pilot and the sample
                      {"sampled_pairs", st.cost.sampled_pairs},
                      {"schedule", to_string(st.schedule)},
                      {"device", {{"name", st.device.name}, {"uuid", st.device.uuid}, {"index", st.device.index}}},
                      {"clocks_mhz", s.clocks},
                      {"pairs", s.pairs.size()},
                      {"measured_pairs", measured},
                      {"skipped_pairs", skipped},
                      {"measurements_per_pair", st.cost.planned_measurements_per_pair},
                      {"rse", s.rse},
                      {"min_measurements", s.min_measurements},
                      {"max_measurements", s.max_measurements},
                      {"iteration_fmas", st.iteration_fmas},
                      {"capture_ms", st.capture_ms},
                      {"pilot_measurements", st.pilot.size()}};
  if (s.save_traces) j["traces_upto_mb"] = static_cast<double>(traces_upto) / (1 << 20);
  if (s.plan.iteration_fmas)
    if (const std::string note = finer_than_needed(st.checks, *s.plan.iteration_fmas); !note.empty()) j["note"] = note;
  return j;
}

void print_plan(const nlohmann::json& plan) {
  fmt::print("device: {} (index {})\n", plan["device"]["name"].get<std::string>(), plan["device"]["index"].get<int>());
  fmt::print("clocks: {} MHz\n", fmt::join(plan["clocks_mhz"].get<std::vector<Mhz>>(), ", "));
  fmt::print("pairs: {}, of which {} measured; {} skipped\n", plan["pairs"].get<std::size_t>(),
             plan["measured_pairs"].get<std::size_t>(), plan["skipped_pairs"].size());
  for (const auto& sk : plan["skipped_pairs"])
    fmt::print("  {}->{}: {}\n", sk["init_mhz"].get<int>(), sk["target_mhz"].get<int>(), sk["reason"].get<std::string>());
  fmt::print("schedule: {}; iteration {} FMAs; {} pilot measurements\n", plan["schedule"].get<std::string>(),
             plan["iteration_fmas"].get<std::int64_t>(), plan["pilot_measurements"].get<std::size_t>());
  fmt::print("stopping: RSE <= {:.1f}%, {} to {} per pair; expected {:.1f} per pair (from the sample)\n",
             plan["rse"].get<double>() * 100, plan["min_measurements"].get<int>(), plan["max_measurements"].get<int>(),
             plan["measurements_per_pair"].get<double>());
  if (plan.contains("traces_upto_mb"))
    fmt::print("traces (--save-traces): up to {:.1f} MB\n", plan["traces_upto_mb"].get<double>());
  fmt::print("GPU time: {} in all; phase 1, the pilot and a sample of {} pairs measured to their stop took {} of it "
             "just now (a run repeats them)\n",
             duration_text(plan["gpu_seconds"].get<double>()), plan["sampled_pairs"].get<int>(),
             duration_text(plan["spent_gpu_seconds"].get<double>()));
  if (plan.contains("note")) fmt::print("note: {}\n", plan["note"].get<std::string>());
}

// What happened to a pair beyond its numbers: discarded measurements (and
// why), retried windows, records that did not fit the detector's model.
std::string pair_note(const PairResult& r) {
  std::vector<std::string> parts;
  for (const auto& [why, n] : r.discarded) parts.push_back(fmt::format("{} discarded ({})", n, why));
  const int failed = r.failed_windows();
  if (failed > 0) parts.push_back(fmt::format("{} window{} retried", failed, failed == 1 ? "" : "s"));
  std::map<std::string, int> misfits;
  for (const auto& row : r.rows)
    for (Misfit m : kMisfits)
      if (row.misfits & static_cast<unsigned>(m)) ++misfits[to_string(m)];
  for (const auto& [kind, n] : misfits) parts.push_back(fmt::format("misfit {} {}", kind, n));
  return fmt::format("{}", fmt::join(parts, "; "));
}

// The analysis's flags of a pair ("noise > 10 %"), for its note.
std::string flag_note(const analysis::Analysis& a, ClockPair pair) {
  std::vector<std::string> texts;
  for (const auto& g : a.gpus)
    if (const analysis::PairAnalysis* p = g.find(pair.init, pair.target))
      for (const auto& f : analysis::pair_flags(*g.results, *p)) texts.push_back("flagged: " + analysis::flag_text(f));
  return fmt::format("{}", fmt::join(texts, "; "));
}

std::string joined_note(const std::string& a, const std::string& b) {
  return a.empty() ? b : b.empty() ? a : a + "; " + b;
}

// The terminal's table of the run's pairs and its closing line.
std::string summary_table(const SessionResult& session, const analysis::Analysis& analysis, const std::string& dir) {
  std::string out;
  const auto put = std::back_inserter(out);
  fmt::format_to(put, "{:>6} {:>6}  {:>5}  {:>9} {:>9} {:>9}  {:>6}  {}\n", "init", "target", "n", "min ms", "median ms",
             "max ms", "RSE", "note (switching latency, outliers included; analysis/ and the report leave them out)");
  const auto row = [&](ClockPair pair, const std::vector<double>& xs, double rse, const std::string& note) {
    const Summary sum = summarise(xs);
    fmt::format_to(put, "{:>6} {:>6}  {:>5}  {:>9.3f} {:>9.3f} {:>9.3f}  {:>6}  {}\n", pair.init, pair.target, sum.n, sum.min,
               sum.median, sum.max, std::isfinite(rse) ? fmt::format("{:.1f}%", rse * 100) : std::string("-"), note);
  };
  int measured = 0, skipped = 0, kept = 0;
  // Pairs an earlier run finished: from the directory, marked as kept.
  const auto manifest = nlohmann::json::parse(std::ifstream(fs::path(dir) / "manifest.json"), nullptr, false);
  for (const ClockPair pair : session.kept) {
    ++kept;
    std::string status = "measured", file;
    double rse = std::numeric_limits<double>::quiet_NaN();
    if (manifest.is_object())
      for (const auto& p : manifest.value("pairs", nlohmann::json::array()))
        if (p.is_object() && p.value("init_mhz", 0) == pair.init && p.value("target_mhz", 0) == pair.target) {
          status = p.value("status", "measured");
          file = p.value("file", "");
          if (p.contains("rse") && p["rse"].is_number()) rse = p["rse"].get<double>();
        }
    if (status != "measured" || file.empty()) {
      fmt::format_to(put, "{:>6} {:>6}  {:>5}  {:>9} {:>9} {:>9}  {:>6}  kept: skipped by an earlier run\n", pair.init,
                 pair.target, 0, "-", "-", "-", "-");
      continue;
    }
    const auto m = analysis::read_pair_csv(fs::path(dir) / file, pair);
    row(pair, m.switching_ms, rse, joined_note("kept: measured by an earlier run", flag_note(analysis, pair)));
  }
  for (const auto& r : session.results) {
    if (r.status != "measured") {
      ++skipped;
      fmt::format_to(put, "{:>6} {:>6}  {:>5}  {:>9} {:>9} {:>9}  {:>6}  skipped: {}\n", r.pair.init, r.pair.target, 0, "-",
                 "-", "-", "-", describe(r.reason));
      continue;
    }
    ++measured;
    std::vector<double> xs;
    for (const auto& m : r.rows) xs.push_back(m.switching_ms);
    row(r.pair, xs, r.rse, joined_note(flag_note(analysis, r.pair), pair_note(r)));
  }
  const std::string earlier = kept > 0 ? fmt::format("{} kept from an earlier run, ", kept) : std::string();
  fmt::format_to(put, "{} pairs: {}{} measured, {} skipped; results in {}\n", kept + measured + skipped, earlier, measured,
             skipped, dir);
  return out;
}

}  // namespace

void validate(const MeasureOptions& o) {
  if (o.json && !o.plan_only)
    throw Error(ErrorKind::bad_argument, "--json prints the plan, and goes with --plan",
                "add --plan to see the plan as JSON; a measurement writes manifest.json in --output");
  if (!(o.rse > 0 && o.rse < 1))
    throw Error(ErrorKind::bad_argument, fmt::format("--rse {} is outside (0, 1)", o.rse), "e.g. --rse 0.05 for 5 %");
  if (min_measurements(o) < 1 || o.max_measurements < 1)
    throw Error(ErrorKind::bad_argument, "--min-measurements and --max-measurements must be at least 1");
  if (min_measurements(o) > o.max_measurements)
    throw Error(ErrorKind::bad_argument,
                fmt::format("--min-measurements {} is more than --max-measurements {}", min_measurements(o),
                            o.max_measurements),
                "make the minimum at most the maximum");
  if (o.max_band_overlap < 0 || o.max_band_overlap > 1)
    throw Error(ErrorKind::bad_argument, "--max-band-overlap must lie in [0, 1]");
  if (o.iteration_fmas && *o.iteration_fmas < 1) throw Error(ErrorKind::bad_argument, "--iteration-fmas must be positive");
  if (o.max_records < 4096) throw Error(ErrorKind::bad_argument, "--max-records must be at least 4096");
  if (o.backend.clock_api != "locked" && o.backend.clock_api != "application")
    throw Error(ErrorKind::bad_argument, fmt::format("unknown --clock-api '{}'", o.backend.clock_api), "use locked or application");
  if (o.backend.warps < 1 || o.backend.warps > 31)
    throw Error(ErrorKind::bad_argument, "--warps must lie in 1..31",
                "a block holds 32 warps, and one more per SM answers the timer sync");
  for (auto v : {o.capture_ms, o.wakeup_ms})
    if (v && !(*v > 0)) throw Error(ErrorKind::bad_argument, "--capture-ms and --wakeup-ms must be positive");
  if (!(o.max_capture_ms > 0)) throw Error(ErrorKind::bad_argument, "--max-capture-ms must be positive");
}

EngineSettings engine_settings(const MeasureOptions& o, const std::vector<Mhz>& clocks,
                               const std::vector<ClockPair>& pairs, bool simulated) {
  EngineSettings s;
  s.clocks = clocks;
  s.pairs = pairs;
  s.rse = o.rse;
  s.min_measurements = min_measurements(o);
  s.max_measurements = o.max_measurements;
  s.max_band_overlap = o.max_band_overlap;
  s.include_inseparable = o.include_inseparable;
  s.save_traces = o.save_traces;
  // On a real GPU the first measurements of each pair (and every misfit)
  // keep their traces by default: evidence of what a real card does.
  s.trace_first = o.trace_first.value_or(simulated ? 0 : 3);
  s.plan.iteration_fmas = o.iteration_fmas;
  s.plan.capture_ms = o.capture_ms;
  s.plan.wakeup_ms = o.wakeup_ms;
  s.plan.max_capture_ms = o.max_capture_ms;
  s.plan.max_recorded_iterations = o.max_records;
  // auto: the pooled detector, proven on the simulator and, emulated, on
  // H100 and H200 cards (docs/hardware.md); the paper's still reads every
  // window into the CSV's paper_ columns.
  s.detector = o.detector;
  s.schedule = o.schedule;
  return s;
}


void add_device_options(CLI::App& app, BackendOptions& o) {
  app.add_option("--clock-control", o.clock_control,
                 "who changes clocks: auto (the backend's own), sim, or nvml (real NVML with any workload)")
      ->capture_default_str();
  app.add_flag("--read-only", o.read_only,
               "never change a clock (also LATEST_READ_ONLY=1): any step that would fails with exit 4");
  app.add_option("--clock-api", o.clock_api, "locked (nvmlDeviceSetGpuLockedClocks) or application clocks")
      ->capture_default_str();
  app.add_flag("--allow-busy-gpu", o.allow_busy, "measure even while other processes use the GPU");
  app.add_option("--warps", o.warps,
                 "warps per SM in the workload (one thread records; up to 4 measured as one did, 8 and more did not: "
                 "docs/decisions/0006-one-warp-per-sm.md)")
      ->capture_default_str();
}

void add_measure_options(CLI::App& app, MeasureOptions& o) {
  app.add_option_function<std::string>(
      "-f,--freq", [&o](const std::string& text) { o.freq = parse_clock_set(text); },
      "SM clocks to measure between, in MHz: a list (600,900,1200), ranges of supported clocks (600:1500), or all");
  app.add_option_function<std::string>(
         "-d,--device", [&o](const std::string& text) { o.devices = parse_device_selection(text); },
         "GPU: index, UUID or PCI bus id; several at once: all, or a list (0,2,5)")
      ->default_str("0");
  app.add_option("--rse", o.rse, "stop a pair once the relative standard error of its latencies is below this")
      ->capture_default_str();
  app.add_option("--min-measurements", o.min_measurements,
                 "measurements per pair before the RSE is checked (default 25, or --max-measurements if lower)");
  app.add_option("--max-measurements", o.max_measurements, "stop a pair after this many measurements")
      ->capture_default_str();
  app.add_option("--pairs", o.pairs, "all, increasing, decreasing, or INIT:TARGET,... (clocks from --freq)")
      ->capture_default_str();
  app.add_option("-o,--output", o.output,
                 "result directory; rerunning into it resumes. Placeholders: %h host, %u GPU UUID, %i GPU index, "
                 "%j Slurm job id; with several GPUs and none of %u, %i, each GPU gets HOST_UUID below it")
      ->capture_default_str();
  app.add_flag("--break-lock", o.break_lock,
               "take the output directory's lock although a run on another host holds it (when that run is gone)");
  app.add_option("--backend", o.backend.backend, "auto (CUDA if a device exists, else the simulator), cuda or sim")
      ->capture_default_str();
  app.add_option("--sim-profile", o.backend.sim_profile, "simulated card: h200, gh200, a100 or rtx6000")
      ->capture_default_str();
  app.add_option("--seed", o.backend.seed, "simulator seed; the same seed gives the same run")->capture_default_str();
  app.add_option("--sim-gpus", o.backend.sim_gpus,
                 "simulated cards of the model (indices 0..N-1), each with its own latencies; measure them at once "
                 "with --device all")
      ->capture_default_str()
      ->check(number_from_to(1, 64));
  app.add_option_function<std::string>(
         "--detector", [&o](const std::string& text) { o.detector = parse_detector(text); },
         "pooled (all SMs together), paper (per SM, the paper's rule) or auto (the default: pooled); "
         "both always run and the CSV keeps the paper's too")
      ->default_str("auto");
  app.add_option_function<std::string>(
         "--schedule", [&o](const std::string& text) { o.schedule = parse_schedule(text); },
         "chained (many switches per launch, each request as soon as the one before is confirmed) or "
         "paper (one switch per launch after a wake-up, a capture of 10x the longest pilot latency)")
      ->default_str("chained")
      ->check(CLI::IsMember({"chained", "paper"}));
  app.add_flag("--plan", o.plan_only,
               "measure phase 1, the pilot and a sample of pairs (clocks change as in a run and are restored), then "
               "print the pairs and the GPU time the run would take, and exit");
  app.add_flag("--json", o.json, "with --plan: the plan as JSON (its top-level gpu_seconds is the run's)");
  app.add_option("--progress", o.progress,
                 "auto (a line rewritten on a terminal, else one line per pair started and ended and one at least "
                 "every 30 s), tty, lines or none")
      ->capture_default_str()
      ->check(CLI::IsMember({"auto", "tty", "lines", "none"}));
  app.add_flag("--save-traces", o.save_traces, "keep each SM's records around every switch (traces/)");
  app.add_option("--save-traces-limit", o.save_traces_limit_mb,
                 "MB of traces --save-traces may write; without it a run that could write more than 1 GB stops "
                 "before it starts")
      ->check(positive_number());
  app.add_option("--trace-first", o.trace_first,
                 "keep the traces of the first N measurements of each pair and of its first N misfits "
                 "(default: 3 on a real GPU, 0 on the simulator; at most 256 MB a run)")
      ->check(non_negative_number());
  auto* expert = app.add_option_group("Expert options");
  expert->add_flag("--include-inseparable", o.include_inseparable,
                   "also measure pairs whose ±2σ bands overlap more than --max-band-overlap");
  expert->add_option("--max-band-overlap", o.max_band_overlap, "separability gate, 0 (disjoint bands) to 1")
      ->capture_default_str();
  expert->add_option("--iteration-fmas", o.iteration_fmas, "fix the iteration length (default: sized from the window)");
  expert->add_option("--capture-ms", o.capture_ms, "fix the capture window (default: 10x the longest pilot latency)");
  expert->add_option("--wakeup-ms", o.wakeup_ms, "fix the wake-up before each window (default: 2x phase 1's)");
  expert->add_option("--max-capture-ms", o.max_capture_ms, "longest capture window before a pair is skipped")
      ->capture_default_str();
  expert->add_option("--max-records", o.max_records, "recorded iterations per SM per window (memory bound)")
      ->capture_default_str();
  expert->add_option("--sim-thermal-at", o.backend.sim_thermal_at_s, "simulator: thermal events at these seconds")
      ->delimiter(',');
  expert->add_option("--sim-power-cap", o.backend.sim_power_cap_mhz, "simulator: clocks above this MHz cannot be held");
  expert->add_option("--sim-ramp", o.backend.sim_ramp,
                     "simulator: every switch takes this ramp shape (four-steps, the default; steps, linear, "
                     "overshoot, stall, slow-approach)");
  auto* routes = app.add_option_group("Routes (docs/table.md)");
  routes->add_option("--measure-route", o.measure_route,
                     "measure a route end to end, e.g. 1095,1980,1260: each clock requested once the table's latency "
                     "of the hop before has passed; the direct change is measured beside it");
  routes->add_option("--table", o.table, "with --measure-route: the latency table the waits come from");
  routes->add_option("--statistic", o.statistic, "with --measure-route: the table's statistic for the waits")
      ->capture_default_str();
  add_device_options(*app.add_option_group("Device and safety"), o.backend);
}

namespace {

// A GPU opened for measuring or planning: its backends, and the settings
// the options make of its clocks.
struct OpenedGpu {
  Backends backends;
  DeviceIdentity id;
  EngineSettings settings;
  std::int64_t per_measurement = 0;  // trace bytes one measurement can take
  std::int64_t traces_upto = 0;      // and the whole run
};

OpenedGpu open_gpu(const MeasureOptions& o, const DeviceSelector& device, bool several) {
  BackendOptions bo = o.backend;
  bo.device = device;
  OpenedGpu g{open_backends(bo), {}, {}, 0, 0};
  g.id = g.backends.clocks->identity();
  if (!g.backends.notice.empty() && (!several || g.id.index == 0)) fmt::print(stderr, "{}\n", g.backends.notice);
  const std::vector<Mhz> clocks = resolve_clock_set(*o.freq, g.backends.clocks->supported_clocks());
  const std::vector<ClockPair> pairs = resolve_pairs(o.pairs, clocks);
  if (pairs.empty())
    throw Error(ErrorKind::bad_argument, fmt::format("--pairs {} selects no pair of these clocks", o.pairs));
  const WorkloadInfo info = g.backends.workload->info();
  g.settings = engine_settings(o, clocks, pairs, info.backend == "sim");
  g.per_measurement = trace_bytes_per_measurement(g.settings, info.sm_count);
  g.traces_upto = static_cast<std::int64_t>(pairs.size()) * g.settings.max_measurements * g.per_measurement;
  return g;
}

// One GPU, start to end: its backends, clocks, lock, run, summary and
// analysis. `several`: each GPU gets its own directory and names itself in
// progress lines. Errors propagate (the caller maps them to exit codes).
GpuOutcome measure_gpu(const MeasureOptions& o, const DeviceSelector& device, bool several) {
  OpenedGpu g = open_gpu(o, device, several);
  Backends& backends = g.backends;
  const DeviceIdentity& id = g.id;
  EngineSettings& settings = g.settings;
  const std::string label = gpu_label(id, several);
  pin_near(backends.query.get(), label);
  const std::string output = gpu_output_dir(o.output, id, several);
  // Traces of every measurement can run to gigabytes: capped, and above 1 GB
  // only when asked for.
  const std::int64_t per_measurement = g.per_measurement, traces_upto = g.traces_upto;
  if (o.save_traces) {
    constexpr std::int64_t kUnasked = 1ll << 30;
    constexpr double kMb = 1 << 20;
    if (o.save_traces_limit_mb) {
      settings.trace_budget_bytes = static_cast<std::int64_t>(*o.save_traces_limit_mb * kMb);
    } else if (traces_upto > kUnasked) {
      throw Error(ErrorKind::bad_argument,
                  fmt::format("--save-traces could write up to {:.1f} GB of traces ({} pairs x {} measurements x {:.1f} "
                              "MB) and nothing was started",
                              static_cast<double>(traces_upto) / kUnasked, settings.pairs.size(), settings.max_measurements,
                              static_cast<double>(per_measurement) / kMb),
                  "cap them with --save-traces-limit MB (e.g. --save-traces-limit 2048), or measure fewer pairs");
    } else {
      settings.trace_budget_bytes = std::max(traces_upto, kUnasked);
    }
  }

  nlohmann::json settings_doc = settings_json(settings, o);
  // A condition of the results (the latency table records it), not a setting.
  if (backends.query) {
    const DeviceStatus st = backends.query->status();
    settings_doc["driver_version"] = st.driver_version;
    if (st.power_limit_w) settings_doc["power_limit_w"] = *st.power_limit_w;
  }
  SessionOptions session_options;
  session_options.output = output;
  session_options.progress = o.progress;
  session_options.break_lock = o.break_lock;
  session_options.label = label;
  const SessionResult session = run_session(backends, settings, settings_doc, session_options);
  // The run ends by analysing its own output (all pairs, resumed ones too).
  const analysis::Analysis analysis = analyse_and_report(output);
  // Several GPUs: each one's table comes at the end, in device order.
  const std::string table = summary_table(session, analysis, output) +
                            fmt::format("analysis in {}/analysis, report in {}/report.html\n", output, output);
  if (!several) fmt::print("{}", table);
  if (session.state.traces_dropped > 0)
    fmt::print(stderr, "latest: {}the traces of {} measurements were not kept: the run's trace budget ({:.0f} MB) was spent{}\n",
               label, session.state.traces_dropped, static_cast<double>(settings.trace_budget_bytes) / (1 << 20),
               o.save_traces ? "; raise --save-traces-limit" : "");
  if (settings.plan.iteration_fmas)
    if (const std::string note = finer_than_needed(session.state.checks, *settings.plan.iteration_fmas); !note.empty())
      fmt::print(stderr, "latest: {}{}\n", label, note);
  if (several) return {output, 0, {}, {}, fmt::format("GPU {} ({}, {}):\n{}", id.index, id.name, id.uuid, table)};
  return GpuOutcome::ok(output);
}

int plan_gpu(const MeasureOptions& o, const DeviceSelector& device) {
  OpenedGpu g = open_gpu(o, device, false);
  // The plan measures phase 1 and the pilot: its model needs their numbers.
  const RunState st = plan_session(g.backends, g.settings, o.progress);
  const nlohmann::json plan = plan_json(g.settings, st, g.traces_upto);
  if (o.json) {
    fmt::print("{}\n", plan.dump(2));
  } else {
    print_plan(plan);
  }
  return 0;
}

}  // namespace

int run_measure(const MeasureOptions& o) {
  if (!o.measure_route.empty()) return run_measure_route(o);
  if (!o.freq)
    throw Error(ErrorKind::bad_argument, "--freq is required: which clocks to measure between",
                "e.g. latest --freq 600,900,1200,1500 (see latest --help)");
  validate(o);
  if (const std::string note = crowded_sm_note(o.backend.warps); !note.empty()) fmt::print(stderr, "latest: {}\n", note);
  if (!o.min_measurements && o.max_measurements < kDefaultMinMeasurements)
    fmt::print(stderr, "latest: --max-measurements {0} is below the default minimum of {1}: the minimum is {0} too\n",
               o.max_measurements, kDefaultMinMeasurements);
  const std::vector<DeviceSelector> devices = resolve_devices(o.devices, o.backend);
  if (devices.empty())
    throw Error(ErrorKind::not_found, "--device all found no GPU", "check nvidia-smi, or use --backend sim --sim-gpus N");
  if (o.plan_only) {
    if (devices.size() > 1)
      fmt::print(stderr, "latest: --plan plans GPU {} alone; the others run the same plan at the same time\n",
                 devices.front().text);
    return plan_gpu(o, devices.front());
  }
  if (devices.size() == 1 && !o.devices.all) {  // all: HOST_UUID below --output, however many
    measure_gpu(o, devices.front(), false);
    return 0;
  }
  return run_on_each_gpu(devices,
                         [&](const DeviceSelector& device) { return measure_gpu(o, device, true); });
}

}  // namespace latest::cli
