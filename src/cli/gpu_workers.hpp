#pragma once
// Several GPUs at once (--device all or a list): one worker thread a GPU,
// a failure on one stopping none of the others, one summary at the end.
#include <functional>
#include <mutex>
#include <string>
#include <utility>
#include <vector>

#include "core/device_query.hpp"

namespace latest::cli {

// What one GPU's work ended with: its result directory, and a non-zero
// exit code with its message where it did not succeed without an error
// (a selftest whose criterion failed).
struct GpuOutcome {
  std::string output;
  int code = 0;
  std::string message, hint;
  std::string report;  // what the GPU's work has to show, printed with the others in device order
  static GpuOutcome ok(std::string output) { return {std::move(output), 0, {}, {}, {}}; }
};

// Moves the calling thread (and the threads it starts) to the CPUs nearest
// the device, where it says which; says so on stderr after `label`.
void pin_near(DeviceQuery* query, const std::string& label);

// "GPU 1: " before a worker's lines where several GPUs run, else nothing.
std::string gpu_label(const DeviceIdentity& id, bool several);

// A GPU's result directory: --output with its placeholders filled in (%h %u
// %i %j), and where several GPUs run and the pattern has neither %u nor %i,
// HOST_UUID below it. Error(bad_argument) where it cannot be written.
std::string gpu_output_dir(const std::string& pattern, const DeviceIdentity& id, bool several);

// Whole tables and summaries from several workers, one at a time.
std::mutex& print_mutex();

// Runs work(device) for every device at once and prints a line a GPU.
// Errors become that GPU's exit code (exit_codes.hpp). Returns 0 when every
// GPU succeeded, else the first failing GPU's code in device order.
int run_on_each_gpu(const std::vector<DeviceSelector>& devices,
                    const std::function<GpuOutcome(const DeviceSelector&)>& work);

}  // namespace latest::cli
