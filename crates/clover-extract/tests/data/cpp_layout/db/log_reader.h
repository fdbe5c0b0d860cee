#pragma once
#include <string>
#include <vector>

namespace minidb {
namespace log {

class Reader {
 public:
  explicit Reader(const std::string& data) : data_(data) {}
  bool ReadRecord(std::string* record);

 private:
  std::string data_;
  size_t pos_ = 0;
};

}  // namespace log
}  // namespace minidb
