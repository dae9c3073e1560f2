// A stand-in libnvidia-ml.so.1 for tests, after DCGM's injection library.
// Its whole state is a key=value file named by FAKE_NVML_STATE, read before
// and written after every call, so a test can set errors, reasons or
// processes mid-run and read back what the program did:
//   name, uuid, bus_id               identity of the one GPU
//   locked_mhz                       0 when no lock is set
//   app_graphics_mhz, app_memory_mhz application clocks (defaults 1980/3201)
//   reasons                          clock-event reasons (decimal)
//   processes                        pids using the GPU, comma-separated
//   fail_setters                     NVML code every setter returns (0 = ok)
//   lost_after_sets                  after this many setter calls every call returns 15
//   set_calls                        setter calls so far (written by the fake)
//   set_log                          every setter call, ';'-separated
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <map>
#include <sstream>
#include <string>

namespace {

using State = std::map<std::string, std::string>;
struct Device {};
Device g_device;

const char* path() {
  const char* p = std::getenv("FAKE_NVML_STATE");
  return p ? p : "/tmp/fake_nvml.state";
}

State load() {
  State s = {{"name", "Fake NVIDIA H200"},
             {"uuid", "GPU-fa4e0000-0000-4000-8000-000000000001"},
             {"bus_id", "00000000:18:00.0"},
             {"locked_mhz", "0"},
             {"app_graphics_mhz", "1980"},
             {"app_memory_mhz", "3201"},
             {"reasons", "0"},
             {"processes", ""},
             {"fail_setters", "0"},
             {"lost_after_sets", "-1"},
             {"set_calls", "0"},
             {"set_log", ""}};
  std::ifstream in(path());
  std::string line;
  while (std::getline(in, line)) {
    const auto eq = line.find('=');
    if (eq != std::string::npos) s[line.substr(0, eq)] = line.substr(eq + 1);
  }
  return s;
}

void save(const State& s) {
  const std::string tmp = std::string(path()) + ".tmp." + std::to_string(getpid());
  {
    std::ofstream out(tmp);
    for (const auto& [k, v] : s) out << k << '=' << v << '\n';
  }
  std::rename(tmp.c_str(), path());
}

long num(const State& s, const char* key) { return std::strtol(s.at(key).c_str(), nullptr, 10); }

bool lost(const State& s) {
  const long after = num(s, "lost_after_sets");
  return after >= 0 && num(s, "set_calls") >= after;
}

int setter(const char* what, const std::string& detail, void (*apply)(State&, const std::string&)) {
  State s = load();
  if (lost(s)) return 15;
  s["set_calls"] = std::to_string(num(s, "set_calls") + 1);
  s["set_log"] += std::string(what) + "(" + detail + ");";
  const int fail = static_cast<int>(num(s, "fail_setters"));
  if (fail == 0) apply(s, detail);
  save(s);
  return fail;
}

void copy(char* out, unsigned len, const std::string& v) {
  std::snprintf(out, len, "%s", v.c_str());
}

}  // namespace

