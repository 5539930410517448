// ExplanationJson.cpp: an explanation's report as the `explanation` object of a --report.
#include "harness/base/Json.h"
#include "harness/search/ExplanationReport.h"

namespace gpufuzz {

namespace {

using Report = ExplanationReport;

void writeOutcome(JsonWriter& j, const RunOutcome& o) {
  j.beginObject();
  j.key("class").value(outcomeClassName(o.cls));
  j.key("at");
  writeAt(j, o.at);
  j.key("op").value(o.op);
  j.key("detail").value(o.detail);
  j.endObject();
}

/// A step's fields: its number, 1-based, and its text.
void writeStep(JsonWriter& j, const Report::Step& step) {
  j.key("at").value(static_cast<uint64_t>(step.index + 1));
  j.key("op").value(step.op);
}

void writeOptional(JsonWriter& j, const std::optional<uint32_t>& v) {
  if (v) {
    j.value(*v);
  } else {
    j.null();
  }
}

void writeFailures(JsonWriter& j, const std::vector<Report::NeededFailure>& failures) {
  j.beginArray();
  for (const Report::NeededFailure& f : failures) {
    j.beginObject();
    writeStep(j, f.step);
    j.key("word").value(failWordName(f.mark.word));
    j.key("call").value(static_cast<uint64_t>(f.mark.nth));
    j.endObject();
  }
  j.endArray();
}

void writeRemovals(JsonWriter& j, const std::vector<Report::Removal>& removals) {
  j.beginArray();
  for (const Report::Removal& r : removals) {
    j.beginObject();
    writeStep(j, r.step);
    j.key("role").value(r.role);
    j.key("establishes").value(r.establishes);
    j.key("context");
    writeOptional(j, r.context);
    j.key("also_removes").beginArray();
    for (std::size_t d : r.alsoRemoved)
      j.value(static_cast<uint64_t>(d + 1));
    j.endArray();
    j.key("verdict").value(verdictName(r.without.verdict));
    j.key("without");
    writeOutcome(j, r.without.outcome);
    j.endObject();
  }
  j.endArray();
}

/// The arguments that are `free`, or bound.
void writeArguments(JsonWriter& j, const std::vector<Report::Argument>& arguments, bool free) {
  j.beginArray();
  for (const Report::Argument& a : arguments) {
    if (a.free != free) continue;
    j.beginObject();
    writeStep(j, a.step);
    j.key("argument").value(a.name);
    j.key("value").value(a.value.raw);
    j.key("tried").beginArray();
    for (const Report::Probe& p : a.tried) {
      j.beginObject();
      j.key("value").value(p.value.raw);
      j.key("verdict").value(verdictName(p.result.verdict));
      j.key("outcome");
      writeOutcome(j, p.result.outcome);
      j.endObject();
    }
    j.endArray();
    j.endObject();
  }
  j.endArray();
}

void writeInsertions(JsonWriter& j, const std::vector<Report::Insertion>& insertions) {
  j.beginArray();
  for (const Report::Insertion& ins : insertions) {
    j.beginObject();
    j.key("insert").value(ins.op);
    j.key("before");
    if (ins.before) {
      j.value(static_cast<uint64_t>(*ins.before + 1));
    } else {
      j.value("end");
    }
    j.key("description").value(ins.description);
    j.key("verdict").value(verdictName(ins.result.verdict));
    j.key("outcome");
    writeOutcome(j, ins.result.outcome);
    j.endObject();
  }
  j.endArray();
}

void writeRepetitions(JsonWriter& j, const std::vector<Report::Repetition>& repetitions) {
  j.beginArray();
  for (const Report::Repetition& r : repetitions) {
    j.beginObject();
    writeStep(j, r.step);
    j.key("copy");
    if (r.copy) {
      j.value(*r.copy);
    } else {
      j.null();
    }
    j.key("verdict");
    if (r.result) {
      j.value(verdictName(r.result->verdict));
      j.key("outcome");
      writeOutcome(j, r.result->outcome);
    } else {
      j.null();
    }
    j.key("failing_context");
    writeOptional(j, r.failingContext);
    j.endObject();
  }
  j.endArray();
}

void writeContexts(JsonWriter& j, const Explanation::Contexts& c) {
  j.beginObject();
  j.key("introduced").value(c.introduced);
  j.key("needs_at_least");
  writeOptional(j, c.allNeeded ? std::optional(c.introduced) : std::nullopt);
  j.key("failing_context");
  writeOptional(j, c.failingContext);
  j.key("failing_contexts_with_one_more").beginArray();
  for (uint32_t k : c.failingContextsWithOneMore)
    j.value(k);
  j.endArray();
  j.key("failed_elsewhere_with_one_more").value(c.failedElsewhereWithOneMore);
  j.endObject();
}

}  // namespace

std::string explanationJson(const ExplanationReport& r) {
  JsonWriter j;
  j.beginObject();
  std::string operations;
  for (const std::string& op : r.operations)
    operations += op + "\n";
  j.key("minimal_sequence").value(operations);
  j.key("outcome");
  writeOutcome(j, r.outcome);
  j.key("one_minimal").value(r.oneMinimal);
  j.key("failures");
  writeFailures(j, r.failures);
  j.key("shrink_steps").beginArray();
  for (const std::string& step : r.shrinkSteps)
    j.value(step);
  j.endArray();
  j.key("necessary");
  writeRemovals(j, r.necessary);
  j.key("not_necessary");
  writeRemovals(j, r.notNecessary);
  j.key("free_arguments");
  writeArguments(j, r.arguments, true);
  j.key("bound_arguments");
  writeArguments(j, r.arguments, false);
  j.key("preventing");
  writeInsertions(j, r.preventing);
  j.key("changing");
  writeInsertions(j, r.changing);
  j.key("insertions_tried").value(static_cast<uint64_t>(r.insertionsTried));
  j.key("repetition");
  writeRepetitions(j, r.repetitions);
  j.key("contexts");
  writeContexts(j, r.contexts);
  j.key("reproduced").value(r.reproduced);
  j.key("confirmations").value(r.confirmations);
  j.key("executions").value(r.executions);
  j.key("inconclusive").value(r.inconclusive);
  j.endObject();
  std::string text = j.str();
  while (!text.empty() && text.back() == '\n')
    text.pop_back();
  return text;
}

}  // namespace gpufuzz
