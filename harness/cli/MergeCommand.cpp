// MergeCommand.cpp: `gpufuzz merge DIR... [--out OUT]`: merges findings folders (the --out of
// shards, of machines, of earlier nights) into OUT (default findings/), deduplicated by cause
// (campaign/FindingStore.h). A cause new to OUT gets its folder copied; a known one has its hits
// summed, keeps the folder of the earliest find (found_at), and keeps the other's minimal sequence
// and variants among its variants. Each source's contribution is recorded beside the
// count it changed (finding.json's `merged_hits`, by source folder), and each source's stats are
// kept under OUT/merged/, so merging the same folders again changes nothing and merging a folder
// that went on fuzzing adds only what is new. Every file is written atomically, a new finding's
// `signature` last. OUT is not to be written by a campaign while it is merged into. Then the
// merged folder's HTML report is written (OUT/report.html, or --html FILE; --html none skips it).
#include <unistd.h>

#include <algorithm>
#include <cstdio>
#include <numeric>
#include <set>

#include "base/InputError.h"
#include "harness/base/AtomicFile.h"
#include "harness/base/Json.h"
#include "harness/campaign/FindingStore.h"
#include "harness/campaign/SearchQueue.h"
#include "harness/campaign/StatsFile.h"
#include "harness/cli/Subcommands.h"