extern "C" {

struct nvmlPciInfo_t {
  char busIdLegacy[16];
  unsigned domain, bus, device, pciDeviceId, pciSubSystemId;
  char busId[32];
};
struct nvmlProcessInfo_t {
  unsigned pid;
  unsigned long long usedGpuMemory;
  unsigned gpuInstanceId, computeInstanceId;
};
using Dev = Device*;

#define QUERY_GUARD        \
  State s = load();        \
  if (lost(s)) return 15;

int nvmlInit_v2() { return 0; }
int nvmlShutdown() { return 0; }
const char* nvmlErrorString(int rc) {
  switch (rc) {
    case 0: return "Success";
    case 3: return "Not Supported";
    case 4: return "Insufficient Permissions";
    case 6: return "Not Found";
    case 15: return "GPU is lost";
    default: return "Unknown Error";
  }
}
int nvmlSystemGetDriverVersion(char* v, unsigned len) {
  copy(v, len, "999.99-fake");
  return 0;
}
int nvmlDeviceGetCount_v2(unsigned* n) {
  *n = 1;
  return 0;
}
int nvmlDeviceGetHandleByIndex_v2(unsigned i, Dev* d) {
  if (i != 0) return 2;
  *d = &g_device;
  return 0;
}
int nvmlDeviceGetHandleByUUID(const char* uuid, Dev* d) {
  if (load()["uuid"] != uuid) return 6;
  *d = &g_device;
  return 0;
}
int nvmlDeviceGetHandleByPciBusId_v2(const char* bus, Dev* d) {
  if (load()["bus_id"] != bus) return 6;
  *d = &g_device;
  return 0;
}
int nvmlDeviceGetIndex(Dev, unsigned* i) {
  *i = 0;
  return 0;
}
int nvmlDeviceGetName(Dev, char* out, unsigned len) {
  QUERY_GUARD
  copy(out, len, s["name"]);
  return 0;
}
int nvmlDeviceGetUUID(Dev, char* out, unsigned len) {
  QUERY_GUARD
  copy(out, len, s["uuid"]);
  return 0;
}
int nvmlDeviceGetPciInfo_v3(Dev, nvmlPciInfo_t* pci) {
  QUERY_GUARD
  std::memset(pci, 0, sizeof *pci);
  copy(pci->busId, sizeof pci->busId, s["bus_id"]);
  return 0;
}
int nvmlDeviceGetSupportedMemoryClocks(Dev, unsigned* count, unsigned* mhz) {
  if (*count < 2) {
    *count = 2;
    return 7;
  }
  mhz[0] = 3201;
  mhz[1] = 2201;
  *count = 2;
  return 0;
}
int nvmlDeviceGetSupportedGraphicsClocks(Dev, unsigned memory, unsigned* count, unsigned* mhz) {
  QUERY_GUARD
  if (memory != 3201 && memory != 2201) return 6;
  const unsigned n = 110;  // the H200 table: 1980 down to 345 in 15 MHz steps
  if (*count < n) {
    *count = n;
    return 7;
  }
  for (unsigned i = 0; i < n; ++i) mhz[i] = 1980 - 15 * i;
  *count = n;
  return 0;
}
int nvmlDeviceGetClockInfo(Dev, unsigned type, unsigned* mhz) {
  QUERY_GUARD
  const long locked = num(s, "locked_mhz");
  *mhz = type == 2 ? 3201 : static_cast<unsigned>(locked ? locked : num(s, "app_graphics_mhz"));
  return 0;
}
int nvmlDeviceGetApplicationsClock(Dev, unsigned type, unsigned* mhz) {
  QUERY_GUARD
  *mhz = static_cast<unsigned>(num(s, type == 2 ? "app_memory_mhz" : "app_graphics_mhz"));
  return 0;
}
int nvmlDeviceGetCurrentClocksEventReasons(Dev, unsigned long long* reasons) {
  QUERY_GUARD
  *reasons = static_cast<unsigned long long>(num(s, "reasons"));
  return 0;
}
int nvmlDeviceGetTemperature(Dev, unsigned, unsigned* c) {
  QUERY_GUARD
  *c = 47;
  return 0;
}
int nvmlDeviceGetPowerManagementLimit(Dev, unsigned* mw) {
  QUERY_GUARD
  *mw = 700000;
  return 0;
}
int nvmlDeviceGetPowerUsage(Dev, unsigned* mw) {
  QUERY_GUARD
  *mw = 312000;
  return 0;
}
int nvmlDeviceGetComputeRunningProcesses_v3(Dev, unsigned* count, nvmlProcessInfo_t* infos) {
  QUERY_GUARD
  std::stringstream list(s["processes"]);
  std::string item;
  unsigned n = 0;
  nvmlProcessInfo_t found[64];
  while (std::getline(list, item, ',') && n < 64)
    if (!item.empty()) found[n++] = {static_cast<unsigned>(std::atoi(item.c_str())), 1 << 20, 0, 0};
  if (*count < n) {
    *count = n;
    return 7;
  }
  for (unsigned i = 0; i < n; ++i) infos[i] = found[i];
  *count = n;
  return 0;
}
int nvmlDeviceGetAPIRestriction(Dev, unsigned, unsigned* state) {
  *state = 1;
  return 0;
}
// The CPUs near the card: state key cpu_affinity (a comma list), else not said.
int nvmlDeviceGetCpuAffinity(Dev, unsigned words, unsigned long* mask) {
  QUERY_GUARD
  if (s["cpu_affinity"].empty()) return 3;
  for (unsigned w = 0; w < words; ++w) mask[w] = 0;
  std::stringstream list(s["cpu_affinity"]);
  std::string item;
  while (std::getline(list, item, ',')) {
    const unsigned cpu = static_cast<unsigned>(std::atoi(item.c_str()));
    if (cpu / 64 < words) mask[cpu / 64] |= 1UL << (cpu % 64);
  }
  return 0;
}
int nvmlDeviceSetGpuLockedClocks(Dev, unsigned lo, unsigned hi) {
  return setter("SetGpuLockedClocks", std::to_string(lo) + "," + std::to_string(hi),
                [](State& s, const std::string& d) { s["locked_mhz"] = d.substr(0, d.find(',')); });
}
int nvmlDeviceResetGpuLockedClocks(Dev) {
  return setter("ResetGpuLockedClocks", "", [](State& s, const std::string&) { s["locked_mhz"] = "0"; });
}
int nvmlDeviceSetApplicationsClocks(Dev, unsigned memory, unsigned graphics) {
  return setter("SetApplicationsClocks", std::to_string(memory) + "," + std::to_string(graphics),
                [](State& s, const std::string& d) {
                  s["app_memory_mhz"] = d.substr(0, d.find(','));
                  s["app_graphics_mhz"] = d.substr(d.find(',') + 1);
                });
}
int nvmlDeviceResetApplicationsClocks(Dev) {
  return setter("ResetApplicationsClocks", "", [](State& s, const std::string&) {
    s["app_graphics_mhz"] = "1980";
    s["app_memory_mhz"] = "3201";
  });
}

}  // extern "C"
