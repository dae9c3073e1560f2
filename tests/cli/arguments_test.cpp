#include "cli/arguments.hpp"

#include <optional>

#include <gtest/gtest.h>

#include "core/error.hpp"

namespace latest::cli {
namespace {

std::optional<ErrorKind> code_of(const std::function<void()>& f, std::string* message = nullptr) {
  try {
    f();
  } catch (const Error& e) {
    if (message) *message = e.what();
    return e.kind();
  }
  return std::nullopt;
}

const std::vector<Mhz> kTable = {600, 900, 990, 1200, 1500, 1980};

TEST(Arguments, ParsesClockLists) {
  EXPECT_EQ(parse_clock_list("600,900,1200,1500", kTable), (std::vector<Mhz>{600, 900, 1200, 1500}));
  EXPECT_EQ(parse_clock_list("1980, 990", kTable), (std::vector<Mhz>{1980, 990}));
}

TEST(Arguments, ClockRangesAndAllTakeTheSupportedClocks) {
  EXPECT_EQ(parse_clock_list("all", kTable), kTable);
  EXPECT_EQ(parse_clock_list("900:1500", kTable), (std::vector<Mhz>{900, 990, 1200, 1500}));
  EXPECT_EQ(parse_clock_list("950:1300", kTable), (std::vector<Mhz>{990, 1200})) << "the ends need not be supported";
  // Mixed with single clocks; a clock in both is measured once.
  EXPECT_EQ(parse_clock_list("1980,900:990,990", kTable), (std::vector<Mhz>{1980, 900, 990}));
  std::string msg;
  EXPECT_EQ(code_of([&] { parse_clock_list("1500:900", kTable); }, &msg), ErrorKind::bad_argument);
  EXPECT_NE(msg.find("900:1500"), std::string::npos) << msg;
  EXPECT_EQ(code_of([&] { parse_clock_list("1600:1900", kTable); }, &msg), ErrorKind::bad_argument);
  EXPECT_NE(msg.find("no clock"), std::string::npos) << msg;
  EXPECT_EQ(code_of([&] { parse_clock_list("1900:1990", kTable); }, &msg), ErrorKind::bad_argument);
  EXPECT_NE(msg.find("at least two"), std::string::npos) << msg;
  EXPECT_EQ(code_of([&] { parse_clock_list("600:900:1200", kTable); }), ErrorKind::bad_argument);
  EXPECT_EQ(code_of([] { parse_clock_set("all"); }), std::nullopt);
  EXPECT_EQ(code_of([] { parse_clock_set("600:x"); }), ErrorKind::bad_argument);
  // Parsed once, before any device is known; resolved on each device.
  const ClockSet set = parse_clock_set("1980,900:990");
  EXPECT_EQ(set.items.size(), 2u);
  EXPECT_EQ(resolve_clock_set(set, kTable), (std::vector<Mhz>{1980, 900, 990}));
}

TEST(Arguments, RejectsBadClockLists) {
  std::string msg;
  EXPECT_EQ(code_of([&] { parse_clock_list("600,abc", kTable); }, &msg), ErrorKind::bad_argument);
  EXPECT_NE(msg.find("'abc'"), std::string::npos);
  EXPECT_EQ(code_of([&] { parse_clock_list("600,600,900", kTable); }, &msg), ErrorKind::bad_argument);
  EXPECT_NE(msg.find("twice"), std::string::npos);
  EXPECT_EQ(code_of([&] { parse_clock_list("600", kTable); }), ErrorKind::bad_argument);
  EXPECT_EQ(code_of([&] { parse_clock_list("600,-5", kTable); }), ErrorKind::bad_argument);
  EXPECT_EQ(code_of([&] { parse_clock_list("600,,900", kTable); }), ErrorKind::bad_argument);
  EXPECT_EQ(code_of([&] { parse_clock_list("600,700", kTable); }, &msg), ErrorKind::bad_argument);
  EXPECT_NE(msg.find("nearest supported clocks are 600 and 900"), std::string::npos) << msg;
}

TEST(Arguments, UnsupportedClockNamesTheNearest) {
  std::string msg;
  const std::vector<Mhz> table = {1950, 1965, 1980};
  EXPECT_EQ(code_of([&] { check_supported({1970, 1980}, table); }, &msg), ErrorKind::bad_argument);
  EXPECT_NE(msg.find("1965 and 1980"), std::string::npos) << msg;
  EXPECT_EQ(code_of([&] { check_supported({2000}, table); }, &msg), ErrorKind::bad_argument);
  EXPECT_NE(msg.find("1980"), std::string::npos) << msg;
  EXPECT_EQ(code_of([&] { check_supported({1950, 1980}, table); }), std::nullopt);
}

TEST(Arguments, ResolvesPairSelections) {
  const std::vector<Mhz> clocks = {600, 900, 1200};
  EXPECT_EQ(resolve_pairs("all", clocks).size(), 6u);
  const auto up = resolve_pairs("increasing", clocks);
  ASSERT_EQ(up.size(), 3u);
  for (const auto& p : up) EXPECT_GT(p.target, p.init);
  for (const auto& p : resolve_pairs("decreasing", clocks)) EXPECT_LT(p.target, p.init);
  EXPECT_EQ(resolve_pairs("1200:600,600:900", clocks), (std::vector<ClockPair>{{1200, 600}, {600, 900}}));
  EXPECT_EQ(code_of([&] { resolve_pairs("1200-600", clocks); }), ErrorKind::bad_argument);
  EXPECT_EQ(code_of([&] { resolve_pairs("1200:700", clocks); }), ErrorKind::bad_argument);
  EXPECT_EQ(code_of([&] { resolve_pairs("600:600", clocks); }), ErrorKind::bad_argument);
}

TEST(DeviceSelector, ReadsIndexUuidAndBusId) {
  EXPECT_EQ(parse_device_selector("3").kind, DeviceSelector::Kind::index);
  EXPECT_EQ(parse_device_selector("3").index, 3);
  EXPECT_EQ(parse_device_selector("GPU-8f3c").kind, DeviceSelector::Kind::uuid);
  EXPECT_EQ(parse_device_selector("MIG-1a2b").kind, DeviceSelector::Kind::uuid);
  EXPECT_EQ(parse_device_selector("00000000:17:00.0").kind, DeviceSelector::Kind::bus_id);
  for (const char* bad : {"", "-1", "2x", "first"})
    EXPECT_EQ(code_of([&] { parse_device_selector(bad); }), ErrorKind::bad_argument) << bad;
}

TEST(DeviceSelection, ReadsAllAListOrOne) {
  EXPECT_TRUE(parse_device_selection("all").all);
  const DeviceSelection list = parse_device_selection("0, 2,GPU-8f3c");
  ASSERT_EQ(list.devices.size(), 3u);
  EXPECT_EQ(list.devices[1].index, 2);
  EXPECT_EQ(list.devices[2].kind, DeviceSelector::Kind::uuid);
  EXPECT_EQ(parse_device_selection("5").devices.front().index, 5);
  std::string msg;
  EXPECT_EQ(code_of([] { parse_device_selection("0,0"); }, &msg), ErrorKind::bad_argument);
  EXPECT_NE(msg.find("twice"), std::string::npos) << msg;
  EXPECT_EQ(code_of([] { parse_device_selection("0,x"); }), ErrorKind::bad_argument);
  EXPECT_EQ(parse_schedule("paper"), Schedule::paper);
  EXPECT_EQ(parse_detector("auto"), Detector::pooled);
  EXPECT_EQ(code_of([] { parse_schedule("walk"); }), ErrorKind::bad_argument);
}

}  // namespace
}  // namespace latest::cli
