// FindingStore.cpp: deduplicated, atomically written findings.
#include "harness/campaign/FindingStore.h"

#include <signal.h>
#include <unistd.h>

#include <boost/json.hpp>
#include <cerrno>
#include <cstdio>
#include <cstdlib>

#include "harness/base/AtomicFile.h"
#include "harness/base/Json.h"
#include "renderer/InputError.h"

namespace gpufuzz {

namespace {

uint64_t numberField(const boost::json::object& o, std::string_view key, uint64_t fallback) {
  const boost::json::value* v = o.if_contains(key);
  if (v == nullptr) return fallback;
  if (const auto* u = v->if_uint64()) return *u;
  if (const auto* i = v->if_int64(); i != nullptr && *i >= 0) return static_cast<uint64_t>(*i);
  return fallback;
}

std::string stringField(const boost::json::object& o, std::string_view key) {
  const boost::json::value* v = o.if_contains(key);
  return v != nullptr && v->is_string() ? std::string(v->get_string()) : std::string();
}

boost::json::object findingJson(const std::filesystem::path& dir) {
  const std::string path = (dir / "finding.json").string();
  boost::json::value v = readJsonFile(path);
  if (!v.is_object()) throw InputError(path + ": not a finding record (expected a JSON object)");
  return std::move(v.get_object());
}

}  // namespace

std::optional<StoredFinding> readStoredFinding(const std::filesystem::path& dir) {
  for (const char* file : {"signature", "minimal.seq", "finding.json"}) {
    if (!std::filesystem::is_regular_file(dir / file)) return std::nullopt;
  }
  StoredFinding f;
  f.dir = dir;
  f.id = dir.filename().string();
  f.signature = readFile(dir / "signature");
  const boost::json::object o = findingJson(dir);
  f.hits = numberField(o, "hits", 1);
  f.seed = numberField(o, "seed", 0);
  f.reproduced = static_cast<uint32_t>(numberField(o, "reproduced", 0));
  f.confirmations = static_cast<uint32_t>(numberField(o, "confirmations", 0));
  f.foundAt = stringField(o, "found_at");
  if (const auto* merged = o.if_contains("merged_hits"); merged && merged->is_object()) {
    for (const auto& [source, hits] : merged->get_object())
      f.mergedHits[std::string(source)] = numberField(merged->get_object(), source, 0);
  }
  return f;
}

void rewriteFindingCounts(const std::filesystem::path& dir, uint64_t hits,
                          const std::optional<std::map<std::string, uint64_t>>& mergedHits,
                          const std::filesystem::path& from) {
  boost::json::object o = findingJson(from.empty() ? dir : from);
  o["id"] = dir.filename().string();
  o["file"] = (dir / "minimal.seq").string();
  o["hits"] = hits;
  if (mergedHits) {
    boost::json::object merged;
    for (const auto& [source, n] : *mergedHits)
      merged[source] = n;
    o["merged_hits"] = std::move(merged);
  }
  JsonWriter j;
  j.value(boost::json::value(std::move(o)));
  writeFileAtomically(dir / "finding.json", j.str());
}

namespace {

constexpr std::string_view kStagingPrefix = ".staging-";

/// A staging folder (".staging-ID-PID") is skipped; one whose writer is gone is removed.
bool removeAbandonedStaging(const std::filesystem::path& dir) {
  const std::string name = dir.filename().string();
  if (!name.starts_with(kStagingPrefix)) return false;
  const long pid = std::atol(name.c_str() + name.rfind('-') + 1);
  if (pid > 0 && ::kill(static_cast<pid_t>(pid), 0) != 0 && errno == ESRCH) {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  return true;
}

}  // namespace

FindingStore::FindingStore(std::filesystem::path root) : root_(std::move(root)) {
  std::filesystem::create_directories(root_);
  for (const auto& entry : std::filesystem::directory_iterator(root_)) {
    if (!entry.is_directory()) continue;
    if (removeAbandonedStaging(entry.path())) continue;
    try {
      const auto stored = readStoredFinding(entry.path());
      if (!stored) continue;
      Known k;
      k.id = stored->id;
      k.loaded = true;
      k.hits = stored->hits;
      known_[stored->signature] = k;
    } catch (const std::exception&) {
      // A folder half-written by hand or by another tool is not ours to count.
    }
  }
}

std::size_t FindingStore::size() const {
  std::lock_guard lock(mutex_);
  return known_.size();
}

bool FindingStore::knows(const std::string& signature) const {
  std::lock_guard lock(mutex_);
  return known_.count(signature) > 0;
}

std::map<std::string, std::string> FindingStore::signatures() const {
  std::lock_guard lock(mutex_);
  std::map<std::string, std::string> out;
  for (const auto& [sig, k] : known_)
    out[sig] = k.id;
  return out;
}

std::pair<bool, std::filesystem::path> FindingStore::record(const Finding& finding) {
  std::lock_guard lock(mutex_);
  const std::string sig = finding.signature();
  auto it = known_.find(sig);
  if (it != known_.end()) {
    Known& k = it->second;
    k.hits += finding.hits;
    const auto dir = root_ / k.id;
    if (k.loaded) {
      // Found by an earlier campaign: bump the counter in its own record.
      rewriteFindingCounts(dir, k.hits);
    } else {
      writeFinding(dir, k.finding, k.hits);
    }
    return {false, dir};
  }
  Known k;
  k.id = finding.id();
  // A folder of that name that is not a known finding (damaged, or another signature with the
  // same short hash) is left alone.
  for (int n = 2; std::filesystem::exists(root_ / k.id); ++n)
    k.id = finding.id() + "-" + std::to_string(n);
  k.hits = finding.hits;
  k.finding = finding;
  if (k.finding.foundAt.empty()) k.finding.foundAt = utcTimeText(unixNow());
  // The whole folder appears at once: written under a hidden name, then renamed, so a campaign
  // killed at any moment leaves either a complete finding or none.
  const auto staging =
      root_ / (std::string(kStagingPrefix) + k.id + "-" + std::to_string(::getpid()));
  std::filesystem::remove_all(staging);
  std::filesystem::create_directories(staging);
  writeFinding(staging, k.finding, k.hits);
  writeFileAtomically(staging / "signature", sig);
  const auto dir = root_ / k.id;
  std::filesystem::rename(staging, dir);
  syncDirectory(root_);
  known_[sig] = std::move(k);
  return {true, dir};
}

void FindingStore::writeFinding(const std::filesystem::path& dir, const Finding& f,
                                uint64_t hits) const {
  // The minimal sequence first: the one file a finding cannot be without.
  writeFileAtomically(dir / "minimal.seq", printSequence(f.minimal));
  if (!f.original.empty()) writeFileAtomically(dir / "original.seq", f.original);
  if (!f.stacks.empty()) writeFileAtomically(dir / "stacks.txt", f.stacks);
  if (!f.outputTail.empty()) writeFileAtomically(dir / "output.txt", f.outputTail);
  JsonWriter j;
  j.beginObject();
  j.key("id").value(f.id());
  Finding counted = f;
  counted.hits = hits;
  writeFindingFields(j, counted, (dir / "minimal.seq").string());
  j.key("seed").value(f.seed);
  j.key("found_at").value(f.foundAt);
  j.key("shrink_steps").beginArray();
  for (const std::string& s : f.shrinkSteps)
    j.value(s);
  j.endArray();
  j.endObject();
  writeFileAtomically(dir / "finding.json", j.str());
}

}  // namespace gpufuzz
