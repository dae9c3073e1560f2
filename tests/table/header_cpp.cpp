// The C++ header on its own.
#include <latest/latency_table.hpp>
