#pragma once
// RunnerCache: immutable runners keyed by their full configuration. A hit takes a shared lock and
// copies a shared_ptr; a miss builds the runner outside any lock and publishes it once (the first
// published runner wins, so every caller of one key sees the same object).
#include <memory>
#include <mutex>
#include <shared_mutex>
#include <unordered_map>

namespace fastinfer {

template <class Key, class Runner, class Hash = std::hash<Key>>
class RunnerCache {
 public:
  template <class Make>
  std::shared_ptr<const Runner> get_or_create(const Key& key, Make&& make) {
    {
      std::shared_lock lock(mutex_);
      auto it = runners_.find(key);
      if (it != runners_.end()) return it->second;
    }
    std::shared_ptr<const Runner> built = make();
    std::unique_lock lock(mutex_);
    return runners_.try_emplace(key, std::move(built)).first->second;
  }

  std::size_t size() const {
    std::shared_lock lock(mutex_);
    return runners_.size();
  }

 private:
  mutable std::shared_mutex mutex_;
  std::unordered_map<Key, std::shared_ptr<const Runner>, Hash> runners_;
};

}  // namespace fastinfer
