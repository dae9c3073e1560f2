#pragma once
// Command-line parser errors in the house style: what is wrong, and the way
// out (exit 2), never the parser's own wording.
#include <string>
#include <utility>

#include <CLI/CLI.hpp>

namespace latest::cli {

// The message and the hint for a parse error of `app` (or of the subcommand
// it was parsing).
std::pair<std::string, std::string> parse_error_text(const CLI::ParseError& error, const CLI::App& app);

// Number checks whose messages state the limit plainly (CLI11's own print
// the largest double in full, 309 digits).
CLI::Validator positive_number();
CLI::Validator non_negative_number();
CLI::Validator number_from_to(double low, double high);

}  // namespace latest::cli
