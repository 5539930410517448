// ReportFileTest.cpp: the --report file's fixed fields.
#include <gtest/gtest.h>

#include <regex>

#include "harness/campaign/ReportFile.h"
#include "tests/harness/TestSupport.h"

namespace gpufuzz {
namespace {

TEST(Report, HasTheContractsFixedFields) {
  Report r;
  r.command = "replay";
  r.seed = 1234;
  r.backend = "sim";
  r.policy = "shipped";
  r.faults = "max-26.5.0";
  r.executions = 12;
  r.results.push_back({"a.seq", RunOutcome{OutcomeClass::Hang, At{5}, "buf_create", "x", {}},
                       Expectation{OutcomeClass::Hang, At{5}}, true});
  const std::string json = reportJson(r);
  for (const char* field :
       {"\"command\": \"replay\"", "\"seed\": 1234", "\"backend\": \"sim\"", "\"executions\": 12",
        "\"elapsed_s\"", "\"results\"", "\"findings\"", "\"class\": \"hang\"", "\"at\": 5",
        "\"op\": \"buf_create\"", "\"met\": true"}) {
    EXPECT_NE(json.find(field), std::string::npos) << field << " in\n" << json;
  }
  EXPECT_EQ(json.find("planted_by"), std::string::npos) << "no rule planted it:\n" << json;
}

TEST(Report, NamesTheRuleThatPlantedAnOutcome) {
  Report r;
  r.command = "replay";
  r.results.push_back({"a.seq",
                       RunOutcome{OutcomeClass::Hang, At{5}, "buf_create", "x",
                                  "max-26.5.0:2: hang at buf_alloc when first_in_ctx"},
                       Expectation{OutcomeClass::Hang, At{5}}, true});
  const std::string json = reportJson(r);
  EXPECT_NE(json.find("\"planted_by\": \"max-26.5.0:2: hang at buf_alloc when first_in_ctx\""),
            std::string::npos)
      << json;
}

}  // namespace
}  // namespace gpufuzz
