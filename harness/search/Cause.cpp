// Cause.cpp: a failure's cause, from its lifecycle roles and its stuck thread's frames.
#include "harness/search/Cause.h"

#include <cctype>
#include <map>
#include <optional>
#include <regex>
#include <set>
#include <sstream>

#include "harness/supervise/CrashSite.h"
#include "model/renderer/LifecycleFacts.h"

namespace gpufuzz {

namespace {

constexpr std::size_t kCauseFrames = 4;
/// A crash's state: its top three frames, as ClusterFuzz buckets crashes.
constexpr std::size_t kCrashStateFrames = 3;

/// A counted noun's singular: "commands" reads "command", "bytes" "byte"; words whose final s is
/// not a plural's stay.
std::string singular(const std::string& word) {
  static const std::set<std::string> kept = {"is", "was", "has", "does", "its", "this", "as"};
  if (word.size() < 3 || !word.ends_with('s') || word.ends_with("ss") || kept.contains(word))
    return word;
  return word.substr(0, word.size() - 1);
}

/// A verdict's words without what differs from run to run: addresses and handles (0x...), the
/// sequence's names (e1, sv0), plain numbers and the words that agree with them ("? commands
/// ... were" reads as "? command ... was"), lists of them ("?, ?, ?" reads as "?"), and where in
/// the sequence a call was made (", operation ?", ", at the end"). Ids such as
/// VUID-vk...-05149 or CL_... stay.
std::string maskedVerdict(const std::string& text) {
  static const std::regex hex("0x[0-9a-fA-F]+"), name("\\b[a-z]{1,4}[0-9]+\\b");
  const std::string words = std::regex_replace(std::regex_replace(text, hex, "0x?"), name, "?");
  std::string out;
  for (std::size_t i = 0; i < words.size();) {
    const auto c = static_cast<unsigned char>(words[i]);
    const bool digit = std::isdigit(c) != 0;
    const bool joined = i > 0 && (std::isalnum(static_cast<unsigned char>(words[i - 1])) != 0 ||
                                  words[i - 1] == '_' || words[i - 1] == '-');
    const bool hexMark = i + 1 < words.size() && words[i + 1] == 'x';  // "0x?", masked above
    if (!digit || joined || hexMark) {
      out += words[i++];
      continue;
    }
    while (i < words.size() &&
           (std::isdigit(static_cast<unsigned char>(words[i])) != 0 || words[i] == '.'))
      ++i;
    out += '?';
  }
  // A count's noun and verbs agree with the number it had: one form for every count.
  static const std::regex counted("\\? ([a-z]+)"), were("\\bwere\\b"), are("\\bare\\b");
  static const std::regex place(",? (?:at the end|operation \\?)(?![\\w?])");
  static const std::regex list("(^|[^\\w])\\?(?:, \\?)+");
  std::string agreed;
  auto from = out.cbegin();
  for (std::sregex_iterator it(out.begin(), out.end(), counted), end; it != end; ++it) {
    agreed.append(from, (*it)[1].first);
    agreed += singular((*it)[1].str());
    from = (*it)[1].second;
  }
  agreed.append(from, out.cend());
  agreed = std::regex_replace(std::regex_replace(agreed, were, "was"), are, "is");
  // A client names the leftover it released before the runtime's words ("destroy r0: ..."):
  // the same verdict met at the end and at an operation is one.
  static const std::regex released("^(?:release )?[a-z][a-z0-9_]* \\?: (?=.*: )");
  agreed = std::regex_replace(agreed, released, "");
  return std::regex_replace(std::regex_replace(agreed, place, ""), list, "$1?");
}

/// What a wait waits on, from its call's name: a stream's or queue's work unless it names an
/// event, a fence or a semaphore.
std::string waitedOn(const std::string& call) {
  static const std::vector<std::pair<const char*, const char*>> kinds = {
      {"Event", "an event"}, {"Fence", "a fence"}, {"Semaphore", "a semaphore"}};
  for (const auto& [word, kind] : kinds) {
    if (call.find(word) != std::string::npos) return kind;
  }
  return "a queue";
}

/// One broken mechanism, whichever call showed it: every backend words a wait that came back
/// before its work was done as "WAIT returned while ..." or "WAIT returned before ..."
/// (renderer/device/PendingWork.h). rusticl's stale status, met through clFinish and a
/// blocking read with one to three commands pending, gave four causes when keyed by the words.
/// The kind of wait stays: a fence's and a queue's are different code in a runtime.
std::optional<std::string> earlyWait(const std::string& verdict) {
  static const std::regex wait("^(\\S+)[^:]*? returned (?:while|before) ");
  std::smatch m;
  if (!std::regex_search(verdict, m, wait)) return std::nullopt;
  return "a wait on " + waitedOn(m[1].str()) + " returned before its work was done";
}

/// "crash; frames a b c": a failure keyed by where it is, whatever operation met it.
std::string keyedByFrames(OutcomeClass cls, const std::string& concurrent,
                          const std::vector<std::string>& frames) {
  std::string cause = std::string(outcomeClassName(cls)) + concurrent + "; frames";
  for (const std::string& f : frames)
    cause += " " + f;
  return cause;
}

}  // namespace

std::string verdictCause(const std::string& verdict) {
  if (std::optional<std::string> wait = earlyWait(verdict)) return *wait;
  return "says " + maskedVerdict(verdict);
}

std::vector<std::string> topFrames(const std::string& stacks, std::size_t count) {
  std::vector<std::string> names;
  for (const CrashFrame& f : stuckFrames(stacks)) {
    if (names.size() == count) break;
    names.push_back(f.function.empty() ? "??" : f.function);
  }
  return names;
}

std::string failureCause(const RunOutcome& outcome, const Sequence& minimal, TeardownPolicy policy,
                         const std::string& stacks) {
  // A failure that needs threads is another bug than the same class at that kind on one thread
  // (docs/sequences.md, Threads): a shrink leaves a sequence threaded only when it needs them.
  const std::string concurrent = minimal.threadCount() > 1 ? "; concurrent" : "";
  if (!outcome.fault.empty()) {
    // A planted failure's cause is its rule, whichever operation reached the rule's device
    // call and however its conditions came to hold.
    return std::string(outcomeClassName(outcome.cls)) + " planted by " + outcome.fault + concurrent;
  }
  // A crash is where it died (crash reports' crash state): the same frames reached from another
  // operation are the same bug. Without frames it falls back to its place and what it needs.
  if (outcome.cls == OutcomeClass::Crash) {
    const std::vector<std::string> state = crashState(stacks, kCrashStateFrames);
    if (!state.empty()) return keyedByFrames(outcome.cls, concurrent, state);
  }
  // An error or a checker's report says what went wrong in the runtime's own words: the same
  // verdict, reached by other sequences, is the same fault. Five minimal sequences of one missing
  // context check gave five causes when keyed by their needs. As with a crash's frames, other
  // operations are variants: a call such as cuMemPoolCreate runs at `create` and `ctx_create`.
  if ((outcome.cls == OutcomeClass::Error || outcome.cls == OutcomeClass::Invalid) &&
      !outcome.detail.empty()) {
    return std::string(outcomeClassName(outcome.cls)) + concurrent + "; " +
           verdictCause(outcome.detail);
  }
  // A target stuck where its own frames say (its client's answer to the stacks signal) is keyed
  // by them, as a crash is by where it died: one hang met at two operations, or after two orders
  // of one step, is one bug. A debugger's frames of an interpreter say nothing of the target.
  const bool stuck = outcome.cls == OutcomeClass::Hang || outcome.cls == OutcomeClass::Spin;
  if (stuck && (stacks.starts_with(kTargetStacksBy) || stacks.starts_with(kPythonStacksBy))) {
    const std::vector<std::string> frames = stuckState(stacks, kCrashStateFrames);
    if (!frames.empty()) return keyedByFrames(outcome.cls, concurrent, frames);
  }
  std::string cause = std::string(outcomeClassName(outcome.cls)) + " at " + outcome.op + concurrent;
  // Operations after the failing one never ran: they need nothing.
  std::size_t ran = minimal.ops.size();
  if (outcome.at && !outcome.at->isEnd()) ran = std::min<std::size_t>(ran, outcome.at->ordinal);
  const std::vector<StepFacts> facts = lifecycleFacts(minimal, policy);
  std::map<std::string, std::size_t> roles;
  for (std::size_t i = 0; i < ran && i < facts.size(); ++i)
    ++roles[roleKey(facts[i])];
  cause += "; needs";
  for (const auto& [role, n] : roles)
    cause += " " + std::string(role) + " x" + std::to_string(n);
  // The failures on purpose it needs: which kind of operation fails, and with which word.
  std::set<std::string> failures;
  for (std::size_t i = 0; i < ran; ++i) {
    if (minimal.ops[i].mark)
      failures.insert(std::string(minimal.ops[i].name()) + " fails with " +
                      std::string(failWordName(minimal.ops[i].mark->word)));
  }
  for (const std::string& f : failures)
    cause += "; " + f;
  const std::vector<std::string> frames = topFrames(stacks, kCauseFrames);
  if (!frames.empty()) {
    cause += "; frames";
    for (const std::string& f : frames)
      cause += " " + f;
  }
  return cause;
}

}  // namespace gpufuzz
