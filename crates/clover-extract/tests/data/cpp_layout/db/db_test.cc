#include "minidb/db.h"

#include <gtest/gtest.h>

#include "db/db_impl.h"
#include "util/testutil.h"

namespace minidb {

TEST(DBTest, PutThenGet) {
  DBImpl db;
  db.Put("k", test::RandomKey(1));
  std::string v;
  ASSERT_TRUE(db.Get("k", &v));
  EXPECT_EQ(v, test::RandomKey(1));
}

}  // namespace minidb
