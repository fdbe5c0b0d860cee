#pragma once
#include <string>

namespace minidb {

// The public interface: one key-value store.
class DB {
 public:
  virtual ~DB() = default;
  virtual void Put(const std::string& key, const std::string& value) = 0;
  virtual bool Get(const std::string& key, std::string* value) const = 0;
};

}  // namespace minidb
