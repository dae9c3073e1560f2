// libFuzzer target: the latency-table loader on arbitrary bytes. It must
// return a status, never crash, leak or read out of bounds.
#include <cstddef>
#include <cstdint>
#include <string>

namespace latest::table_detail {
int parse_for_fuzzing(const std::string& text);
}

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  latest::table_detail::parse_for_fuzzing(std::string(reinterpret_cast<const char*>(data), size));
  return 0;
}
