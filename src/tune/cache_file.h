#pragma once
// The JSON cache file: reading, metadata comparison and atomic writing. Format (version 1):
//   {"format": "fastinfer-tune-cache", "version": 1,
//    "metadata": {"gpu_name", "compute_capability", "cuda_version", "library_version"},
//    "mappers": {"<id hex>": {"buckets": [...], "rounding": "up"|"down"}},
//    "entries": [{"op", "identity", "extras": [...], "mapper": "<id hex>", "bucket", "tactic",
//                 "tactic_name", "ms" (null = every tactic failed)}]}
#include <optional>
#include <string>
#include <vector>

#include "fastinfer/tune.h"
#include "tune/snapshot.h"

namespace fastinfer::tune {

struct CacheFileContents {
  Metadata metadata;        // a field missing in the file is ""
  std::vector<Entry> entries;  // Source::kFile
};

// std::nullopt when the file does not exist; throws fastinfer::Error when it cannot be read or is
// not a valid cache file.
std::optional<CacheFileContents> read_cache_file(const std::string& path);

// "" when nothing definitely differs; otherwise which field differs (fields empty on either side
// are unknown, not different).
std::string metadata_mismatch(const Metadata& file, const Metadata& ours);

// Writes to a temporary file beside `path` and renames it over `path` (atomic on POSIX).
void write_cache_file_atomically(const std::string& path, const Metadata& metadata, const std::vector<Entry>& entries);

// An advisory lock on "<path>.lock" (flock) so that read-merge-write of one file by several
// processes does not lose entries.
class CacheFileLock {
 public:
  explicit CacheFileLock(const std::string& path);
  ~CacheFileLock();
  CacheFileLock(const CacheFileLock&) = delete;
  CacheFileLock& operator=(const CacheFileLock&) = delete;

 private:
  int fd_ = -1;
};

}  // namespace fastinfer::tune
