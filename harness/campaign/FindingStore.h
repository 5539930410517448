// FindingStore.h: the findings folder of a campaign. Each cause (search/Cause.h: the class, the
// kind of operation, what the failure needs, the stuck thread's top frames) gets one folder with
// its minimal `.seq` (replayable with no options), the original sequence, the evidence (stacks
// of a stuck child, output tail) and finding.json (with `found_at` and `last_hit`, the UTC times
// it was first and last recorded); later hits bump its counter, and a later hit whose minimal
// sequence reads otherwise is kept as a variant (variants/SIGNATURE-HASH.seq), the smallest of them
// all being minimal.seq. A finding without a cause (recorded before causes were) is its own
// signature's. Every file is written atomically, `signature` last: a folder counts as a finding
// once it has one. Opening an existing folder knows its earlier findings (resume, merge).
// Thread-safe.
#pragma once

#include <cstdint>
#include <filesystem>
#include <map>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <vector>

#include "harness/search/Finding.h"

namespace gpufuzz {

class FindingStore {
 public:
  /// Opens (and creates) `root`, reading the signatures and hits of the findings already there;
  /// the staging folders and temporaries of writers killed before they finished are removed.
  explicit FindingStore(std::filesystem::path root);

  /// Records a finding: a new cause gets its folder and true; a known one has its hit counter
  /// bumped. A finding without frames whose minimal sequence is known belongs to that sequence's
  /// cause: its stacks were not taken again (its confirmations were skipped).
  /// The finding's minimal sequence is kept as a variant when it is new (false).
  /// Returns the folder either way. WriteError (AtomicFile.h) when a file cannot be written (a
  /// full disk): a new finding's folder is then absent, a known one keeps its former files.
  std::pair<bool, std::filesystem::path> record(const Finding& finding);

  /// Failures that triage matched to a known cause without shrinking them (a crash with the
  /// same frames, say): the cause's hit counter grows by `times` on disk. False when the cause
  /// is not known.
  bool countHit(const std::string& cause, uint64_t times = 1);

  std::size_t size() const;
  /// Whether a finding of this signature (a minimal sequence or a variant) is known.
  bool knows(const std::string& signature) const;
  const std::filesystem::path& root() const { return root_; }
  /// Known causes with their folder names.
  std::map<std::string, std::string> causes() const;
  /// The known crash cause that died under the runtime's entry point `entry` (runtimeEntry in
  /// CrashSite.h), by its stacks; the first in cause order when several did, else empty. A
  /// planted crash's rule is its own bug, so it is never one.
  std::string crashCauseUnder(const std::string& entry) const;
  /// Whether a known crash cause has a runtime entry point.
  bool hasCrashEntries() const;

 private:
  /// Writes the finding's files into `dir`; finding.json's `file` names `finalDir`'s minimal.seq
  /// (the folder `dir` becomes once renamed).
  void writeFinding(const std::filesystem::path& dir, const Finding& f, uint64_t hits,
                    const std::string& lastHit, const std::filesystem::path& finalDir) const;

  std::filesystem::path root_;
  mutable std::mutex mutex_;
  struct Known {
    std::string id;
    uint64_t hits = 0;
    std::string lastHit;  // UTC time of the last hit recorded in this process
    Finding finding;      // as recorded in this process (empty fields when loaded from disk)
    bool loaded = false;
    std::size_t minimalOps = 0;  // the operations of minimal.seq
    std::string entry;           // an unplanted crash's runtime entry point, or empty
  };
  /// A new variant of a known cause: its file in variants/, and minimal.seq when it is smaller.
  void recordVariant(Known& k, const Finding& finding);

  /// A known cause that differs from `cause` only in that one of them has no stack frames.
  std::map<std::string, Known>::iterator withoutStacks(const std::string& cause);

  std::map<std::string, Known> known_;     // by cause
  std::set<std::string> knownSignatures_;  // minimal sequences and variants
  /// The cause each signature was recorded under (minimal sequences and variants recorded here).
  std::map<std::string, std::string> signatureCauses_;
};

/// What a finding's folder on disk says: its signature and finding.json's counts.
struct StoredFinding {
  std::filesystem::path dir;
  std::string id;  // the folder's name
  std::string signature;
  std::string cause;  // the `cause` file, or the signature for a finding recorded without one
  uint64_t hits = 1;
  uint64_t seed = 0;
  uint32_t reproduced = 0;
  uint32_t confirmations = 0;
  std::string foundAt;  // "" when the record predates found_at
  std::string lastHit;  // finding.json's `last_hit`; foundAt when the record predates it
  /// The hits `gpufuzz merge` brought in, by source findings folder (finding.json's
  /// `merged_hits`); the rest of `hits` were counted by campaigns in this folder.
  std::map<std::string, uint64_t> mergedHits;
};

/// The key that buckets findings: the cause, or the signature when there is none.
std::string causeKey(const Finding& f);

/// A finding folder's variants/: where other minimal sequences of its cause are kept.
inline constexpr const char* kVariantsFolder = "variants";
/// "variants/1a2b3c4d.seq": the file a variant of this signature is kept in.
std::filesystem::path variantFile(const std::string& signature);

/// The finding in `dir`, or nullopt when `dir` is not a finding's folder (it lacks signature,
/// minimal.seq or finding.json). InputError naming the file when finding.json is malformed.
std::optional<StoredFinding> readStoredFinding(const std::filesystem::path& dir);

/// Writes dir/finding.json atomically: the record of `from` (default: dir's own) with these
/// counts (`merged_hits` kept when not given), `last_hit` when given, and `id` and `file` naming
/// dir; every other field stays.
void rewriteFindingCounts(const std::filesystem::path& dir, uint64_t hits,
                          const std::optional<std::map<std::string, uint64_t>>& mergedHits = {},
                          const std::filesystem::path& from = {}, const std::string& lastHit = {});

}  // namespace gpufuzz
