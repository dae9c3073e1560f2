#pragma once
// The result directory (SPEC §3.6): one CSV per ordered pair, an optional
// trace file per pair, and manifest.json. Every file is written atomically
// and the manifest after every pair, so a kill loses at most the pair in
// progress and a rerun of the same command resumes.
#include <filesystem>
#include <functional>
#include <set>
#include <string>

#include <nlohmann/json.hpp>

#include "core/engine.hpp"

namespace latest {

// Schema 3: the selected detector's latencies, then the paper's detector's on
// the same records (empty where it found nothing), the selected one's own
// uncertainty, and whether the measurement is set aside (1: a misfit after
// every retry, out of the statistics). Schema 2 lacked the last column,
// schema 1 had the first twelve; both are still read.
inline constexpr int kManifestSchemaVersion = 3;
inline constexpr const char* kCsvHeaderV1 =
    "index,switching_latency_ms,transition_latency_ms,call_latency_ms,accepted_sms,max_sm,"
    "sm_spread_ms,sync_uncertainty_us,temperature_c,power_w,true_latency_ms,true_transition_ms";
inline constexpr const char* kCsvHeaderV2 =
    "index,switching_latency_ms,transition_latency_ms,call_latency_ms,accepted_sms,max_sm,"
    "sm_spread_ms,sync_uncertainty_us,temperature_c,power_w,true_latency_ms,true_transition_ms,"
    "paper_switching_latency_ms,paper_transition_latency_ms,switching_uncertainty_us";
inline constexpr const char* kCsvHeader =
    "index,switching_latency_ms,transition_latency_ms,call_latency_ms,accepted_sms,max_sm,"
    "sm_spread_ms,sync_uncertainty_us,temperature_c,power_w,true_latency_ms,true_transition_ms,"
    "paper_switching_latency_ms,paper_transition_latency_ms,switching_uncertainty_us,set_aside";

std::string host_name_for_files();  // hostname with '_' replaced by '-'
std::string pair_file_name(ClockPair pair, const std::string& host, int gpu_index);
std::string measurements_csv(const std::vector<MeasurementRow>& rows);

// Words for a skipped pair's reason; the manifest keeps them beside its code.
using SkipText = std::function<std::string(const SkipReason&)>;

class ResultStore final : public RunObserver {
 public:
  // `run_key` holds what must match for a rerun to resume this directory.
  ResultStore(std::filesystem::path dir, nlohmann::json run_key, nlohmann::json settings, SkipText skip_text);

  // Pairs already finished by an earlier run of the same command. Throws
  // Error(usage) if the directory holds a different run.
  std::set<std::pair<Mhz, Mhz>> resume();

  void planned(const RunState& state) override;
  void pair_finished(const PairResult& result, const RunState& state) override;
  void finished(const RunState& state) override { planned(state); }
  // Final status: complete, interrupted or failed (with the error).
  void finish(const std::string& status, const std::string& error = {});

  const std::filesystem::path& dir() const { return dir_; }
  const nlohmann::json& manifest() const { return manifest_; }
  bool wrote_anything() const { return wrote_; }

 private:
  void write_manifest();
  void record_state(const RunState& state);

  std::filesystem::path dir_;
  SkipText skip_text_;
  std::string host_;
  nlohmann::json manifest_;
  bool wrote_ = false;
  double earlier_gpu_seconds_ = 0;  // of the runs this one resumes
};

nlohmann::json to_json(const ClockCalibration& cal);

}  // namespace latest
