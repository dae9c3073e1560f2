#include "cli/gpu_workers.hpp"

#include <pthread.h>
#include <sched.h>

#include <cstdlib>
#include <exception>
#include <filesystem>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/arguments.hpp"
#include "cli/exit_codes.hpp"
#include "core/error.hpp"
#include "results/atomic_file.hpp"
#include "results/result_store.hpp"

namespace latest::cli {

void pin_near(DeviceQuery* query, const std::string& label) {
  if (!query) return;
  const std::vector<int> cpus = query->near_cpus();
  if (cpus.empty()) return;
  cpu_set_t set;
  CPU_ZERO(&set);
  std::vector<std::string> ranges;
  for (std::size_t i = 0; i < cpus.size(); ++i) {
    if (cpus[i] < CPU_SETSIZE) CPU_SET(cpus[i], &set);
    std::size_t j = i;
    while (j + 1 < cpus.size() && cpus[j + 1] == cpus[j] + 1) ++j;
    ranges.push_back(j == i ? std::to_string(cpus[i]) : fmt::format("{}-{}", cpus[i], cpus[j]));
    i = j;
  }
  if (pthread_setaffinity_np(pthread_self(), sizeof set, &set) != 0) {
    fmt::print(stderr, "latest: {}could not move to the CPUs nearest the GPU ({}); running where the system puts it\n",
               label, fmt::join(ranges, ","));
    return;
  }
  fmt::print(stderr, "latest: {}runs on CPUs {}, the ones nearest the GPU\n", label, fmt::join(ranges, ","));
}

std::string gpu_label(const DeviceIdentity& id, bool several) {
  return several ? fmt::format("GPU {}: ", id.index) : std::string();
}

std::string gpu_output_dir(const std::string& pattern, const DeviceIdentity& id, bool several) {
  const char* job = std::getenv("SLURM_JOB_ID");
  const std::string host = host_name_for_files();
  std::string output = expand_output(pattern, {host, id.uuid, id.index, job ? job : ""});
  if (several && !output_per_gpu(pattern)) output = (std::filesystem::path(output) / fmt::format("{}_{}", host, id.uuid)).string();
  if (!directory_writable(output))
    throw Error(ErrorKind::bad_argument, unwritable_output(output), "choose a writable --output directory");
  // A directory of someone else's report: a run would write over it.
  const std::filesystem::path dir(output);
  std::error_code ec;
  if (!std::filesystem::exists(dir / "manifest.json", ec))
    for (const char* ours : {"report.html", "watch.html", "analysis"})
      if (std::filesystem::exists(dir / ours, ec))
        throw Error(ErrorKind::bad_argument,
                    fmt::format("{} holds {} but no manifest.json: it is not a result directory, and a run would "
                                "overwrite it",
                                output, ours),
                    "choose a new or empty --output directory");
  return output;
}

std::mutex& print_mutex() {
  static std::mutex m;
  return m;
}

int run_on_each_gpu(const std::vector<DeviceSelector>& devices,
                    const std::function<GpuOutcome(const DeviceSelector&)>& work) {
  // SIGINT reaches every worker through the one stop flag; each restores
  // its own card as it unwinds.
  std::vector<GpuOutcome> outcomes(devices.size());
  std::vector<std::thread> workers;
  for (std::size_t i = 0; i < devices.size(); ++i)
    workers.emplace_back([&, i] {
      try {
        outcomes[i] = work(devices[i]);
      } catch (const Error& e) {
        outcomes[i] = {"", static_cast<int>(exit_code_for(e.kind())), e.what(), e.hint(), {}};
      } catch (const std::exception& e) {
        outcomes[i] = {"", static_cast<int>(ExitCode::internal), std::string("internal error: ") + e.what(), "", {}};
      }
    });
  for (auto& w : workers) w.join();
  for (const GpuOutcome& out : outcomes) fmt::print("{}", out.report);
  int code = 0, failed = 0;
  fmt::print("{} GPUs:\n", devices.size());
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const GpuOutcome& out = outcomes[i];
    if (out.code == 0) {
      fmt::print("  --device {}: ok, results in {}\n", devices[i].text, out.output);
      continue;
    }
    ++failed;
    if (code == 0) code = out.code;
    fmt::print("  --device {}: failed (exit {}): {}{}{}\n", devices[i].text, out.code, out.message,
               out.hint.empty() ? "" : " (" + out.hint + ")", out.output.empty() ? "" : "; results in " + out.output);
  }
  if (failed > 0) fmt::print(stderr, "latest: {} of {} GPUs failed; the exit code is the first one's\n", failed, devices.size());
  return code;
}

}  // namespace latest::cli
