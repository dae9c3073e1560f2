#pragma once
// routes.html: what --measure-route measured against what the table
// predicted (docs/table.md, "Measuring a route"), from its routes.json.
#include <filesystem>
#include <string>

#include <nlohmann/json.hpp>

namespace latest::report {

std::string render_route_report(const nlohmann::json& routes);
void write_route_report(const nlohmann::json& routes, const std::filesystem::path& file);

}  // namespace latest::report
