// ReportFile.cpp: the JSON summary.
#include "harness/campaign/ReportFile.h"

#include "harness/base/AtomicFile.h"
#include "harness/base/Json.h"

namespace gpufuzz {

void Report::describeRun(const TrialSetup& setup) {
  backend = setup.backend;
  policy = std::string(policyName(setup.policy));
  faults = setup.faults;
  target = setup.target.empty() ? "" : setup.target.text();
  targetVersion = setup.target.version;
}

std::string reportJson(const Report& r) {
  JsonWriter j;
  j.beginObject();
  j.key("command").value(r.command);
  j.key("seed").value(r.seed);
  j.key("backend").value(r.backend);
  if (!r.target.empty()) {
    j.key("target").value(r.target);
    j.key("target_version").value(r.targetVersion);
  }
  j.key("policy").value(r.policy);
  j.key("faults").value(r.faults);
  j.key("executions").value(r.executions);
  j.key("elapsed_s").value(r.elapsedSeconds);
  j.key("results").beginArray();
  for (const ReplayResult& res : r.results) {
    j.beginObject();
    j.key("file").value(res.file);
    j.key("outcome").beginObject();
    j.key("class").value(outcomeClassName(res.outcome.cls));
    j.key("at");
    writeAt(j, res.outcome.at);
    j.key("op").value(res.outcome.op);
    j.key("detail").value(res.outcome.detail);
    if (!res.outcome.fault.empty()) j.key("planted_by").value(res.outcome.fault);
    j.endObject();
    j.key("expected").beginObject();
    j.key("class").value(outcomeClassName(res.expected.cls));
    j.key("at");
    writeAt(j, res.expected.at);
    j.endObject();
    j.key("met").value(res.met);
    j.endObject();
  }
  j.endArray();
  j.key("findings").beginArray();
  for (const ReportedFinding& rf : r.findings) {
    j.beginObject();
    writeFindingFields(j, rf.finding, rf.file);
    j.endObject();
  }
  j.endArray();
  for (const auto& [key, json] : r.extra)
    j.key(key).raw(json);
  j.endObject();
  return j.str();
}

void writeReport(const std::filesystem::path& path, const Report& report) {
  writeFileAtomically(path, reportJson(report));
}

}  // namespace gpufuzz
