// StatsFile.cpp: stats.json written, read back and summed.
#include "harness/campaign/StatsFile.h"

#include <algorithm>
#include <boost/json.hpp>
#include <type_traits>

#include "base/InputError.h"
#include "harness/base/AtomicFile.h"
#include "harness/base/Json.h"
#include "model/Outcome.h"

namespace gpufuzz {

namespace {

constexpr std::size_t kClasses = std::tuple_size_v<decltype(CampaignCounts::byClass)>;

/// The counts of a stats file, in file order, visited by a StatsWriter or a StatsReader.
template <typename Io, typename Counts>
void visitCounts(Io& io, Counts& c) {
  io.number("campaigns", c.campaigns);
  io.number("executions", c.executions);
  io.number("sequences", c.sequences);
  io.number("calls", c.calls);
  io.number("calls_overlapped", c.callsOverlapped);
  io.byClass("by_class", c.byClass);
  io.number("failures", c.failures);
  io.number("unconfirmed", c.unconfirmed);
  io.number("long_confirmations", c.longConfirmations);
  io.number("confirmations_skipped", c.confirmationsSkipped);
  io.number("harness_errors", c.harnessErrors);
  io.number("persistent_failures", c.persistentFailures);
  io.number("persistent_same_alone", c.persistentSame);
  io.number("persistent_needed_history", c.persistentNeededHistory);
  io.number("confirmed_causes", c.confirmedCauses);
  io.number("variants", c.variants);
  io.number("hits_by_triage", c.triageHits);
  io.number("queued_failures", c.queuedFailures);
  io.number("unexamined", c.unexamined);
  io.byClass("unexamined_by_class", c.unexaminedByClass);
  io.number("run_time_s", c.runTimeSeconds);
}

/// Every field of a stats file once, in file order.
template <typename Io, typename Stats>
void visitStats(Io& io, Stats& s) {
  io.text("folder", s.folder);
  io.text("command_line", s.commandLine);
  io.number("pid", s.pid);
  io.time("start_time", s.startTime);
  io.time("last_update", s.lastUpdate);
  io.optionalNumber("seed", s.seed);
  io.shard("shard", s.shard);
  io.optionalNumber("next_sequence", s.nextSequence);
  io.numbers("unfinished", s.unfinished);
  io.text("backend", s.backend);
  io.text("device", s.device);
  io.text("children_by_gpu", s.childrenByGpu);
  io.text("target", s.target);
  io.text("target_version", s.targetVersion);
  io.text("policy", s.policy);
  io.text("faults", s.faults);
  io.text("ops", s.ops);
  io.number("persistent", s.persistent);
  io.number("threads", s.threads);
  io.text("search", s.search);
  io.number("signals", s.signals);
  io.number("queue", s.queue);
  io.number("mutants", s.mutants);
  io.texts("answers", s.answers);
  io.number("execs_per_sec", s.execsPerSecond);
  visitCounts(io, s.run);
  io.number("unique_findings", s.uniqueFindings);
  io.number("new_findings", s.newFindings);
  io.time("last_find", s.lastFind);
  io.text("deadline", s.deadline);
  io.text("deadline_by_kind", s.deadlineByKind);
  io.text("shrinking", s.shrinking);
  io.number("finished", s.finished);
  io.number("stopped", s.stopped);
  io.text("stop_reason", s.stopReason);
  io.nested("cumulative", [&](auto& inner) { visitCounts(inner, s.cumulative); });
  io.texts("merged_from", s.mergedFrom);
}

/// Writes the fields; times also as UTC text (`KEY_utc`).
class StatsWriter {
 public:
  explicit StatsWriter(JsonWriter& j) : j_(j) {}

  template <typename T>
  void number(std::string_view key, const T& n) {
    j_.key(key).value(n);
  }
  template <typename T>
  void optionalNumber(std::string_view key, const std::optional<T>& n) {
    j_.key(key);
    n ? j_.value(*n) : j_.null();
  }
  void text(std::string_view key, const std::string& t) { j_.key(key).value(t); }
  void time(std::string_view key, const std::optional<int64_t>& t) {
    optionalNumber(key, t);
    j_.key(std::string(key) + "_utc");
    t ? j_.value(utcTimeText(*t)) : j_.null();
  }
  void shard(std::string_view key, const std::optional<Shard>& s) {
    j_.key(key);
    s ? j_.value(shardText(*s)) : j_.null();
  }
  void byClass(std::string_view key, const std::array<uint64_t, kClasses>& counts) {
    j_.key(key).beginObject();
    for (std::size_t i = 0; i < kClasses; ++i)
      j_.key(outcomeClassName(static_cast<OutcomeClass>(i))).value(counts[i]);
    j_.endObject();
  }
  template <typename Visit>
  void nested(std::string_view key, Visit visit) {
    j_.key(key).beginObject();
    visit(*this);
    j_.endObject();
  }
  void numbers(std::string_view key, const std::vector<uint64_t>& list) {
    j_.key(key).beginArray();
    for (const uint64_t n : list)
      j_.value(n);
    j_.endArray();
  }
  void texts(std::string_view key, const std::vector<std::string>& list) {
    if (list.empty()) return;
    j_.key(key).beginArray();
    for (const std::string& t : list)
      j_.value(t);
    j_.endArray();
  }

