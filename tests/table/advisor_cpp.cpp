// The advisor through the C++ wrapper: advisor_c.c's queries and format,
// for advisor_agreement.py to compare.
#include <latest/latency_table.hpp>

#include <cstdio>
#include <fstream>
#include <map>
#include <string>

namespace {

void print_route(const latest::Route& r) {
  std::printf(" hops %u", static_cast<unsigned>(r.clocks_mhz.size()));
  for (std::size_t h = 0; h < r.clocks_mhz.size(); ++h) std::printf(" %u/%.6f", r.clocks_mhz[h], r.wait_ms[h]);
  std::printf(" latency %.6f band %.6f %.6f direct %.6f", r.latency_ms, r.low_ms, r.high_ms, r.direct_ms);
}

latest::Statistic statistic_named(const std::string& name) {
  static const std::map<std::string, latest::Statistic> all = {
      {"min", latest::Statistic::min}, {"p05", latest::Statistic::p05}, {"median", latest::Statistic::median},
      {"mean", latest::Statistic::mean}, {"p95", latest::Statistic::p95}, {"p99", latest::Statistic::p99},
      {"max", latest::Statistic::max}};
  return all.at(name);
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 3) return 2;
  const auto t = latest::LatencyTable::load(argv[1]);
  std::ifstream queries(argv[2]);
  std::string kind, statistic, rule;
  unsigned from = 0, to = 0;
  double phase = 0, gain = 0, penalty = 0, margin = 0;
  while (queries >> kind) {
    if (kind == "route") {
      queries >> from >> to >> statistic >> margin;
      std::printf("route %u %u %s %.6f: status ", from, to, statistic.c_str(), margin);
      try {
        const latest::Route r = t.route(from, to, statistic_named(statistic), margin);
        std::printf("0");
        print_route(r);
      } catch (const latest::TableError& e) {
        std::printf("%d", e.status());
      }
    } else {
      queries >> from >> to >> phase >> statistic >> rule >> gain >> penalty >> margin;
      std::printf("advise %u %u %.6f %s %s: status ", from, to, phase, statistic.c_str(), rule.c_str());
      try {
        const latest::Advice a = t.advise(from, to, phase, statistic_named(statistic),
                                          rule == "3x" ? latest::Rule::three_x : latest::Rule::break_even,
                                          {gain, penalty}, margin);
        std::printf("0 %s %s latency %.6f lost %.6f interval %.6f route", a.decision(), to_string(a.rule), a.latency_ms,
                    a.time_lost_ms, a.min_interval_ms);
        print_route(a.route);
        std::printf(" back");
        print_route(a.back);
      } catch (const latest::TableError& e) {
        std::printf("%d", e.status());
      }
    }
    std::printf("\n");
  }
  return 0;
}
