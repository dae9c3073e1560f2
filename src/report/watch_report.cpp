#include "report/watch_report.hpp"

#include <algorithm>
#include <cmath>

#include <fmt/format.h>

#include "report/charting_library.hpp"
#include "report/html_escape.hpp"

namespace latest::report {
namespace {
using nlohmann::json;

double ms_since(const WatchRecording& r, Nanos t) { return static_cast<double>(t - r.start_gpu_ns) / 1e6; }

// The band merged to at most kWatchBandPoints points.
json band_values(const WatchRecording& r, const std::vector<ClockBand>& band) {
  json values = json::array();
  const std::size_t group = std::max<std::size_t>(1, (band.size() + kWatchBandPoints - 1) / kWatchBandPoints);
  for (std::size_t i = 0; i < band.size(); i += group) {
    const std::size_t end = std::min(band.size(), i + group);
    double lo = band[i].min_mhz, hi = band[i].max_mhz;
    std::vector<double> medians;
    for (std::size_t k = i; k < end; ++k) {
      lo = std::min(lo, band[k].min_mhz);
      hi = std::max(hi, band[k].max_mhz);
      medians.push_back(band[k].median_mhz);
    }
    std::nth_element(medians.begin(), medians.begin() + static_cast<std::ptrdiff_t>(medians.size() / 2), medians.end());
    values.push_back({{"ms", ms_since(r, band[i].start_ns)}, {"min", lo}, {"max", hi},
                      {"median", medians[medians.size() / 2]}});
  }
  return values;
}

Figure clock_figure(const WatchRecording& r, const WatchAnalysis& a) {
  json nvml = json::array(), changes = json::array();
  for (const TelemetrySample& s : r.samples)
    if (s.telemetry.sm_mhz) nvml.push_back({{"ms", ms_since(r, s.gpu_ns)}, {"mhz", *s.telemetry.sm_mhz}});
  for (std::size_t k = 0; k < a.steps.size(); ++k)
    changes.push_back({{"ms", ms_since(r, a.steps[k].arrival_ns())}, {"step", k},
                       {"from", a.steps[k].before_mhz()}, {"to", a.steps[k].after_mhz()}});
  const json x = {{"field", "ms"}, {"type", "quantitative"}, {"title", "time since the recorder started, ms"}};
  const json band = band_values(r, a.band);
  json spec = {
      {"width", 800},
      {"height", 300},
      {"layer",
       {{{"name", "band"}, {"data", {{"values", band}}}, {"mark", {{"type", "area"}, {"opacity", 0.3}}},
         {"encoding", {{"x", x}, {"y", {{"field", "min"}, {"type", "quantitative"}, {"title", "SM clock, MHz"},
                                        {"scale", {{"zero", false}}}}},
                       {"y2", {{"field", "max"}}}}}},
        {{"name", "median"}, {"data", {{"values", band}}}, {"mark", {{"type", "line"}, {"strokeWidth", 1}}},
         {"encoding", {{"x", x}, {"y", {{"field", "median"}, {"type", "quantitative"}}}}}},
        {{"name", "nvml"}, {"data", {{"values", nvml}}},
         {"mark", {{"type", "line"}, {"strokeDash", {4, 3}}, {"color", "#d95f02"}}},
         {"encoding", {{"x", x}, {"y", {{"field", "mhz"}, {"type", "quantitative"}}}}}},
        {{"name", "changes"}, {"data", {{"values", changes}}}, {"mark", {{"type", "rule"}, {"color", "#7570b3"}}},
         {"encoding", {{"x", x}, {"tooltip", {{{"field", "step"}}, {{"field", "from"}}, {{"field", "to"}}}}}}}}}};
  return {"watch-clock",
          "The SM clock from cycles over time, 1 ms bins: the band from the slowest to the fastest recorded SM, their "
          "median, NVML's reading (dashed) and the card's changes (rules).",
          spec};
}

Figure histogram(const std::string& id, const std::string& caption, const std::string& title, const json& values) {
  json spec = {{"width", 360},
               {"height", 200},
               {"data", {{"values", values}}},
               {"mark", "bar"},
               {"encoding",
                {{"x", {{"field", "v"}, {"type", "quantitative"}, {"bin", {{"maxbins", 40}}}, {"title", title}}},
                 {"y", {{"aggregate", "count"}, {"type", "quantitative"}, {"title", "changes"}}}}}};
  return {id, caption, spec};
}

}  // namespace

std::vector<Figure> watch_figures(const WatchRecording& r, const WatchAnalysis& a,
                                  const std::vector<JudgedChange>& judged) {
  json size = json::array(), hold = json::array(), spread = json::array(), errors = json::array();
  for (const CardStep& c : a.steps) {
    size.push_back({{"v", c.after_mhz() - c.before_mhz()}});
    spread.push_back({{"v", static_cast<double>(c.spread_ns()) / 1e3}});
    for (const SmStep& s : c.sms)
      if (s.holds_ns) hold.push_back({{"v", static_cast<double>(*s.holds_ns) / 1e6}});
  }
  for (const JudgedChange& j : judged) {
    if (j.pooled_error_ns) errors.push_back({{"detector", "pooled"}, {"us", *j.pooled_error_ns / 1e3}, {"step", j.step}});
    if (j.paper_error_ns) errors.push_back({{"detector", "paper"}, {"us", *j.paper_error_ns / 1e3}, {"step", j.step}});
  }
  std::vector<Figure> figures{
      clock_figure(r, a),
      histogram("watch-steps", "Each change of the card: the clock after less the clock before.", "step, MHz", size),
      histogram("watch-holds", "How long each recorded SM held a clock before its next change.", "hold, ms", hold),
      histogram("watch-spread", "Each change of the card: the latest SM's arrival less the earliest's.",
                "SM spread, µs", spread)};
  figures.push_back({"watch-detectors",
                     "Each detector's arrival less the judge's, per judged change, from iteration durations alone.",
                     {{"width", 360},
                      {"height", 120},
                      {"data", {{"values", errors}}},
                      {"mark", "tick"},
                      {"encoding",
                       {{"x", {{"field", "us"}, {"type", "quantitative"}, {"title", "error against the judge, µs"}}},
                        {"y", {{"field", "detector"}, {"type", "nominal"}}},
                        {"tooltip", {{{"field", "step"}}, {{"field", "us"}}}}}}}});
  return figures;
}

std::string render_watch_report(const std::vector<Figure>& figures, const json& manifest) {
  json specs = json::array();
  for (const Figure& f : figures) specs.push_back({{"id", f.id}, {"caption", f.caption}, {"spec", f.spec}});
  std::string data = json{{"figures", specs}, {"manifest", manifest}}.dump();
  for (std::size_t p = 0; (p = data.find("</", p)) != std::string::npos; p += 3) data.replace(p, 2, "<\\/");
  const json& device = manifest.value("device", json::object());
  return fmt::format(R"(<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8"><title>LATEST watch: {name}</title>
<style>
body {{ font: 14px/1.45 system-ui, sans-serif; margin: 2em auto; max-width: 72em; color: #222; }}
figure {{ margin: 1.5em 0; }} figcaption, .note {{ color: #555; max-width: 60em; }}
</style></head><body>
<h1>The card's own clock changes</h1>
<p>{name} ({uuid}), backend {backend}; <code>steps.csv</code>, <code>judged.csv</code> and <code>manifest.json</code>
beside this page hold every number.</p>
<div id="figures"></div>
<script id="latest-data" type="application/json">{data}</script>
<script>{library}</script>
<script>
"use strict";
(function () {{
  var errors = 0;
  window.addEventListener("error", function () {{ errors += 1; document.body.setAttribute("data-errors", String(errors)); }});
  var data = JSON.parse(document.getElementById("latest-data").textContent);
  var holder = document.getElementById("figures"), pending = data.figures.length;
  if (typeof vegaEmbed !== "function") {{
    holder.textContent = "Built without its charting library: run scripts/setup.sh, rebuild, and watch again.";
    return;
  }}
  data.figures.forEach(function (fig) {{
    var f = document.createElement("figure"), div = document.createElement("div"), cap = document.createElement("figcaption");
    f.setAttribute("data-figure", fig.id);
    cap.textContent = fig.caption;
    f.appendChild(div); f.appendChild(cap); holder.appendChild(f);
    vegaEmbed(div, fig.spec, {{ renderer: "canvas", tooltip: true, downloadFileName: fig.id,
      actions: {{ export: {{ svg: true, png: true }}, source: false, compiled: false, editor: false }} }})
      .then(function (result) {{
        var items = 0;
        (function walk(mark) {{
          // The data's marks only (Vega-Lite names them "marks", "..._marks"), not the axes.
          if (mark.marktype !== "group" && /marks$/.test(mark.name || "")) items += mark.items.length;
          mark.items.forEach(function (item) {{ (item.items || []).forEach(walk); }});
        }})(result.view.scenegraph().root);
        f.setAttribute("data-items", String(items));
      }})
      .catch(function (e) {{ errors += 1; document.body.setAttribute("data-errors", String(errors)); console.log(e); }})
      .then(function () {{ pending -= 1; if (pending === 0) document.body.setAttribute("data-rendered", "1"); }});
  }});
}})();
</script>
</body></html>
)",
                     fmt::arg("name", html_escape(device.value("name", "?"))),
                     fmt::arg("uuid", html_escape(device.value("uuid", "?"))),
                     fmt::arg("backend", html_escape(manifest.value("backend", "?"))), fmt::arg("data", data),
                     fmt::arg("library", kChartingLibrary));
}

}  // namespace latest::report
