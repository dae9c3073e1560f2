#include "cli/watch_command.hpp"

#include <filesystem>
#include <mutex>

#include <fmt/format.h>
#include <nlohmann/json.hpp>

#include "cli/gpu_workers.hpp"
#include "cli/signals.hpp"
#include "core/error.hpp"
#include "results/atomic_file.hpp"
#include "results/output_lock.hpp"
#include "report/watch_report.hpp"
#include "results/watch_files.hpp"

namespace latest::cli {
namespace {

using nlohmann::json;

// The changes kept with their records, and how far each side: far enough
// for the detectors' calibrations (detector_judge.hpp) to be taken again
// from a window alone.
constexpr std::size_t kMaxWindows = 12;
constexpr Nanos kWindowHalfWidthNs = 12'500'000;

// What no watch may change: read before and after through NVML.
json settings_of(DeviceQuery* query) {
  if (!query) return nullptr;
  const DeviceStatus s = query->status();
  return {{"sm_clock_mhz", s.sm_clock_mhz},
          {"application_clock_mhz", s.application_clock_mhz ? json(*s.application_clock_mhz) : json(nullptr)},
          {"power_limit_w", s.power_limit_w ? json(*s.power_limit_w) : json(nullptr)}};
}

json truth_of(const Load& load, const WatchRecording& rec) {
  const auto known = load.truth();
  if (known.empty()) return nullptr;
  json changes = json::array(), delays = json::object();
  for (const auto& k : known) changes.push_back({{"gpu_ns", k.gpu_ns}, {"from_mhz", k.from_mhz}, {"to_mhz", k.to_mhz}});
  for (const SmRecords& r : rec.sms) delays[std::to_string(r.sm)] = load.sm_delay_ns(r.sm);
  return {{"changes", changes}, {"sm_delay_ns", delays}};
}

void print_summary(const WatchRecording& rec, const json& summary, const std::string& load, const std::string& label) {
  const auto median = [&](const char* key) {
    return summary[key].is_null() ? std::string("none") : fmt::format("{:.3g}", summary[key]["median"].get<double>());
  };
  const json& j = summary["judge"];
  const std::lock_guard<std::mutex> hold(print_mutex());
  fmt::print("{}watch: {} changes of the card ({} on {} recorded SMs, {} ramps); median step {} MHz, hold {} ms, "
             "SM spread {} us\n",
             label, summary["card_steps"].get<std::size_t>(), summary["sm_steps"].get<std::size_t>(),
             summary["recorded_sms"].get<std::size_t>(), summary["ramps"].get<std::size_t>(), median("step_mhz"),
             median("hold_ms"), median("sm_spread_us"));
  fmt::print("{}load: {}, {} operations in {:.1f} s, {:.0f} TFLOP/s\n", label, load, rec.load.operations,
             rec.load.seconds, rec.load.tflops);
  fmt::print("{}judge: cycles per iteration {:.0f} (p01 {:.0f}, p99 {:.0f}); NVML minus SMs {:+.1f} MHz median "
             "(max |{:.1f}|); 1 ms clock about its level: SD {:.2f} MHz, max |{:.1f}|\n",
             label, j["cycles_per_iteration"]["median"].get<double>(), j["cycles_per_iteration"]["p01"].get<double>(),
             j["cycles_per_iteration"]["p99"].get<double>(), j["nvml_minus_sms_mhz"]["median"].get<double>(),
             j["nvml_minus_sms_mhz"]["max_abs"].get<double>(), j["wiggle_1ms_mhz"]["sd"].get<double>(),
             j["wiggle_1ms_mhz"]["max_abs"].get<double>());
  const json& d = summary["detectors"];
  for (const char* name : {"pooled", "paper"}) {
    const json& e = d[name];
    if (e["accepted"].get<std::size_t>() == 0) {
      fmt::print("{}{} detector: none of {} judged changes accepted\n", label, name, d["judged"].get<long>());
      continue;
    }
    fmt::print("{}{} detector against the judge, {} of {} changes: median {:+.2f} us ({:+.2f} target iterations), "
               "|error| p99 {:.2f} us, earliest {:+.2f}, latest {:+.2f}\n",
               label, name, e["accepted"].get<std::size_t>(), d["judged"].get<long>(), e["us"]["median"].get<double>(),
               e["target_iterations"]["median"].get<double>(), e["us"]["abs_p99"].get<double>(),
               e["us"]["min"].get<double>(), e["us"]["max"].get<double>());
  }
}

WatchSettings watch_settings(const WatchOptions& o) {
  WatchSettings s;
  s.load_seconds = o.seconds;
  s.tail_seconds = o.tail_seconds;
  s.recorded_sms = o.recorded_sms;
  s.iteration_fmas = o.iteration_fmas;
  s.sample_period_ns = static_cast<Nanos>(o.sample_ms * 1e6);
  return s;
}

GpuOutcome watch_gpu(const WatchOptions& o, const DeviceSelector& device, bool several) {
  BackendOptions b = o.backend;
  b.device = device;
  b.watch_seconds = o.seconds;
  Backends backends = open_backends(b);
  if (!backends.notice.empty()) fmt::print(stderr, "{}\n", backends.notice);
  const DeviceIdentity id = backends.clocks->identity();
  const std::string label = gpu_label(id, several);
  pin_near(backends.query.get(), label);
  const std::string output = gpu_output_dir(o.output, id, several);
  const OutputLock lock(output, false);
  const json before = settings_of(backends.query.get());
  const WatchSettings settings = watch_settings(o);
  const WatchRecording rec = record_watch(*backends.workload, *backends.load, *backends.clocks, settings,
                                          [] { return !stop_requested().empty(); });
  const json after = settings_of(backends.query.get());
  StepSettings step_settings;
  step_settings.timer_tick_ns = std::max(1.0, backends.workload->info().timer_tick_ns);
  const WatchAnalysis analysis = analyse_watch(rec, step_settings);
  JudgeSettings judge;
  judge.seed = b.seed;
  const auto judged = judge_detectors(rec.sms, analysis.steps, backends.clocks->supported_clocks(), o.iteration_fmas,
                                      step_settings.timer_tick_ns, judge);
  const auto windows = windows_around(rec, analysis, judged, kWindowHalfWidthNs, kMaxWindows);
  const std::string windows_file = windows_bin(windows);
  const std::filesystem::path dir(output);
  write_file_atomically(dir / "steps.csv", steps_csv(rec, analysis));
  write_file_atomically(dir / "clock.csv", clock_csv(rec, analysis));
  write_file_atomically(dir / "telemetry.csv", telemetry_csv(rec));
  write_file_atomically(dir / "windows.bin", windows_file);
  write_file_atomically(dir / "judged.csv", judged_csv(rec, judged));
  json recorded = json::array();
  std::int64_t iterations = 0;
  for (const SmRecords& r : rec.sms) recorded.push_back(r.sm), iterations += static_cast<std::int64_t>(r.duration_ns.size());
  const json summary = watch_summary(rec, analysis, judged);
  json manifest = {
      {"command", "watch"},
      {"version", LATEST_VERSION},
      {"status", rec.interrupted ? "interrupted" : "complete"},
      {"device", {{"name", id.name}, {"uuid", id.uuid}, {"pci_bus_id", id.pci_bus_id}, {"index", id.index}}},
      {"backend", backends.workload->info().backend},
      {"driver", backends.query ? json(backends.query->status().driver_version) : json(nullptr)},
      {"settings",
       {{"load_seconds", o.seconds}, {"tail_seconds", o.tail_seconds}, {"iteration_fmas", o.iteration_fmas},
        {"recorded_sms", o.recorded_sms}, {"sample_ms", o.sample_ms}, {"min_step_mhz", step_settings.min_step_mhz},
        {"seed", b.seed}, {"supported_clocks_mhz", backends.clocks->supported_clocks()},
        {"timer_tick_ns", step_settings.timer_tick_ns}}},
      {"load", {{"what", backends.load->describe()}, {"seconds", rec.load.seconds},
                {"operations", rec.load.operations}, {"tflops", rec.load.tflops}}},
      {"recorded_sms", recorded},
      {"volume", {{"iterations", iterations}, {"bytes_from_device", rec.bytes}, {"bytes_per_iteration", 8}}},
      {"windows", {{"count", windows.size()}, {"max", kMaxWindows}, {"half_width_ms", kWindowHalfWidthNs / 1e6},
                   {"bytes", windows_file.size()}}},
      {"nvml_before", before},
      {"nvml_after", after},
      {"nvml_identical", before == after},
      {"summary", summary},
      {"truth", truth_of(*backends.load, rec)}};
  write_file_atomically(dir / "manifest.json", manifest.dump(2) + "\n");
  write_file_atomically(dir / "watch.html", report::render_watch_report(report::watch_figures(rec, analysis, judged), manifest));
  print_summary(rec, summary, backends.load->describe(), label);
  fmt::print("{}results in {}\n", label, output);
  if (before != after)
    return {output, 1, fmt::format("the card's settings differ after the watch: before {}, after {}", before.dump(), after.dump()),
            "nothing in `latest watch` sets them: another process did; check nvidia-smi -q -d CLOCK,POWER", {}};
  if (rec.interrupted) return {output, 130, "interrupted: the files hold what was recorded until then", "", {}};
  return GpuOutcome::ok(output);
}

}  // namespace

void add_watch_command(CLI::App& app, WatchOptions& o) {
  auto* cmd = app.add_subcommand(
      "watch", "the card's own clock changes under a heavy load, per SM, timed from cycles over time; changes no "
               "setting and needs no root");
  cmd->add_option("-s,--seconds", o.seconds, "how long the load runs")->capture_default_str();
  cmd->add_option("--tail-seconds", o.tail_seconds, "the recorder alone after the load: the clock's recovery")
      ->capture_default_str();
  cmd->add_option("--recorded-sms", o.recorded_sms, "SMs the recorder keeps to itself; the load has the rest")
      ->capture_default_str();
  cmd->add_option("--iteration-fmas", o.iteration_fmas, "FMAs per recorded iteration")->capture_default_str();
  cmd->add_option("--sample-ms", o.sample_ms, "period of the driver's telemetry readings")->capture_default_str();
  cmd->add_option("--gemm-size", o.backend.gemm_size, "N of the load's N x N x N half GEMMs")->capture_default_str();
  cmd->add_option("-o,--output", o.output,
                  "result directory (placeholders %h %u %i %j; several GPUs: HOST_UUID below it)")
      ->capture_default_str();
  cmd->add_option_function<std::string>(
         "-d,--device", [&o](const std::string& text) { o.devices = parse_device_selection(text); },
         "GPU: index, UUID or PCI bus id; several at once: all, or a list (0,2)")
      ->default_str("0");
  cmd->add_option("--backend", o.backend.backend, "auto, cuda or sim")->capture_default_str();
  cmd->add_option("--sim-profile", o.backend.sim_profile, "simulated card")->capture_default_str();
  cmd->add_option("--sim-gpus", o.backend.sim_gpus, "simulated cards (for --device all)")->capture_default_str();
  cmd->add_option("--seed", o.backend.seed, "the simulated card's seed, and the pseudo-requests' draws")->capture_default_str();
}

int run_watch(const WatchOptions& o) {
  if (!(o.seconds > 0)) throw Error(ErrorKind::bad_argument, "--seconds must be above 0", "e.g. --seconds 20");
  if (!(o.tail_seconds >= 0)) throw Error(ErrorKind::bad_argument, "--tail-seconds must be 0 or more", "e.g. --tail-seconds 5");
  if (o.recorded_sms < 1) throw Error(ErrorKind::bad_argument, "--recorded-sms must be at least 1", "e.g. --recorded-sms 16");
  if (o.iteration_fmas < 8) throw Error(ErrorKind::bad_argument, "--iteration-fmas must be at least 8", "e.g. --iteration-fmas 4096");
  if (!(o.sample_ms > 0 && o.sample_ms <= 50))
    throw Error(ErrorKind::bad_argument, fmt::format("--sample-ms {} is outside (0, 50]", o.sample_ms),
                "the driver is read every 50 ms or faster: e.g. --sample-ms 20");
  if (o.backend.gemm_size < 256 || o.backend.gemm_size % 64 != 0)
    throw Error(ErrorKind::bad_argument, fmt::format("--gemm-size {} is not a multiple of 64 from 256", o.backend.gemm_size),
                "e.g. --gemm-size 8192");
  install_stop_handlers();
  const std::vector<DeviceSelector> devices = resolve_devices(o.devices, o.backend);
  if (devices.empty()) throw Error(ErrorKind::not_found, "--device all found no GPU", "check nvidia-smi");
  if (devices.size() == 1 && !o.devices.all) {  // all: HOST_UUID below --output, however many
    const GpuOutcome out = watch_gpu(o, devices.front(), false);
    if (out.code != 0) fmt::print(stderr, "latest: error: {}\n", out.message);
    if (!out.hint.empty()) fmt::print(stderr, "latest: hint: {}\n", out.hint);
    return out.code;
  }
  return run_on_each_gpu(devices, [&](const DeviceSelector& device) { return watch_gpu(o, device, true); });
}

}  // namespace latest::cli
