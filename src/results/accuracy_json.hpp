#pragma once
// selftest.json's accuracy block: the spreads of error, delivery, in-effect
// delay and residual, the verdict, and every measurement.
#include <nlohmann/json.hpp>

#include "core/accuracy.hpp"

namespace latest {

nlohmann::json to_json(const Summary& s);
nlohmann::json to_json(const Accuracy& a);

}  // namespace latest
