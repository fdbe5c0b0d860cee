#include "db/db_impl.h"

namespace minidb {

void DBImpl::Put(const std::string& key, const std::string& value) {
  table_[key] = value;
}

bool DBImpl::Get(const std::string& key, std::string* value) const {
  auto it = table_.find(key);
  if (it == table_.end()) return false;
  *value = it->second;
  return true;
}

}  // namespace minidb
