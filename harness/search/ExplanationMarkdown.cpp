// ExplanationMarkdown.cpp: an explanation's report as Markdown, one function a section.
#include <algorithm>
#include <cstdio>

#include "harness/search/ExplanationReport.h"
#include "model/Text.h"

namespace gpufuzz {

namespace {

using Report = ExplanationReport;

/// "2 `draw r0`": an operation as the report cites it (1-based, as `at` is).
std::string stepText(const Report::Step& step) {
  return std::to_string(step.index + 1) + " `" + step.op + "`";
}

/// "hang at 5 (create)": an outcome without its detail, for lists of experiments.
std::string briefOutcome(const RunOutcome& o) {
  return std::string(outcomeClassName(o.cls)) +
         (o.at ? " at " + atText(*o.at) + " (" + o.op + ")" : "");
}

/// "passes", "still fails: hang at 5 (create)", "fails otherwise: error at 3 (...): ...".
std::string verdictText(const Report::Result& x) {
  switch (x.verdict) {
    case EditVerdict::Keeps:
      return "still fails: " + briefOutcome(x.outcome);
    case EditVerdict::Prevents:
      return "passes";
    case EditVerdict::Changes:
      return "fails otherwise: " + outcomeText(x.outcome);
    case EditVerdict::Inconclusive:
      return "inconclusive (the harness could not run it)";
  }
  return {};
}

std::string failuresMarkdown(const std::vector<Report::NeededFailure>& failures) {
  if (failures.empty()) return {};
  std::string text =
      "It needs these calls to fail on purpose (failures.md); a shrink keeps a mark only where "
      "the failure needs it:\n\n";
  for (const Report::NeededFailure& f : failures) {
    text +=
        "- `" + f.unmarked + "` (step " + std::to_string(f.step.index + 1) + ") to fail with " +
        std::string(failWordName(f.mark.word)) +
        (f.mark.nth == 1 ? std::string(" at its first call that can")
                         : " at its call " + std::to_string(f.mark.nth) + " of those that can") +
        "\n";
  }
  return text + "\n";
}

/// The title, where the failure happened, the sequence and how it was shrunk.
std::string headerMarkdown(const Report& r) {
  std::string md = "# Explanation: " + briefOutcome(r.outcome) + "\n\n";
  md += "On " + r.backend + ", policy " + r.policy + ", faults " + r.faults + ": " +
        outcomeText(r.outcome) + ". Reproduced " + std::to_string(r.reproduced) + " of " +
        std::to_string(r.confirmations) + " replays.\n\n";
  if (!r.outcome.fault.empty()) {
    md += "Planted by the fault plan's rule `" + r.outcome.fault +
          "`: the sequence is how the renderer reaches it.\n\n";
  }
  md += "```\n";
  for (const std::string& op : r.operations)
    md += op + "\n";
  md += "```\n\n";
  md += failuresMarkdown(r.failures);
  if (!r.shrinkSteps.empty()) {
    md += "Shrunk first, from " + plural(r.originalLength, "operation") + " to " +
          std::to_string(r.operations.size()) + ": " + joined(r.shrinkSteps, "; ") + ".\n";
  }
  md += r.oneMinimal ? "The sequence is 1-minimal: no single removal or simplification keeps the "
                       "failure.\n"
                     : "The sequence is not 1-minimal: some single edit keeps the failure.\n";
  return md;
}

/// One necessary step, under its role's heading.
std::string necessaryStepMarkdown(const Report::Removal& r) {
  std::string md = "- " + stepText(r.step) + ": " + r.establishes;
  if (r.failing) md += "; the failing operation";
  if (!r.alsoRemoved.empty()) {
    std::vector<std::string> with;
    for (std::size_t d : r.alsoRemoved)
      with.push_back(std::to_string(d + 1));
    md += " (its removal takes " + joined(with) + " with it)";
  }
  if (r.without.verdict == EditVerdict::Changes) {
    md += "; without it: " + outcomeText(r.without.outcome);
  }
  return md + "\n";
}

/// The necessary steps grouped by role, the steps not needed, and those after the failing one.
std::string necessaryStepsMarkdown(const Report& r) {
  std::string md =
      "\n## Necessary steps\n\nRemoving any one of these (with the steps that depend on it) "
      "makes the failure disappear.\n";
  std::vector<std::string> roles;
  for (const Report::Removal& n : r.necessary) {
    if (std::find(roles.begin(), roles.end(), n.role) == roles.end()) roles.push_back(n.role);
  }
  for (const std::string& role : roles) {
    const auto first = std::find_if(r.necessary.begin(), r.necessary.end(),
                                    [&](const Report::Removal& n) { return n.role == role; });
    md += "\n**" + first->heading + "**\n";
    for (const Report::Removal& n : r.necessary) {
      if (n.role == role) md += necessaryStepMarkdown(n);
    }
  }
  std::vector<std::string> notNeeded, unknown;
  for (const Report::Removal& n : r.notNecessary) {
    if (n.without.verdict == EditVerdict::Keeps) notNeeded.push_back(stepText(n.step));
    if (n.without.verdict == EditVerdict::Inconclusive) unknown.push_back(stepText(n.step));
  }
  if (!notNeeded.empty()) {
    md += "\nNot needed (removing it keeps the failure): " + joined(notNeeded, "; ") + ".\n";
  }
  if (!unknown.empty()) md += "\nInconclusive removals: " + joined(unknown, "; ") + ".\n";
  if (!r.afterFailure.empty()) {
    std::vector<std::string> after;
    for (const Report::Step& step : r.afterFailure)
      after.push_back(stepText(step));
    md +=
        "\nAfter the failing operation (never run, not explained): " + joined(after, "; ") + ".\n";
  }
  return md;
}

/// Which overlaps the failure needs; nothing for a sequence on one thread.
std::string threadsMarkdown(const Report& r) {
  if (!r.threads) return {};
  const Report::Threads& t = *r.threads;
  std::string md = "\n## Threads\n\nThe sequence runs on " + std::to_string(t.count) +
                   " threads. With every operation on one thread: " + verdictText(t.oneThread) +
                   ".\n";
  for (const Report::Overlap& o : t.overlaps) {
    md += "- " + std::string(o.needed ? "needs" : "does not need") + " `" + o.name + "` (" +
          std::to_string(o.index + 1) + ") on thread " + std::to_string(o.thread) +
          " overlapping `" + t.failingName + "` (" + std::to_string(t.failingIndex + 1) +
          ") on thread " + std::to_string(t.failingThread) + ": moved onto one thread, " +
          verdictText(o.result) + "\n";
  }
  if (t.overlaps.empty())
    md += "No operation of another thread is free to overlap the failing one.\n";
  return md;
}

/// Which arguments matter and which are free.
std::string argumentsMarkdown(const Report& r) {
  std::string md = "\n## Arguments\n\n";
  if (r.arguments.empty()) md += "No operation takes arguments.\n";
  for (const Report::Argument& a : r.arguments) {
    md += "- `" + a.name + "` at " + stepText(a.step) + ", now " + a.value.text + ": ";
    std::vector<std::string> effects, kept, all;
    for (const Report::Probe& p : a.tried) {
      all.push_back(p.value.text);
      if (p.result.verdict == EditVerdict::Keeps) {
        kept.push_back(p.value.text);
      } else {
        effects.push_back(p.value.text + " " + verdictText(p.result));
      }
    }
    if (a.free) {
      md += "free: any value (tried " + joined(all) + ")\n";
      continue;
    }
    md += "matters: " + joined(effects, "; ");
    if (!kept.empty()) md += "; " + joined(kept) + " keep the failure";
    md += "\n";
  }
  return md;
}

/// The single insertions that prevent the failure, and those that change it.
std::string preventingMarkdown(const Report& r) {
  std::string md = "\n## Preventing steps\n\n";
  if (r.preventing.empty()) {
    md += "No single inserted step prevents it (" + plural(r.insertionsTried, "insertion") +
          " tried).\n";
  } else {
    md += "Each of these single insertions makes it pass:\n";
    for (const Report::Insertion& ins : r.preventing)
      md += "- " + ins.description + "\n";
  }
  if (!r.waitPrevents && r.waitsTried > 0) {
    md += "\nNo single `sync` or `read_back` prevents it (" + plural(r.waitsTried, "placement") +
          " tried).\n";
  }
  if (!r.changing.empty()) {
    md += "\nThese neither keep nor prevent it:\n";
    for (const Report::Insertion& ins : r.changing)
      md += "- " + ins.description + ": " + verdictText(ins.result) + "\n";
  }
  md +=
      std::string(r.rendererSemantics
                      ? "\nTried: one `sync`, `read_back`, `set_textures` (default arguments) or "
                        "`destroy` of a live renderer, or `buf_destroy` / `ctx_destroy` of a live "
                        "bare buffer or context, at each position up to the failing operation: "
                      : "\nTried: every operation of the model on one live name alone (default "
                        "arguments), at each position up to the failing operation: ") +
      plural(r.insertionsTried, "valid insertion") + ", " +
      std::to_string(r.insertionsTried - r.preventing.size() - r.changing.size()) +
      " of them keep the failure.\n";
  return md;
}

/// Each step repeated right after itself.
std::string repetitionMarkdown(const Report& r) {
  std::string md =
      "\n## Repetition\n\nEach step with a copy inserted right after it (introduced names "
      "fresh):\n";
  for (const Report::Repetition& rep : r.repetitions) {
    md += "- " + stepText(rep.step) + ": ";
    switch (rep.place) {
      case Report::Place::Failing:
        md += "the failing operation\n";
        break;
      case Report::Place::AfterFailure:
        md += "after the failing operation\n";
        break;
      case Report::Place::Invalid:
        md += "cannot be repeated (a copy right after it is invalid)\n";
        break;
      case Report::Place::Repeated:
        md += "repeated as `" + *rep.copy + "`: " + verdictText(*rep.result);
        if (rep.failingContext) md += ", in context #" + std::to_string(*rep.failingContext);
        md += "\n";
        break;
    }
  }
  return md;
}

/// Where the failure happens with one more context: in the same one, or in others.
std::string oneMoreContextText(const Explanation::Contexts& c) {
  const auto& more = c.failingContextsWithOneMore;
  if (more.empty()) return {};
  const bool same =
      std::all_of(more.begin(), more.end(), [&](uint32_t k) { return k == *c.failingContext; });
  if (same) {
    return " With one more context introduced earlier it still fails in context #" +
           std::to_string(*c.failingContext) +
           (c.failedElsewhereWithOneMore
                ? ", at another step: the context's ordinal matters, not which step makes it."
                : ", at the same step.");
  }
  std::vector<std::string> seen;
  for (uint32_t k : more)
    seen.push_back("#" + std::to_string(k));
  return seen.size() == 1 ? " With one more context introduced earlier it fails in context " +
                                seen.front() + " instead: it is not tied to a context ordinal."
                          : " With one more context introduced at different places it fails in "
                            "contexts " +
                                joined(seen, " and ") + ": it is not tied to a context ordinal.";
}

/// How many contexts the failure needs, and in which it fails.
std::string countsMarkdown(const Report& r) {
  const Explanation::Contexts& c = r.contexts;
  if (c.introduced == 0) return {};
  std::string md = "\n## Counts\n\n";
  if (c.allNeeded) {
    md += "Needs at least " + plural(c.introduced, "context") + ": the sequence introduces " +
          std::to_string(c.introduced) +
          " and removing any one of them makes the failure "
          "disappear.";
  } else {
    md += "Introduces " + plural(c.introduced, "context") + "; not every one of them is needed.";
  }
  if (c.failingContext) {
    md += " It fails in " + contextText(*c.failingContext) + "." + oneMoreContextText(c);
  }
  return md + "\n";
}

/// How much the explanation cost.
std::string footerMarkdown(const Report& r) {
  char seconds[32];
  std::snprintf(seconds, sizeof seconds, "%.1f s", r.elapsedSeconds);
  std::string md = "\n---\n" + plural(r.experimentsRun, "experiment") + ", " +
                   plural(r.executions, "execution") + ", " + seconds;
  if (r.inconclusive > 0) {
    md += "; " + plural(r.inconclusive, "experiment") + " inconclusive (the harness failed)";
  }
  return md + ".\n";
}

}  // namespace

std::string neededFailuresText(const Sequence& minimal) {
  return failuresMarkdown(neededFailures(minimal));
}

std::string explanationMarkdown(const ExplanationReport& r) {
  return headerMarkdown(r) + necessaryStepsMarkdown(r) + threadsMarkdown(r) + argumentsMarkdown(r) +
         preventingMarkdown(r) + repetitionMarkdown(r) + countsMarkdown(r) + footerMarkdown(r);
}

}  // namespace gpufuzz
