// Finding.cpp: a finding's signature, id and JSON fields.
#include "harness/search/Finding.h"

#include <cstdio>

namespace gpufuzz {

uint64_t stableHash(std::string_view text) {
  uint64_t h = 0xcbf29ce484222325ULL;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 0x100000001b3ULL;
  }
  return h;
}

std::string Finding::signature() const {
  // Equal text under two models (or two versions of one) is not one failure. `all`, the model
  // of every file without `# model:`, keeps the signatures it always had.
  const LifecycleModel& model = minimal.lifecycle();
  const std::string of =
      &model == &defaultModel() ? "" : "model " + model.name + " " + model.hash + "\n";
  return of + std::string(outcomeClassName(outcome.cls)) + "\n" + outcome.op + "\n" +
         normalizedOperations(minimal);
}

std::string Finding::id() const {
  char hash[16];
  std::snprintf(hash, sizeof hash, "%06llx",
                static_cast<unsigned long long>(stableHash(signature()) & 0xffffff));
  // A folder's name is at most 255 bytes; an operation's name in a model has no bound.
  constexpr std::size_t kMostOpInName = 64;
  return std::string(outcomeClassName(outcome.cls)) + "-" + outcome.op.substr(0, kMostOpInName) +
         "-" + hash;
}

std::string Finding::reproductionText() const {
  if (stopped) return "not confirmed (stopped)";
  return "reproduced " + std::to_string(reproduced) + "/" + std::to_string(confirmations);
}

void writeFindingFields(JsonWriter& j, const Finding& f, const std::string& file) {
  j.key("class").value(outcomeClassName(f.outcome.cls));
  j.key("at");
  writeAt(j, f.outcome.at);
  j.key("op").value(f.outcome.op);
  j.key("detail").value(f.outcome.detail);
  if (!f.outcome.fault.empty()) j.key("planted_by").value(f.outcome.fault);
  j.key("sequence").value(normalizedOperations(f.minimal));
  j.key("model").value(f.minimal.lifecycle().name);
  j.key("threads").value(static_cast<uint64_t>(f.minimal.threadCount()));
  if (f.minimal.directives.schedule) {
    j.key("schedule").value(*f.minimal.directives.schedule);
    j.key("try").value(f.minimal.directives.attempt.value_or(0));
  }
  j.key("model_hash").value(f.minimal.lifecycle().hash);
  j.key("file").value(file);
  if (f.minimal.directives.target) {
    j.key("target").value(*f.minimal.directives.target);
    j.key("target_version").value(f.targetVersion);
  }
  j.key("executions_to_find").value(f.executionsToFind);
  j.key("executions_to_shrink").value(f.executionsToShrink);
  j.key("shrink_candidates_cancelled").value(f.shrinkCandidatesCancelled);
  j.key("reproduced").value(f.reproduced);
  j.key("confirmations").value(f.confirmations);
  j.key("confirmation").value(f.reproductionText());
  if (f.stopped) j.key("stopped").value(true);
  if (f.shrinkCutShort && !f.stopped) j.key("shrink_cut_short").value(true);
  j.key("hits").value(f.hits);
}

}  // namespace gpufuzz
