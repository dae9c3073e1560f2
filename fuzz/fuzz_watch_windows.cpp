// libFuzzer target: `latest watch`'s windows.bin (the records kept around
// each change, which the judge's replay reads) on arbitrary bytes. It must
// read them or refuse with latest::Error, nothing else.
#include <cstddef>
#include <cstdint>
#include <string>

#include "core/error.hpp"
#include "results/watch_files.hpp"

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  try {
    latest::read_windows_bin(std::string(reinterpret_cast<const char*>(data), size));
  } catch (const latest::Error&) {
  }
  return 0;
}
