// Progress off a terminal: a line per pair started and ended, a heartbeat
// at least every 30 s of wall time while a pair runs, nothing in `none`.
#include "cli/progress.hpp"

#include "core/error.hpp"

#include <cstdio>
#include <string>

#include <gtest/gtest.h>

namespace latest::cli {
namespace {

std::string printed(std::FILE* f) {
  std::fflush(f);
  std::rewind(f);
  std::string s;
  for (int c; (c = std::fgetc(f)) != EOF;) s += static_cast<char>(c);
  return s;
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (auto p = text.find(what); p != std::string::npos; p = text.find(what, p + 1)) ++n;
  return n;
}

TEST(Progress, LinesModeHasStartsEndsAndAHeartbeatEveryThirtySeconds) {
  std::FILE* out = std::tmpfile();
  double now = 0;
  ProgressPrinter p(ProgressMode::lines, out, 30, [&] { return now; });
  p.started({1980, 990}, 1, 2);
  Progress step{1, 2, {1980, 990}, 0, 0.5, 3600};
  for (int n = 1; n <= 100; ++n) {  // one measurement every 2 s: 200 s
    now += 2;
    step.measurements = n;
    p.update(step);
  }
  PairResult done;
  done.pair = {1980, 990};
  done.status = "measured";
  done.rows.resize(100);
  done.rse = 0.02;
  p.finished(done, "");
  const std::string text = printed(out);
  EXPECT_EQ(count(text, "pair 1/2 1980 -> 990 MHz started"), 1) << text;
  EXPECT_EQ(count(text, "measured: n=100 RSE 2.0%"), 1) << text;
  EXPECT_EQ(count(text, " n="), 7) << "six heartbeats in 200 s, and the end: " << text;
  EXPECT_EQ(count(text, "\r"), 0) << "no terminal controls off a terminal";
}

// The chained schedule starts both directions of a pair of clocks before
// either ends: each end names its own pair's number, not the last started.
TEST(Progress, EachEndNamesItsOwnPair) {
  std::FILE* out = std::tmpfile();
  ProgressPrinter p(ProgressMode::lines, out, 30, [] { return 0.0; });
  p.started({1980, 1500}, 1, 4);
  p.started({1500, 1980}, 2, 4);
  PairResult done;
  done.status = "measured";
  done.rows.resize(25);
  done.rse = 0.02;
  done.pair = {1980, 1500};
  p.finished(done, "");
  done.pair = {1500, 1980};
  p.finished(done, "");
  p.started({1980, 990}, 3, 4);
  done.pair = {1980, 990};
  done.status = "skipped";
  p.finished(done, "throttled");
  done.pair = {990, 1980};  // never started here (a resumed run): no number
  p.finished(done, "throttled");
  const std::string text = printed(out);
  EXPECT_EQ(count(text, "pair 1/4 1980 -> 1500 MHz measured"), 1) << text;
  EXPECT_EQ(count(text, "pair 2/4 1500 -> 1980 MHz measured"), 1) << text;
  EXPECT_EQ(count(text, "pair 3/4 1980 -> 990 MHz skipped: throttled"), 1) << text;
  EXPECT_EQ(count(text, "latest: pair 990 -> 1980 MHz skipped: throttled"), 1) << text;
}

TEST(Progress, NoneIsSilentAndTtyRewritesOneLine) {
  std::FILE* none = std::tmpfile();
  ProgressPrinter quiet(ProgressMode::none, none, 30, [] { return 1e9; });
  quiet.started({1980, 990}, 1, 1);
  quiet.update({1, 1, {1980, 990}, 5, 0.1, 10});
  EXPECT_EQ(printed(none), "");
  std::FILE* tty = std::tmpfile();
  ProgressPrinter live(ProgressMode::tty, tty, 30, [] { return 0.0; });
  live.started({1980, 990}, 1, 1);
  live.update({1, 1, {1980, 990}, 5, 0.1, 10});
  EXPECT_EQ(printed(tty).rfind("\r\033[Kpair 1/1", 0), 0u);
}

TEST(Progress, AutoIsTtyOnATerminalElseLines) {
  EXPECT_EQ(parse_progress_mode("auto", true), ProgressMode::tty);
  EXPECT_EQ(parse_progress_mode("auto", false), ProgressMode::lines);
  EXPECT_EQ(parse_progress_mode("none", true), ProgressMode::none);
  EXPECT_THROW(parse_progress_mode("loud", true), Error);
}

}  // namespace
}  // namespace latest::cli
