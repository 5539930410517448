// FindingStore.cpp: deduplicated, atomically written findings.
#include "harness/campaign/FindingStore.h"

#include <unistd.h>

#include <algorithm>
#include <boost/json.hpp>
#include <cerrno>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "base/InputError.h"
#include "harness/base/AtomicFile.h"
#include "harness/base/Json.h"
#include "harness/base/ModelFile.h"
#include "harness/search/Cause.h"
#include "harness/supervise/CrashSite.h"

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

/// One operation of a timeline: where, what, how long (ms), its deadline (ms).
void writeTimedOp(JsonWriter& j, const OpTiming& t, std::string_view elapsedKey) {
  j.beginObject();
  j.key("at");
  writeAt(j, t.at);
  j.key("op").value(t.op);
  j.key(elapsedKey).value(std::chrono::duration<double, std::milli>(t.elapsed).count());
  j.key("deadline_ms").value(static_cast<int64_t>(t.deadline.count()));
  j.endObject();
}

/// finding.json's `timeline`: the confirmation run of the minimal sequence, operation by
/// operation (`gpufuzz plot` draws it), and the operation it was stuck in; null without one.
void writeTimeline(JsonWriter& j, const Finding& f) {
  j.key("timeline");
  if (f.timings.empty() && !f.stuckOp) {
    j.null();
    return;
  }
  j.beginObject();
  j.key("operations").beginArray();
  for (const OpTiming& t : f.timings)
    writeTimedOp(j, t, "elapsed_ms");
  j.endArray();
  j.key("stuck");
  if (f.stuckOp) {
    writeTimedOp(j, *f.stuckOp, "watched_ms");
  } else {
    j.null();
  }
  j.endObject();
}

/// finding.json's `frames`: where it died or was stuck, when stacks were taken; null without.
void writeFrames(JsonWriter& j, const Finding& f) {
  j.key("frames");
  const bool crash = isCrashText(f.stacks);
  const std::vector<std::string> top = crash ? crashState(f.stacks) : topFrames(f.stacks, 4);
  if (top.empty()) {
    j.null();
    return;
  }
  const std::vector<CrashFrame> frames = crashFrames(f.stacks);
  j.beginObject();
  j.key("by").value(f.stacks.substr(0, f.stacks.find('\n')));
  j.key("top").beginArray();
  for (const std::string& name : top)
    j.value(name);
  j.endArray();
  j.key("runtime").value(runtimeTopFrame(frames));
  j.key("program").value(programTopFrame(frames));
  j.key("site").value(frameSite(f.stacks));
  j.endObject();
}

/// The runtime entry point an unplanted crash cause died under (runtimeEntry), or empty.
std::string crashEntry(const std::string& cause, const std::string& stacks) {
  return cause.starts_with("crash;") && isCrashText(stacks) ? runtimeEntry(stacks) : std::string();
}

}  // namespace

std::optional<StoredFinding> readStoredFinding(const std::filesystem::path& dir) {
  for (const char* file : {"signature", "minimal.seq", "finding.json"}) {
    if (!std::filesystem::is_regular_file(dir / file)) return std::nullopt;
  }
  StoredFinding f;
  f.dir = dir;
  // "findings/hang-create-1a2b3c/" and "." name their folder too.
  std::filesystem::path named = std::filesystem::absolute(dir).lexically_normal();
  if (!named.has_filename()) named = named.parent_path();
  f.id = named.filename().string();
  f.signature = readFile(dir / "signature");
  f.cause = std::filesystem::is_regular_file(dir / "cause") ? readFile(dir / "cause") : f.signature;
  const boost::json::object o = findingJson(dir);
  f.hits = numberField(o, "hits", 1);
  f.seed = numberField(o, "seed", 0);
  f.reproduced = static_cast<uint32_t>(numberField(o, "reproduced", 0));
  f.confirmations = static_cast<uint32_t>(numberField(o, "confirmations", 0));
  f.foundAt = stringField(o, "found_at");
  f.lastHit = stringField(o, "last_hit");
  if (f.lastHit.empty()) f.lastHit = f.foundAt;
  if (const auto* merged = o.if_contains("merged_hits"); merged && merged->is_object()) {
    for (const auto& [source, hits] : merged->get_object())
      f.mergedHits[std::string(source)] = numberField(merged->get_object(), source, 0);
  }
  return f;
}

std::string causeKey(const Finding& f) {
  return f.cause.empty() ? f.signature() : f.cause;
}

std::filesystem::path variantFile(const std::string& signature) {
  char hash[24];
  std::snprintf(hash, sizeof hash, "%08llx.seq",
                static_cast<unsigned long long>(stableHash(signature) & 0xffffffff));
  return std::filesystem::path(kVariantsFolder) / hash;
}

