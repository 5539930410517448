// ExplanationReport.cpp: an explanation's report, section by section, from its experiments.
#include "harness/search/ExplanationReport.h"

#include <algorithm>

#include "model/renderer/ReferenceModel.h"

namespace gpufuzz {

namespace {

using Report = ExplanationReport;

Report::Step stepOf(const Sequence& seq, std::size_t index) {
  return {index, operationText(seq.ops[index])};
}

Report::Result resultOf(const Experiment& x) {
  return {x.verdict, x.outcome};
}

/// A renderer's wait: `sync` or `read_back`.
bool isWait(const Operation& op) {
  if (!hasRendererSemantics(*op.form->model)) return false;
  const RendererOp kind = rendererOp(op);
  return kind == RendererOp::Sync || kind == RendererOp::ReadBack;
}

/// A model role as a heading: "ends-pool-owning-buf" -> "Ends pool owning buf".
std::string roleWords(const std::string& role) {
  std::string out = role;
  for (char& c : out)
    c = c == '-' || c == '+' ? ' ' : c;
  if (!out.empty() && out[0] >= 'a' && out[0] <= 'z') out[0] = static_cast<char>(out[0] - 32);
  return out;
}

/// The heading of the group of `role`: that of the first step of the role, so that every step
/// of a group shares it.
std::string groupHeading(const Explanation& e, const std::string& role) {
  const auto first = std::find_if(e.removals.begin(), e.removals.end(),
                                  [&](const auto& r) { return roleKey(e.facts[r.index]) == role; });
  const StepFacts& f = e.facts[first->index];
  return f.modelRole.empty() ? std::string(stepRoleHeading(f.role)) : roleWords(role);
}

void fillRemovals(Report& r, const Explanation& e) {
  for (const Explanation::Removal& removal : e.removals) {
    const StepFacts& f = e.facts[removal.index];
    Report::Removal out{stepOf(e.minimal, removal.index),
                        roleKey(f),
                        {},
                        f.establishes,
                        f.context,
                        removal.alsoRemoved,
                        removal.index == e.failingIndex,
                        resultOf(removal.experiment)};
    out.heading = groupHeading(e, out.role);
    (removal.necessary() ? r.necessary : r.notNecessary).push_back(std::move(out));
  }
  for (std::size_t i = e.removals.size(); i < e.minimal.ops.size(); ++i)
    r.afterFailure.push_back(stepOf(e.minimal, i));
}

void fillThreads(Report& r, const Explanation& e) {
  if (!e.oneThread) return;
  const Sequence& m = e.minimal;
  const Operation& failing = m.ops[e.failingIndex];
  Report::Threads t{m.threadCount(), resultOf(*e.oneThread),
                    e.failingIndex,  std::string(failing.name()),
                    failing.thread,  {}};
  for (const Explanation::Overlap& o : e.overlaps) {
    const Operation& op = m.ops[o.index];
    t.overlaps.push_back(
        {o.index, std::string(op.name()), op.thread, o.needed(), resultOf(o.experiment)});
  }
  r.threads = std::move(t);
}

void fillArguments(Report& r, const Explanation& e) {
  for (const Explanation::Argument& a : e.arguments) {
    const ArgDecl& decl = *e.minimal.ops[a.index].form->arg(a.name);
    Report::Argument out{
        stepOf(e.minimal, a.index), a.name, {a.value, decl.valueText(a.value)}, a.isFree(), {}};
    for (std::size_t k = 0; k < a.tried.size(); ++k) {
      out.tried.push_back({{a.tried[k], decl.valueText(a.tried[k])}, resultOf(a.experiments[k])});
    }
    r.arguments.push_back(std::move(out));
  }
}

void fillInsertions(Report& r, const Explanation& e) {
  const Sequence& m = e.minimal;
  for (const Explanation::Insertion& ins : e.insertions) {
    const EditVerdict verdict = ins.experiment.verdict;
    if (isWait(ins.inserted)) ++r.waitsTried;
    if (verdict == EditVerdict::Keeps) continue;
    Report::Insertion out{operationText(ins.inserted),
                          ins.position < m.ops.size() ? std::optional(ins.position) : std::nullopt,
                          ins.describe(m), resultOf(ins.experiment)};
    if (verdict == EditVerdict::Prevents) {
      r.waitPrevents = r.waitPrevents || isWait(ins.inserted);
      r.preventing.push_back(std::move(out));
    } else {
      r.changing.push_back(std::move(out));
    }
  }
  r.insertionsTried = e.insertions.size();
  r.rendererSemantics = hasRendererSemantics(m.lifecycle());
}

void fillRepetitions(Report& r, const Explanation& e) {
  for (const Explanation::Repetition& rep : e.repetitions) {
    Report::Repetition out{
        stepOf(e.minimal, rep.index), Report::Place::Repeated, {}, {}, rep.failingContext};
    if (rep.index == e.failingIndex) {
      out.place = Report::Place::Failing;
    } else if (rep.index > e.failingIndex) {
      out.place = Report::Place::AfterFailure;
    } else if (!rep.copy) {
      out.place = Report::Place::Invalid;
    }
    if (rep.copy) out.copy = operationText(*rep.copy);
    if (rep.experiment) out.result = resultOf(*rep.experiment);
    r.repetitions.push_back(std::move(out));
  }
}

}  // namespace

std::vector<ExplanationReport::NeededFailure> neededFailures(const Sequence& minimal) {
  std::vector<Report::NeededFailure> out;
  for (std::size_t i = 0; i < minimal.ops.size(); ++i) {
    if (!minimal.ops[i].mark) continue;
    Operation unmarked = minimal.ops[i];
    unmarked.mark.reset();
    out.push_back({stepOf(minimal, i), operationText(unmarked), *minimal.ops[i].mark});
  }
  return out;
}

ExplanationReport explanationReport(const Explanation& e) {
  Report r;
  r.backend = e.backend;
  r.policy = e.policy;
  r.faults = e.faults;
  r.outcome = e.outcome;
  r.reproduced = e.reproduced;
  r.confirmations = e.confirmations;
  for (const Operation& op : e.minimal.ops)
    r.operations.push_back(operationText(op));
  r.failures = neededFailures(e.minimal);
  r.originalLength = e.original.ops.size();
  r.shrinkSteps = e.shrinkSteps;
  r.oneMinimal = e.oneMinimal;
  fillRemovals(r, e);
  fillThreads(r, e);
  fillArguments(r, e);
  fillInsertions(r, e);
  fillRepetitions(r, e);
  r.contexts = e.contexts;
  r.experimentsRun = e.experimentsRun;
  r.executions = e.executions;
  r.inconclusive = e.inconclusive;
  r.elapsedSeconds = e.elapsedSeconds;
  return r;
}

}  // namespace gpufuzz
