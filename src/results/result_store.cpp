#include "results/result_store.hpp"

#include <unistd.h>

#include <chrono>
#include <fstream>
#include <set>
#include <sstream>

#include <fmt/chrono.h>
#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/error.hpp"
#include "results/atomic_file.hpp"

namespace latest {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

std::string utc_now() {
  return fmt::format("{:%Y-%m-%dT%H:%M:%SZ}", fmt::gmtime(std::chrono::system_clock::to_time_t(std::chrono::system_clock::now())));
}

std::string optional_number(const std::optional<double>& v, const char* format = "{:.6f}") {
  return v ? fmt::format(fmt::runtime(format), *v) : std::string();
}

json pair_key(ClockPair p) { return {{"init_mhz", p.init}, {"target_mhz", p.target}}; }

}  // namespace

std::string host_name_for_files() {
  char buf[256] = {};
  if (gethostname(buf, sizeof buf - 1) != 0) return "unknown-host";
  std::string host(buf);
  for (char& c : host)
    if (c == '_') c = '-';
  return host;
}

std::string pair_file_name(ClockPair pair, const std::string& host, int gpu_index) {
  return fmt::format("{}_{}_{}_{}.csv", pair.init, pair.target, host, gpu_index);
}

std::string measurements_csv(const std::vector<MeasurementRow>& rows) {
  std::string out = kCsvHeader;
  out += '\n';
  for (const auto& r : rows) {
    out += fmt::format("{},{:.6f},{:.6f},{:.6f},{},{},{:.6f},{:.3f},{},{},{},{},{},{},{:.3f},{:d}\n", r.index, r.switching_ms,
                       r.transition_ms, r.call_ms, r.accepted_sms, r.max_sm, r.sm_spread_ms, r.sync_uncertainty_us,
                       optional_number(r.temperature_c, "{:.1f}"), optional_number(r.power_w, "{:.1f}"),
                       r.truth ? fmt::format("{:.6f}", r.truth->switching_ms) : std::string(),
                       r.truth ? fmt::format("{:.6f}", r.truth->transition_ms) : std::string(),
                       optional_number(r.paper_switching_ms), optional_number(r.paper_transition_ms),
                       r.switching_uncertainty_us, r.set_aside);
  }
  return out;
}

json to_json(const ClockCalibration& cal) {
  json per_sm = json::array();
  for (std::size_t s = 0; s < cal.per_sm.size(); ++s) {
    const auto& b = cal.per_sm[s];
    per_sm.push_back({{"sm", s}, {"n", b.iteration.n}, {"mean_ns", b.iteration.mean}, {"sd_ns", b.iteration.sd}});
  }
  return {{"mhz", cal.mhz},
          {"iteration_fmas", cal.iteration_fmas},
          {"n", cal.pooled.iteration.n},
          {"mean_ns", cal.pooled.iteration.mean},
          {"sd_ns", cal.pooled.iteration.sd},
          {"outside_2sd_fraction", cal.pooled.outside_fraction},
          {"wakeup_ms", cal.wakeup_ms ? json(*cal.wakeup_ms) : json(nullptr)},
          {"effective_mhz", cal.effective_mhz > 0 ? json(cal.effective_mhz) : json(nullptr)},
          {"per_sm", per_sm}};
}

ResultStore::ResultStore(fs::path dir, json run_key, json settings, SkipText skip_text)
    : dir_(std::move(dir)), skip_text_(std::move(skip_text)), host_(host_name_for_files()) {
  manifest_ = {{"schema_version", kManifestSchemaVersion},
               {"tool", {{"name", "latest"}, {"version", LATEST_VERSION}}},
               {"host", host_},
               {"started_utc", utc_now()},
               {"status", "running"},
               {"run_key", std::move(run_key)},
               {"settings", std::move(settings)},
               {"pairs", json::array()},
               {"checks", json::array()},
               {"throttle_events", json::array()}};
}

