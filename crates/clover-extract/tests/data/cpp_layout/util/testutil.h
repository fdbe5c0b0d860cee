#pragma once
#include <string>

namespace minidb {
namespace test {

std::string RandomKey(int seed);

}  // namespace test
}  // namespace minidb
