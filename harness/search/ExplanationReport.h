// ExplanationReport.h: the report of an explanation, filled once from its experiments, and its two
// renderings: Markdown for people (explanation.md, `gpufuzz explain`) and JSON for programs (the
// `explanation` object of a --report). Each rendering only formats the report's fields, so the two
// cannot disagree on what the experiments showed.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "harness/search/Explainer.h"

namespace gpufuzz {

struct ExplanationReport {
  /// An operation of the explained sequence: its 0-based index and its text, mark included.
  struct Step {
    std::size_t index = 0;
    std::string op;
  };
  /// How one experiment ended, against the failure being explained.
  struct Result {
    EditVerdict verdict = EditVerdict::Inconclusive;
    RunOutcome outcome;
  };

  std::string backend, policy, faults;
  RunOutcome outcome;  // the explained sequence's failure
  uint32_t reproduced = 0, confirmations = 0;
  std::vector<std::string> operations;  // the explained sequence, one text an operation

  /// A call the sequence makes fail on purpose.
  struct NeededFailure {
    Step step;
    std::string unmarked;  // the operation without its mark
    Mark mark;
  };
  std::vector<NeededFailure> failures;

  std::size_t originalLength = 0;  // the operations of the sequence as given
  std::vector<std::string> shrinkSteps;
  bool oneMinimal = false;

  struct Removal {
    Step step;
    std::string role;     // roleKey: what groups the necessary steps
    std::string heading;  // the role's group, for people
    std::string establishes;
    std::optional<uint32_t> context;
    std::vector<std::size_t> alsoRemoved;  // the dependents that went with it, 0-based
    bool failing = false;                  // it is the failing operation
    Result without;
  };
  /// The steps whose removal makes the failure disappear, in sequence order.
  std::vector<Removal> necessary;
  /// The steps whose removal keeps the failure, or could not be run.
  std::vector<Removal> notNecessary;
  /// The steps after the failing one: they never run, so no experiment removes them.
  std::vector<Step> afterFailure;

  /// An operation of another thread free to overlap the failing one, moved onto its thread.
  struct Overlap {
    std::size_t index = 0;
    std::string name;  // the operation's name, "draw"
    uint32_t thread = 0;
    bool needed = false;
    Result result;
  };
  struct Threads {
    uint32_t count = 0;
    Result oneThread;  // every operation on one thread
    std::size_t failingIndex = 0;
    std::string failingName;
    uint32_t failingThread = 0;
    std::vector<Overlap> overlaps;
  };
  std::optional<Threads> threads;  // none for a sequence on one thread

  /// An argument value, as the sequence file holds it and as people read it.
  struct Value {
    uint64_t raw = 0;
    std::string text;
  };
  struct Probe {
    Value value;
    Result result;
  };
  struct Argument {
    Step step;
    std::string name;
    Value value;
    bool free = false;  // every value tried keeps the failure
    std::vector<Probe> tried;
  };
  std::vector<Argument> arguments;

  struct Insertion {
    std::string op;                     // the inserted operation
    std::optional<std::size_t> before;  // the index it takes; none at the end
    std::string description;
    Result result;
  };
  std::vector<Insertion> preventing;
  /// The insertions that neither keep nor prevent the failure: it fails otherwise, or the
  /// experiment could not be run.
  std::vector<Insertion> changing;
  std::size_t insertionsTried = 0;
  std::size_t waitsTried = 0;  // the insertions of a `sync` or `read_back`
  bool waitPrevents = false;   // one of those prevents the failure
  /// Which insertions were tried: the renderer's waits and releases, or any model's steps.
  bool rendererSemantics = false;

  enum class Place : uint8_t {
    Failing,       // the failing operation itself
    AfterFailure,  // never run
    Invalid,       // a copy right after it is invalid
    Repeated,      // the copy ran
  };
  struct Repetition {
    Step step;
    Place place = Place::Invalid;
    std::optional<std::string> copy;
    std::optional<Result> result;
    std::optional<uint32_t> failingContext;  // where the copy's run failed, when it kept it
  };
  std::vector<Repetition> repetitions;

  Explanation::Contexts contexts;

  std::size_t experimentsRun = 0;
  uint64_t executions = 0;
  uint32_t inconclusive = 0;
  double elapsedSeconds = 0;
};

/// The report of `e`: every fact that either rendering shows.
ExplanationReport explanationReport(const Explanation& e);
/// The calls `minimal` makes fail on purpose, in sequence order.
std::vector<ExplanationReport::NeededFailure> neededFailures(const Sequence& minimal);

/// The report as Markdown: explanation.md, and what `gpufuzz explain` prints.
std::string explanationMarkdown(const ExplanationReport& r);
/// The marks of `minimal` as the failures it needs ("- `create r1` (step 2) to fail with oom at
/// its first call that can"), under a line that says so; empty without marks.
std::string neededFailuresText(const Sequence& minimal);
/// The report as the `explanation` object of a `--report` (JSON text).
std::string explanationJson(const ExplanationReport& r);

}  // namespace gpufuzz