std::set<std::pair<Mhz, Mhz>> ResultStore::resume() {
  std::set<std::pair<Mhz, Mhz>> done;
  const fs::path path = dir_ / "manifest.json";
  if (!fs::exists(path)) return done;
  json old;
  try {
    std::ifstream in(path);
    old = json::parse(in);
  } catch (const std::exception& e) {
    throw Error(ErrorKind::bad_argument, fmt::format("{} is not a readable manifest: {}", path.string(), e.what()),
                "choose another --output directory, or remove the damaged one");
  }
  // What it holds is checked as it is read: a field of the wrong JSON type
  // refuses the resume with the file named, never a crash.
  try {
    if (!old.is_object()) throw std::invalid_argument("the document is not an object");
    if (const int schema = old.value("schema_version", 0); schema != kManifestSchemaVersion)
      throw Error(ErrorKind::bad_argument,
                  fmt::format("{} holds results of result schema {}, written by an older latest; resuming would mix "
                              "schemas in one directory",
                              dir_.string(), schema),
                  "`latest analyze` and `latest report` still read it; measure into another --output directory");
    const json old_key = old.value("run_key", json::object());
    if (!old_key.is_object()) throw std::invalid_argument("run_key is not an object");
    const json& new_key = manifest_["run_key"];
    if (old_key != new_key) {
      // Name what differs: the setting, its value now and in the directory.
      std::set<std::string> keys;
      for (const json* key : {&new_key, &old_key})
        for (const auto& [k, v] : key->items()) keys.insert(k);
      const auto value = [](const json& key, const std::string& k) { return key.contains(k) ? key[k] : json(); };
      std::vector<std::string> differs;
      for (const auto& k : keys)
        if (value(new_key, k) != value(old_key, k))
          differs.push_back(fmt::format("{} {} (the directory has {})", k, value(new_key, k).dump(), value(old_key, k).dump()));
      throw Error(ErrorKind::bad_argument,
                  fmt::format("{} holds results of a different run: {}", dir_.string(), fmt::join(differs, "; ")),
                  "rerun the command that made it to resume it, or choose another --output directory");
    }
    const json pairs = old.contains("pairs") ? old["pairs"] : json::array();
    if (!pairs.is_array()) throw std::invalid_argument("pairs is not an array");
    for (const auto& p : pairs) {
      const ClockPair pair{p.at("init_mhz").get<Mhz>(), p.at("target_mhz").get<Mhz>()};
      // A measured pair counts as done only while its CSV is there.
      if (p.value("status", "") == "measured" && !fs::exists(dir_ / p.value("file", ""))) continue;
      done.insert({pair.init, pair.target});
      manifest_["pairs"].push_back(p);
    }
    if (!old.value("started_utc", json("")).is_string()) throw std::invalid_argument("started_utc is not a string");
    // Timer syncs of the earlier runs stay on record; this run's are added.
    json earlier = old.contains("timer_sync_earlier_runs") && old["timer_sync_earlier_runs"].is_array()
                       ? old["timer_sync_earlier_runs"]
                       : json::array();
    if (old.contains("timer_sync") && old["timer_sync"].is_object()) earlier.push_back(old["timer_sync"]);
    manifest_["timer_sync_earlier_runs"] = earlier;
    if (old.contains("gpu_seconds") && old["gpu_seconds"].is_number()) earlier_gpu_seconds_ = old["gpu_seconds"].get<double>();
  } catch (const Error&) {
    throw;
  } catch (const std::exception& e) {  // the JSON library's type errors, and the checks above
    throw Error(ErrorKind::bad_argument, fmt::format("{} is damaged: {}", path.string(), e.what()),
                "choose another --output directory, or remove the damaged one");
  }
  manifest_["started_utc"] = old.value("started_utc", manifest_["started_utc"].get<std::string>());
  manifest_["resumed_utc"] = utc_now();
  wrote_ = true;
  return done;
}

