#pragma once
// A skipped pair's reason in words, naming the options that change it.
#include <string>

#include "core/engine.hpp"

namespace latest::cli {

std::string describe(const SkipReason& reason);

}  // namespace latest::cli
