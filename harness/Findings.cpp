// Findings.cpp: deduplicated, atomically written findings.
#include "harness/Findings.h"

#include <cstdio>
#include <regex>

#include "harness/AtomicFile.h"
#include "harness/Json.h"

namespace gpufuzz {

uint64_t stableHash(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string Finding::signature() const {
  return std::string(outcomeClassName(outcome.cls)) + "\n" + outcome.op + "\n" +
         normalizedOperations(minimal);
}

std::string Finding::id() const {
  char hash[16];
  std::snprintf(hash, sizeof hash, "%06llx",
                static_cast<unsigned long long>(stableHash(signature()) & 0xffffff));
  return std::string(outcomeClassName(outcome.cls)) + "-" + outcome.op + "-" + hash;
}

void writeAt(JsonWriter& j, const std::optional<At>& at) {
  if (!at) {
    j.null();
  } else if (at->isEnd()) {
    j.value("end");
  } else {
    j.value(at->ordinal);
  }
}

void writeFindingFields(JsonWriter& j, const Finding& f, const std::string& file) {
  j.key("class").value(outcomeClassName(f.outcome.cls));
  j.key("at");
  writeAt(j, f.outcome.at);
  j.key("op").value(f.outcome.op);
  j.key("detail").value(f.outcome.detail);
  j.key("sequence").value(normalizedOperations(f.minimal));
  j.key("file").value(file);
  j.key("executions_to_find").value(f.executionsToFind);
  j.key("executions_to_shrink").value(f.executionsToShrink);
  j.key("reproduced").value(f.reproduced);
  j.key("confirmations").value(f.confirmations);
  j.key("hits").value(f.hits);
}

FindingStore::FindingStore(std::filesystem::path root) : root_(std::move(root)) {
  std::filesystem::create_directories(root_);
  const std::regex hitsPattern("\"hits\": ([0-9]+)");
  for (const auto& entry : std::filesystem::directory_iterator(root_)) {
    const auto signatureFile = entry.path() / "signature";
    if (!entry.is_directory() || !std::filesystem::exists(signatureFile)) continue;
    Known k;
    k.id = entry.path().filename().string();
    k.loaded = true;
    k.hits = 1;
    try {
      std::smatch m;
      const std::string json = readFile(entry.path() / "finding.json");
      if (std::regex_search(json, m, hitsPattern)) k.hits = std::stoull(m[1].str());
      known_[readFile(signatureFile)] = k;
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
      const auto path = dir / "finding.json";
      std::string json = readFile(path);
      json = std::regex_replace(json, std::regex("\"hits\": [0-9]+"),
                                "\"hits\": " + std::to_string(k.hits));
      writeFileAtomically(path, json);
    } else {
      writeFinding(dir, k.finding, k.hits);
    }
    return {false, dir};
  }
  Known k;
  k.id = finding.id();
  k.hits = finding.hits;
  k.finding = finding;
  const auto dir = root_ / k.id;
  writeFinding(dir, finding, k.hits);
  writeFileAtomically(dir / "signature", sig);
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
  j.key("shrink_steps").beginArray();
  for (const std::string& s : f.shrinkSteps)
    j.value(s);
  j.endArray();
  j.endObject();
  writeFileAtomically(dir / "finding.json", j.str());
}

}  // namespace gpufuzz
