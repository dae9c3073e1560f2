#include "backends/cuda/gemm_load.hpp"

#include <dlfcn.h>
#include <pthread.h>
#include <sched.h>

#include <chrono>
#include <string>

#include <cublas_v2.h>
#include <cuda_runtime.h>
#include <fmt/format.h>

#include "backends/cuda/cuda_workload.hpp"
#include "backends/cuda/kernels.hpp"
#include "core/error.hpp"

namespace latest::cuda {
namespace {

// cublasGemmEx with the compute type (cublas_api.h also declares a C++
// overload taking a data type): the cast fails to compile if it is not there.
using GemmEx = cublasStatus_t (*)(cublasHandle_t, cublasOperation_t, cublasOperation_t, int, int, int, const void*,
                                  const void*, cudaDataType, int, const void*, cudaDataType, int, const void*, void*,
                                  cudaDataType, int, cublasComputeType_t, cublasGemmAlgo_t);
[[maybe_unused]] constexpr auto kGemmExChecked = sizeof(static_cast<GemmEx>(&cublasGemmEx));

Nanos steady_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

}  // namespace

struct GemmLoad::Cublas {
  decltype(&cublasCreate_v2) create = nullptr;
  decltype(&cublasDestroy_v2) destroy = nullptr;
  decltype(&cublasSetStream_v2) set_stream = nullptr;
  GemmEx gemm = nullptr;
  cublasHandle_t handle = nullptr;

