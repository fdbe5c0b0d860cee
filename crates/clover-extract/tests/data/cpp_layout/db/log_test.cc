#include <gtest/gtest.h>

#include "db/log_reader.h"
#include "db/log_writer.h"
#include "util/testutil.h"

namespace minidb {
namespace log {

TEST(LogTest, WriteThenRead) {
  Writer w;
  w.AddRecord("foo");
  w.AddRecord(test::RandomKey(2));
  Reader r(w.contents());
  std::string rec;
  ASSERT_TRUE(r.ReadRecord(&rec));
  EXPECT_EQ(rec, "foo");
  ASSERT_TRUE(r.ReadRecord(&rec));
  EXPECT_EQ(rec, test::RandomKey(2));
  EXPECT_FALSE(r.ReadRecord(&rec));
}

}  // namespace log
}  // namespace minidb
