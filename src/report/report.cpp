#include "report/report.hpp"

#include <algorithm>
#include <cmath>
#include <map>
#include <set>

#include <fmt/format.h>

#include "report/charting_library.hpp"
#include "results/atomic_file.hpp"

namespace latest::report {
using nlohmann::json;
using namespace latest::analysis;

namespace {

// The first dash-separated group of `a` that differs from `b`'s.
std::string differing_uuid_group(const std::string& a, const std::string& b) {
  std::size_t start = 0;
  for (;;) {
    const std::size_t end = std::min(a.find('-', start), a.size());
    if (end == a.size() || start >= b.size() || a.compare(start, end - start, b, start, end - start) != 0)
      return a.substr(start, end - start);
    start = end + 1;
  }
}

// Cards' names short enough for a legend: host and index, and where two
// share those, the first group of their UUIDs that differs (UUIDs of one
// model share most of their characters, so a cut UUID names none).
std::vector<std::string> short_gpu_names(const std::vector<const GpuResults*>& cards) {
  std::vector<std::string> base, names;
  for (const GpuResults* r : cards) base.push_back(fmt::format("{} GPU {}", r->host, r->gpu_index));
  for (std::size_t i = 0; i < cards.size(); ++i) {
    names.push_back(base[i]);
    for (std::size_t j = 0; j < cards.size(); ++j)
      if (j != i && base[j] == base[i]) {
        names[i] += fmt::format(" (…{})", differing_uuid_group(cards[i]->uuid, cards[j]->uuid));
        break;
      }
  }
  return names;
}

json num(double v) { return std::isfinite(v) ? json(v) : json(nullptr); }

double median_of(std::vector<double> xs) {
  if (xs.empty()) return std::numeric_limits<double>::quiet_NaN();
  std::sort(xs.begin(), xs.end());
  const std::size_t n = xs.size();
  return n % 2 ? xs[n / 2] : (xs[n / 2 - 1] + xs[n / 2]) / 2;
}

json figures_json(const std::vector<Figure>& figures) {
  json out = json::array();
  for (const auto& f : figures) out.push_back({{"id", f.id}, {"caption", f.caption}, {"spec", f.spec}});
  return out;
}

// The per-pair tables list every pair up to this many; beyond, the slowest
// ones and those with events or misfits, and say where the rest is.
constexpr std::size_t kTablePairs = 300;

json gpu_json(const GpuAnalysis& g, std::size_t index, const json& summary, const json& matrices, const Detail& detail) {
  const GpuResults& r = *g.results;
  // Per pair from the runs' manifests: misfit counts and the trace file.
  std::map<std::pair<Mhz, Mhz>, json> misfits, pair_events;
  std::map<std::pair<Mhz, Mhz>, std::string> traces;
  for (std::size_t i = 0; i < r.manifests.size(); ++i)
    for (const auto& e : r.manifests[i].value("pairs", json::array())) {
      const std::pair<Mhz, Mhz> k{e.value("init_mhz", 0), e.value("target_mhz", 0)};
      json counts = json::object();
      const json found = e.value("misfits", json::object());
      for (const auto& [kind, v] : found.items()) counts[kind] = v.value("count", 0);
      if (!counts.empty()) misfits.emplace(k, counts);
      // Measurements discarded (thermal, ...) and windows retried, by reason.
      json happened = json::object();
      for (const char* what : {"discarded", "failed"}) {
        const json by_reason = e.value(what, json::object());
        for (const auto& [why, n] : by_reason.items())
          if (n.is_number_integer() && n.get<int>() > 0)
            happened[fmt::format("{} {}", what == std::string("failed") ? "retried" : "discarded", why)] = n;
      }
      if (e.value("target_not_reached", false) && e.contains("clock_reached_mhz") && e["clock_reached_mhz"].is_number())
        happened[fmt::format("target not reached: the SMs ran at {:.0f} MHz", e["clock_reached_mhz"].get<double>())] = 1;
      const json retried = e.value("misfit_retries", json::object());
      for (const auto& [why, n] : retried.items())
        if (n.is_number_integer() && n.get<int>() > 0) happened["misfit taken again: " + why] = n;
      if (const json aside = e.value("set_aside", json::array()); aside.is_array() && !aside.empty())
        happened[fmt::format("set aside, misfits after every retry (measurements {})", aside.dump())] = aside.size();
      if (!happened.empty()) pair_events.emplace(k, happened);
      if (e.contains("trace_file")) traces.emplace(k, (r.dirs[i] / e["trace_file"].get<std::string>()).string());
    }
  json pairs = json::array();
  for (const auto& p : g.pairs) {
    const PairMeasurements& m = r.pairs.at({p.pair.init, p.pair.target});
    const std::pair<Mhz, Mhz> k{p.pair.init, p.pair.target};
    std::vector<double> own, paper;  // measurements both detectors dated
    for (std::size_t i = 0; i < m.switching_ms.size(); ++i)
      if (std::isfinite(m.paper_switching_ms[i])) own.push_back(m.switching_ms[i]), paper.push_back(m.paper_switching_ms[i]);
    // The measurements themselves are in the scatter figure's data.
    pairs.push_back({{"init", p.pair.init}, {"target", p.pair.target}, {"n", m.switching_ms.size()},
                     {"outliers", p.clustering.noise},
                     {"clusters", p.clustering.clusters}, {"silhouette", num(p.clustering.silhouette)},
                     {"flagged", p.clustering.flagged}, {"min", num(p.filtered.min)}, {"median", num(p.filtered.median)},
                     {"mean", num(p.filtered.mean)}, {"max", num(p.filtered.max)},
                     {"both_n", own.size()}, {"own_median", num(median_of(own))}, {"paper_median", num(median_of(paper))},
                     {"misfits", misfits.count(k) ? misfits.at(k) : json::object()},
                     {"events", pair_events.count(k) ? pair_events.at(k) : json::object()},
                     {"trace_file", traces.count(k) ? json(traces.at(k)) : json(nullptr)}});
  }
  json skipped = json::array();
  for (const auto& [k, why] : r.skipped) skipped.push_back({{"init", k.first}, {"target", k.second}, {"reason", why}});
  // Requested pairs with neither a result nor a reason: a run still going or cut short.
  json missing = json::array();
  for (Mhz a : r.requested_clocks)
    for (Mhz b : r.requested_clocks)
      if (a != b && !r.pairs.count({a, b}) && !r.skipped.count({a, b})) missing.push_back(fmt::format("{}->{}", a, b));
  json calibration = json::array(), events = json::array(), runs = json::array();
  for (std::size_t i = 0; i < r.manifests.size(); ++i) {
    const json& m = r.manifests[i];
    for (const auto& c : m.value("calibration", json::array()))
      calibration.push_back({{"mhz", c.value("mhz", 0)}, {"iteration_fmas", c.value("iteration_fmas", 0)},
                             {"mean_ns", c.value("mean_ns", 0.0)}, {"sd_ns", c.value("sd_ns", 0.0)},
                             {"wakeup_ms", c.value("wakeup_ms", json(nullptr))}, {"n", c.value("n", 0)}});
    for (const auto& e : m.value("throttle_events", json::array())) events.push_back(e);
    const json dev = m.value("device", json::object());
    const json sync = m.value("timer_sync", json::object());
    runs.push_back({{"dir", r.dirs[i].string()},
                    {"text", fmt::format("latest {}, backend {}, status {}, started {}, PCI {}, sync uncertainty ≤ {:.2f} µs, drift {:.2f} ppm",
                                         m.value("tool", json::object()).value("version", "?"), dev.value("backend", "?"),
                                         m.value("status", "?"), m.value("started_utc", "?"), dev.value("pci_bus_id", "?"),
                                         sync.value("max_uncertainty_us", 0.0), sync.value("drift_ppm", 0.0))}});
  }
  const std::size_t pairs_total = pairs.size();
  if (pairs_total > kTablePairs) {
    // The slowest worst cases, then every pair with something to say.
    std::vector<std::size_t> order(pairs_total);
    for (std::size_t i = 0; i < order.size(); ++i) order[i] = i;
    const auto worst = [&](std::size_t i) { return pairs[i]["max"].is_number() ? pairs[i]["max"].get<double>() : 0.0; };
    std::stable_sort(order.begin(), order.end(), [&](std::size_t l, std::size_t r) { return worst(l) > worst(r); });
    json kept = json::array();
    for (std::size_t rank = 0; rank < order.size(); ++rank) {
      const json& p = pairs[order[rank]];
      if (rank < kTablePairs / 3 || !p["events"].empty() || !p["misfits"].empty() || !p["trace_file"].is_null())
        kept.push_back(p);
    }
    pairs = std::move(kept);
  }
  // The matrices and measurements are in the figures' specs, not twice.
  return {{"host", r.host}, {"uuid", r.uuid}, {"name", r.name}, {"pairs", pairs}, {"pairs_total", pairs_total},
          {"skipped", skipped}, {"missing", missing}, {"calibration", calibration},
          {"throttle_events", events}, {"runs", runs}, {"summary", summary},
          {"figures", figures_json(gpu_figures(g, index, matrices, detail))}};
}

// For each model with two or more GPUs: range matrices and the widest pairs.
json models_json(const Analysis& a) {
  std::map<std::string, std::vector<const GpuAnalysis*>> by_model;
  for (const auto& g : a.gpus) by_model[g.results->name].push_back(&g);
  json models = json::array();
  for (const auto& [name, gpus] : by_model) {
    if (gpus.size() < 2) continue;
    std::set<Mhz> clock_set;
    for (const auto* g : gpus) clock_set.insert(g->clocks.begin(), g->clocks.end());
    const std::vector<Mhz> clocks(clock_set.begin(), clock_set.end());
    json range_min = json::array(), range_max = json::array();
    std::vector<std::pair<double, ClockPair>> spreads;
    for (Mhz x : clocks) {
      json rmin = json::array(), rmax = json::array();
      for (Mhz y : clocks) {
        double lo_min = INFINITY, hi_min = -INFINITY, lo_max = INFINITY, hi_max = -INFINITY;
        bool all = x != y;
        for (const auto* g : gpus) {
          const PairAnalysis* p = all ? g->find(x, y) : nullptr;
          if (!p || p->filtered.n == 0) {
            all = false;
            break;
          }
          lo_min = std::min(lo_min, p->filtered.min);
          hi_min = std::max(hi_min, p->filtered.min);
          lo_max = std::min(lo_max, p->filtered.max);
          hi_max = std::max(hi_max, p->filtered.max);
        }
        rmin.push_back(all ? json(hi_min - lo_min) : json(nullptr));
        rmax.push_back(all ? json(hi_max - lo_max) : json(nullptr));
        if (all) spreads.push_back({hi_max - lo_max, {x, y}});
      }
      range_min.push_back(rmin);
      range_max.push_back(rmax);
    }
    std::sort(spreads.begin(), spreads.end(), [](const auto& l, const auto& r) { return l.first > r.first; });
    json widest = json::array(), names = json::array();
    std::vector<const GpuResults*> cards;
    for (const auto* g : gpus) cards.push_back(g->results);
    for (const std::string& n : short_gpu_names(cards)) names.push_back(n);
    for (std::size_t i = 0; i < std::min<std::size_t>(5, spreads.size()); ++i) {
      const ClockPair pair = spreads[i].second;
      json per_gpu = json::array();
      for (const auto* g : gpus) {
        const auto& m = g->results->pairs.at({pair.init, pair.target});
        const PairAnalysis* p = g->find(pair.init, pair.target);
        std::vector<double> kept;
        for (std::size_t j = 0; j < m.switching_ms.size(); ++j)
          if (p->clustering.labels[j] >= 0) kept.push_back(m.switching_ms[j]);
        per_gpu.push_back({{"values", kept}});
      }
      widest.push_back({{"init", pair.init}, {"target", pair.target}, {"per_gpu", per_gpu}});
    }
    // Which cards deviate most: over the pairs every card measured, the mean
    // of |its median - the median of the cards' medians| / that median.
    std::vector<double> deviation(gpus.size(), 0.0);
    int shared = 0;
    for (Mhz x : clocks)
      for (Mhz y : clocks) {
        std::vector<double> medians;
        for (const auto* g : gpus)
          if (const PairAnalysis* p = x != y ? g->find(x, y) : nullptr; p && p->filtered.n > 0) medians.push_back(p->filtered.median);
        if (medians.size() != gpus.size()) continue;
        ++shared;
        const double centre = median_of(medians);
        for (std::size_t g = 0; g < gpus.size(); ++g) deviation[g] += std::abs(medians[g] - centre) / centre;
      }
    json ranking = json::array();
    std::vector<std::size_t> order(gpus.size());
    for (std::size_t g = 0; g < order.size(); ++g) order[g] = g;
    std::sort(order.begin(), order.end(), [&](std::size_t l, std::size_t r) { return deviation[l] > deviation[r]; });
    for (std::size_t g : order)
      ranking.push_back({{"gpu", names[g]}, {"deviation_percent", shared ? 100 * deviation[g] / shared : 0.0}, {"pairs", shared}});
    const json inputs = {{"gpus", names}, {"clocks", clocks}, {"range_min", range_min}, {"range_max", range_max},
                         {"widest", widest}};
    models.push_back({{"name", name}, {"gpus", names}, {"ranking", ranking},
                      {"figures", figures_json(model_figures(inputs, models.size()))}});
  }
  return models;
}

}  // namespace

json report_data(const Analysis& a) {
  const json summary = summary_json(a);
  const json matrices = matrices_json(a);
  json gpus = json::array();
  const Detail detail = detail_for(a);
  for (std::size_t i = 0; i < a.gpus.size(); ++i)
    gpus.push_back(gpu_json(a.gpus[i], i, summary["gpus"][i], matrices["gpus"][i], detail));
  return {{"tool_version", LATEST_VERSION}, {"charting", kChartingVersions}, {"summarised", !detail.full},
          {"gpus", gpus}, {"models", models_json(a)}};
}

std::vector<Figure> report_figures(const Analysis& a) {
  const json data = report_data(a);
  std::vector<Figure> out;
  for (const char* group : {"gpus", "models"})
    for (const auto& g : data[group])
      for (const auto& f : g["figures"]) out.push_back({f["id"], f["caption"], f["spec"]});
  return out;
}

bool has_charting_library() { return kChartingLibrary[0] != '\0'; }

std::string render_html(const Analysis& a) {
  std::string data = report_data(a).dump();
  // Inside <script>, "</" could end the element early.
  std::string safe;
  safe.reserve(data.size());
  for (std::size_t i = 0; i < data.size(); ++i) {
    if (data[i] == '<' && i + 1 < data.size() && data[i + 1] == '/') {
      safe += "<\\/";
      ++i;
    } else {
      safe += data[i];
    }
  }
  std::string html = kTemplate;
  const std::string marker = "__LATEST_DATA__";
  html.replace(html.find(marker), marker.size(), safe);
  const std::string library = "__LATEST_CHARTING__";
  html.replace(html.find(library), library.size(), kChartingLibrary);
  return html;
}

void write_report(const Analysis& a, const std::filesystem::path& file) { write_file_atomically(file, render_html(a)); }

}  // namespace latest::report
