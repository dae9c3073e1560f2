#include "cli/parse_errors.hpp"

#include <algorithm>
#include <limits>
#include <regex>
#include <vector>

#include <fmt/format.h>

namespace latest::cli {
namespace {

// Levenshtein distance, for a misspelt option's nearest name.
std::size_t edit_distance(const std::string& a, const std::string& b) {
  std::vector<std::size_t> row(b.size() + 1);
  for (std::size_t j = 0; j <= b.size(); ++j) row[j] = j;
  for (std::size_t i = 1; i <= a.size(); ++i) {
    std::size_t diagonal = row[0];
    row[0] = i;
    for (std::size_t j = 1; j <= b.size(); ++j) {
      const std::size_t up = row[j];
      row[j] = std::min({row[j] + 1, row[j - 1] + 1, diagonal + (a[i - 1] == b[j - 1] ? 0 : 1)});
      diagonal = up;
    }
  }
  return row[b.size()];
}

// The option of `app` (or its subcommand names) nearest to `word`, within
// two edits, or empty.
std::string nearest_name(const std::string& word, const CLI::App& app) {
  std::vector<std::string> names;
  for (const CLI::Option* o : app.get_options()) {
    for (const auto& l : o->get_lnames()) names.push_back("--" + l);
    for (const auto& s : o->get_snames()) names.push_back("-" + s);
  }
  for (const CLI::App* sub : app.get_subcommands({})) names.push_back(sub->get_name());
  std::string best;
  std::size_t best_distance = 3;
  for (const auto& name : names) {
    const std::size_t d = edit_distance(word, name);
    if (d < best_distance) best_distance = d, best = name;
  }
  return best;
}

CLI::Validator number_check(double low, bool low_included, double high, std::string description) {
  return CLI::Validator(
      [=](std::string& text) -> std::string {
        double value = 0;
        std::size_t used = 0;
        try {
          value = std::stod(text, &used);
        } catch (const std::exception&) {
        }
        const bool low_ok = low_included ? value >= low : value > low;
        if (used == 0 || used != text.size() || !low_ok || value > high)
          return fmt::format("'{}' is not {}", text, description);
        return {};
      },
      description);
}

}  // namespace

CLI::Validator positive_number() {
  return number_check(0, false, std::numeric_limits<double>::max(), "a number above 0");
}

CLI::Validator non_negative_number() {
  return number_check(0, true, std::numeric_limits<double>::max(), "a number of 0 or more");
}

CLI::Validator number_from_to(double low, double high) {
  return number_check(low, true, high, fmt::format("a number from {} to {}", low, high));
}

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
  // CLI11: "The following arguments were not expected: 1980,990 --bogus"
  // (the arguments last to first). Named in the order given, the first
  // unknown option first, with the nearest option's name where one is close.
  if (std::regex_search(what, m, std::regex(R"(not expected: (.*))"))) {
    const CLI::App* parsing = &app;
    for (const CLI::App* sub : app.get_subcommands()) parsing = sub;
    std::vector<std::string> extra = parsing->remaining();
    if (extra.empty()) extra = app.remaining();
    const auto option = std::find_if(extra.begin(), extra.end(), [](const std::string& a) { return a.rfind("-", 0) == 0; });
    const std::string unknown = option != extra.end() ? *option : extra.empty() ? m[1].str() : extra.front();
    const std::string nearest = nearest_name(unknown, *parsing);
    if (!nearest.empty())
      return {fmt::format("{}: not an option or argument of {}; did you mean {}?", unknown, command, nearest), hint};
    return {fmt::format("{}: not an option or argument of {}", unknown, command), hint};
  }
  return {what, hint};
}

}  // namespace latest::cli
