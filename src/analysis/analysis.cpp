#include "analysis/analysis.hpp"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>
#include <thread>

#include <fmt/format.h>
#include <fmt/ranges.h>

#include "core/statistics.hpp"
#include "results/atomic_file.hpp"

namespace latest::analysis {
namespace fs = std::filesystem;
using nlohmann::json;

namespace {

constexpr double kNaN = std::numeric_limits<double>::quiet_NaN();

json number_or_null(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

std::string csv_number(double v) { return std::isfinite(v) ? fmt::format("{:.6f}", v) : std::string(); }

TableTwo table_two(const std::vector<PairAnalysis>& pairs, bool transition) {
  TableTwo t;
  double worst_sum = 0, best_sum = 0;
  bool first = true;
  for (const auto& p : pairs) {
    const Summary& s = transition ? p.transition_filtered : p.filtered;
    if (s.n == 0) continue;
    ++t.pairs;
    worst_sum += s.max;
    best_sum += s.min;
    if (first || s.max < t.worst.min.value) t.worst.min = {s.max, p.pair};
    if (first || s.max > t.worst.max.value) t.worst.max = {s.max, p.pair};
    if (first || s.min < t.best.min.value) t.best.min = {s.min, p.pair};
    if (first || s.min > t.best.max.value) t.best.max = {s.min, p.pair};
    first = false;
  }
  t.worst.mean = t.pairs ? worst_sum / static_cast<double>(t.pairs) : kNaN;
  t.best.mean = t.pairs ? best_sum / static_cast<double>(t.pairs) : kNaN;
  return t;
}

json case_json(const CaseSummary& c) {
  auto extreme = [](const Extreme& e) {
    return json{{"ms", e.value}, {"init_mhz", e.pair.init}, {"target_mhz", e.pair.target}};
  };
  return {{"min", extreme(c.min)}, {"mean_ms", c.mean}, {"max", extreme(c.max)}};
}

json table_json(const TableTwo& t) {
  if (t.pairs == 0) return json(nullptr);
  return {{"pairs", t.pairs}, {"worst_case", case_json(t.worst)}, {"best_case", case_json(t.best)}};
}

}  // namespace

const PairAnalysis* GpuAnalysis::find(Mhz init, Mhz target) const {
  const auto it = index_.find({init, target});
  return it == index_.end() ? nullptr : &pairs[it->second];
}

GpuAnalysis analyse_gpu(const GpuResults& r, const AdaptiveSettings& settings) {
  GpuAnalysis g;
  g.results = &r;
  std::vector<const PairMeasurements*> todo;
  for (const auto& [key, m] : r.pairs) todo.push_back(&m);
  g.pairs.resize(todo.size());
  // Pairs are independent: spread them over the cores.
  const std::size_t threads = std::clamp<std::size_t>(std::thread::hardware_concurrency(), 1, 16);
  const auto work = [&](std::size_t t) {
    for (std::size_t i = t; i < todo.size(); i += threads) {
      const PairMeasurements& m = *todo[i];
      PairAnalysis& p = g.pairs[i];
      p.pair = m.pair;
      p.clustering = adaptive_dbscan(m.switching_ms, settings);
      p.all = summarise(m.switching_ms);
      std::vector<double> kept, kept_transition;
      for (std::size_t j = 0; j < m.switching_ms.size(); ++j)
        if (p.clustering.labels[j] >= 0) {
          kept.push_back(m.switching_ms[j]);
          kept_transition.push_back(m.transition_ms[j]);
        }
      p.filtered = summarise(std::move(kept));
      p.transition_filtered = summarise(std::move(kept_transition));
    }
  };
  std::vector<std::thread> pool;
  for (std::size_t t = 1; t < threads; ++t) pool.emplace_back(work, t);
  work(0);
  for (auto& th : pool) th.join();

  std::set<Mhz> clocks(r.requested_clocks.begin(), r.requested_clocks.end());
  for (const auto& [key, m] : r.pairs) clocks.insert({key.first, key.second});
  for (const auto& [key, why] : r.skipped) clocks.insert({key.first, key.second});
  g.clocks.assign(clocks.begin(), clocks.end());
  for (std::size_t i = 0; i < g.pairs.size(); ++i) g.index_[{g.pairs[i].pair.init, g.pairs[i].pair.target}] = i;
  g.switching = table_two(g.pairs, false);
  g.transition = table_two(g.pairs, true);
  return g;
}

Analysis analyse(const std::vector<fs::path>& dirs, const AdaptiveSettings& settings) {
  Analysis a;
  a.results = read_results(dirs);
  for (const auto& r : a.results) a.gpus.push_back(analyse_gpu(r, settings));
  return a;
}

json matrices_json(const Analysis& a) {
  json gpus = json::array();
  for (const auto& g : a.gpus) {
    json min = json::array(), max = json::array();
    for (Mhz init : g.clocks) {
      json rmin = json::array(), rmax = json::array();
      for (Mhz target : g.clocks) {
        const PairAnalysis* p = g.find(init, target);
        rmin.push_back(p ? number_or_null(p->filtered.min) : json(nullptr));
        rmax.push_back(p ? number_or_null(p->filtered.max) : json(nullptr));
      }
      min.push_back(rmin);
      max.push_back(rmax);
    }
    gpus.push_back({{"host", g.results->host}, {"gpu_uuid", g.results->uuid}, {"name", g.results->name},
                    {"clocks_mhz", g.clocks}, {"min_ms", min}, {"max_ms", max},
                    {"note", "rows: initial clock, columns: target clock; switching latency without outliers"}});
  }
  return {{"gpus", gpus}};
}

json summary_json(const Analysis& a) {
  json gpus = json::array();
  for (const auto& g : a.gpus)
    gpus.push_back({{"host", g.results->host}, {"gpu_uuid", g.results->uuid}, {"name", g.results->name},
                    {"switching_latency", table_json(g.switching)},
                    {"transition_latency", table_json(g.transition)}});
  return {{"gpus", gpus}};
}

std::vector<std::string> pair_flags(const GpuResults& results, const PairAnalysis& pair) {
  std::vector<std::string> flags;
  if (pair.clustering.flagged) flags.push_back("noisy");
  if (results.target_not_reached.count({pair.pair.init, pair.pair.target})) flags.push_back("target_not_reached");
  return flags;
}

std::string flag_text(const std::string& flag) {
  if (flag == "noisy") return "noise > 10 %";
  if (flag == "target_not_reached") return "target not reached";
  return flag;
}

std::string summary_text(const Analysis& a) {
  std::string out =
      "Switching latency: request until every SM runs at the target clock for good. Transition latency: from when\n"
      "the clock starts to move until then. Worst / best case: a pair's maximum / minimum; over pairs, their min,\n"
      "mean and max (the paper's Table II). Outliers (adaptive DBSCAN) are left out here; README.md, \"Terms\".\n\n";
  for (const auto& g : a.gpus) {
    out += fmt::format("{} on {} ({}), {} pairs measured, {} skipped\n", g.results->name, g.results->host,
                       g.results->uuid, g.pairs.size(), g.results->skipped.size());
    for (const auto& [title, t] : {std::pair{"switching latency", &g.switching}, std::pair{"transition latency", &g.transition}}) {
      if (t->pairs == 0) continue;
      out += fmt::format("  {} [ms], without outliers\n", title);
      for (const auto& [name, c] : {std::pair{"worst case", &t->worst}, std::pair{"best case", &t->best}}) {
        out += fmt::format("    {:<10}  min {:>10.3f}  ({} -> {})\n", name, c->min.value, c->min.pair.init, c->min.pair.target);
        out += fmt::format("    {:<10}  mean {:>9.3f}\n", "", c->mean);
        out += fmt::format("    {:<10}  max {:>10.3f}  ({} -> {})\n", "", c->max.value, c->max.pair.init, c->max.pair.target);
      }
    }
    for (const auto& p : g.pairs) {
      std::vector<std::string> texts;
      for (const auto& f : pair_flags(*g.results, p)) texts.push_back(flag_text(f));
      if (!texts.empty())
        out += fmt::format("  flagged {} -> {}: {} (look at its figure in the report before trusting it)\n",
                           p.pair.init, p.pair.target, fmt::join(texts, ", "));
    }
    out += '\n';
  }
  return out;
}

void write_analysis(const Analysis& a, const fs::path& out) {
  std::string measurements = "host,gpu_uuid,init_mhz,target_mhz,index,switching_latency_ms,transition_latency_ms,cluster,outlier\n";
  std::string pairs = "host,gpu_uuid,init_mhz,target_mhz,subset,n,outliers,clusters,silhouette,min_ms,p5_ms,median_ms,mean_ms,p95_ms,max_ms,min_samples,eps_ms,flagged\n";
  std::string mmin = "host,gpu_uuid,init_mhz", mmax;
  for (std::size_t gi = 0; gi < a.gpus.size(); ++gi) {
    const GpuAnalysis& g = a.gpus[gi];
    const GpuResults& r = *g.results;
    for (const auto& p : g.pairs) {
      const PairMeasurements& m = r.pairs.at({p.pair.init, p.pair.target});
      for (std::size_t j = 0; j < m.switching_ms.size(); ++j) {
        const int label = p.clustering.labels[j];
        measurements += fmt::format("{},{},{},{},{},{:.6f},{:.6f},{},{}\n", r.host, r.uuid, p.pair.init, p.pair.target,
                                    m.index[j], m.switching_ms[j], m.transition_ms[j], label, label < 0 ? 1 : 0);
      }
      for (const auto& [subset, s] : {std::pair{"all", &p.all}, std::pair{"filtered", &p.filtered}})
        pairs += fmt::format("{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{},{:.6g},{}\n", r.host, r.uuid, p.pair.init,
                             p.pair.target, subset, s->n, p.clustering.noise, p.clustering.clusters,
                             csv_number(p.clustering.silhouette), csv_number(s->min), csv_number(s->p5),
                             csv_number(s->median), csv_number(s->mean), csv_number(s->p95), csv_number(s->max),
                             p.clustering.min_samples, p.clustering.eps, p.clustering.flagged ? 1 : 0);
    }
  }
  // Matrices: one block of rows per GPU, the target clocks as columns.
  std::set<Mhz> all_clocks;
  for (const auto& g : a.gpus) all_clocks.insert(g.clocks.begin(), g.clocks.end());
  for (Mhz t : all_clocks) mmin += fmt::format(",{}", t);
  mmin += '\n';
  mmax = mmin;
  for (const auto& g : a.gpus)
    for (Mhz init : g.clocks) {
      mmin += fmt::format("{},{},{}", g.results->host, g.results->uuid, init);
      mmax += fmt::format("{},{},{}", g.results->host, g.results->uuid, init);
      for (Mhz target : all_clocks) {
        const PairAnalysis* p = g.find(init, target);
        mmin += "," + (p ? csv_number(p->filtered.min) : std::string());
        mmax += "," + (p ? csv_number(p->filtered.max) : std::string());
      }
      mmin += '\n';
      mmax += '\n';
    }
  write_file_atomically(out / "measurements.csv", measurements);
  write_file_atomically(out / "pairs.csv", pairs);
  write_file_atomically(out / "matrix_min.csv", mmin);
  write_file_atomically(out / "matrix_max.csv", mmax);
  write_file_atomically(out / "matrices.json", matrices_json(a).dump(1) + "\n");
  write_file_atomically(out / "summary.json", summary_json(a).dump(2) + "\n");
  write_file_atomically(out / "summary.txt", summary_text(a));
}

}  // namespace latest::analysis
