#pragma once
#include <string>

namespace minidb {
namespace log {

class Writer {
 public:
  void AddRecord(const std::string& record);
  const std::string& contents() const { return dest_; }

 private:
  std::string dest_;
};

}  // namespace log
}  // namespace minidb
