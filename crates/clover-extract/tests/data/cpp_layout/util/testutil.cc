#include "util/testutil.h"

namespace minidb {
namespace test {

std::string RandomKey(int seed) { return "key" + std::to_string(seed * 7919 % 1000); }

}  // namespace test
}  // namespace minidb
