// routes.html: a route measurement (--measure-route) against its
// prediction, one self-contained page from routes.json.
#include "report/route_report.hpp"

#include <cmath>

#include <fmt/format.h>

#include "report/html_escape.hpp"
#include "results/atomic_file.hpp"

namespace latest::report {
namespace {
using nlohmann::json;

std::string ms(const json& v) { return v.is_number() ? fmt::format("{:.3f}", v.get<double>()) : "–"; }

std::string route_cells(const json& r) {
  std::vector<std::string> clocks;
  if (r.contains("from_mhz")) clocks.push_back(std::to_string(r["from_mhz"].get<unsigned>()));
  for (const auto& c : r.value("clocks_mhz", json::array())) clocks.push_back(std::to_string(c.get<unsigned>()));
  std::vector<std::string> waits;
  for (const auto& w : r.value("wait_ms", json::array())) waits.push_back(ms(w));
  const json predicted = r.value("predicted", json::object());
  const json band = predicted.value("band_ms", json::array());
  std::string row = fmt::format("<td>{} MHz</td><td>{}</td><td>{}</td><td>{}</td><td>{} – {}</td>", fmt::join(clocks, " → "),
                                waits.empty() ? "direct" : fmt::format("{}", fmt::join(waits, ", ")), r.value("n", 0),
                                ms(predicted.value("latency_ms", json())), band.size() == 2 ? ms(band[0]) : "–",
                                band.size() == 2 ? ms(band[1]) : "–");
  if (!r.contains("measured_ms"))
    return row + fmt::format("<td colspan=\"6\">{}: {}</td>", html_escape(r.value("status", "?")),
                             html_escape(r.value("reason", "")));
  const json m = r["measured_ms"];
  const bool in_band = r.value("median_in_band", false);
  return row + fmt::format("<td>{}</td><td>{}</td><td class=\"{}\">{}</td><td>{}</td><td>{}</td><td>{}</td>", ms(m["min"]),
                           ms(m["p05"]), in_band ? "in" : "out", ms(m["median"]), ms(m["p95"]), ms(m["max"]),
                           in_band ? "yes" : "no");
}

}  // namespace

std::string render_route_report(const json& doc) {
  const std::string statistic = doc.value("statistic", "p95");
  std::string rows;
  for (const auto& r : doc.value("routes", json::array())) rows += "<tr>" + route_cells(r) + "</tr>\n";
  std::string verdict;
  if (doc.contains("route_beats_direct"))
    verdict = fmt::format("<p class=\"verdict\">Measured at {}: the route is <b>{}</b> than the direct change.</p>",
                          html_escape(statistic), doc["route_beats_direct"].get<bool>() ? "faster" : "not faster");
  const json gpu = doc.value("gpu", json::object());
  return fmt::format(R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>LATEST routes: {model}</title>
<style>
body {{ font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 72em; color: #222; }}
table {{ border-collapse: collapse; }} th, td {{ padding: .3em .7em; border-bottom: 1px solid #ddd; text-align: right; }}
th:first-child, td:first-child {{ text-align: left; }} td.in {{ background: #e6f4ea; }} td.out {{ background: #fde8e8; }}
.verdict {{ font-size: 1.1em; }} .note {{ color: #555; max-width: 60em; }}
</style></head><body>
<h1>Routes measured against the table</h1>
<p>{model} ({uuid}), backend {backend}; table <code>{table}</code>, waits and prediction at <b>{statistic}</b>;
{gpu_seconds:.1f} GPU seconds in {launches} launch(es).</p>
<table>
<tr><th>route</th><th>waits, ms</th><th>n</th><th>predicted {statistic}, ms</th><th>predicted band, ms</th>
<th>min</th><th>p05</th><th>median</th><th>p95</th><th>max</th><th>median in band</th></tr>
{rows}</table>
{verdict}
<p class="note">A route is taken as a runtime takes it: each clock is requested once the table's latency of the hop
before (at {statistic}) has passed; a measurement runs from the first request until every SM runs at the last clock
and stays there. The predicted band is every wait but the last plus the last hop's p05 and p95. The direct change is
measured in the same launch, taking turns with the route. Latencies in ms, outliers included.</p>
</body></html>
)",
                     fmt::arg("model", html_escape(gpu.value("model", "?"))),
                     fmt::arg("uuid", html_escape(gpu.value("uuid", "?"))),
                     fmt::arg("backend", html_escape(doc.value("backend", "?"))), fmt::arg("table", html_escape(doc.value("table", "?"))),
                     fmt::arg("statistic", html_escape(statistic)), fmt::arg("gpu_seconds", doc.value("gpu_seconds", 0.0)),
                     fmt::arg("launches", doc.value("launches", 0)), fmt::arg("rows", rows), fmt::arg("verdict", verdict));
}

void write_route_report(const json& doc, const std::filesystem::path& file) {
  write_file_atomically(file, render_route_report(doc));
}

}  // namespace latest::report
