#include "core/accuracy.hpp"

#include <cmath>

#include "core/statistics.hpp"

namespace latest {

namespace {

// The summary of one optional field over the measurements that have it.
template <typename Field>
std::optional<Summary> summary_where(const std::vector<TruthComparison>& ms, Field field) {
  std::vector<double> xs;
  for (const auto& m : ms)
    if (auto v = field(m)) xs.push_back(*v);
  if (xs.empty()) return std::nullopt;
  return summarise(std::move(xs));
}

}  // namespace

Accuracy accuracy_against_truth(const std::vector<PairResult>& results) {
  Accuracy a;
  for (const auto& r : results) {
    // Every outcome before retries: the misfits taken again count too.
    std::vector<const MeasurementRow*> all;
    for (const auto& row : r.rows) all.push_back(&row);
    for (const auto& row : r.retried) all.push_back(&row);
    for (const MeasurementRow* each : all) {
      const MeasurementRow& row = *each;
      if (!row.truth) continue;
      const auto iteration_ns = row.target_iteration_ns > 0 ? std::optional(row.target_iteration_ns) : std::nullopt;
      TruthComparison m;
      m.pair = r.pair;
      m.true_ms = row.truth->switching_ms;
      m.measured_ms = row.switching_ms;
      m.error_us = (row.switching_ms - row.truth->switching_ms) * 1e3;
      m.target_iteration_ns = iteration_ns;
      m.sync_uncertainty_us = row.sync_uncertainty_us;
      m.flip_bracket_us = row.truth->flip_bracket_us;
      m.delivery_us = row.truth->delivery_us;
      m.in_effect_us = row.truth->in_effect_us;
      if (m.in_effect_us) m.residual_us = m.error_us - *m.in_effect_us;
      if (m.residual_us && iteration_ns) m.bound_us = *iteration_ns / 1e3 + m.sync_uncertainty_us;
      a.measurements.push_back(m);
    }
  }
  std::vector<double> errors;
  for (const auto& m : a.measurements) errors.push_back(m.error_us);
  a.error_us = summarise(std::move(errors));
  const auto in_iterations = [](std::optional<double> us, std::optional<double> iteration_ns) -> std::optional<double> {
    if (!us || !iteration_ns || *iteration_ns <= 0) return std::nullopt;
    return *us * 1e3 / *iteration_ns;
  };
  a.error_iterations = summary_where(a.measurements, [&](const TruthComparison& m) {
    return in_iterations(m.error_us, m.target_iteration_ns);
  });
  a.delivery_us = summary_where(a.measurements, [](const TruthComparison& m) { return m.delivery_us; });
  a.in_effect_us = summary_where(a.measurements, [](const TruthComparison& m) { return m.in_effect_us; });
  a.residual_us = summary_where(a.measurements, [](const TruthComparison& m) { return m.residual_us; });
  a.residual_iterations = summary_where(a.measurements, [&](const TruthComparison& m) {
    return in_iterations(m.residual_us, m.target_iteration_ns);
  });
  a.excess_us = summary_where(a.measurements, [](const TruthComparison& m) -> std::optional<double> {
    if (!m.residual_us || !m.bound_us) return std::nullopt;
    return std::abs(*m.residual_us) - *m.bound_us;
  });
  if (a.excess_us) {
    std::size_t early = 0, late = 0;
    for (const auto& m : a.measurements) {
      if (m.residual_us && *m.residual_us < -m.sync_uncertainty_us) ++early;
      if (m.residual_us && m.bound_us && *m.residual_us > *m.bound_us) ++late;
    }
    const auto n = static_cast<double>(a.excess_us->n);
    a.early_share = static_cast<double>(early) / n;
    a.late_share = static_cast<double>(late) / n;
  }
  return a;
}

}  // namespace latest
