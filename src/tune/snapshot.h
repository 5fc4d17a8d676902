#pragma once
// An immutable hash table of tuned entries. The tuner publishes a new snapshot (copy on write) on
// every insert or load and readers probe whichever snapshot is current: no lock, no allocation.
#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "fastinfer/tune.h"

namespace fastinfer::tune {

struct Entry {
  std::shared_ptr<const RunnerKey> key;  // shared by the snapshots that hold the entry
  std::int64_t bucket = 0;
  int tactic = -1;
  double ms = 0;  // +inf: every tactic failed
  Source source = Source::kMemory;
  std::string tactic_name;
};

struct Tuner::Snapshot {
  std::vector<Entry> entries;
  std::vector<std::uint64_t> hashes;  // per entry: mix(key hash, bucket)
  std::vector<std::uint32_t> slots;   // open addressing; entry index + 1, 0 = empty
  std::uint64_t mask = 0;
  std::size_t memory_entries = 0;

  // Index of the entry for (key, bucket), or -1.
  std::int64_t find(const RunnerKey& key, std::int64_t bucket) const noexcept;

  // Builds a snapshot from `base` plus `additions`. A memory addition replaces an entry of the
  // same (key, bucket); a file addition only fills a key nobody holds yet (memory beats files, the
  // first file loaded beats later ones).
  static std::unique_ptr<Snapshot> merged(const Snapshot* base, std::vector<Entry> additions);
};

}  // namespace fastinfer::tune
