#include "db/log_writer.h"

namespace minidb {
namespace log {

void Writer::AddRecord(const std::string& record) {
  dest_.push_back(static_cast<char>(record.size()));
  dest_ += record;
}

}  // namespace log
}  // namespace minidb
