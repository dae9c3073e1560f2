// Scratch: replays dumped H200 windows through detect_switch_pooled.
#include <cstdio>
#include <cstdint>
#include <vector>
#include "core/pooled_detection.hpp"
#include "core/planner.hpp"
using namespace latest;
int main(int argc, char** argv) {
  std::vector<Mhz> supported;
  for (int m = 345; m <= 1980; m += 15) supported.push_back(m);
  for (int k = 1; k < argc; ++k) {
    std::FILE* f = std::fopen(argv[k], "rb");
    double h[10];
    std::fread(h, sizeof h, 1, f);
    std::int64_t nsm;
    std::fread(&nsm, 8, 1, f);
    WindowRecords rec;
    ClockCalibration ci, ct;
    ci.mhz = static_cast<Mhz>(h[6]); ct.mhz = static_cast<Mhz>(h[7]);
    ci.pooled.iteration.mean = h[9]; ct.pooled.iteration.mean = h[8];
    ci.pooled.iteration.sd = ct.pooled.iteration.sd = 24; ci.pooled.iteration.n = ct.pooled.iteration.n = 100000;
    ci.per_sm.resize(200); ct.per_sm.resize(200);
    for (std::int64_t s = 0; s < nsm; ++s) {
      std::int64_t hdr[3];
      std::fread(hdr, sizeof hdr, 1, f);
      SmRecords r;
      r.sm = static_cast<int>(hdr[0]);
      r.first_start_ns = hdr[1];
      r.duration_ns.resize(hdr[2]);
      std::fread(r.duration_ns.data(), 4, hdr[2], f);
      double means[2];
      std::fread(means, sizeof means, 1, f);
      ci.per_sm[r.sm].iteration = {}; ci.per_sm[r.sm].iteration.mean = means[0]; ci.per_sm[r.sm].iteration.sd = 24; ci.per_sm[r.sm].iteration.n = 8192;
      ct.per_sm[r.sm].iteration = {}; ct.per_sm[r.sm].iteration.mean = means[1]; ct.per_sm[r.sm].iteration.sd = 24; ct.per_sm[r.sm].iteration.n = 8192;
      rec.sms.push_back(std::move(r));
    }
    std::fclose(f);
    const auto req = static_cast<Nanos>(h[0]);
    const double ti = neighbour_tolerance_ns(ci.mhz, ci.pooled.iteration.mean, supported);
    const double tt = neighbour_tolerance_ns(ct.mhz, ct.pooled.iteration.mean, supported);
    const Measurement m = detect_switch_pooled(rec, req, ci, ct, ti, tt, PooledSettings{});
    std::printf("%s %g->%g truth %.4f dumped %g/%.4f replay outcome %d %.4f err %.2f us\n", argv[k], h[6], h[7], h[1], h[3], h[4],
                static_cast<int>(m.outcome), m.switching_ms, (m.switching_ms - h[1]) * 1e3);
  }
}
