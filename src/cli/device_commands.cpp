#include "cli/device_commands.hpp"

#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <map>

#include <fmt/format.h>
#include <fmt/ranges.h>
#include <nlohmann/json.hpp>

#include "cli/arguments.hpp"
#include "cli/gpu_workers.hpp"
#include "cli/measure_command.hpp"
#include "cli/run_session.hpp"
#include "cli/skip_reasons.hpp"
#include "core/accuracy.hpp"
#include "core/calibration.hpp"
#include "core/error.hpp"
#include "core/selftest.hpp"
#include "results/accuracy_json.hpp"
#include "results/atomic_file.hpp"
#include "results/result_store.hpp"

namespace latest::cli {
using nlohmann::json;

void add_reset_command(CLI::App& app, ResetOptions& o) {
  auto* cmd = app.add_subcommand("reset", "put back the clocks a crashed or killed run left changed (from its state file), "
                                          "or reset them to the driver defaults");
  cmd->add_option_function<std::string>(
         "-d,--device", [&o](const std::string& text) { o.device = parse_device_selector(text); },
         "GPU: NVML index, UUID or PCI bus id")
      ->default_str("0");
}

int run_reset(const ResetOptions& o) {
  BackendOptions b;
  b.device = o.device;
  const auto guard = open_nvml_guard(b);
  const bool had_state = std::filesystem::exists(guard->state_file());
  const std::string done = guard->reset_from_state_file();
  fmt::print("GPU {} ({}): {}{}\n", guard->identity().index, guard->identity().uuid, done,
             had_state ? " (from the state file of an unfinished run)" : " (no state file: driver defaults)");
  return 0;
}

void add_info_command(CLI::App& app, InfoOptions& o) {
  auto* cmd = app.add_subcommand("info", "show the GPU, its clocks, who may change them, the timer and a short "
                                         "calibration at its current clock; changes nothing");
  cmd->add_option_function<std::string>(
         "-d,--device", [&o](const std::string& text) { o.backend.device = parse_device_selector(text); },
         "GPU: index, UUID or PCI bus id")
      ->default_str("0");
  cmd->add_option("--backend", o.backend.backend, "auto, cuda or sim")->capture_default_str();
  cmd->add_option("--sim-profile", o.backend.sim_profile, "simulated card")->capture_default_str();
  cmd->add_option("--clock-control", o.backend.clock_control, "auto, sim or nvml")->capture_default_str();
  cmd->add_option("--iterations", o.iterations, "iterations per SM in the calibration")->capture_default_str();
  cmd->add_option("--iteration-fmas", o.fmas, "FMAs per iteration in the calibration")->capture_default_str();
  cmd->add_option("--warps", o.backend.warps, "warps per SM")->capture_default_str();
  cmd->add_option("--json", o.json, "also write everything, per-SM statistics included, to this file");
  cmd->add_flag("--clocks", o.all_clocks, "list every supported SM clock (comma-separated, as --freq takes them)");
}

namespace {

std::string clock_table_text(const std::vector<Mhz>& clocks) {
  if (clocks.empty()) return "none";
  std::map<int, int> steps;
  for (std::size_t i = 1; i < clocks.size(); ++i) ++steps[clocks[i] - clocks[i - 1]];
  int step = 0, most = 0;
  for (auto [s, n] : steps)
    if (n > most) step = s, most = n;
  return fmt::format("{} clocks, {}–{} MHz, mostly {} MHz apart", clocks.size(), clocks.front(), clocks.back(), step);
}

}  // namespace

namespace {

// A short stream at the calibration's iteration, drained while it runs, as
// the chained schedule drains it: its iterations must last what the
// window's did, or no request would find its initial clock held.
json check_stream(Workload& w, std::int64_t fmas, double window_mean_ns) {
  constexpr int kDrains = 10;
  const Nanos started = w.start_stream({fmas, 0, 0});
  MomentAccumulator all;
  std::size_t fewest = SIZE_MAX, most = 0;
  std::vector<std::size_t> per_sm;
  std::int64_t bytes = 0;
  for (int d = 1; d <= kDrains; ++d) {
    w.time().sleep_until(started + d * 5'000'000);
    const WindowRecords more = w.drain();
    bytes += more.bytes;
    per_sm.resize(more.sms.size());
    for (std::size_t s = 0; s < more.sms.size(); ++s) {
      per_sm[s] += more.sms[s].duration_ns.size();
      for (auto ns : more.sms[s].duration_ns) all.add(ns);
    }
  }
  w.stop_stream();
  for (auto n : per_sm) {
    fewest = std::min(fewest, n);
    most = std::max(most, n);
  }
  const Moments m = all.moments();
  fmt::print("stream, drained {} times over {} ms: {}–{} records per SM, mean {:.1f} ns ({:+.2f} ns against the "
             "window), {} bytes\n",
             kDrains, kDrains * 5, fewest, most, m.mean, m.mean - window_mean_ns, bytes);
  return {{"drains", kDrains}, {"fewest_records", fewest}, {"most_records", most}, {"mean_ns", m.mean},
          {"sd_ns", m.sd}, {"minus_window_ns", m.mean - window_mean_ns}, {"bytes", bytes}};
}

// What NVML says of the card and of who may change its clocks; nothing is tried.
void print_nvml(DeviceQuery& q, const DeviceIdentity& id, json& doc) {
  const auto devices = q.all_devices();
  json all = json::array();
  fmt::print("GPUs NVML sees ({}):\n", devices.size());
  for (const auto& d : devices) {
    fmt::print("  {} {}  {}  {}{}\n", d.index, d.name, d.uuid, d.pci_bus_id, d.pci_bus_id == id.pci_bus_id ? "  (this one)" : "");
    all.push_back({{"index", d.index}, {"name", d.name}, {"uuid", d.uuid}, {"pci_bus_id", d.pci_bus_id}});
  }
  doc["nvml_devices"] = all;
  const DeviceStatus st = q.status();
  fmt::print("current SM clock {} MHz; application clock {}; driver {}\n", st.sm_clock_mhz,
             st.application_clock_mhz ? fmt::format("{} MHz", *st.application_clock_mhz) : "unknown",
             st.driver_version);
  fmt::print("other processes on the GPU: {}\n",
             st.other_processes.empty() ? std::string("none") : fmt::format("{}", fmt::join(st.other_processes, ", ")));
  const bool root = geteuid() == 0;
  fmt::print("may this user set clocks? best guess, nothing was tried: locked clocks {}; application clocks {}\n",
             root ? "likely (root)" : "unlikely (needs root)",
             root ? "likely (root)"
                  : !st.application_clocks_restricted ? "unknown"
                  : *st.application_clocks_restricted ? "unlikely (restricted to root)" : "likely (unrestricted)");
  doc["nvml"] = {{"sm_clock_mhz", st.sm_clock_mhz},
                 {"application_clock_mhz", st.application_clock_mhz ? json(*st.application_clock_mhz) : json(nullptr)},
                 {"driver", st.driver_version},
                 {"other_processes", st.other_processes},
                 {"root", root},
                 {"app_clocks_restricted", st.application_clocks_restricted ? json(*st.application_clocks_restricted) : json(nullptr)}};
}

// Timer syncs: a few rounds, then the drift over one second.
json print_sync(Workload& w) {
  std::vector<TimerSync> syncs;
  for (int i = 0; i < 5; ++i) syncs.push_back(w.synchronize());
  w.time().sleep_until(w.time().now_ns() + 1'000'000'000);
  syncs.push_back(w.synchronize());
  SyncStats stats;
  for (const auto& s : syncs) stats.add(s);
  const double best_rtt = stats.min_round_trip_ns, worst_rtt = stats.max_round_trip_ns;
  const TimerSync& a = syncs[4];
  const TimerSync& z = syncs.back();
  fmt::print("timer sync: best round trip {:.2f} us (worst of 6: {:.2f} us), uncertainty ±{:.2f} us, offset {} ns, "
             "offset change over {:.2f} s: {} ns (drift {:.3f} ppm)\n",
             best_rtt / 1e3, worst_rtt / 1e3, best_rtt / 2e3, z.offset_ns,
             static_cast<double>(z.host_ns - a.host_ns) / 1e9, z.offset_ns - a.offset_ns, stats.drift_ppm);
  json sync_rows = json::array();
  for (const auto& s : syncs)
    sync_rows.push_back({{"host_ns", s.host_ns}, {"offset_ns", s.offset_ns}, {"round_trip_ns", s.round_trip_ns}});
  return {{"rounds", sync_rows}, {"drift_ppm", stats.drift_ppm}};
}

// A short calibration at the clock the card runs at now: no request made.
json print_calibration(Workload& w, const InfoOptions& o, const WorkloadInfo& wi, double& mean_ns) {
  const auto start = std::chrono::steady_clock::now();
  w.launch({o.fmas, 0, o.iterations});
  const WindowRecords rec = w.collect();
  const double window_s = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  const auto cpu0 = std::chrono::steady_clock::now();
  const ClockCalibration cal = calibrate_from_records(0, o.fmas, rec, wi.timer_tick_ns);
  const double host_ms = std::chrono::duration<double, std::milli>(std::chrono::steady_clock::now() - cpu0).count();
  std::vector<double> means, sds;
  for (const auto& b : cal.per_sm) {
    means.push_back(b.iteration.mean);
    sds.push_back(b.iteration.sd);
  }
  std::sort(means.begin(), means.end());
  std::sort(sds.begin(), sds.end());
  // The values seen, and the raw pooled sd before the tick floor.
  std::map<std::uint32_t, std::int64_t> histogram;
  MomentAccumulator raw;
  for (const auto& sm : rec.sms)
    for (auto d : sm.duration_ns) {
      ++histogram[d];
      raw.add(d);
    }
  const Moments m = raw.moments();
  fmt::print("calibration at the current clock, {} FMAs x {} iterations per SM: mean {:.1f} ns, sd {:.1f} ns "
             "(band uses {:.1f}); per-SM means {:.1f}–{:.1f} ns, per-SM sd {:.1f}–{:.1f} ns; effective clock "
             "(clock64 cycles / globaltimer ns) {:.1f} MHz\n",
             o.fmas, o.iterations, m.mean, m.sd, cal.pooled.iteration.sd, means.front(), means.back(), sds.front(),
             sds.back(), cal.effective_mhz);
  fmt::print("window: {} bytes copied, {:.1f} ms wall (kernel + copy), {:.2f} ms host statistics\n", rec.bytes,
             window_s * 1e3, host_ms);
  json hist = json::object();
  for (auto [d, n] : histogram) hist[std::to_string(d)] = n;
  json cal_doc = to_json(cal);
  // No clock was requested: the clock is the one the SMs ran at, as measured.
  cal_doc["mhz"] = std::lround(cal.effective_mhz);
  cal_doc["mhz_source"] = "effective clock: clock64 cycles over globaltimer ns";
  cal_doc["raw_sd_ns"] = m.sd;
  cal_doc["histogram_ns"] = hist;
  cal_doc["bytes"] = rec.bytes;
  cal_doc["window_wall_ms"] = window_s * 1e3;
  cal_doc["host_statistics_ms"] = host_ms;
  mean_ns = m.mean;
  return cal_doc;
}

}  // namespace

int run_info(const InfoOptions& o) {
  BackendOptions b = o.backend;
  b.read_only = true;  // info never changes anything
  Backends backends = open_backends(b);
  if (!backends.notice.empty()) fmt::print(stderr, "{}\n", backends.notice);
  Workload& w = *backends.workload;
  ClockControl& c = *backends.clocks;
  json doc;
  const DeviceIdentity id = c.identity();
  const WorkloadInfo wi = w.info();
  fmt::print("device {}: {}\n  UUID {}\n  PCI bus id {}\n  SMs {}, backend {}\n", id.index, id.name, id.uuid,
             id.pci_bus_id, wi.sm_count, wi.backend);
  doc["device"] = {{"index", id.index}, {"name", id.name}, {"uuid", id.uuid}, {"pci_bus_id", id.pci_bus_id},
                   {"sm_count", wi.sm_count}, {"backend", wi.backend}};
  const auto clocks = c.supported_clocks();
  fmt::print("supported SM clocks: {}\n", clock_table_text(clocks));
  if (o.all_clocks) fmt::print("  {}\n", fmt::join(clocks, ","));
  doc["supported_clocks_mhz"] = clocks;
  const Telemetry t = c.telemetry();
  fmt::print("clock-event reasons 0x{:x}{}{}; temperature {}; power {}; memory clock {}\n", t.throttle.raw_reasons,
             t.throttle.thermal ? " (thermal)" : "", t.throttle.power ? " (power)" : "",
             t.temperature_c ? fmt::format("{:.0f} C", *t.temperature_c) : "unknown",
             t.power_w ? fmt::format("{:.0f} W", *t.power_w) : "unknown",
             t.memory_mhz ? fmt::format("{} MHz", *t.memory_mhz) : "unknown");
  doc["telemetry"] = {{"reasons", t.throttle.raw_reasons}, {"temperature_c", t.temperature_c.value_or(NAN)},
                      {"power_w", t.power_w.value_or(NAN)}};
  if (backends.query) print_nvml(*backends.query, id, doc);
  fmt::print("timer tick {:.0f} ns\n", wi.timer_tick_ns);
  doc["timer_tick_ns"] = wi.timer_tick_ns;

  doc["timer_sync"] = print_sync(w);

  double window_mean_ns = 0;
  doc["calibration_current_clock"] = print_calibration(w, o, wi, window_mean_ns);
  if (w.can_stream()) doc["stream"] = check_stream(w, o.fmas, window_mean_ns);
  if (!o.json.empty()) write_file_atomically(o.json, doc.dump(2) + "\n");
  return 0;
}

void add_selftest_command(CLI::App& app, SelftestOptions& o) {
  auto* cmd = app.add_subcommand(
      "selftest", "emulated switching on a real GPU: the full pipeline measures a known latency L, and no clock changes");
  cmd->add_option_function<std::string>(
      "-f,--freq", [&o](const std::string& text) { o.freq = parse_clock_set(text); },
      "clocks to emulate (default: the card's clock and about half)");
  cmd->add_option("--latency-ms", o.latency_ms, "L is uniform in MIN:MAX ms")->capture_default_str();
  cmd->add_option("-n,--measurements", o.measurements, "measurements per pair")->capture_default_str();
  cmd->add_option("--iteration-fmas", o.iteration_fmas,
                  "fix the iteration length, the time resolution (default: sized from the window)");
  cmd->add_flag("--save-traces", o.save_traces, "keep each SM's records around every switch (traces/)");
  cmd->add_option_function<std::string>(
         "--detector", [&o](const std::string& text) { o.detector = parse_detector(text); },
         "pooled (the default) or paper")
      ->default_str("pooled");
  cmd->add_option_function<std::string>(
         "--schedule", [&o](const std::string& text) { o.schedule = parse_schedule(text); },
         "chained (many emulated switches per launch) or paper (one per launch), as for a measurement")
      ->default_str("chained")
      ->check(CLI::IsMember({"chained", "paper"}));
  cmd->add_option("-o,--output", o.output,
                  "result directory (placeholders %h %u %i %j; several GPUs: HOST_UUID below it)")->capture_default_str();
  cmd->add_option_function<std::string>(
         "-d,--device", [&o](const std::string& text) { o.devices = parse_device_selection(text); },
         "GPU: index, UUID or PCI bus id; several at once: all, or a list (0,2)")
      ->default_str("0");
  cmd->add_option("--seed", o.backend.seed, "seed for L")->capture_default_str();
  cmd->add_option("--warps", o.backend.warps,
                  "warps per SM (up to 4 measured as one did, 8 and more did not: docs/decisions/0006-one-warp-per-sm.md)")
      ->capture_default_str();
}

namespace {

void print_spread(const char* what, const Summary& s) {
  fmt::print("{}: median {:.2f}, p95 {:.2f}, p99 {:.2f}, max {:.2f}, min {:.2f}\n", what, s.median, s.p95, s.p99,
             s.max, s.min);
}

void print_selftest_summary(const Accuracy& a, const EmulationOptions& em) {
  fmt::print("selftest: {} measurements, L uniform in {}–{} ms\n", a.measurements.size(), em.min_latency_ms,
             em.max_latency_ms);
  print_spread("error (measured - true), us", a.error_us);
  if (a.delivery_us) print_spread("delivery (the host's write -> block 0's poll read it), us", *a.delivery_us);
  if (a.in_effect_us) print_spread("in effect (the switch's time -> every SM runs the target length), us", *a.in_effect_us);
  if (a.residual_us) print_spread("error - in effect, us", *a.residual_us);
  if (a.residual_iterations) print_spread("error - in effect, target iterations", *a.residual_iterations);
  std::map<std::pair<Mhz, Mhz>, std::vector<double>> by_pair;
  for (const auto& m : a.measurements) by_pair[{m.pair.init, m.pair.target}].push_back(m.error_us);
  for (const auto& [pair, errors] : by_pair)
    fmt::print("  {} -> {} MHz: {} measurements, median error {:.2f} us\n", pair.first, pair.second, errors.size(),
               summarise(errors).median);
  if (a.excess_us)
    fmt::print("criterion (median |error - in effect| within one target iteration + sync uncertainty, at most 1% "
               "early beyond the sync uncertainty, at most 1% late beyond the bound): {} (median excess {:+.2f} us, "
               "{:.1f}% early, {:.1f}% late)\n",
               a.within_bound() ? "met" : "NOT met", a.excess_us->median, *a.early_share * 100, *a.late_share * 100);
  else
    fmt::print("criterion: not evaluated (no measurement knows when the switch took effect)\n");
}

}  // namespace

namespace {

// One GPU's selftest; several: a directory of each, progress lines named.
GpuOutcome selftest_gpu(const SelftestOptions& o, const BackendOptions& options, const DeviceSelector& device,
                        bool several) {
  const Detector detector = o.detector;
  BackendOptions b = options;
  b.device = device;
  const EmulationOptions& em = *b.emulation;
  Backends backends = [&] {
    try {
      return open_backends(b);
    } catch (const Error& e) {
      // The selftest runs on a real GPU only: the simulator is no way out here.
      if (e.kind() != ErrorKind::driver_missing && e.kind() != ErrorKind::not_found) throw;
      throw Error(e.kind(), e.what(),
                  "the selftest emulates switching on a real NVIDIA GPU and needs its driver; without one, "
                  "`latest --backend sim` measures the simulated GPU, whose truth the tests check");
    }
  }();
  const DeviceIdentity id = backends.clocks->identity();
  pin_near(backends.query.get(), gpu_label(id, several));
  const std::string output = gpu_output_dir(o.output, id, several);
  const auto supported = backends.clocks->supported_clocks();
  std::vector<Mhz> clocks;
  if (o.freq) {
    clocks = resolve_clock_set(*o.freq, supported);
  } else {
    clocks = default_selftest_clocks(supported);
  }
  const EngineSettings s =
      selftest_engine_settings(clocks, {em.max_latency_ms, o.measurements, o.iteration_fmas, o.save_traces, detector,
                                        o.schedule});
  const json settings_doc = {{"selftest", true},         {"freq_mhz", clocks}, {"latency_ms", {em.min_latency_ms, em.max_latency_ms}},
                             {"measurements", o.measurements}, {"seed", b.seed}, {"warps", b.warps},
                             {"capture_ms", *s.plan.capture_ms},
                             {"iteration_fmas", o.iteration_fmas ? json(*o.iteration_fmas) : json(nullptr)},
                             {"save_traces", o.save_traces},
                             {"detector", to_string(detector)},
                             {"schedule", to_string(o.schedule)}};
  SessionOptions session_options;
  session_options.output = output;
  session_options.label = gpu_label(id, several);
  const SessionResult session = run_session(backends, s, settings_doc, session_options);

  const Accuracy acc = accuracy_against_truth(session.results);
  if (acc.measurements.empty()) {
    // Say why: pairs skipped (their reasons), or windows all rejected.
    std::vector<std::string> why;
    for (const auto& r : session.results)
      if (r.status != "measured") why.push_back(fmt::format("{} -> {} MHz skipped: {}", r.pair.init, r.pair.target, describe(r.reason)));
    const bool inseparable = std::any_of(session.results.begin(), session.results.end(), [](const PairResult& r) {
      return r.reason.code == SkipReason::Code::bands_overlap || r.reason.code == SkipReason::Code::means_indistinguishable;
    });
    throw Error(ErrorKind::internal,
                why.empty() ? std::string("selftest: no measurement was accepted")
                            : fmt::format("selftest: no measurement was accepted; {}", fmt::join(why, "; ")),
                inseparable ? "choose clocks further apart (--freq 1980,990), or longer iterations (--iteration-fmas)"
                            : "see the manifest's per-pair \"failed\" counts in " + output);
  }
  json doc = {{"latency_ms", {em.min_latency_ms, em.max_latency_ms}},
              {"iteration_fmas", session.state.iteration_fmas},
              {"sync", {{"min_uncertainty_us", session.state.sync.min_uncertainty_ns / 1e3},
                        {"max_uncertainty_us", session.state.sync.max_uncertainty_ns / 1e3},
                        {"drift_ppm", session.state.sync.drift_ppm}}},
              {"accuracy", to_json(acc)}};
  json iterations = json::object();
  for (const auto& cal : session.state.calibrations) iterations[std::to_string(cal.mhz)] = cal.pooled.iteration.mean;
  doc["iteration_ns"] = iterations;
  write_file_atomically(std::filesystem::path(output) / "selftest.json", doc.dump(2) + "\n");
  const std::lock_guard<std::mutex> hold(print_mutex());
  if (several) fmt::print("GPU {} ({}, {}):\n", id.index, id.name, id.uuid);
  print_selftest_summary(acc, em);
  fmt::print("results and selftest.json in {}\n", output);
  if (selftest_verdict(acc) == SelftestVerdict::failed) return {output, 1, "the selftest's criterion was not met", "", {}};
  return GpuOutcome::ok(output);
}

}  // namespace

int run_selftest(const SelftestOptions& o) {
  EmulationOptions em;
  const auto colon = o.latency_ms.find(':');
  try {
    em.min_latency_ms = std::stod(o.latency_ms.substr(0, colon));
    em.max_latency_ms = std::stod(o.latency_ms.substr(colon + 1));
  } catch (const std::exception&) {
    em.min_latency_ms = em.max_latency_ms = -1;
  }
  if (colon == std::string::npos || !(em.min_latency_ms > 0) || em.max_latency_ms < em.min_latency_ms)
    throw Error(ErrorKind::bad_argument, fmt::format("--latency-ms '{}' is not MIN:MAX with 0 < MIN <= MAX", o.latency_ms),
                "e.g. --latency-ms 1:50");
  if (o.measurements < 1) throw Error(ErrorKind::bad_argument, "--measurements must be at least 1");
  if (o.iteration_fmas && *o.iteration_fmas < 8)
    throw Error(ErrorKind::bad_argument, "--iteration-fmas must be at least 8", "e.g. --iteration-fmas 256");
  // One more warp per block polls the emulated switch, and a block holds at
  // most 32 (the H200 refused 32 + 1 with "invalid argument").
  if (o.backend.warps < 1 || o.backend.warps > 31)
    throw Error(ErrorKind::bad_argument, fmt::format("--warps {} is out of range for the selftest", o.backend.warps),
                "use 1..31: one more warp per SM polls the emulated switch");
  if (const std::string note = crowded_sm_note(o.backend.warps); !note.empty()) fmt::print(stderr, "latest: {}\n", note);
  BackendOptions b = o.backend;
  b.backend = "cuda";
  b.emulation = em;
  const std::vector<DeviceSelector> devices = resolve_devices(o.devices, b);
  if (devices.empty()) throw Error(ErrorKind::not_found, "--device all found no GPU", "check nvidia-smi");
  if (devices.size() == 1 && !o.devices.all) {  // all: HOST_UUID below --output, however many
    const GpuOutcome out = selftest_gpu(o, b, devices.front(), false);
    return out.code;
  }
  return run_on_each_gpu(devices, [&](const DeviceSelector& device) { return selftest_gpu(o, b, device, true); });
}

}  // namespace latest::cli