namespace gpufuzz {

namespace {

std::vector<std::filesystem::path> findingFolders(const std::filesystem::path& root) {
  std::vector<std::filesystem::path> folders;
  for (const auto& entry : std::filesystem::directory_iterator(root)) {
    // A hidden folder is a finding being written (FindingStore's staging), not one yet.
    if (entry.is_directory() && !entry.path().filename().string().starts_with('.') &&
        std::filesystem::exists(entry.path() / "signature"))
      folders.push_back(entry.path());
  }
  std::sort(folders.begin(), folders.end());
  return folders;
}

/// A source folder, read whole before anything is written: bad input means nothing changed.
struct Source {
  std::filesystem::path folder;  // canonical: the key its contributions are recorded under
  std::vector<StoredFinding> findings;
  std::optional<CampaignStats> stats;
};

/// The sources: folders of findings or stats, not OUT, each once.
std::vector<Source> readSources(const CommandLine& cl, const std::filesystem::path& out) {
  std::vector<Source> sources;
  const auto outPath = std::filesystem::weakly_canonical(out);
  for (const std::string& dir : cl.files) {
    if (!std::filesystem::is_directory(dir)) throw InputError(dir + ": not a folder");
    Source source{std::filesystem::canonical(dir), {}, {}};
    if (source.folder == outPath) {
      throw InputError(dir + ": is the folder merged into (--out " + out.string() + ")");
    }
    for (const auto& folder : findingFolders(source.folder)) {
      // A folder without all its files is being written: its signature comes last.
      if (auto f = readStoredFinding(folder)) source.findings.push_back(std::move(*f));
    }
    source.stats = readStats(source.folder / kStatsFile);
    if (source.findings.empty() && !source.stats) {
      throw InputError(dir +
                       ": not a findings folder (no finding folders, no stats.json): give the "
                       "--out folders of campaigns");
    }
    const bool seen = std::any_of(sources.begin(), sources.end(),
                                  [&](const Source& s) { return s.folder == source.folder; });
    if (!seen) sources.push_back(std::move(source));
  }
  return sources;
}

uint64_t total(const std::map<std::string, uint64_t>& hits) {
  return std::accumulate(hits.begin(), hits.end(), uint64_t{0},
                         [](uint64_t sum, const auto& entry) { return sum + entry.second; });
}

/// Makes `to` hold the evidence files of `from` (everything but the record and the signature).
void copyEvidence(const std::filesystem::path& from, const std::filesystem::path& to) {
  std::filesystem::create_directories(to);
  std::set<std::string> copied;
  for (const auto& entry : std::filesystem::directory_iterator(from)) {
    const std::string name = entry.path().filename().string();
    // Hidden files are temporaries of a writer that was killed (AtomicFile.h): not evidence.
    if (!entry.is_regular_file() || name == "finding.json" || name == "signature" ||
        name.starts_with('.'))
      continue;
    writeFileAtomically(to / name, readFile(entry.path()));
    copied.insert(name);
  }
  for (const auto& entry : std::filesystem::directory_iterator(to)) {
    const std::string name = entry.path().filename().string();
    if (entry.is_regular_file() && name != "finding.json" && name != "signature" &&
        !copied.count(name) && !name.starts_with("."))
      std::filesystem::remove(entry.path());
  }
}

bool foundEarlier(const StoredFinding& a, const StoredFinding& b) {
  return !a.foundAt.empty() && (b.foundAt.empty() || a.foundAt < b.foundAt);
}

/// Keeps `source`'s minimal sequence and variants among the variants of `dir`'s finding.
void keepVariants(const std::filesystem::path& dir, const StoredFinding& source,
                  const StoredFinding& target) {
  std::vector<std::pair<std::filesystem::path, std::filesystem::path>> copies;
  if (source.signature != target.signature) {
    copies.emplace_back(source.dir / "minimal.seq", dir / variantFile(source.signature));
  }
  if (std::filesystem::is_directory(source.dir / kVariantsFolder)) {
    for (const auto& entry : std::filesystem::directory_iterator(source.dir / kVariantsFolder))
      copies.emplace_back(entry.path(), dir / kVariantsFolder / entry.path().filename());
  }
  for (const auto& [from, to] : copies) {
    if (std::filesystem::exists(to)) continue;
    std::filesystem::create_directories(to.parent_path());
    writeFileAtomically(to, readFile(from));
  }
}

/// `source` merged into OUT's folder of the same cause; false when that changed nothing.
bool mergeInto(const std::filesystem::path& dir, const StoredFinding& source,
               const std::string& sourceKey) {
  const auto target = readStoredFinding(dir);
  if (!target) throw std::runtime_error(dir.string() + ": a finding's folder lost its files");
  keepVariants(dir, source, *target);
  std::map<std::string, uint64_t> merged = target->mergedHits;
  const uint64_t own = target->hits - std::min(target->hits, total(merged));
  const bool earlier = foundEarlier(source, *target);
  if (earlier && source.signature != target->signature) {
    // The earlier find's sequence becomes minimal.seq; OUT's stays a variant.
    writeFileAtomically(dir / variantFile(target->signature), readFile(dir / "minimal.seq"));
  }
  if (merged[sourceKey] == source.hits && !earlier) return false;
  merged[sourceKey] = source.hits;
  if (earlier) {
    copyEvidence(source.dir, dir);
    writeFileAtomically(dir / "signature", source.signature);
  }
  rewriteFindingCounts(dir, own + total(merged), merged, earlier ? source.dir : dir,
                       std::max(source.lastHit, target->lastHit));
  return true;
}

/// `source` copied into OUT under its own name (or with a suffix when that is taken).
void copyFinding(const std::filesystem::path& out, const StoredFinding& source,
                 const std::string& sourceKey, std::map<std::string, std::string>& known) {
  std::string id = source.id;
  for (int n = 2; std::filesystem::exists(out / id); ++n)
    id = source.id + "-" + std::to_string(n);
  const auto dir = out / id;
  copyEvidence(source.dir, dir);
  rewriteFindingCounts(dir, source.hits, std::map<std::string, uint64_t>{{sourceKey, source.hits}},
                       source.dir, source.lastHit);
  keepVariants(dir, source, source);
  writeFileAtomically(dir / "signature", source.signature);
  known[source.cause] = id;
}

std::string snapshotName(const std::filesystem::path& source) {
  char hash[24];
  std::snprintf(hash, sizeof hash, "%08llx",
                static_cast<unsigned long long>(stableHash(source.string()) & 0xffffffff));
  return source.filename().string() + "-" + hash + ".json";
}

/// OUT/stats.json recomputed from the last stats of every source ever merged (and of the
/// campaigns that ran in OUT itself).
/// The merged queue's distinct signals and entries.
struct QueueCounts {
  std::size_t signals = 0, entries = 0;
};

void mergeStats(const std::filesystem::path& out, const std::vector<Source>& sources,
                const std::optional<CampaignStats>& outStats, const CommandLine& cl,
                std::size_t uniqueFindings, QueueCounts queue) {
  const auto kept = out / "merged";
  if (outStats && outStats->mergedFrom.empty()) writeStats(kept / "self.json", *outStats);
  for (const Source& source : sources) {
    if (!source.stats) continue;
    CampaignStats snapshot = *source.stats;
    snapshot.folder = source.folder.string();
    writeStats(kept / snapshotName(source.folder), snapshot);
  }
  if (!std::filesystem::is_directory(kept)) return;
  std::vector<std::filesystem::path> files;
  for (const auto& entry : std::filesystem::directory_iterator(kept)) {
    if (entry.path().extension() == ".json") files.push_back(entry.path());
  }
  std::sort(files.begin(), files.end());
  std::vector<CampaignStats> parts;
  for (const auto& file : files)
    parts.push_back(*readStats(file));
  CampaignStats m = mergedStats(parts);
  m.folder = std::filesystem::weakly_canonical(out).string();
  m.commandLine = cl.asTyped;
  m.pid = ::getpid();
  m.uniqueFindings = uniqueFindings;
  m.signals = queue.signals;
  m.queue = queue.entries;
  m.lastUpdate = std::max(m.lastUpdate, unixNow());
  writeStats(out / kStatsFile, m);
}

}  // namespace

int runMerge(Session& session) {
  const CommandLine& cl = session.commandLine();
  const std::filesystem::path out = cl.value<Option::Out>();
  const auto sources = readSources(cl, out);
  const auto outStats = readStats(out / kStatsFile);
  FindingStore store(out);
  std::map<std::string, std::string> known = store.causes();
  std::size_t added = 0, counted = 0, unchanged = 0;
  for (const Source& source : sources) {
    for (const StoredFinding& finding : source.findings) {
      const auto it = known.find(finding.cause);
      if (it == known.end()) {
        copyFinding(out, finding, source.folder.string(), known);
        ++added;
      } else {
        ++(mergeInto(out / it->second, finding, source.folder.string()) ? counted : unchanged);
      }
    }
  }
  // Guided search's queues: union by signal (SearchQueue::mergeInto).
  std::vector<std::filesystem::path> queues;
  for (const Source& source : sources)
    queues.push_back(source.folder / "queue");
  std::size_t signals = 0, entries = 0;
  const std::size_t queued = SearchQueue::mergeInto(out / "queue", queues, signals, entries);
  mergeStats(out, sources, outStats, cl, known.size(), QueueCounts{signals, entries});
  std::printf(
      "merged %zu folder(s) into %s: %zu new finding(s), %zu with hits added, %zu unchanged; "
      "%zu unique finding(s) there; %zu queued sequence(s) added, %zu signal(s) there\n",
      sources.size(), out.c_str(), added, counted, unchanged, known.size(), queued, signals);
  std::fflush(stdout);
  if (const auto page = htmlReportOption(cl, defaultHtmlReport(out))) {
    if (writeHtmlReportOrWarn(out, *page)) std::printf("report: %s\n", page->c_str());
  }
  return 0;
}

}  // namespace gpufuzz
