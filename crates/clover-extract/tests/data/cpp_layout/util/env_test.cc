#include <gtest/gtest.h>

#include "util/testutil.h"

namespace minidb {

TEST(EnvTest, KeysAreStable) { EXPECT_EQ(test::RandomKey(3), test::RandomKey(3)); }

}  // namespace minidb
