#include "harness/campaign/SearchQueue.h"

#include <unistd.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <iterator>

#include "model/Mutations.h"
#include "model/SplitMix.h"

namespace gpufuzz {

namespace {

constexpr std::string_view kSignalNote = "signal ";
constexpr std::string_view kParentNote = "parent ";

/// Written beside the file, then renamed over it: a reader never sees part of an entry. Not
/// synced: the queue is a search's state, not a finding, and a lost entry is found again.
void writeEntry(const std::filesystem::path& path, const std::string& text) {
  const std::filesystem::path tmp =
      path.parent_path() / ("." + path.filename().string() + ".tmp." + std::to_string(getpid()));
  {
    std::ofstream out(tmp, std::ios::binary | std::ios::trunc);
    out << text;
    if (!out) return;
  }
  std::error_code ec;
  std::filesystem::rename(tmp, path, ec);
  if (ec) std::filesystem::remove(tmp, ec);
}

uint64_t idOfFile(const std::filesystem::path& path) {
  const std::string stem = path.stem().string();
  if (!stem.starts_with("id-")) return 0;
  return std::strtoull(stem.c_str() + 3, nullptr, 10);
}

/// The .seq files of a queue folder, in name order; none when it is no folder.
std::vector<std::filesystem::path> queueFiles(const std::filesystem::path& dir) {
  std::vector<std::filesystem::path> files;
  std::error_code ec;
  if (!std::filesystem::is_directory(dir, ec)) return files;
  for (const auto& e : std::filesystem::directory_iterator(dir, ec)) {
    if (e.path().extension() == ".seq" && !e.path().filename().string().starts_with(".")) {
      files.push_back(e.path());
    }
  }
  std::sort(files.begin(), files.end());
  return files;
}

/// The signals an entry's notes say it added.
std::vector<uint64_t> notedSignals(const std::string& text) {
  std::vector<uint64_t> found;
  const std::string prefix = "# note: " + std::string(kSignalNote);
  std::size_t at = 0;
  while (at < text.size()) {
    const std::size_t end = std::min(text.find('\n', at), text.size());
    const std::string_view line(text.data() + at, end - at);
    if (line.starts_with(prefix)) found.push_back(signalHash(line.substr(prefix.size())));
    at = end + 1;
  }
  return found;
}

std::string fileText(const std::filesystem::path& path) {
  std::ifstream in(path, std::ios::binary);
  return {std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>()};
}

}  // namespace

SearchQueue::SearchQueue(std::filesystem::path dir, bool keep)
    : dir_(std::move(dir)), keep_(keep) {}

std::size_t SearchQueue::mergeInto(const std::filesystem::path& into,
                                   const std::vector<std::filesystem::path>& from,
                                   std::size_t& signals, std::size_t& entries) {
  std::unordered_set<uint64_t> known;
  uint64_t next = 0;
  const std::vector<std::filesystem::path> own = queueFiles(into);
  for (const auto& path : own) {
    for (const uint64_t h : notedSignals(fileText(path)))
      known.insert(h);
    next = std::max(next, idOfFile(path) + 1);
  }
  std::size_t copied = 0;
  for (const auto& dir : from) {
    std::error_code ec;
    if (std::filesystem::equivalent(dir, into, ec)) continue;
    for (const auto& path : queueFiles(dir)) {
      const std::string text = fileText(path);
      bool adds = false;
      for (const uint64_t h : notedSignals(text))
        adds = known.insert(h).second || adds;
      if (!adds) continue;
      std::filesystem::create_directories(into, ec);
      writeEntry(into / fileName(next++), text);
      ++copied;
    }
  }
  signals = known.size();
  entries = own.size() + copied;
  return copied;
}

bool SearchQueue::isProgress(std::string_view signal) {
  return signal.starts_with(kNearSignal);
}

std::string SearchQueue::fileName(uint64_t id) {
  char name[32];
  std::snprintf(name, sizeof name, "id-%06llu.seq", static_cast<unsigned long long>(id));
  return name;
}

std::size_t SearchQueue::load(const std::filesystem::path& dir, const LifecycleModel& model) {
  std::error_code ec;
  const std::vector<std::filesystem::path> files = queueFiles(dir);
  // An entry of this queue's own folder keeps its id; one from elsewhere is numbered after them.
  const bool ours = std::filesystem::equivalent(dir, dir_, ec);
  std::size_t read = 0;
  std::lock_guard lock(mutex_);
  for (const auto& path : files) {
    Sequence seq;
    try {
      seq = loadSequenceOf(path.string(), model);
    } catch (const std::exception&) {
      continue;  // not a sequence of this queue's: left alone
    }
    if (seq.ops.empty()) continue;
    Entry entry;
    entry.seq = std::move(seq);
    for (const std::string& note : entry.seq.directives.notes) {
      if (!note.starts_with(kSignalNote)) continue;
      const std::string text = note.substr(kSignalNote.size());
      const uint64_t h = signalHash(text);
      entry.added.push_back(h);
      entry.progress = entry.progress || isProgress(text);
      ++hits_[h];
    }
    entry.id = ours ? idOfFile(path) : nextId_;
    nextId_ = std::max(nextId_, entry.id + 1);
    if (ours) ++files_;
    entries_.push_back(std::move(entry));
    ++read;
  }
  return read;
}

std::size_t SearchQueue::offer(const Sequence& seq, const TrialResult& result,
                               std::optional<uint64_t> parent) {
  const std::vector<Signal> signals = signalsOf(seq, result);
  std::vector<Signal> added;
  std::lock_guard lock(mutex_);
  for (const Signal& s : signals) {
    if (hits_[s.hash]++ != 0) continue;
    added.push_back(s);
    if (s.text.starts_with(kAnswerSignal)) answers_.insert(s.text.substr(s.text.rfind(' ') + 1));
  }
  // A failing run's signals count, but it is not kept: its mutants would mostly fail the same
  // way, each costing a triage, as AFL keeps crashes apart from its queue.
  if (added.empty() || result.outcome.failed() || !keep_) return added.size();
  Entry entry;
  entry.seq = seq;
  keepLocked(std::move(entry), added, parent);
  return added.size();
}

void SearchQueue::keepLocked(Entry entry, const std::vector<Signal>& added,
                             std::optional<uint64_t> parent) {
  entry.id = nextId_++;
  for (const Signal& s : added) {
    entry.added.push_back(s.hash);
    entry.progress = entry.progress || isProgress(s.text);
  }
  Directives& d = entry.seq.directives;
  d.expect.reset();
  d.expectOn.clear();
  d.found.reset();
  d.notes.clear();
  d.notes.push_back(std::string(kParentNote) + (parent ? fileName(*parent) : "none (generated)"));
  for (const Signal& s : added)
    d.notes.push_back(std::string(kSignalNote) + s.text);
  if (!dir_.empty() && files_ < kMostFiles) {
    std::error_code ec;
    std::filesystem::create_directories(dir_, ec);
    writeEntry(dir_ / fileName(entry.id), printSequence(entry.seq));
    ++files_;
  } else if (entries_.size() >= kMostFiles) {
    // Full: the new entry takes the place of the least energetic one, in memory only.
    auto weakest = std::min_element(
        entries_.begin(), entries_.end(),
        [&](const auto& a, const auto& b) { return energyLocked(a) < energyLocked(b); });
    *weakest = std::move(entry);
    return;
  }
  entries_.push_back(std::move(entry));
}

SearchQueue::Entry* SearchQueue::climberLocked() {
  // The newest progress entries reached furthest: each new `reach` value and `near` set is a
  // step past the ones before. The least picked of the last kClimbers takes the turn.
  Entry* chosen = nullptr;
  std::size_t seen = 0;
  for (auto it = entries_.rbegin(); it != entries_.rend() && seen < kClimbers; ++it) {
    if (!it->progress) continue;
    ++seen;
    if (chosen == nullptr || it->picks < chosen->picks) chosen = &*it;
  }
  return chosen;
}

double SearchQueue::energyLocked(const Entry& e) const {
  // Small sequences with many signals first; a rare signal raises it; each pick lowers it.
  uint32_t rarest = UINT32_MAX;
  for (const uint64_t h : e.added) {
    const auto it = hits_.find(h);
    rarest = std::min(rarest, it == hits_.end() ? 1U : it->second);
  }
  const double rare = 1.0 + 4.0 / std::sqrt(static_cast<double>(std::max(rarest, 1U)));
  const double gain = 1.0 + std::min<double>(static_cast<double>(e.added.size()), 16.0);
  const double length = 4.0 + static_cast<double>(e.seq.ops.size());
  return gain * rare / length / (1.0 + static_cast<double>(e.picks) / 16.0);
}

std::optional<std::pair<Sequence, uint64_t>> SearchQueue::mutant(const GeneratorConfig& config,
                                                                 uint64_t seed) {
  Sequence parent, donor;
  uint64_t id = 0;
  {
    std::lock_guard lock(mutex_);
    if (entries_.empty()) return std::nullopt;
    uint64_t draw = seed;
    Entry* best = splitmixNext(draw) % 2 == 0 ? climberLocked() : nullptr;
    // Roulette over a sample: eight entries drawn uniformly, the most energetic of them taken,
    // so a pick costs the same in a queue of ten entries or of thousands.
    double bestEnergy = -1;
    for (int k = 0; best == nullptr && k < 8; ++k) {
      Entry& e = entries_[splitmixNext(draw) % entries_.size()];
      const double energy = energyLocked(e);
      if (energy > bestEnergy) {
        best = &e;
        bestEnergy = energy;
      }
    }
    ++best->picks;
    parent = best->seq;
    id = best->id;
    donor = entries_[splitmixNext(draw) % entries_.size()].seq;
  }
  Sequence child = mutate(parent, donor, config, splitmix64(seed ^ 0x5851f42d4c957f2dULL));
  child.directives = {};
  return std::pair{std::move(child), id};
}

std::vector<std::string> SearchQueue::answers() const {
  std::lock_guard lock(mutex_);
  return {answers_.begin(), answers_.end()};
}

std::size_t SearchQueue::signals() const {
  std::lock_guard lock(mutex_);
  return hits_.size();
}

std::size_t SearchQueue::size() const {
  std::lock_guard lock(mutex_);
  return entries_.size();
}

}  // namespace gpufuzz