void ResultStore::record_state(const RunState& s) {
  manifest_["device"] = {{"name", s.device.name},
                         {"uuid", s.device.uuid},
                         {"pci_bus_id", s.device.pci_bus_id},
                         {"index", s.device.index},
                         {"sm_count", s.workload.sm_count},
                         {"backend", s.workload.backend},
                         {"timer_tick_ns", s.workload.timer_tick_ns}};
  json cal = json::array();
  for (const auto& c : s.calibrations) cal.push_back(to_json(c));
  manifest_["calibration"] = cal;
  manifest_["detector"] = to_string(s.detector);
  json pilot = json::array();
  for (const auto& [pair, ms] : s.pilot) pilot.push_back({{"init_mhz", pair.init}, {"target_mhz", pair.target}, {"switching_latency_ms", ms}});
  manifest_["schedule"] = to_string(s.schedule);
  manifest_["plan"] = {{"capture_ms", s.capture_ms},
                       {"iteration_fmas", s.iteration_fmas},
                       {"pilot", pilot},
                       {"measurements_per_pair", s.cost.planned_measurements_per_pair},
                       {"sampled_pairs", s.cost.sampled_pairs},
                       {"timer_sync_ms", s.cost.sync_ms}};
  if (!s.settle_ms.empty()) {
    const Summary settle = summarise(s.settle_ms);
    manifest_["plan"]["launches"] = s.settle_ms.size();
    manifest_["plan"]["settle_ms"] = {{"median", settle.median}, {"max", settle.max}};
  }
  // What the run holds the GPU for (this run and the earlier ones into this
  // directory), and what it planned to once its pilot was done.
  manifest_["gpu_seconds"] = earlier_gpu_seconds_ + s.cost.gpu_seconds;
  manifest_["planned_gpu_seconds"] = earlier_gpu_seconds_ + s.cost.planned_gpu_seconds;
  json checks = json::array();
  for (const auto& c : s.checks) {
    json j = pair_key(c.pair);
    j["means_differ"] = c.means_differ;
    j["difference_ns"] = {c.difference_ns.low, c.difference_ns.high};
    j["band_overlap"] = c.band_overlap;
    j["valid"] = !c.skip.skipped();
    if (c.separable_fmas > 0) j["separable_iteration_fmas"] = c.separable_fmas;
    if (c.skip.skipped()) {
      j["skip_reason"] = skip_text_(c.skip);
      j["skip_code"] = to_string(c.skip.code);
    }
    checks.push_back(j);
  }
  manifest_["checks"] = checks;
  json events = json::array();
  for (const auto& e : s.throttle_events) {
    json j = pair_key(e.pair);
    j.update({{"at_s", e.at_s}, {"kind", e.kind}, {"action", e.action}, {"raw_reasons", e.raw_reasons}});
    events.push_back(j);
  }
  manifest_["throttle_events"] = events;
  json unusable = json::object();
  for (const auto& [mhz, why] : s.unusable_clocks) unusable[std::to_string(mhz)] = skip_text_(why);
  manifest_["unusable_clocks"] = unusable;
  manifest_["timer_sync"] = {{"count", s.sync.count},
                             {"first_offset_ns", s.sync.first_offset_ns},
                             {"last_offset_ns", s.sync.last_offset_ns},
                             {"min_uncertainty_us", s.sync.min_uncertainty_ns / 1e3},
                             {"max_uncertainty_us", s.sync.max_uncertainty_ns / 1e3},
                             {"max_round_trip_us", s.sync.max_round_trip_ns / 1e3},
                             {"drift_ppm", s.sync.drift_ppm},
                             {"max_gap_between_syncs_s", s.sync.max_gap_s},
                             {"max_drift_between_syncs_us", s.sync.max_drift_between_syncs_ns / 1e3}};
  int all_runs = s.sync.count;
  if (manifest_.contains("timer_sync_earlier_runs"))
    for (const auto& e : manifest_["timer_sync_earlier_runs"]) all_runs += e.value("count", 0);
  manifest_["timer_sync"]["count_all_runs"] = all_runs;
}

void ResultStore::planned(const RunState& state) {
  record_state(state);
  write_manifest();
}

