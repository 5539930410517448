// FindingStore.h: the findings folder of a campaign. Each unique failure (by signature: its class,
// the kind of operation, and the minimal sequence's normalized text) gets a folder with its
// minimal `.seq` (replayable with no options), the original sequence, the evidence (stacks of a
// stuck child, output tail) and finding.json (with `found_at`, the UTC time it was first
// recorded); later hits only bump its counter. Every file is written atomically, `signature`
// last: a folder counts as a finding once it has one. Opening an existing folder knows its
// earlier findings (resume, merge). Thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <string>
#include <vector>

#include "harness/search/Finding.h"

namespace gpufuzz {

class FindingStore {
 public:
  /// Opens (and creates) `root`, reading the signatures and hits of the findings already there.
  explicit FindingStore(std::filesystem::path root);

  /// Records a finding: a new signature gets its folder and true; a known one only has its hit
  /// counter bumped (false). Returns the folder either way.
  std::pair<bool, std::filesystem::path> record(const Finding& finding);

  std::size_t size() const;
  bool knows(const std::string& signature) const;
  const std::filesystem::path& root() const { return root_; }
  /// Known signatures with their folder names.
  std::map<std::string, std::string> signatures() const;

 private:
  void writeFinding(const std::filesystem::path& dir, const Finding& f, uint64_t hits) const;

  std::filesystem::path root_;
  mutable std::mutex mutex_;
  struct Known {
    std::string id;
    uint64_t hits = 0;
    Finding finding;  // as recorded in this process (empty fields when loaded from disk)
    bool loaded = false;
  };
  std::map<std::string, Known> known_;
};

/// What a finding's folder on disk says: its signature and finding.json's counts.
struct StoredFinding {
  std::filesystem::path dir;
  std::string id;  // the folder's name
  std::string signature;
  uint64_t hits = 1;
  uint64_t seed = 0;
  uint32_t reproduced = 0;
  uint32_t confirmations = 0;
  std::string foundAt;  // "" when the record predates found_at
  /// The hits `gpufuzz merge` brought in, by source findings folder (finding.json's
  /// `merged_hits`); the rest of `hits` were counted by campaigns in this folder.
  std::map<std::string, uint64_t> mergedHits;
};

/// The finding in `dir`, or nullopt when `dir` is not a finding's folder (it lacks signature,
/// minimal.seq or finding.json). InputError naming the file when finding.json is malformed.
std::optional<StoredFinding> readStoredFinding(const std::filesystem::path& dir);

/// Writes dir/finding.json atomically: the record of `from` (default: dir's own) with these
/// counts (`merged_hits` kept when not given), and `id` and `file` naming dir; every other field
/// stays.
void rewriteFindingCounts(const std::filesystem::path& dir, uint64_t hits,
                          const std::optional<std::map<std::string, uint64_t>>& mergedHits = {},
                          const std::filesystem::path& from = {});

}  // namespace gpufuzz
