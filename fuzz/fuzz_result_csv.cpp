// libFuzzer target: a pair's result CSV (the analysis reader) on arbitrary
// bytes. It must read them or refuse with latest::Error, nothing else.
#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <fstream>

#include "analysis/result_reader.hpp"
#include "core/error.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  static const auto file = std::filesystem::temp_directory_path() / "latest-fuzz-result.csv";
  std::ofstream(file, std::ios::binary | std::ios::trunc).write(reinterpret_cast<const char*>(data),
                                                               static_cast<std::streamsize>(size));
  try {
    latest::analysis::read_pair_csv(file, {1980, 990});
  } catch (const latest::Error&) {
  }
  return 0;
}