 private:
  JsonWriter& j_;
};

/// Reads the fields of a parsed stats file; a missing or null field keeps its default, a
/// mistyped one is an InputError naming it.
class StatsReader {
 public:
  StatsReader(const boost::json::object& o, std::string where) : o_(o), where_(std::move(where)) {}

  template <typename T>
  void number(std::string_view key, T& out) const {
    const boost::json::value* v = find(key);
    if (v == nullptr) return;
    if constexpr (std::is_same_v<T, bool>) {
      if (!v->is_bool()) fail(key, "true or false");
      out = v->get_bool();
    } else {
      if (!v->is_number()) fail(key, "a number");
      boost::system::error_code ec;
      const T n = v->to_number<T>(ec);
      if (ec) fail(key, "a number in range");
      out = n;
    }
  }
  template <typename T>
  void optionalNumber(std::string_view key, std::optional<T>& out) const {
    if (find(key) == nullptr) return;
    T n{};
    number(key, n);
    out = n;
  }
  void text(std::string_view key, std::string& out) const {
    const boost::json::value* v = find(key);
    if (v == nullptr) return;
    if (!v->is_string()) fail(key, "a string");
    out = std::string(v->get_string());
  }
  void time(std::string_view key, int64_t& t) const { number(key, t); }
  void time(std::string_view key, std::optional<int64_t>& t) const { optionalNumber(key, t); }
  void shard(std::string_view key, std::optional<Shard>& out) const {
    std::string text;
    this->text(key, text);
    if (text.empty()) return;
    try {
      out = parseShard(text);
    } catch (const InputError&) {
      fail(key, "I/N");
    }
  }
  void byClass(std::string_view key, std::array<uint64_t, kClasses>& counts) const {
    nested(key, [&](const StatsReader& classes) {
      for (std::size_t i = 0; i < kClasses; ++i)
        classes.number(outcomeClassName(static_cast<OutcomeClass>(i)), counts[i]);
    });
  }
  template <typename Visit>
  void nested(std::string_view key, Visit visit) const {
    const boost::json::value* v = find(key);
    if (v == nullptr) return;
    if (!v->is_object()) fail(key, "an object");
    const StatsReader inner(v->get_object(), where_ + ": " + std::string(key));
    visit(inner);
  }
  void numbers(std::string_view key, std::vector<uint64_t>& out) const {
    const boost::json::value* v = find(key);
    if (v == nullptr) return;
    if (!v->is_array()) fail(key, "an array of numbers");
    for (const boost::json::value& n : v->get_array()) {
      boost::system::error_code ec;
      const uint64_t k = n.is_number() ? n.to_number<uint64_t>(ec) : 0;
      if (!n.is_number() || ec) fail(key, "an array of numbers");
      out.push_back(k);
    }
  }
  void texts(std::string_view key, std::vector<std::string>& out) const {
    const boost::json::value* v = find(key);
    if (v == nullptr) return;
    if (!v->is_array()) fail(key, "an array of strings");
    for (const boost::json::value& t : v->get_array()) {
      if (!t.is_string()) fail(key, "an array of strings");
      out.emplace_back(t.get_string());
    }
  }

 private:
  const boost::json::value* find(std::string_view key) const {
    const boost::json::value* v = o_.if_contains(key);
    return v == nullptr || v->is_null() ? nullptr : v;
  }
  [[noreturn]] void fail(std::string_view key, const char* expected) const {
    throw InputError(where_ + ": `" + std::string(key) + "` is not " + expected);
  }

