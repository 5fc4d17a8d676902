#pragma once
// WorkspacePool: scratch blocks keyed by (device, stream, name); the rules are in
// include/fastinfer/workspace.h. The allocator is injectable so the key semantics and the capture
// guard are unit-tested without a GPU.
#include <cstddef>
#include <memory>
#include <shared_mutex>
#include <string>
#include <string_view>
#include <unordered_map>

#include "fastinfer/context.h"

namespace fastinfer {

class WorkspaceAllocator {
 public:
  virtual ~WorkspaceAllocator() = default;
  // Stream-ordered allocation and release of device memory.
  virtual void* allocate(int device, Stream stream, std::size_t bytes) = 0;
  virtual void release(int device, Stream stream, void* ptr) = 0;
  // Immediate release that needs no stream (the stream may be gone); used by release_all().
  virtual void release_now(int device, void* ptr) = 0;
  // Whether `stream` is capturing a CUDA graph right now.
  virtual bool is_capturing(int device, Stream stream) = 0;
};

// The CUDA allocator (cudaMallocAsync / cudaFreeAsync on the block's own stream).
std::unique_ptr<WorkspaceAllocator> make_cuda_workspace_allocator();

class WorkspacePool {
 public:
  explicit WorkspacePool(std::unique_ptr<WorkspaceAllocator> allocator);
  ~WorkspacePool();
  WorkspacePool(const WorkspacePool&) = delete;
  WorkspacePool& operator=(const WorkspacePool&) = delete;

  // The process-wide pool backed by CUDA.
  static WorkspacePool& global();

  // A block of at least `bytes` bytes for (device, stream, name). A hit takes a shared lock and
  // allocates nothing. Growth frees the old block on the same stream (stream-ordered) and throws
  // fastinfer::Error when the stream is capturing a graph.
  void* get(int device, Stream stream, std::string_view name, std::size_t bytes);
  // Grows the block now (not allowed during capture either), so later gets within `bytes` hit.
  void reserve(int device, Stream stream, std::string_view name, std::size_t bytes);
  // Current capacity (0 when no block exists).
  std::size_t capacity(int device, Stream stream, std::string_view name) const;
  std::size_t block_count() const;
  // Frees every block, waiting for the device (streams may have been destroyed by then).
  void release_all();

 private:
  struct Key {
    int device;
    Stream stream;
    std::string name;
    bool operator==(const Key&) const = default;
  };
  struct KeyView {
    int device;
    Stream stream;
    std::string_view name;
  };
  struct KeyHash {
    using is_transparent = void;
    std::size_t operator()(const KeyView& k) const noexcept;
    std::size_t operator()(const Key& k) const noexcept { return (*this)(KeyView{k.device, k.stream, k.name}); }
  };
  struct KeyEqual {
    using is_transparent = void;
    bool operator()(const Key& a, const Key& b) const { return a == b; }
    bool operator()(const KeyView& a, const Key& b) const {
      return a.device == b.device && a.stream == b.stream && a.name == b.name;
    }
    bool operator()(const Key& a, const KeyView& b) const { return (*this)(b, a); }
  };
  struct Block {
    void* ptr = nullptr;
    std::size_t bytes = 0;
  };

  void* grow(int device, Stream stream, std::string_view name, std::size_t bytes);

  std::unique_ptr<WorkspaceAllocator> allocator_;
  mutable std::shared_mutex mutex_;
  std::unordered_map<Key, Block, KeyHash, KeyEqual> blocks_;
};

}  // namespace fastinfer
