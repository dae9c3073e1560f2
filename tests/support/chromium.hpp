#pragma once
// A page as headless Chromium (Debian's) leaves it once its scripts ran.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <string>

#include "support/process.hpp"

namespace latest::testing {

inline std::string dump_dom(const std::filesystem::path& html) {
  const auto out = html.parent_path() / "dom.html";
  const auto profile = html.parent_path() / "chromium-profile";
  const std::string cmd =
      "timeout 120 chromium --headless --no-sandbox --disable-gpu --disable-quic --no-first-run "
      "--disable-background-networking --disable-component-update --disable-sync --user-data-dir=" +
      profile.string() + " --virtual-time-budget=20000 --dump-dom file://" + html.string() + " > " + out.string() +
      " 2>/dev/null";
  EXPECT_EQ(std::system(cmd.c_str()), 0) << "needs Debian's chromium: " << cmd;
  return slurp(out);
}

}  // namespace latest::testing
