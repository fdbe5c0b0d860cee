#pragma once
#include <map>
#include <string>

#include "minidb/db.h"

namespace minidb {

class DBImpl : public DB {
 public:
  void Put(const std::string& key, const std::string& value) override;
  bool Get(const std::string& key, std::string* value) const override;

 private:
  std::map<std::string, std::string> table_;
};

}  // namespace minidb
