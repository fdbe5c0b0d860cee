#include "util/coding.h"

#include <gtest/gtest.h>

namespace minidb {

TEST(Coding, Fixed32) {
  std::string s;
  PutFixed32(&s, 0x04030201);
  ASSERT_EQ(s.size(), 4u);
  EXPECT_EQ(s[0], 1);
  EXPECT_EQ(s[3], 4);
}

}  // namespace minidb