void rewriteFindingCounts(const std::filesystem::path& dir, uint64_t hits,
                          const std::optional<std::map<std::string, uint64_t>>& mergedHits,
                          const std::filesystem::path& from, const std::string& lastHit) {
  boost::json::object o = findingJson(from.empty() ? dir : from);
  o["id"] = dir.filename().string();
  o["file"] = (dir / "minimal.seq").string();
  o["hits"] = hits;
  if (!lastHit.empty()) o["last_hit"] = lastHit;
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
  if (pid > 0 && !processAlive(pid)) {
    std::error_code ignored;
    std::filesystem::remove_all(dir, ignored);
  }
  return true;
}

}  // namespace

FindingStore::FindingStore(std::filesystem::path root) : root_(std::move(root)) {
  std::filesystem::create_directories(root_);
  removeAbandonedTemporaries(root_);
  for (const auto& entry : std::filesystem::directory_iterator(root_)) {
    if (!entry.is_directory()) continue;
    if (removeAbandonedStaging(entry.path())) continue;
    removeAbandonedTemporaries(entry.path());
    removeAbandonedTemporaries(entry.path() / kVariantsFolder);
    try {
      const auto stored = readStoredFinding(entry.path());
      if (!stored) continue;
      Known k;
      k.id = stored->id;
      k.loaded = true;
      k.hits = stored->hits;
      k.minimalOps = loadSequence((entry.path() / "minimal.seq").string()).ops.size();
      if (const auto stacks = entry.path() / "stacks.txt"; std::filesystem::is_regular_file(stacks))
        k.entry = crashEntry(stored->cause, readFile(stacks));
      known_[stored->cause] = k;
      knownSignatures_.insert(stored->signature);
      signatureCauses_[stored->signature] = stored->cause;
    } catch (const std::exception&) {
      // A folder half-written by hand or by another tool is not ours to count.
    }
  }
}

bool FindingStore::countHit(const std::string& cause, uint64_t times) {
  std::lock_guard lock(mutex_);
  const auto it = known_.find(cause);
  if (it == known_.end()) return false;
  Known& k = it->second;
  k.hits += times;
  k.lastHit = utcTimeText(unixNow());
  const auto dir = root_ / k.id;
  if (k.loaded) {
    rewriteFindingCounts(dir, k.hits, {}, {}, k.lastHit);
  } else {
    writeFinding(dir, k.finding, k.hits, k.lastHit, dir);
  }
  return true;
}

std::size_t FindingStore::size() const {
  std::lock_guard lock(mutex_);
  return known_.size();
}

bool FindingStore::knows(const std::string& signature) const {
  std::lock_guard lock(mutex_);
  return knownSignatures_.count(signature) > 0;
}

std::map<std::string, std::string> FindingStore::causes() const {
  std::lock_guard lock(mutex_);
  std::map<std::string, std::string> out;
  for (const auto& [cause, k] : known_)
    out[cause] = k.id;
  return out;
}

std::string FindingStore::crashCauseUnder(const std::string& entry) const {
  if (entry.empty()) return {};
  std::lock_guard lock(mutex_);
  for (const auto& [cause, k] : known_) {
    if (k.entry == entry) return cause;
  }
  return {};
}

bool FindingStore::hasCrashEntries() const {
  std::lock_guard lock(mutex_);
  return std::any_of(known_.begin(), known_.end(),
                     [](const auto& k) { return !k.second.entry.empty(); });
}

