#include "analysis/latency_table_json.hpp"

#include <algorithm>
#include <set>

namespace latest::analysis {
using nlohmann::json;

namespace {

json statistics(const Summary& s) {
  return {{"min", s.min}, {"p05", s.p5}, {"median", s.median}, {"mean", s.mean},
          {"p95", s.p95}, {"p99", s.p99}, {"max", s.max}};
}

// The cards of one model as one: their measurements of a pair pooled.
GpuResults merged(const std::vector<const GpuResults*>& cards) {
  GpuResults m = *cards.front();
  for (std::size_t i = 1; i < cards.size(); ++i) {
    const GpuResults& c = *cards[i];
    m.dirs.insert(m.dirs.end(), c.dirs.begin(), c.dirs.end());
    m.manifests.insert(m.manifests.end(), c.manifests.begin(), c.manifests.end());
    for (const auto& [k, p] : c.pairs) {
      auto [it, fresh] = m.pairs.try_emplace(k, p);
      if (fresh) continue;
      auto& into = it->second;
      into.index.insert(into.index.end(), p.index.begin(), p.index.end());
      into.switching_ms.insert(into.switching_ms.end(), p.switching_ms.begin(), p.switching_ms.end());
      into.transition_ms.insert(into.transition_ms.end(), p.transition_ms.begin(), p.transition_ms.end());
      into.paper_switching_ms.insert(into.paper_switching_ms.end(), p.paper_switching_ms.begin(), p.paper_switching_ms.end());
    }
    for (const auto& [k, why] : c.skipped) m.skipped.emplace(k, why);
    m.target_not_reached.insert(c.target_not_reached.begin(), c.target_not_reached.end());
    for (Mhz f : c.requested_clocks)
      if (std::find(m.requested_clocks.begin(), m.requested_clocks.end(), f) == m.requested_clocks.end())
        m.requested_clocks.push_back(f);
  }
  for (const auto& [k, p] : m.pairs) m.skipped.erase(k);  // measured on one card: measured
  std::sort(m.requested_clocks.begin(), m.requested_clocks.end());
  return m;
}

json table(const GpuAnalysis& g, const std::vector<const GpuResults*>& cards, const std::string& filter_name) {
  const GpuResults& r = *g.results;
  std::set<std::string> uuids, drivers, versions, detectors, apis;
  std::set<double> power_limits;
  std::set<Mhz> memory;
  for (const GpuResults* c : cards) uuids.insert(c->uuid);
  for (const json& m : r.manifests) {
    versions.insert(m.value("tool", json::object()).value("version", "unknown"));
    detectors.insert(m.value("detector", "paper"));  // schema 1: the paper's
    apis.insert(m.value("settings", json::object()).value("clock_api", "locked"));
    const json settings = m.value("settings", json::object());
    if (settings.contains("driver_version") && settings["driver_version"].is_string())
      drivers.insert(settings["driver_version"].get<std::string>());
    if (settings.contains("power_limit_w") && settings["power_limit_w"].is_number())
      power_limits.insert(settings["power_limit_w"].get<double>());
    for (const json& p : m.value("pairs", json::array()))
      for (const json& f : p.value("memory_mhz_seen", json::array()))
        if (f.is_number_integer()) memory.insert(f.get<Mhz>());
  }
  const auto one_or_list = [](const std::set<std::string>& s) {
    return s.empty() ? json(nullptr) : s.size() == 1 ? json(*s.begin()) : json(s);
  };
  json pairs = json::array();
  std::set<std::pair<Mhz, Mhz>> listed;
  for (const auto& p : g.pairs) {
    const double n = static_cast<double>(p.all.n);
    pairs.push_back({{"init_mhz", p.pair.init}, {"target_mhz", p.pair.target}, {"status", "measured"},
                     {"n", p.all.n}, {"outlier_share", n > 0 ? p.clustering.noise / n : 0.0},
                     {"flags", pair_flags(r, p)}, {"switching_ms", statistics(p.filtered)},
                     {"transition_ms", statistics(p.transition_filtered)}});
    listed.insert({p.pair.init, p.pair.target});
  }
  for (const auto& [k, why] : r.skipped) {
    if (!listed.insert(k).second) continue;
    pairs.push_back({{"init_mhz", k.first}, {"target_mhz", k.second}, {"status", "skipped"}, {"reason", why}});
  }
  for (Mhz a : g.clocks)
    for (Mhz b : g.clocks)
      if (a != b && listed.insert({a, b}).second)
        pairs.push_back({{"init_mhz", a}, {"target_mhz", b}, {"status", "missing"}});
  return {{"schema_version", kLatencyTableSchemaVersion},
          {"kind", "latest latency table"},
          {"gpu", {{"model", r.name}, {"uuids", uuids}}},
          {"conditions",
           {{"driver", one_or_list(drivers)},
            {"memory_mhz", memory},
            {"power_limit_w", power_limits.empty()        ? json(nullptr)
                              : power_limits.size() == 1 ? json(*power_limits.begin())
                                                         : json(power_limits)},
            {"clock_api", one_or_list(apis)},
            {"tool_version", one_or_list(versions)},
            {"detector", one_or_list(detectors)},
            {"outlier_filter", filter_name}}},
          {"clocks_mhz", g.clocks},
          {"pairs", pairs}};
}

}  // namespace

std::map<std::string, json> latency_tables(const Analysis& analysis, const AdaptiveSettings& filter,
                                           const std::string& filter_name) {
  std::map<std::string, std::vector<std::size_t>> by_model;
  for (std::size_t i = 0; i < analysis.results.size(); ++i) by_model[analysis.results[i].name].push_back(i);
  std::map<std::string, json> out;
  for (const auto& [model, which] : by_model) {
    std::vector<const GpuResults*> cards;
    for (std::size_t i : which) cards.push_back(&analysis.results[i]);
    if (cards.size() == 1) {
      out[model] = table(analysis.gpus[which.front()], cards, filter_name);
    } else {
      const GpuResults all = merged(cards);
      const GpuAnalysis g = analyse_gpu(all, filter);
      out[model] = table(g, cards, filter_name);
    }
  }
  return out;
}

}  // namespace latest::analysis
