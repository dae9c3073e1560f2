// The pooled detector's answers on a fixed set of windows, stored: every
// field of every measurement must come out identical, bit for bit
// (docs/decisions/0010-stored-detector-answers.md). A change meant to keep
// the answers (a refactoring) must leave this test green; a change meant to
// alter them rewrites the stored file in a commit of its own, with the
// accuracy before and after:
//   LATEST_WRITE_DETECTOR_ANSWERS=1 build/unit_tests --gtest_filter='*DetectorAnswers*'
#include <gtest/gtest.h>

#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "core/pooled_detection.hpp"
#include "core/recorded_window.hpp"
#include "support/sim_windows.hpp"

namespace latest {
namespace {

constexpr const char* kAnswers = LATEST_DETECTOR_ANSWERS;

std::uint64_t per_sm_hash(const Measurement& m) {
  std::uint64_t h = 1469598103934665603ull;
  const auto mix = [&](std::int64_t v) {
    for (int b = 0; b < 8; ++b) h = (h ^ static_cast<std::uint64_t>((v >> (8 * b)) & 0xff)) * 1099511628211ull;
  };
  for (const SmDetection& d : m.per_sm) {
    mix(d.sm);
    mix(static_cast<std::int64_t>(d.outcome));
    mix(d.arrival_ns);
    mix(d.departure_ns);
  }
  return h;
}

// Every field, doubles as hexadecimal floats (exact).
std::string answer_line(const Measurement& m) {
  char line[512];
  std::snprintf(line, sizeof line, "%d %a %a %a %d %d %a %u %zu %016" PRIx64, static_cast<int>(m.outcome),
                m.switching_ms, m.transition_ms, m.uncertainty_us, m.accepted_sms, m.max_sm, m.sm_spread_ms,
                m.misfits, m.per_sm.size(), per_sm_hash(m));
  return line;
}

std::vector<std::string> recorded_window_dirs() {
  std::vector<std::string> dirs;
  std::stringstream list(LATEST_RECORDED_WINDOW_DIRS);
  for (std::string dir; std::getline(list, dir, ':');)
    if (!dir.empty()) dirs.push_back(dir);
  return dirs;
}

using Answers = std::map<std::string, std::string>;

Answers stored_answers() {
  Answers stored;
  std::ifstream in(kAnswers);
  for (std::string line; std::getline(in, line);) {
    const auto tab = line.find('\t');
    stored[line.substr(0, tab)] = line.substr(tab + 1);
  }
  return stored;
}

// Compares `now` with the stored answers whose names begin with `prefix`,
// or, when asked to, replaces those with `now`.
void expect_as_stored(const std::string& prefix, const Answers& now) {
  Answers stored = stored_answers();
  const auto mine = [&](const std::string& name) { return name.rfind(prefix, 0) == 0; };
  if (std::getenv("LATEST_WRITE_DETECTOR_ANSWERS")) {
    std::erase_if(stored, [&](const auto& kv) { return mine(kv.first); });
    stored.insert(now.begin(), now.end());
    std::ofstream out(kAnswers);
    for (const auto& [name, answer] : stored) out << name << '\t' << answer << '\n';
    GTEST_SKIP() << "wrote " << now.size() << " answers of " << prefix << " to " << kAnswers;
  }
  std::size_t stored_here = 0;
  for (const auto& [name, answer] : stored) stored_here += mine(name);
  EXPECT_EQ(stored_here, now.size()) << prefix;
  int differ = 0;
  for (const auto& [name, answer] : now) {
    const auto it = stored.find(name);
    if (it == stored.end() || it->second != answer) {
      ++differ;
      ADD_FAILURE() << name << "\n  stored: " << (it == stored.end() ? "(none)" : it->second) << "\n  now:    " << answer;
    }
  }
  EXPECT_EQ(differ, 0) << "of " << now.size() << " windows";
}

class SimDetectorAnswers : public ::testing::TestWithParam<const char*> {};

TEST_P(SimDetectorAnswers, EveryFieldIsAsStored) {
  Answers now;
  test::for_each_fixed_sim_window(GetParam(), [&](const test::SimWindow& w) {
    now["sim " + w.name] = answer_line(
        detect_switch_pooled(w.records, w.request_gpu_ns, w.initial, w.target, 10, 20, PooledSettings{}));
  });
  ASSERT_EQ(now.size(), 72u);
  expect_as_stored(std::string("sim ") + GetParam() + " ", now);
}

INSTANTIATE_TEST_SUITE_P(Pooled, SimDetectorAnswers, ::testing::ValuesIn(test::kFixedWindowProfiles));

TEST(RealDetectorAnswers, EveryFieldIsAsStored) {
  Answers now;
  for (const auto& dir : recorded_window_dirs())
    for (const auto& path : recorded_windows_in(dir)) {
      const RecordedWindow w = load_recorded_window(path);
      const auto name = std::filesystem::path(dir).filename().string() + "/" +
                        std::filesystem::relative(path, dir).string();
      now["real " + name] =
          answer_line(detect_switch_pooled(w.records, w.request_gpu_ns, w.initial, w.target,
                                           recorded_tolerance_ns(w.initial), recorded_tolerance_ns(w.target),
                                           PooledSettings{}));
    }
  ASSERT_GE(now.size(), 45u);
  expect_as_stored("real ", now);
}

}  // namespace
}  // namespace latest
