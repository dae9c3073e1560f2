#pragma once
// `latest watch`'s load on a real card: half-precision GEMMs through cuBLAS,
// back to back on a stream of their own, heavy enough that the card lowers
// its own clock under its power limit. cuBLAS is loaded at run time, so
// that `latest` starts on machines with the driver but without the toolkit.
#include <sched.h>

#include <atomic>
#include <cstdint>
#include <exception>
#include <thread>

#include "core/watch/watch.hpp"

namespace latest::cuda {

class GemmLoad final : public Load {
 public:
  // n x n x n GEMMs on device `cuda_index` (the workload's).
  GemmLoad(int cuda_index, int n);
  ~GemmLoad() override;
  GemmLoad(const GemmLoad&) = delete;
  GemmLoad& operator=(const GemmLoad&) = delete;

  std::string describe() const override;
  void prepare() override;
  void start(Nanos host_ns) override;
  LoadStats stop(Nanos host_ns) override;

 private:
  void run();
  void run_batch(int gemms);

  int cuda_index_;
  int n_;
  struct Cublas;
  Cublas* cublas_ = nullptr;
  void* stream_ = nullptr;
  void* a_ = nullptr;
  void* b_ = nullptr;
  void* c_ = nullptr;
  std::atomic<bool> running_{false};
  std::atomic<std::int64_t> issued_{0};
  std::thread thread_;
  Nanos started_ = 0;
  cpu_set_t cpus_{};  // where the load's host thread runs
  std::exception_ptr error_;
};

}  // namespace latest::cuda
