// Cause.cpp: a failure's cause, from its lifecycle roles and its stuck thread's frames.
#include "harness/search/Cause.h"

#include <cctype>
#include <map>
#include <regex>
#include <sstream>

#include "harness/search/Explainer.h"
#include "harness/supervise/CrashSite.h"

namespace gpufuzz {

namespace {

constexpr std::size_t kCauseFrames = 4;
/// A crash's state: its top three frames, as ClusterFuzz buckets crashes.
constexpr std::size_t kCrashStateFrames = 3;

/// A verdict's words without what differs from run to run: addresses and handles (0x...), the
/// sequence's names (e1, sv0) and plain numbers. Ids such as VUID-vk...-05149 or CL_... stay.
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
  return out;
}

}  // namespace

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
    if (!state.empty()) {
      std::string cause = "crash" + concurrent + "; frames";
      for (const std::string& f : state)
        cause += " " + f;
      return cause;
    }
  }
  // An error or a checker's report says what went wrong in the runtime's own words: the same
  // verdict, reached by other sequences, is the same fault. Five minimal sequences of one missing
  // context check gave five causes when keyed by their needs. As with a crash's frames, other
  // operations are variants: a call such as cuMemPoolCreate runs at `create` and `ctx_create`.
  if ((outcome.cls == OutcomeClass::Error || outcome.cls == OutcomeClass::Invalid) &&
      !outcome.detail.empty()) {
    return std::string(outcomeClassName(outcome.cls)) + concurrent + "; says " +
           maskedVerdict(outcome.detail);
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
  const std::vector<std::string> frames = topFrames(stacks, kCauseFrames);
  if (!frames.empty()) {
    cause += "; frames";
    for (const std::string& f : frames)
      cause += " " + f;
  }
  return cause;
}

}  // namespace gpufuzz