  // The cuBLAS of the toolkit this was built with: on the loader's path, or
  // where the toolkit was.
  static Cublas open() {
    const std::string name = fmt::format("libcublas.so.{}", CUBLAS_VER_MAJOR);
    void* lib = dlopen(name.c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib) lib = dlopen((std::string(LATEST_CUDA_LIBRARY_DIR) + "/" + name).c_str(), RTLD_NOW | RTLD_LOCAL);
    if (!lib)
      throw Error(ErrorKind::not_supported, fmt::format("`latest watch` needs cuBLAS ({}), which was not found", name),
                  fmt::format("install the CUDA {} toolkit's cuBLAS, or put its lib64 on LD_LIBRARY_PATH", CUBLAS_VER_MAJOR));
    Cublas c;
    const auto get = [&](const char* symbol) {
      void* f = dlsym(lib, symbol);
      if (!f) throw Error(ErrorKind::not_supported, fmt::format("{} lacks {}", name, symbol), "reinstall cuBLAS");
      return f;
    };
    c.create = reinterpret_cast<decltype(c.create)>(get("cublasCreate_v2"));
    c.destroy = reinterpret_cast<decltype(c.destroy)>(get("cublasDestroy_v2"));
    c.set_stream = reinterpret_cast<decltype(c.set_stream)>(get("cublasSetStream_v2"));
    c.gemm = reinterpret_cast<GemmEx>(get("cublasGemmEx"));
    return c;
  }
  void check(cublasStatus_t rc, const char* what) const {
    if (rc != CUBLAS_STATUS_SUCCESS) throw Error(ErrorKind::internal, fmt::format("cuBLAS: {} failed ({})", what, static_cast<int>(rc)));
  }
};

GemmLoad::GemmLoad(int cuda_index, int n) : cuda_index_(cuda_index), n_(n) {
  // Before the workload pins the measuring thread to one core: the cores
  // the process may use.
  CPU_ZERO(&cpus_);
  pthread_getaffinity_np(pthread_self(), sizeof cpus_, &cpus_);
}

GemmLoad::~GemmLoad() {
  running_ = false;
  if (thread_.joinable()) thread_.join();
  if (stream_) cudaStreamSynchronize(static_cast<cudaStream_t>(stream_));
  if (cublas_) {
    if (cublas_->handle) cublas_->destroy(cublas_->handle);
    delete cublas_;
  }
  for (void* p : {a_, b_, c_}) cudaFree(p);
  if (stream_) cudaStreamDestroy(static_cast<cudaStream_t>(stream_));
}

std::string GemmLoad::describe() const { return fmt::format("cuBLAS half GEMMs {0}x{0}x{0}", n_); }

void GemmLoad::prepare() {
  check_cuda(cudaSetDevice(cuda_index_), "selecting the device");
  cublas_ = new Cublas(Cublas::open());
  cudaStream_t stream;
  check_cuda(cudaStreamCreateWithFlags(&stream, cudaStreamNonBlocking), "creating a stream");
  stream_ = stream;
  const std::size_t count = static_cast<std::size_t>(n_) * static_cast<std::size_t>(n_);
  // Random operands: zeros draw far less power than data does.
  unsigned seed = 1;
  for (void** p : {&a_, &b_, &c_}) {
    check_cuda(cudaMalloc(p, count * 2), "allocating the GEMM's matrices");
    check_cuda(launch_fill_half(*p, count, seed++, stream_), "filling the GEMM's matrices");
  }
  cublas_->check(cublas_->create(&cublas_->handle), "creating a handle");
  cublas_->check(cublas_->set_stream(cublas_->handle, stream), "setting its stream");
  // Loaded now, not while the recorder runs: lazy module loading would hold
  // the first GEMMs back.
  run_batch(2);
  check_cuda(cudaStreamSynchronize(stream), "the first GEMMs");
}

void GemmLoad::run_batch(int gemms) {
  const float alpha = 1.0f, beta = 0.0f;
  for (int k = 0; k < gemms; ++k)
    cublas_->check(cublas_->gemm(cublas_->handle, CUBLAS_OP_N, CUBLAS_OP_N, n_, n_, n_, &alpha, a_, CUDA_R_16F, n_, b_,
                                 CUDA_R_16F, n_, &beta, c_, CUDA_R_16F, n_, CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT),
                   "a GEMM");
}

void GemmLoad::run() {
  try {
    pthread_setaffinity_np(pthread_self(), sizeof cpus_, &cpus_);
    check_cuda(cudaSetDevice(cuda_index_), "selecting the device");
    // Two batches in flight: the GPU never waits for the host, and a stop
    // is taken within a batch or two.
    cudaEvent_t done[2];
    // Waited on asleep: a spinning wait would take a core from the recorder's host side.
    for (cudaEvent_t& e : done)
      check_cuda(cudaEventCreateWithFlags(&e, cudaEventDisableTiming | cudaEventBlockingSync), "creating an event");
    constexpr int kBatch = 4;
    for (int i = 0; running_; ++i) {
      run_batch(kBatch);
      issued_ += kBatch;
      check_cuda(cudaEventRecord(done[i % 2], static_cast<cudaStream_t>(stream_)), "recording an event");
      if (i > 0) check_cuda(cudaEventSynchronize(done[(i + 1) % 2]), "waiting for GEMMs");
    }
    check_cuda(cudaStreamSynchronize(static_cast<cudaStream_t>(stream_)), "finishing the GEMMs");
    for (cudaEvent_t e : done) cudaEventDestroy(e);
  } catch (...) {
    error_ = std::current_exception();
  }
}

void GemmLoad::start(Nanos) {
  // Off the measuring thread's core where there is another.
  const int mine = sched_getcpu();
  if (CPU_COUNT(&cpus_) > 1 && mine >= 0) CPU_CLR(mine, &cpus_);
  started_ = steady_ns();
  issued_ = 0;
  running_ = true;
  thread_ = std::thread([this] { run(); });
}

LoadStats GemmLoad::stop(Nanos) {
  running_ = false;
  if (thread_.joinable()) thread_.join();
  if (error_) std::rethrow_exception(std::exchange(error_, nullptr));
  LoadStats s;
  s.seconds = static_cast<double>(steady_ns() - started_) / 1e9;
  s.operations = issued_;
  const double n = n_;
  s.tflops = s.seconds > 0 ? 2 * n * n * n * static_cast<double>(s.operations) / s.seconds / 1e12 : 0;
  return s;
}

}  // namespace latest::cuda
