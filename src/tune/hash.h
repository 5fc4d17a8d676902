#pragma once
// Deterministic hashing for cache keys: the same key hashes the same in every process, so ids can
// be written to cache files.
#include <cstdint>
#include <string_view>

namespace fastinfer::tune::detail {

inline constexpr std::uint64_t kFnvOffset = 1469598103934665603ull;

inline std::uint64_t fnv1a(std::uint64_t h, const void* data, std::size_t bytes) noexcept {
  const auto* p = static_cast<const unsigned char*>(data);
  for (std::size_t i = 0; i < bytes; ++i) h = (h ^ p[i]) * 1099511628211ull;
  return h;
}
inline std::uint64_t fnv1a(std::uint64_t h, std::string_view s) noexcept {
  h = fnv1a(h, s.data(), s.size());
  return fnv1a(h, "\0", 1);  // separator: ("ab","c") != ("a","bc")
}
inline std::uint64_t fnv1a(std::uint64_t h, std::int64_t v) noexcept { return fnv1a(h, &v, sizeof v); }

// Finalizer (splitmix64) so that nearby buckets spread over the table.
inline std::uint64_t mix(std::uint64_t a, std::int64_t b) noexcept {
  std::uint64_t z = a ^ (static_cast<std::uint64_t>(b) + 0x9e3779b97f4a7c15ull + (a << 6) + (a >> 2));
  z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ull;
  z = (z ^ (z >> 27)) * 0x94d049bb133111ebull;
  return z ^ (z >> 31);
}

}  // namespace fastinfer::tune::detail
