#include "results/accuracy_json.hpp"

namespace latest {

nlohmann::json to_json(const Summary& s) {
  return {{"n", s.n}, {"min", s.min}, {"median", s.median}, {"p95", s.p95}, {"p99", s.p99}, {"max", s.max}};
}

nlohmann::json to_json(const Accuracy& a) {
  nlohmann::json doc = {{"error_us", to_json(a.error_us)}, {"within_bound", a.within_bound()}};
  const std::pair<const char*, std::optional<Summary> Accuracy::*> spreads[] = {
      {"error_target_iterations", &Accuracy::error_iterations},
      {"delivery_us", &Accuracy::delivery_us},
      {"in_effect_us", &Accuracy::in_effect_us},
      {"error_minus_in_effect_us", &Accuracy::residual_us},
      {"error_minus_in_effect_target_iterations", &Accuracy::residual_iterations},
      {"excess_over_bound_us", &Accuracy::excess_us}};
  for (const auto& [key, field] : spreads)
    if (const auto& s = a.*field) doc[key] = to_json(*s);
  if (a.early_share) doc["early_share"] = *a.early_share;
  if (a.late_share) doc["late_beyond_bound_share"] = *a.late_share;
  const std::pair<const char*, std::optional<double> TruthComparison::*> known[] = {
      {"target_iteration_ns", &TruthComparison::target_iteration_ns},
      {"flip_bracket_us", &TruthComparison::flip_bracket_us},
      {"delivery_us", &TruthComparison::delivery_us},
      {"in_effect_us", &TruthComparison::in_effect_us},
      {"error_minus_in_effect_us", &TruthComparison::residual_us},
      {"bound_us", &TruthComparison::bound_us}};
  nlohmann::json rows = nlohmann::json::array();
  for (const auto& m : a.measurements) {
    nlohmann::json r = {{"init_mhz", m.pair.init}, {"target_mhz", m.pair.target}, {"true_ms", m.true_ms},
              {"measured_ms", m.measured_ms}, {"error_us", m.error_us}, {"sync_uncertainty_us", m.sync_uncertainty_us}};
    for (const auto& [key, field] : known)
      if (const auto& v = m.*field) r[key] = *v;
    rows.push_back(std::move(r));
  }
  doc["measurements"] = std::move(rows);
  return doc;
}

}  // namespace latest
