#include "runtime/workspace_pool.h"

#include <cstdio>
#include <functional>
#include <mutex>

#include "fastinfer/error.h"
#include "fastinfer/workspace.h"

namespace fastinfer {

namespace {
// Blocks grow in 2 MiB steps so a slowly growing workload does not reallocate on every call.
constexpr std::size_t kGranularity = std::size_t{2} << 20;

std::size_t round_up(std::size_t bytes) { return (bytes + kGranularity - 1) / kGranularity * kGranularity; }

std::string describe(int device, Stream stream, std::string_view name) {
  char buf[96];
  std::snprintf(buf, sizeof buf, "' on cuda:%d, stream %p", device, static_cast<void*>(stream));
  return "workspace '" + std::string(name) + buf;
}
}  // namespace

std::size_t WorkspacePool::KeyHash::operator()(const KeyView& k) const noexcept {
  std::size_t h = std::hash<std::string_view>{}(k.name);
  h ^= std::hash<const void*>{}(k.stream) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  h ^= std::hash<int>{}(k.device) + 0x9e3779b97f4a7c15ull + (h << 6) + (h >> 2);
  return h;
}

WorkspacePool::WorkspacePool(std::unique_ptr<WorkspaceAllocator> allocator) : allocator_(std::move(allocator)) {}

WorkspacePool::~WorkspacePool() { release_all(); }

WorkspacePool& WorkspacePool::global() {
  static WorkspacePool pool(make_cuda_workspace_allocator());
  return pool;
}

void* WorkspacePool::get(int device, Stream stream, std::string_view name, std::size_t bytes) {
  {
    std::shared_lock lock(mutex_);
    auto it = blocks_.find(KeyView{device, stream, name});
    if (it != blocks_.end() && it->second.bytes >= bytes) return it->second.ptr;
  }
  return grow(device, stream, name, bytes);
}

void WorkspacePool::reserve(int device, Stream stream, std::string_view name, std::size_t bytes) {
  get(device, stream, name, bytes);
}

void* WorkspacePool::grow(int device, Stream stream, std::string_view name, std::size_t bytes) {
  std::unique_lock lock(mutex_);
  auto it = blocks_.find(KeyView{device, stream, name});
  if (it != blocks_.end() && it->second.bytes >= bytes) return it->second.ptr;  // another thread grew it
  const std::size_t have = it == blocks_.end() ? 0 : it->second.bytes;
  if (allocator_->is_capturing(device, stream)) {
    throw Error(Error::Kind::kRuntime,
                describe(device, stream, name) + " needs " + std::to_string(bytes) + " bytes but holds " +
                    std::to_string(have) +
                    ": it cannot grow while the stream is capturing a CUDA graph; run the op once before "
                    "capture or call fastinfer::reserve_workspace() first");
  }
  const std::size_t new_bytes = round_up(bytes);
  void* ptr = allocator_->allocate(device, stream, new_bytes);
  if (it == blocks_.end()) {
    it = blocks_.emplace(Key{device, stream, std::string(name)}, Block{}).first;
  } else if (it->second.ptr != nullptr) {
    allocator_->release(device, stream, it->second.ptr);  // ordered after earlier work on `stream`
  }
  it->second = Block{ptr, new_bytes};
  return ptr;
}

std::size_t WorkspacePool::capacity(int device, Stream stream, std::string_view name) const {
  std::shared_lock lock(mutex_);
  auto it = blocks_.find(KeyView{device, stream, name});
  return it == blocks_.end() ? 0 : it->second.bytes;
}

std::size_t WorkspacePool::block_count() const {
  std::shared_lock lock(mutex_);
  return blocks_.size();
}

void WorkspacePool::release_all() {
  std::unique_lock lock(mutex_);
  for (auto& [key, block] : blocks_) allocator_->release_now(key.device, block.ptr);
  blocks_.clear();
}

void reserve_workspace(int device, Stream stream, std::string_view name, std::size_t bytes) {
  WorkspacePool::global().reserve(device, stream, name, bytes);
}

void release_all_workspaces() { WorkspacePool::global().release_all(); }

}  // namespace fastinfer
