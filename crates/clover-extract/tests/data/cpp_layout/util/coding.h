#pragma once
#include <cstdint>
#include <string>

namespace minidb {

// Header-only: the test pairs with the header by base name.
inline void PutFixed32(std::string* dst, uint32_t value) {
  for (int i = 0; i < 4; i++) dst->push_back(static_cast<char>((value >> (8 * i)) & 0xff));
}

}  // namespace minidb
