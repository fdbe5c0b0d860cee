#include <cstdlib>
#include <string>
#include "gtest/gtest.h"
#include "../src/calc.h"

TEST(Calc, Adds) { EXPECT_EQ(add(1, 2), 3); }
TEST(Calc, TwoFailures) {
  EXPECT_EQ(add(1, 1), 3) << "first";
  EXPECT_EQ(add(2, 2), 5) << "odd ]]> message";
}
TEST(Calc, DISABLED_NotRun) { EXPECT_EQ(1, 1); }
TEST(Calc, Skips) { GTEST_SKIP() << "not today"; }
class ClampTest : public ::testing::TestWithParam<int> {};
TEST_P(ClampTest, InRange) { EXPECT_EQ(clamp(GetParam(), 0, 10), GetParam()); }
INSTANTIATE_TEST_SUITE_P(Values, ClampTest, ::testing::Values(1, 5, 20));
TEST(Calc, Crashes) { if (std::getenv("CRASH")) std::abort(); }
