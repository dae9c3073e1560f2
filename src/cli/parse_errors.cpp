#include "cli/parse_errors.hpp"

#include <regex>

#include <fmt/format.h>

namespace latest::cli {

std::pair<std::string, std::string> parse_error_text(const CLI::ParseError& error, const CLI::App& app) {
  std::string command = "latest";
  for (const CLI::App* sub : app.get_subcommands()) command += " " + sub->get_name();
  const std::string hint = fmt::format("`{} --help` lists the options and what they take", command);
  const std::string what = error.what();
  std::smatch m;
  // CLI11: "Could not convert: --rse = abc"
  if (std::regex_search(what, m, std::regex(R"(Could not convert: (\S+) = (.*))")))
    return {fmt::format("{}: '{}' is not a value it takes", m[1].str(), m[2].str()), hint};
  // CLI11: "dirs is required"
  if (what == "dirs is required")
    return {fmt::format("{} needs one or more result directories", command),
            fmt::format("e.g. {} latest-results", command)};
  if (std::regex_search(what, m, std::regex(R"((\S+) is required)")))
    return {fmt::format("{} is required", m[1].str()), hint};
  // CLI11: "The following arguments were not expected: --bogus"
  if (std::regex_search(what, m, std::regex(R"(not expected: (.*))")))
    return {fmt::format("{}: not an option or argument of {}", m[1].str(), command), hint};
  return {what, hint};
}

}  // namespace latest::cli