  const boost::json::object& o_;
  std::string where_;
};

/// The value all parts share, or every distinct one, comma-separated.
std::string shared(const std::vector<CampaignStats>& parts, std::string CampaignStats::*field) {
  std::vector<std::string> distinct;
  for (const CampaignStats& p : parts) {
    if (std::find(distinct.begin(), distinct.end(), p.*field) == distinct.end())
      distinct.push_back(p.*field);
  }
  std::string text;
  for (const std::string& v : distinct)
    text += (text.empty() ? "" : ",") + v;
  return text;
}

}  // namespace

CampaignCounts& CampaignCounts::operator+=(const CampaignCounts& other) {
  campaigns += other.campaigns;
  executions += other.executions;
  sequences += other.sequences;
  calls += other.calls;
  callsOverlapped += other.callsOverlapped;
  for (std::size_t i = 0; i < kClasses; ++i)
    byClass[i] += other.byClass[i];
  failures += other.failures;
  unconfirmed += other.unconfirmed;
  longConfirmations += other.longConfirmations;
  confirmationsSkipped += other.confirmationsSkipped;
  harnessErrors += other.harnessErrors;
  persistentFailures += other.persistentFailures;
  persistentSame += other.persistentSame;
  persistentNeededHistory += other.persistentNeededHistory;
  confirmedCauses += other.confirmedCauses;
  variants += other.variants;
  triageHits += other.triageHits;
  queuedFailures += other.queuedFailures;
  unexamined += other.unexamined;
  for (std::size_t i = 0; i < kClasses; ++i)
    unexaminedByClass[i] += other.unexaminedByClass[i];
  runTimeSeconds += other.runTimeSeconds;
  return *this;
}

std::string statsJson(const CampaignStats& s) {
  JsonWriter j;
  j.beginObject();
  StatsWriter writer(j);
  visitStats(writer, s);
  j.endObject();
  return j.str();
}

CampaignStats parseStats(const std::string& json, const std::string& where) {
  const boost::json::value parsed = parseJson(json, where);
  if (!parsed.is_object()) throw InputError(where + ": not a stats file (expected an object)");
  CampaignStats s;
  const StatsReader reader(parsed.get_object(), where);
  visitStats(reader, s);
  return s;
}

std::optional<CampaignStats> readStats(const std::filesystem::path& path) {
  if (!std::filesystem::exists(path)) return std::nullopt;
  return parseStats(readFile(path), path.string());
}

void writeStats(const std::filesystem::path& path, const CampaignStats& stats) {
  writeFileAtomically(path, statsJson(stats));
}

std::optional<CampaignStats> ownStats(const std::filesystem::path& folder) {
  auto stats = readStats(folder / kStatsFile);
  if (stats && !stats->mergedFrom.empty()) return readStats(folder / "merged" / "self.json");
  return stats;
}

CampaignStats mergedStats(const std::vector<CampaignStats>& parts) {
  CampaignStats m;
  if (parts.empty()) return m;
  m.startTime = parts.front().startTime;
  m.seed = parts.front().seed;
  m.finished = true;
  for (const CampaignStats& p : parts) {
    m.startTime = std::min(m.startTime, p.startTime);
    m.lastUpdate = std::max(m.lastUpdate, p.lastUpdate);
    if (p.lastFind) m.lastFind = std::max(m.lastFind.value_or(*p.lastFind), *p.lastFind);
    if (p.seed != m.seed) m.seed.reset();
    m.execsPerSecond += p.execsPerSecond;
    m.newFindings += p.newFindings;
    m.persistent = std::max(m.persistent, p.persistent);  // the most any shard allowed
    // Shards' signals overlap: the most any saw is what is known without their queues.
    m.signals = std::max(m.signals, p.signals);
    m.queue += p.queue;
    m.mutants += p.mutants;
    m.answers.insert(m.answers.end(), p.answers.begin(), p.answers.end());
    m.finished = m.finished && p.finished;
    m.stopped = m.stopped || p.stopped;
    m.run += p.run;
    m.cumulative += p.cumulative;
    m.mergedFrom.push_back(p.folder);
  }
  std::sort(m.answers.begin(), m.answers.end());
  m.answers.erase(std::unique(m.answers.begin(), m.answers.end()), m.answers.end());
  m.backend = shared(parts, &CampaignStats::backend);
  m.device = shared(parts, &CampaignStats::device);
  m.childrenByGpu = shared(parts, &CampaignStats::childrenByGpu);
  m.target = shared(parts, &CampaignStats::target);
  m.targetVersion = shared(parts, &CampaignStats::targetVersion);
  m.policy = shared(parts, &CampaignStats::policy);
  m.faults = shared(parts, &CampaignStats::faults);
  m.ops = shared(parts, &CampaignStats::ops);
  m.search = shared(parts, &CampaignStats::search);
  return m;
}

}  // namespace gpufuzz
