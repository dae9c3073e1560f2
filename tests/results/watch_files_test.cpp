// `latest watch`'s files: the records kept around each change read back as
// written, a damaged windows.bin is refused with its reason, and steps.csv
// has a row per SM and change.
#include "results/watch_files.hpp"

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace latest {
namespace {

WatchRecording two_sm_recording() {
  // SM 3 and SM 7, 4096 iterations of 10 µs at 2000 cycles/µs, then 1800.
  WatchRecording r;
  for (const int sm : {3, 7}) {
    SmRecords s;
    s.sm = sm;
    s.first_start_ns = 1'000'000 + sm;
    for (int i = 0; i < 4096; ++i) {
      s.duration_ns.push_back(10'000);
      s.cycles.push_back(i < 2048 ? 20'000 : 18'000);
    }
    r.sms.push_back(s);
  }
  r.start_gpu_ns = 1'000'000;
  r.samples.push_back({1'000'000, {}});
  return r;
}

TEST(WatchFiles, WindowsRoundTrip) {
  const WatchRecording r = two_sm_recording();
  const WatchAnalysis a = analyse_watch(r, StepSettings{});
  ASSERT_EQ(a.steps.size(), 1u);
  const auto windows = windows_around(r, a, {}, 2'000'000, 64);
  ASSERT_EQ(windows.size(), 1u);
  ASSERT_EQ(windows[0].sms.size(), 2u);
  EXPECT_NEAR(static_cast<double>(windows[0].sms[0].duration_ns.size()), 400, 1);  // 4 ms of 10 µs iterations
  const auto back = read_windows_bin(windows_bin(windows));
  ASSERT_EQ(back.size(), 1u);
  for (std::size_t s = 0; s < 2; ++s) {
    EXPECT_EQ(back[0].sms[s].sm, windows[0].sms[s].sm);
    EXPECT_EQ(back[0].sms[s].first_start_ns, windows[0].sms[s].first_start_ns);
    EXPECT_EQ(back[0].sms[s].duration_ns, windows[0].sms[s].duration_ns);
    EXPECT_EQ(back[0].sms[s].cycles, windows[0].sms[s].cycles);
  }
}

TEST(WatchFiles, DamagedWindowsAreRefused) {
  const WatchRecording r = two_sm_recording();
  const std::string bin = windows_bin(windows_around(r, analyse_watch(r, StepSettings{}), {}, 1'000'000, 64));
  EXPECT_THROW(read_windows_bin(bin.substr(0, bin.size() - 3)), Error);
  EXPECT_THROW(read_windows_bin("P1\n" + bin), Error);
  EXPECT_THROW(read_windows_bin(bin + "x"), Error);
}

TEST(WatchFiles, StepsCsvHasARowPerSmAndChange) {
  const WatchRecording r = two_sm_recording();
  const std::string csv = steps_csv(r, analyse_watch(r, StepSettings{}));
  EXPECT_EQ(csv.rfind(kStepsCsvHeader, 0), 0u);
  EXPECT_EQ(std::count(csv.begin(), csv.end(), '\n'), 3);
  EXPECT_NE(csv.find(",2000.00,1800.00,jump,"), std::string::npos);
}

}  // namespace
}  // namespace latest
