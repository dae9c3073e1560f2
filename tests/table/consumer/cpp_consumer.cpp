// The C++ API from an installed prefix: prints init target median p95 of
// each measured pair, as the C consumer does.
#include <latest/latency_table.hpp>

#include <cstdio>

int main(int argc, char** argv) {
  if (argc != 2) return 2;
  try {
    const auto table = latest::LatencyTable::load(argv[1]);
    const auto clocks = table.clocks();
    for (unsigned a : clocks)
      for (unsigned b : clocks) {
        if (a == b) continue;
        try {
          const double median = table.latency_ms(a, b, latest::Statistic::median);
          std::printf("%u %u %.6f %.6f\n", a, b, median, table.latency_ms(a, b, latest::Statistic::p95));
        } catch (const latest::TableError& e) {
          if (e.status() != LATEST_ERR_NOT_MEASURED) throw;
        }
      }
  } catch (const latest::TableError& e) {
    std::fprintf(stderr, "%s\n", e.what());
    return 1;
  }
  return 0;
}
