#include <gtest/gtest.h>
TEST(Nvml, Placeholder) {}
