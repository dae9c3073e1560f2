// libFuzzer target: a result directory's manifest.json (the analysis reader,
// then the whole analysis) on arbitrary bytes. Read or refused with
// latest::Error, nothing else.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include "analysis/analysis.hpp"
#include "core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto dir = [] {
    const auto d = std::filesystem::temp_directory_path() / "latest-fuzz-run";
    std::filesystem::create_directories(d);
    // One pair's CSV the manifest may name.
    std::ofstream(d / "1980_990.csv") << "index,switching_latency_ms,transition_latency_ms,call_latency_ms,accepted_sms,"
                                         "max_sm,sm_spread_ms,sync_uncertainty_us,temperature_c,power_w,true_latency_ms,"
                                         "true_transition_ms,paper_switching_latency_ms,paper_transition_latency_ms,"
                                         "switching_uncertainty_us\n1,5.1,0.5,0.2,132,3,0.001,1.0,40,130,,,5.2,0.6,0.01\n";
    return d;
  }();
  std::ofstream(dir / "manifest.json", std::ios::binary | std::ios::trunc)
      .write(reinterpret_cast<const char*>(data), static_cast<std::streamsize>(size));
  try {
    latest::analysis::analyse({dir});
  } catch (const latest::Error&) {
  }
  return 0;
}
