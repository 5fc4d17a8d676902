#include "tune/cache_file.h"

#include <fcntl.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <unistd.h>

#include <atomic>
#include <cerrno>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <limits>
#include <map>
#include <sstream>

#include <nlohmann/json.hpp>

#include "fastinfer/error.h"

namespace fastinfer::tune {

namespace {

using nlohmann::json;

constexpr const char* kFormat = "fastinfer-tune-cache";
constexpr int kFormatVersion = 1;

[[noreturn]] void fail(const std::string& path, const std::string& what) {
  throw Error(Error::Kind::kRuntime, "tune: cache file " + path + ": " + what);
}

std::string hex(std::uint64_t v) {
  char buf[17];
  std::snprintf(buf, sizeof buf, "%016llx", static_cast<unsigned long long>(v));
  return buf;
}

std::string field(const json& j, const char* name) {
  auto it = j.find(name);
  return it != j.end() && it->is_string() ? it->get<std::string>() : std::string();
}

}  // namespace

std::optional<CacheFileContents> read_cache_file(const std::string& path) {
  struct stat st {};
  if (::stat(path.c_str(), &st) != 0 && errno == ENOENT) return std::nullopt;
  std::ifstream in(path);
  if (!in) fail(path, std::string("cannot be opened: ") + std::strerror(errno));
  json doc;
  try {
    doc = json::parse(in);
  } catch (const json::exception& e) {
    fail(path, std::string("is not valid JSON (") + e.what() + ")");
  }
  if (!doc.is_object() || field(doc, "format") != kFormat) fail(path, std::string("is not a ") + kFormat + " file");
  if (doc.value("version", 0) != kFormatVersion)
    fail(path, "has format version " + doc.value("version", json()).dump() + ", expected " + std::to_string(kFormatVersion));

  CacheFileContents out;
  const json meta = doc.value("metadata", json::object());
  out.metadata = {field(meta, "gpu_name"), field(meta, "compute_capability"), field(meta, "cuda_version"),
                  field(meta, "library_version")};
  try {
    std::map<std::string, BucketMapper> mappers;
    const json mapper_table = doc.value("mappers", json::object());  // named: items() must not outlive it
    const json entry_list = doc.value("entries", json::array());
    for (const auto& [id, m] : mapper_table.items()) {
      const Rounding rounding = m.at("rounding").get<std::string>() == "up" ? Rounding::kUp : Rounding::kDown;
      BucketMapper mapper(m.at("buckets").get<std::vector<std::int64_t>>(), rounding);
      if (hex(mapper.id()) != id) fail(path, "mapper " + id + " does not match its bucket list");
      if (mapper.is_default_list() && rounding == Rounding::kUp) mapper = BucketMapper();  // share the table
      mappers.emplace(id, std::move(mapper));
    }
    for (const json& e : entry_list) {
      auto mapper = mappers.find(e.at("mapper").get<std::string>());
      if (mapper == mappers.end()) fail(path, "an entry names an unknown mapper " + e.at("mapper").dump());
      Entry entry;
      entry.key = std::make_shared<const RunnerKey>(e.at("op").get<std::string>(), e.at("identity").get<std::string>(),
                                                    e.at("extras").get<std::vector<std::int64_t>>(), mapper->second);
      entry.bucket = e.at("bucket").get<std::int64_t>();
      entry.tactic = e.at("tactic").get<int>();
      entry.ms = e.at("ms").is_null() ? std::numeric_limits<double>::infinity() : e.at("ms").get<double>();
      entry.tactic_name = field(e, "tactic_name");
      entry.source = Source::kFile;
      out.entries.push_back(std::move(entry));
    }
  } catch (const json::exception& e) {
    fail(path, std::string("has a malformed entry (") + e.what() + ")");
  }
  return out;
}

std::string metadata_mismatch(const Metadata& file, const Metadata& ours) {
  auto differs = [](const std::string& a, const std::string& b) { return !a.empty() && !b.empty() && a != b; };
  if (differs(file.gpu_name, ours.gpu_name)) return "written for GPU '" + file.gpu_name + "', this is '" + ours.gpu_name + "'";
  if (differs(file.compute_capability, ours.compute_capability))
    return "written for compute capability " + file.compute_capability + ", this is " + ours.compute_capability;
  if (differs(file.cuda_version, ours.cuda_version))
    return "written with CUDA " + file.cuda_version + ", this is CUDA " + ours.cuda_version;
  if (differs(file.library_version, ours.library_version))
    return "written by fastinfer " + file.library_version + ", this is " + ours.library_version;
  return "";
}

void write_cache_file_atomically(const std::string& path, const Metadata& metadata, const std::vector<Entry>& entries) {
  json doc;
  doc["format"] = kFormat;
  doc["version"] = kFormatVersion;
  doc["metadata"] = {{"gpu_name", metadata.gpu_name},
                     {"compute_capability", metadata.compute_capability},
                     {"cuda_version", metadata.cuda_version},
                     {"library_version", metadata.library_version}};
  json mappers = json::object();
  json list = json::array();
  for (const Entry& e : entries) {
    const BucketMapper& m = e.key->mapper();
    const std::string id = hex(m.id());
    if (!mappers.contains(id))
      mappers[id] = {{"buckets", std::vector<std::int64_t>(m.buckets().begin(), m.buckets().end())},
                     {"rounding", m.rounding() == Rounding::kUp ? "up" : "down"},
                     {"describe", m.describe()}};
    list.push_back({{"op", e.key->op()},
                    {"identity", e.key->identity()},
                    {"extras", std::vector<std::int64_t>(e.key->extras().begin(), e.key->extras().end())},
                    {"mapper", id},
                    {"bucket", e.bucket},
                    {"tactic", e.tactic},
                    {"tactic_name", e.tactic_name},
                    {"ms", std::isfinite(e.ms) ? json(e.ms) : json(nullptr)}});
  }
  doc["mappers"] = std::move(mappers);
  doc["entries"] = std::move(list);
  const std::string text = doc.dump(1) + "\n";

  static std::atomic<unsigned> counter{0};
  const std::string tmp = path + ".tmp." + std::to_string(::getpid()) + "." + std::to_string(counter++);
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) fail(path, "cannot create " + tmp + ": " + std::strerror(errno));
  std::size_t written = 0;
  while (written < text.size()) {
    const ssize_t n = ::write(fd, text.data() + written, text.size() - written);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) {
      const int err = errno;
      ::close(fd);
      ::unlink(tmp.c_str());
      fail(path, std::string("write failed: ") + std::strerror(err));
    }
    written += static_cast<std::size_t>(n);
  }
  const bool synced = ::fsync(fd) == 0;
  ::close(fd);
  if (!synced || ::rename(tmp.c_str(), path.c_str()) != 0) {
    const int err = errno;
    ::unlink(tmp.c_str());
    fail(path, std::string("cannot replace it: ") + std::strerror(err));
  }
}

CacheFileLock::CacheFileLock(const std::string& path) {
  const std::string lock = path + ".lock";
  fd_ = ::open(lock.c_str(), O_RDWR | O_CREAT | O_CLOEXEC, 0644);
  if (fd_ < 0) fail(path, "cannot open lock file " + lock + ": " + std::strerror(errno));
  while (::flock(fd_, LOCK_EX) != 0) {
    if (errno != EINTR) {
      const int err = errno;
      ::close(fd_);
      fail(path, std::string("cannot lock ") + lock + ": " + std::strerror(err));
    }
  }
}

CacheFileLock::~CacheFileLock() {
  if (fd_ >= 0) ::close(fd_);  // closing releases the flock
}

}  // namespace fastinfer::tune
