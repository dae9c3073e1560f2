// How large the report of merged results grows, and how long headless
// Chromium takes to open it, for the two shapes issue 14 names: 100 GPUs x
// 12 pairs, and 4 GPUs x the full 110-clock matrix. The results are
// synthetic (the analysis and report are what is measured): two clusters a
// pair, cards differing by a few per cent.
//   latest_report_scale OUT_DIR       (Chromium on PATH as chromium)
// Prints one line a shape: measurements, report MB, seconds to synthesise
// and analyse the results, to write the report, and for Chromium to draw
// every figure.
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>
#include <string>

#include "analysis/analysis.hpp"
#include "report/report.hpp"

namespace {
namespace fs = std::filesystem;
using latest::Mhz;
using Clock = std::chrono::steady_clock;

double seconds_since(Clock::time_point t) { return std::chrono::duration<double>(Clock::now() - t).count(); }

latest::analysis::Analysis synthetic(int gpus, const std::vector<Mhz>& clocks, int measurements) {
  latest::analysis::Analysis a;
  std::mt19937 draw(7);
  std::normal_distribution<double> noise(0, 0.03);
  for (int g = 0; g < gpus; ++g) {
    latest::analysis::GpuResults r;
    r.host = "node" + std::to_string(g / 8);
    r.uuid = "GPU-scale-" + std::to_string(g);
    r.name = "Simulated NVIDIA H200";
    r.requested_clocks = clocks;
    const double card = 1 + 0.02 * (g % 5);
    for (Mhz i : clocks)
      for (Mhz t : clocks) {
        if (i == t) continue;
        latest::analysis::PairMeasurements m;
        m.pair = {i, t};
        const double base = card * (5 + 6.0 * static_cast<double>(t % 7) / 7);
        for (int k = 1; k <= measurements; ++k) {
          const double v = (k % 9 == 0 ? 2.5 : 1.0) * base * (1 + noise(draw));
          m.index.push_back(k);
          m.switching_ms.push_back(v);
          m.transition_ms.push_back(0.2 * v);
          m.paper_switching_ms.push_back(v + 0.01);
          m.true_switching_ms.push_back(v - 0.0005);
        }
        r.pairs.emplace(std::make_pair(i, t), std::move(m));
      }
    a.results.push_back(std::move(r));
  }
  for (const auto& r : a.results) a.gpus.push_back(latest::analysis::analyse_gpu(r));
  return a;
}

void measure(const char* name, int gpus, const std::vector<Mhz>& clocks, int measurements, const fs::path& out) {
  auto t = Clock::now();
  const auto a = synthetic(gpus, clocks, measurements);
  const double analyse_s = seconds_since(t);  // synthesis included
  const fs::path html = out / (std::string(name) + ".html");
  t = Clock::now();
  latest::report::write_report(a, html);
  const double write_s = seconds_since(t);
  const double mb = static_cast<double>(fs::file_size(html)) / 1e6;
  // Wall time until the page has drawn every figure (data-rendered), with
  // no virtual time: Chromium runs the page as a user's browser would.
  const fs::path dom = out / (std::string(name) + ".dom.html");
  const std::string cmd = "timeout 300 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
                          "--disable-background-networking --disable-component-update --disable-sync "
                          "--user-data-dir=" + (out / "chromium-profile").string() +
                          " --run-all-compositor-stages-before-draw --virtual-time-budget=600000 --dump-dom file://" +
                          html.string() + " > " + dom.string() + " 2>/dev/null";
  t = Clock::now();
  const int rc = std::system(cmd.c_str());
  const double open_s = seconds_since(t);
  std::ifstream in(dom);
  const std::string text{std::istreambuf_iterator<char>(in), {}};
  const bool rendered = text.find("data-rendered=\"1\"") != std::string::npos;
  const bool clean = text.find("data-errors=\"0\"") != std::string::npos;
  std::size_t total = 0;
  for (const auto& r : a.results)
    for (const auto& [k, m] : r.pairs) total += m.switching_ms.size();
  std::printf("%-22s %4d GPUs %6zu pairs/GPU %9zu measurements  report %6.1f MB  synthesise+analyse %5.1f s  write %5.1f s  "
              "Chromium %5.1f s (%s%s)\n",
              name, gpus, a.results.front().pairs.size(), total, mb, analyse_s, write_s, open_s,
              rc == 0 && rendered ? "every figure drawn" : "NOT drawn", clean ? ", no console error" : ", console errors");
}

}  // namespace

int main(int argc, char** argv) {
  if (argc != 2) {
    std::fprintf(stderr, "usage: latest_report_scale OUT_DIR\n");
    return 2;
  }
  const fs::path out = argv[1];
  fs::create_directories(out);
  std::vector<Mhz> four = {990, 1290, 1590, 1980}, all;
  for (Mhz f = 345; f <= 1980; f += 15) all.push_back(f);
  measure("100-gpus-12-pairs", 100, four, 50, out);
  measure("4-gpus-full-matrix", 4, all, 47, out);
  return 0;
}
