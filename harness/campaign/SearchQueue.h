// SearchQueue.h: guided search's kept sequences (docs/search.md). A passing run that adds a
// signal (search/Signals.h) is kept in OUT/queue/ as one .seq file whose notes name its parent
// and the signals it added; new sequences are mutations of kept ones (model/Mutations.h).
//
// Contract:
// - Thread-safe: every member takes the one mutex, `mutex_`, which guards the signal set, the
//   entries and their files.
// - Energy, as AFL favours entries: few operations, many signals added, a rare signal among them,
//   lowered each time the entry is picked. A pick is a tournament of eight entries drawn at
//   random, the most energetic winning, so it costs the same in a queue of any size.
// - Climbing: half the picks, while any entry added a `near` signal (a fault plan's conditions
//   held together, a counter climbing toward its threshold), go to the least picked of the last
//   kClimbers such entries, as IJON keeps mutating the inputs that pushed a value furthest.
// - A failing run's signals count, but the run is not kept: its mutants would mostly fail the
//   same way, each costing a triage.
// - At most kMostFiles entries are kept as files; past that, signals are still counted, and an
//   entry is kept only in memory where it replaces the least energetic one.
// - A queue folder read back (a resumed campaign, `merge`) gives its signals back from the notes.
#pragma once

#include <cstdint>
#include <filesystem>
#include <mutex>
#include <optional>
#include <set>
#include <string>
#include <string_view>
#include <unordered_map>
#include <unordered_set>
#include <vector>

#include "harness/search/Signals.h"
#include "model/Generator.h"

namespace gpufuzz {

class SearchQueue {
 public:
  static constexpr std::size_t kMostFiles = 5000;
  static constexpr std::size_t kClimbers = 16;

  /// Whether a signal tells of progress toward a fault plan's rule: `near` sets and `reach`
  /// values (search/Signals.h).
  static bool isProgress(std::string_view signal);

  /// A queue kept in `dir` (created on the first entry); empty `dir`: in memory only. One that
  /// does not `keep` counts signals and keeps no sequence: blind search's measure.
  explicit SearchQueue(std::filesystem::path dir, bool keep = true);

  /// Reads the .seq files of a queue folder: their signals join the set and they join the queue.
  /// Files of another model than `model` or that do not parse are skipped; returns how many
  /// were read.
  std::size_t load(const std::filesystem::path& dir, const LifecycleModel& model);

  /// Counts the signals of a run of `seq`; keeps `seq` when it added one. Returns how many it
  /// added.
  std::size_t offer(const Sequence& seq, const TrialResult& result, std::optional<uint64_t> parent);

  /// A mutant of an entry picked by energy, and that entry's id; nullopt while the queue is
  /// empty. Drawn from `seed`.
  std::optional<std::pair<Sequence, uint64_t>> mutant(const GeneratorConfig& config, uint64_t seed);

  std::size_t signals() const;
  std::size_t size() const;
  /// The distinct words of `answer` signals, sorted: the error codes and checker rules met.
  std::vector<std::string> answers() const;

  /// The file name of entry `id`: "id-000012.seq".
  static std::string fileName(uint64_t id);

  /// `gpufuzz merge`: the entries of the queue folders `from` that add a signal to those of the
  /// queue folder `into`, copied there as its next entries (union by signal). Returns how many
  /// were copied; `signals` and `entries` receive the folder's counts after it.
  static std::size_t mergeInto(const std::filesystem::path& into,
                               const std::vector<std::filesystem::path>& from, std::size_t& signals,
                               std::size_t& entries);

 private:
  struct Entry {
    uint64_t id = 0;
    Sequence seq;
    std::vector<uint64_t> added;  // the signals it added
    uint64_t picks = 0;
    bool progress = false;  // added a signal of progress (isProgress)
  };
  /// The climbing pick, or null while no entry made progress.
  Entry* climberLocked();
  double energyLocked(const Entry& e) const;
  void keepLocked(Entry entry, const std::vector<Signal>& added, std::optional<uint64_t> parent);

  std::filesystem::path dir_;
  bool keep_;
  mutable std::mutex mutex_;
  std::set<std::string> answers_;
  std::unordered_map<uint64_t, uint32_t> hits_;  // signal -> runs that showed it
  std::vector<Entry> entries_;
  uint64_t nextId_ = 0;
  std::size_t files_ = 0;
};

}  // namespace gpufuzz
