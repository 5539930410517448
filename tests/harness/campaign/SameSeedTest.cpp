// SameSeedTest.cpp: the same seed and settings (sim, --jobs 1, a fixed deadline) write the same
// findings folder byte for byte, apart from what is volatile by nature, normalised before the
// comparison:
// - the folder's own path (finding.json's `file`, stats.json's `folder` and `command_line`);
// - clock times: finding.json's `found_at` and `last_hit`, stats.json's start, update and
//   last-find times, run time and rate, plot_data's time, run time and rate;
// - plot_data's lines a minute, which count how far the campaign got by the clock: only its
//   line at the end of the run is compared;
// - the harness's pid (stats.json), and in stacks.txt the child's addresses, thread and process
//   ids (ASLR and the kernel pick those) and its sequence file's temporary folder and pid;
// - how long a stuck child was quiet ("no progress for 301 ms"): the deadline timer's latency,
//   and the latencies of finding.json's timeline (`elapsed_ms`, `watched_ms`);
// - how long an explanation took (explanation.md's last line).
// Everything else (which findings, their minimal sequences, variants, causes, explanations,
// counts, hits, stats by class) must be equal.
#include <gtest/gtest.h>

#include <future>
#include <map>
#include <regex>
#include <sstream>

#include "harness/base/AtomicFile.h"
#include "tests/harness/TestSupport.h"

namespace gpufuzz {
namespace {

namespace fs = std::filesystem;

std::string replaceAll(std::string text, const std::regex& pattern, const std::string& with) {
  return std::regex_replace(text, pattern, with);
}

std::string normalised(const fs::path& relative, std::string text, const fs::path& out) {
  const std::string root = out.string();
  for (std::size_t at = text.find(root); at != std::string::npos; at = text.find(root, at))
    text.replace(at, root.size(), "OUT");
  if (relative.filename() == "stats.json") {
    static const std::regex volatileLine(
        R"re(\n *"(command_line|pid|start_time|start_time_utc|last_update|last_update_utc|last_find|last_find_utc|run_time_s|execs_per_sec)": [^\n]*)re");
    text = replaceAll(text, volatileLine, "\n(volatile)");
  }
  if (relative.filename() == "plot_data") {
    // unix_time, run_time_s, executions, execs_per_sec: the first, second and fourth columns.
    static const std::regex clocks(R"re((^|\n)[0-9]+, [0-9.]+, ([0-9]+), [0-9.]+,)re");
    text = replaceAll(text, clocks, "$1(volatile), (volatile), $2, (volatile),");
    // A run over a minute under load writes a line a minute first: keep the comments and the end.
    std::string kept, last, line;
    std::istringstream lines(text);
    while (std::getline(lines, line)) {
      if (line.starts_with("#")) {
        kept += line + "\n";
      } else if (!line.empty()) {
        last = line;
      }
    }
    text = kept + last + "\n";
  }
  if (relative.filename() == "finding.json") {
    static const std::regex foundAt(R"re("(found_at|last_hit)": "[^"]*")re");
    text = replaceAll(text, foundAt, "\"$1\": (volatile)");
    // The timeline's measured latencies (its deadlines are fixed by --deadline).
    static const std::regex latency(R"re("(elapsed_ms|watched_ms)": [0-9.e+-]+)re");
    text = replaceAll(text, latency, "\"$1\": (volatile)");
    // Where the frames were taken: "stacks by gdb (...), process PID".
    static const std::regex process("process [0-9]+");
    text = replaceAll(text, process, "process ?");
  }
  if (relative.filename() == "explanation.md") {
    // Its last line: "48 experiments, 48 executions, 3.8 s".
    static const std::regex took(R"re((executions?), [0-9.]+ s)re");
    text = replaceAll(text, took, "$1, ? s");
  }
  if (relative.filename() == "stacks.txt") {
    static const std::regex address("0x[0-9a-f]+"), lwp("LWP [0-9]+"), process("process [0-9]+"),
        trialFile("gpufuzz-[A-Za-z0-9]+/trial-[0-9]+-");
    text = replaceAll(replaceAll(replaceAll(text, address, "0x?"), lwp, "LWP ?"), process,
                      "process ?");
    text = replaceAll(text, trialFile, "gpufuzz-?/trial-?-");
  }
  // A stuck child's measured quiet time and CPU share ("no progress for 150 ms, 44.5% CPU").
  static const std::regex quiet("no progress for [0-9]+ ms"), cpu("[0-9.]+% CPU");
  return replaceAll(replaceAll(text, quiet, "no progress for ? ms"), cpu, "?% CPU");
}

/// Every file under `out` (by path relative to it), normalised.
std::map<std::string, std::string> folderContents(const fs::path& out) {
  std::map<std::string, std::string> files;
  for (const auto& entry : fs::recursive_directory_iterator(out)) {
    if (!entry.is_regular_file()) continue;
    const fs::path relative = fs::relative(entry.path(), out);
    files[relative.string()] = normalised(relative, readFile(entry.path()), out);
  }
  return files;
}

TEST(SameSeed, TheSameSettingsWriteTheSameFindingsFolder) {
  testing::ScratchDir dir;
  // Both campaigns run at once: each has one worker, and most of its time is spent waiting out
  // deadlines, so neither slows the other and the test takes half as long.
  // 1500 ms: the explanation's 2048 textures took over 300 ms on a loaded VM, then over 600 ms in
  // a fresh clone's make test, and the experiment then said `spin` where an idle run said the
  // size does not matter. Alone the test took 22 s at 600 ms, 45 s at 1500, mostly waiting.
  const auto campaign = [&](const char* name) {
    return std::async(std::launch::async, [out = dir.path() / name] {
      return testing::gpufuzz(
          "fuzz --backend sim --policy no-destroy-sync --faults max-26.5.0 --runs 60 --jobs 1 "
          "--ops all --seed 17 --confirmations 2 --deadline 1500 --quiet --out " +
          out.string());
    });
  };
  auto first = campaign("first");
  auto second = campaign("second");
  const std::pair<std::string, testing::CommandResult> runs[] = {{"first", first.get()},
                                                                 {"second", second.get()}};
  std::map<std::string, std::string> firstContents;
  for (const auto& [name, r] : runs) {
    ASSERT_EQ(r.status, 1) << r.output;
    const auto contents = folderContents(dir.path() / name);
    // Findings with their evidence, explanation and a variant: worth comparing.
    std::size_t findings = 0, variants = 0;
    for (const auto& [path, text] : contents) {
      findings += fs::path(path).filename() == "signature";
      variants += fs::path(path).parent_path().filename() == "variants";
    }
    ASSERT_GE(findings, 1U);
    ASSERT_GE(variants, 1U);
    ASSERT_GE(contents.size(), 10U);
    if (firstContents.empty()) {
      firstContents = contents;
      continue;
    }
    std::vector<std::string> firstNames, secondNames;
    for (const auto& [path, text] : firstContents)
      firstNames.push_back(path);
    for (const auto& [path, text] : contents)
      secondNames.push_back(path);
    ASSERT_EQ(firstNames, secondNames);
    for (const auto& [path, text] : contents)
      EXPECT_EQ(firstContents.at(path), text) << path;
  }
}

}  // namespace
}  // namespace gpufuzz
