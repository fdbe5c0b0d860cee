#include "db/log_reader.h"

namespace minidb {
namespace log {

bool Reader::ReadRecord(std::string* record) {
  if (pos_ >= data_.size()) return false;
  size_t len = static_cast<unsigned char>(data_[pos_]);
  *record = data_.substr(pos_ + 1, len);
  pos_ += 1 + len;
  return true;
}

}  // namespace log
}  // namespace minidb
