#include "cli/gpu_workers.hpp"

#include <pthread.h>
#include <sched.h>

#include <exception>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "cli/exit_codes.hpp"
#include "core/error.hpp"

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

std::mutex& print_mutex() {
  static std::mutex m;
  return m;
}

int run_on_each_gpu(const std::vector<std::string>& devices, const std::function<GpuOutcome(const std::string&)>& work) {
  // SIGINT reaches every worker through the one stop flag; each restores
  // its own card as it unwinds.
  std::vector<GpuOutcome> outcomes(devices.size());
  std::vector<std::thread> workers;
  for (std::size_t i = 0; i < devices.size(); ++i)
    workers.emplace_back([&, i] {
      try {
        outcomes[i] = work(devices[i]);
      } catch (const Error& e) {
        outcomes[i] = {"", static_cast<int>(exit_code_for(e.kind())), e.what(), e.hint()};
      } catch (const std::exception& e) {
        outcomes[i] = {"", static_cast<int>(ExitCode::internal), std::string("internal error: ") + e.what(), ""};
      }
    });
  for (auto& w : workers) w.join();
  int code = 0, failed = 0;
  fmt::print("{} GPUs:\n", devices.size());
  for (std::size_t i = 0; i < devices.size(); ++i) {
    const GpuOutcome& out = outcomes[i];
    if (out.code == 0) {
      fmt::print("  --device {}: ok, results in {}\n", devices[i], out.output);
      continue;
    }
    ++failed;
    if (code == 0) code = out.code;
    fmt::print("  --device {}: failed (exit {}): {}{}{}\n", devices[i], out.code, out.message,
               out.hint.empty() ? "" : " (" + out.hint + ")", out.output.empty() ? "" : "; results in " + out.output);
  }
  if (failed > 0) fmt::print(stderr, "latest: {} of {} GPUs failed; the exit code is the first one's\n", failed, devices.size());
  return code;
}

}  // namespace latest::cli
