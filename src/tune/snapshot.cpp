#include "tune/snapshot.h"

#include <bit>

#include "tune/hash.h"

namespace fastinfer::tune {

std::int64_t Tuner::Snapshot::find(const RunnerKey& key, std::int64_t bucket) const noexcept {
  if (slots.empty()) return -1;
  const std::uint64_t h = detail::mix(key.hash(), bucket);
  for (std::uint64_t i = h & mask;; i = (i + 1) & mask) {
    const std::uint32_t s = slots[i];
    if (s == 0) return -1;
    const std::size_t e = s - 1;
    if (hashes[e] == h && entries[e].bucket == bucket && *entries[e].key == key) return static_cast<std::int64_t>(e);
  }
}

std::unique_ptr<Tuner::Snapshot> Tuner::Snapshot::merged(const Snapshot* base, std::vector<Entry> additions) {
  auto next = std::make_unique<Snapshot>();
  if (base) next->entries = base->entries;
  // Index the combined entries as we go so later additions see earlier ones.
  const std::size_t capacity = std::bit_ceil(std::max<std::size_t>(16, 2 * (next->entries.size() + additions.size())));
  next->slots.assign(capacity, 0);
  next->mask = capacity - 1;
  auto place = [&](std::size_t e) {
    for (std::uint64_t i = next->hashes[e] & next->mask;; i = (i + 1) & next->mask) {
      if (next->slots[i] == 0) {
        next->slots[i] = static_cast<std::uint32_t>(e + 1);
        return;
      }
    }
  };
  for (std::size_t e = 0; e < next->entries.size(); ++e) {
    next->hashes.push_back(detail::mix(next->entries[e].key->hash(), next->entries[e].bucket));
    place(e);
  }
  for (Entry& add : additions) {
    const std::int64_t old = next->find(*add.key, add.bucket);
    if (old >= 0) {
      if (add.source == Source::kMemory) next->entries[static_cast<std::size_t>(old)] = std::move(add);
      continue;
    }
    next->hashes.push_back(detail::mix(add.key->hash(), add.bucket));
    next->entries.push_back(std::move(add));
    place(next->entries.size() - 1);
  }
  for (const Entry& e : next->entries) next->memory_entries += e.source == Source::kMemory;
  return next;
}

}  // namespace fastinfer::tune