std::pair<bool, std::filesystem::path> FindingStore::record(const Finding& finding) {
  std::lock_guard lock(mutex_);
  const std::string sig = finding.signature();
  std::string cause = causeKey(finding);
  if (const auto known = signatureCauses_.find(sig); known != signatureCauses_.end() &&
                                                     cause.find("; frames") == std::string::npos &&
                                                     known_.contains(known->second)) {
    cause = known->second;
  }
  signatureCauses_.try_emplace(sig, cause);
  auto it = known_.find(cause);
  if (it == known_.end()) it = withoutStacks(cause);
  if (it != known_.end() && it->first != cause && cause.size() > it->first.size()) {
    // The first with stacks names the cause from now on: other stacks are other causes.
    auto node = known_.extract(it);
    node.key() = cause;
    writeFileAtomically(root_ / node.mapped().id / "cause", cause);
    it = known_.insert(std::move(node)).position;
  }
  if (it != known_.end()) {
    Known& k = it->second;
    k.hits += finding.hits;
    k.lastHit = utcTimeText(unixNow());
    const auto dir = root_ / k.id;
    if (knownSignatures_.insert(sig).second) recordVariant(k, finding);
    if (k.loaded) {
      // Found by an earlier campaign: bump the counter in its own record.
      rewriteFindingCounts(dir, k.hits, {}, {}, k.lastHit);
    } else {
      writeFinding(dir, k.finding, k.hits, k.lastHit, dir);
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
  k.minimalOps = finding.minimal.ops.size();
  k.entry = crashEntry(cause, finding.stacks);
  if (k.finding.foundAt.empty()) k.finding.foundAt = utcTimeText(unixNow());
  k.lastHit = k.finding.foundAt;
  // The whole folder appears at once: written under a hidden name, then renamed, so a campaign
  // killed at any moment leaves either a complete finding or none.
  const auto staging =
      root_ / (std::string(kStagingPrefix) + k.id + "-" + std::to_string(::getpid()));
  const auto dir = root_ / k.id;
  try {
    std::filesystem::remove_all(staging);
    std::filesystem::create_directories(staging);
    writeFinding(staging, k.finding, k.hits, k.lastHit, dir);
    writeFileAtomically(staging / "cause", cause);
    writeFileAtomically(staging / "signature", sig);
    std::filesystem::rename(staging, dir);
  } catch (const std::exception& e) {
    // A full disk leaves no half-written finding: the staging folder goes, the folder stays as
    // it was.
    std::error_code ignored;
    std::filesystem::remove_all(staging, ignored);
    throw WriteError("cannot write the finding " + dir.string() + ": " + e.what());
  }
  syncDirectory(root_);
  known_[cause] = std::move(k);
  knownSignatures_.insert(sig);
  return {true, dir};
}

std::map<std::string, FindingStore::Known>::iterator FindingStore::withoutStacks(
    const std::string& cause) {
  // Stacks are not taken on every run: a cause without frames is the one with them.
  constexpr std::string_view kFrames = "; frames";
  const auto base = [&](const std::string& c) { return c.substr(0, c.find(kFrames)); };
  const bool framed = cause.find(kFrames) != std::string::npos;
  for (auto it = known_.begin(); it != known_.end(); ++it) {
    const bool itFramed = it->first.find(kFrames) != std::string::npos;
    if ((!framed || !itFramed) && base(it->first) == base(cause)) return it;
  }
  return known_.end();
}

void FindingStore::recordVariant(Known& k, const Finding& finding) {
  const auto dir = root_ / k.id;
  std::filesystem::create_directories(dir / kVariantsFolder);
  // Only a sequence that fails as minimal.seq does may take its place: a spin kept beside a
  // crash's cause (Triage::stuckUnderCrash) stays a variant.
  if (k.loaded || finding.minimal.ops.size() >= k.minimalOps ||
      finding.outcome.cls != k.finding.outcome.cls) {
    writeFileAtomically(dir / variantFile(finding.signature()),
                        printSequence(withPortableModel(finding.minimal, dir / kVariantsFolder)));
    return;
  }
  // The smaller one becomes minimal.seq; the former minimal is kept as a variant. Its record is
  // rewritten by the caller.
  writeFileAtomically(dir / variantFile(k.finding.signature()),
                      printSequence(withPortableModel(k.finding.minimal, dir / kVariantsFolder)));
  std::filesystem::remove(dir / variantFile(finding.signature()));
  Finding smaller = finding;
  smaller.foundAt = k.finding.foundAt;
  k.finding = std::move(smaller);
  k.minimalOps = k.finding.minimal.ops.size();
  writeFileAtomically(dir / "signature", k.finding.signature());
}

void FindingStore::writeFinding(const std::filesystem::path& dir, const Finding& f, uint64_t hits,
                                const std::string& lastHit,
                                const std::filesystem::path& finalDir) const {
  // The minimal sequence first: the one file a finding cannot be without.
  writeFileAtomically(dir / "minimal.seq", printSequence(withPortableModel(f.minimal, dir)));
  if (!f.original.empty()) writeFileAtomically(dir / "original.seq", f.original);
  if (!f.stacks.empty()) writeFileAtomically(dir / "stacks.txt", f.stacks);
  if (!f.outputTail.empty()) writeFileAtomically(dir / "output.txt", f.outputTail);
  JsonWriter j;
  j.beginObject();
  j.key("id").value(finalDir.filename().string());
  Finding counted = f;
  counted.hits = hits;
  writeFindingFields(j, counted, (finalDir / "minimal.seq").string());
  j.key("cause").value(causeKey(f));
  std::size_t variants = 0;
  if (std::filesystem::is_directory(dir / kVariantsFolder)) {
    for ([[maybe_unused]] const auto& entry :
         std::filesystem::directory_iterator(dir / kVariantsFolder))
      ++variants;
  }
  j.key("variants").value(static_cast<uint64_t>(variants));
  writeFrames(j, f);
  j.key("seed").value(f.seed);
  j.key("found_at").value(f.foundAt);
  j.key("last_hit").value(lastHit);
  j.key("shrink_steps").beginArray();
  for (const std::string& s : f.shrinkSteps)
    j.value(s);
  j.endArray();
  writeTimeline(j, f);
  j.endObject();
  writeFileAtomically(dir / "finding.json", j.str());
}

}  // namespace gpufuzz
