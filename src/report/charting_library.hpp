#pragma once
// The report's charting library, inlined into every report so that it
// stays one file that works offline: Vega, Vega-Lite and vega-embed as npm
// installed them (src/report/charting, pinned by its package-lock.json).

namespace latest::report {

// Their minified builds, one after the other; empty when the build had
// none (npm ci not run): then reports have tables but no figures.
extern const char* const kChartingLibrary;
// "vega 6.4.0, vega-lite 6.5.0, vega-embed 7.3.0", or empty.
extern const char* const kChartingVersions;

}  // namespace latest::report