void ResultStore::pair_finished(const PairResult& r, const RunState& state) {
  json j = pair_key(r.pair);
  j["status"] = r.status;
  if (r.reason.skipped()) {
    j["reason"] = skip_text_(r.reason);
    j["reason_code"] = to_string(r.reason.code);
  }
  if (r.status == "measured") {
    const std::string name = pair_file_name(r.pair, host_, state.device.index);
    write_file_atomically(dir_ / name, measurements_csv(r.rows));
    j["file"] = name;
    if (!r.traces.empty()) {
      std::string csv = "measurement,sm,iteration,start_from_request_ns,duration_ns,cycles,effective_mhz\n";
      for (const auto& t : r.traces)
        csv += fmt::format("{},{},{},{},{},{},{:.1f}\n", t.measurement, t.sm, t.iteration, t.start_from_request_ns,
                           t.duration_ns, t.cycles, t.duration_ns ? 1000.0 * t.cycles / t.duration_ns : 0.0);
      write_file_atomically(dir_ / "traces" / name, csv);
      j["trace_file"] = "traces/" + name;
    }
  }
  j["measurements"] = r.rows.size();
  std::set<Mhz> memory;
  for (const auto& row : r.rows)
    if (row.memory_mhz) memory.insert(*row.memory_mhz);
  j["memory_mhz_seen"] = memory;
  // Measurements whose records did not fit the detector's model, by kind.
  json misfits = json::object();
  for (Misfit m : kMisfits) {
    std::vector<int> which;
    for (const auto& row : r.rows)
      if (row.misfits & static_cast<unsigned>(m)) which.push_back(row.index);
    if (!which.empty()) misfits[to_string(m)] = {{"count", which.size()}, {"measurements", which}};
  }
  j["misfits"] = misfits;
  // Misfits are taken again; those still misfits when retries ran out are
  // set aside. The share counts every misfit outcome, retried or kept.
  std::vector<int> set_aside;
  int misfit_rows = 0;
  for (const auto& row : r.rows) {
    if (row.set_aside) set_aside.push_back(row.index);
    misfit_rows += row.misfits != 0;
  }
  j["clock_reached_mhz"] = r.reached_mhz ? json(*r.reached_mhz) : json(nullptr);
  j["target_not_reached"] = r.target_not_reached;
  j["misfit_retries"] = r.misfit_retries;
  j["set_aside"] = set_aside;
  const auto outcomes = r.rows.size() + r.retried.size();
  j["misfit_share"] = outcomes ? static_cast<double>(misfit_rows + static_cast<int>(r.retried.size())) / outcomes : 0.0;
  j["rse"] = std::isfinite(r.rse) ? json(r.rse) : json(nullptr);
  j["discarded"] = r.discarded;
  j["failed"] = r.failed;
  j["windows"] = r.windows;
  j["transits"] = r.transits;
  j["measurements_at_stop"] = r.stop_count();
  j["capture_retries"] = r.capture_retries;
  j["iteration_coarsenings"] = r.iteration_coarsenings;
  j["iteration_fmas"] = r.iteration_fmas;
  j["capture_ms"] = r.capture_ms;
  j["wakeup_ms"] = r.wakeup_ms;
  j["gpu_seconds"] = r.gpu_seconds;
  j["host_cpu_seconds"] = r.host_cpu_seconds;
  j["bytes"] = r.bytes;
  if (r.windows > 0) {
    j["bytes_per_window"] = r.bytes / r.windows;
    j["host_ms_per_window"] = r.host_cpu_seconds * 1e3 / r.windows;
  }
  auto& pairs = manifest_["pairs"];
  for (auto it = pairs.begin(); it != pairs.end(); ++it)
    if ((*it)["init_mhz"] == r.pair.init && (*it)["target_mhz"] == r.pair.target) {
      pairs.erase(it);
      break;
    }
  pairs.push_back(j);
  record_state(state);
  write_manifest();
}

void ResultStore::finish(const std::string& status, const std::string& error) {
  if (!wrote_) return;  // a refused run leaves no files behind
  manifest_["status"] = status;
  manifest_["finished_utc"] = utc_now();
  if (!error.empty()) manifest_["error"] = error;
  write_manifest();
}

void ResultStore::write_manifest() {
  write_file_atomically(dir_ / "manifest.json", manifest_.dump(2) + "\n");
  wrote_ = true;
}

}  // namespace latest
