#pragma once
// What `--device` names: an index, a UUID (GPU-… or MIG-…) or a PCI bus id.
// One parser, so every backend reads the option alike.
#include <cstdlib>
#include <string>

#include <fmt/format.h>

#include "core/error.hpp"

namespace latest {

struct DeviceSelector {
  enum class Kind { index, uuid, bus_id } kind = Kind::index;
  std::string text;  // as given
  int index = 0;     // for Kind::index
};

inline DeviceSelector parse_device_selector(const std::string& d) {
  if (d.rfind("GPU-", 0) == 0 || d.rfind("MIG-", 0) == 0) return {DeviceSelector::Kind::uuid, d};
  if (d.find(':') != std::string::npos) return {DeviceSelector::Kind::bus_id, d};
  char* end = nullptr;
  const long index = std::strtol(d.c_str(), &end, 10);
  if (d.empty() || *end || index < 0)
    throw Error(ExitCode::usage, fmt::format("--device '{}' is neither an index, a UUID nor a PCI bus id", d),
                "e.g. --device 0, --device GPU-8f3c..., --device 00000000:17:00.0");
  return {DeviceSelector::Kind::index, d, static_cast<int>(index)};
}

}  // namespace latest
