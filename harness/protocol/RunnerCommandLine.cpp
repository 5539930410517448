// RunnerCommandLine.cpp: the runner's options in one table; the harness's writer and the
// runner's parser of them.
#include "harness/protocol/RunnerCommandLine.h"

#include <array>

#include "base/InputError.h"
#include "harness/base/OptionTable.h"

namespace gpufuzz {

namespace {

enum Row : std::size_t {
  kBackend,
  kDevice,
  kValidation,
  kPolicy,
  kFaults,
  kEventsFd,
  kDeviceMemory,
  kSchedule,
  kTry,
  kQuiet,
  kProbe,
  kPersistent,
  kRows
};

constexpr uint64_t kMostFd = 1 << 20;

const std::array<OptionSpec, kRows> kTable = {{
    {"--backend", OptionKind::Text, "NAME|auto", "", 0, 0, "the file's, else auto",
     "the backend (docs/backends.md)"},
    {"--device", OptionKind::Text, "TEXT", "", 0, 0, "a GPU when there is one, else the first",
     "the backend's device whose platform name, vendor or device name contains TEXT"},
    {"--validation", OptionKind::Choice, "on|off", "", 0, 0, "on where the layer is installed",
     "vulkan: run under the Khronos validation layer"},
    {"--policy", OptionKind::Text, "NAME", "", 0, 0, "the file's, else shipped",
     "the teardown policy"},
    {"--faults", OptionKind::Text, "NAME|PATH", "", 0, 0, "the file's, else the backend's",
     "the fault plan: a built-in name or a plan file"},
    {"--events-fd", OptionKind::Count, "N", "", 0, kMostFd, "GPUFUZZ_EVENTS_FD",
     "write the events of docs/target.md to descriptor N"},
    {"--device-memory", OptionKind::Count, "BYTES", "", 1, UINT64_MAX, "the whole device",
     "leave about BYTES of device memory to the run (docs/failures.md)"},
    {"--schedule", OptionKind::Choice, "os|pct|collide|mix", "", 0, 0, "the file's, else mix",
     "how a threaded sequence's threads interleave at runtime calls (docs/sequences.md)"},
    {"--try", OptionKind::Count, "N", "", 0, UINT64_MAX, "the file's, else 0",
     "which try of a threaded sequence this is: it seeds the threads' schedule"},
    {"--quiet", OptionKind::Flag, "", "", 0, 0, "", "print no line per operation"},
    {"--probe", OptionKind::Flag, "", "", 0, 0, "",
     "make the backend, print what it runs on, exit"},
    {"--persistent", OptionKind::Path, "FIFO", "", 0, 0, "none",
     "run the sequence files named, a line each, by the named pipe FIFO, one after another"},
}};

using Values = std::array<std::optional<OptionValue>, kRows>;

std::optional<OptionValue> text(const std::optional<std::string>& s) {
  return s ? std::optional(OptionValue{*s, 0, false}) : std::nullopt;
}
std::optional<OptionValue> flag(bool on) {
  return on ? std::optional(OptionValue{}) : std::nullopt;
}
std::optional<OptionValue> number(uint64_t n) {
  return OptionValue{std::to_string(n), n, false};
}

/// `args` as the table's values: what runnerArgs() writes.
Values toValues(const RunnerArgs& args) {
  Values v;
  const RunOverrides& o = args.overrides;
  v[kBackend] = text(o.backend);
  if (!o.backendOptions.device.empty()) v[kDevice] = text(o.backendOptions.device);
  if (o.backendOptions.validation)
    v[kValidation] = text(*o.backendOptions.validation ? "on" : "off");
  v[kPolicy] = text(o.policy);
  v[kFaults] = text(o.faults);
  if (args.eventsFd) v[kEventsFd] = number(static_cast<uint64_t>(*args.eventsFd));
  if (o.backendOptions.deviceMemory) v[kDeviceMemory] = number(*o.backendOptions.deviceMemory);
  if (o.schedule) v[kSchedule] = text(std::string(scheduleName(*o.schedule)));
  if (args.attempt) v[kTry] = number(*args.attempt);
  v[kQuiet] = flag(args.quiet);
  v[kProbe] = flag(args.probe);
  if (!args.persistent.empty()) v[kPersistent] = text(args.persistent);
  return v;
}

/// The table's values as RunnerArgs: what parseRunnerArgs() reads.
RunnerArgs fromValues(const Values& v) {
  RunnerArgs args;
  RunOverrides& o = args.overrides;
  const auto str = [&](Row row) { return v[row] ? std::optional(v[row]->text) : std::nullopt; };
  o.backend = str(kBackend);
  o.backendOptions.device = str(kDevice).value_or("");
  if (v[kValidation]) o.backendOptions.validation = v[kValidation]->text == "on";
  o.policy = str(kPolicy);
  o.faults = str(kFaults);
  if (v[kEventsFd]) args.eventsFd = static_cast<int>(v[kEventsFd]->number);
  if (v[kDeviceMemory]) o.backendOptions.deviceMemory = v[kDeviceMemory]->number;
  if (v[kSchedule]) o.schedule = scheduleModeOf(v[kSchedule]->text);
  if (v[kTry]) args.attempt = v[kTry]->number;
  args.quiet = v[kQuiet].has_value();
  args.probe = v[kProbe].has_value();
  args.persistent = str(kPersistent).value_or("");
  return args;
}

}  // namespace

std::vector<std::string> runnerArgs(const RunnerArgs& args) {
  const Values values = toValues(args);
  std::vector<std::string> words;
  for (std::size_t row = 0; row < kRows; ++row) {
    for (std::string& w : optionWords(kTable[row], values[row]))
      words.push_back(std::move(w));
  }
  if (!args.file.empty()) words.push_back(args.file);
  return words;
}

std::string runnerUsageText() {
  std::string text =
      "usage: gpufuzz-runner [options] FILE\n"
      "       gpufuzz-runner [options] --persistent FIFO\n"
      "       gpufuzz-runner --probe [--backend NAME|auto] [--device TEXT] [--validation on|off]\n"
      "\noptions:\n";
  for (const OptionSpec& spec : kTable)
    text += optionHelpLine(spec);
  return text +
         "\nexit status: 0 pass, 1 the sequence failed, 2 bad usage or input (or no usable "
         "device),\n             3 the runner itself failed\n";
}

RunnerArgs parseRunnerArgs(const std::vector<std::string>& argv) {
  ParsedOptions parsed = parseOptions(
      kTable, argv, [](std::size_t) {}, "gpufuzz-runner --help lists them");
  Values values;
  for (std::size_t row = 0; row < kRows; ++row)
    values[row] = std::move(parsed.values[row]);
  RunnerArgs args = fromValues(values);
  if (parsed.operands.size() > 1) {
    throw InputError("one sequence file at a time (got '" + parsed.operands[0] + "' and '" +
                     parsed.operands[1] + "')");
  }
  if (!parsed.operands.empty()) args.file = parsed.operands.front();
  if (args.probe && !args.file.empty()) throw InputError("--probe takes no sequence file");
  if (!args.persistent.empty() && (args.probe || !args.file.empty())) {
    throw InputError("--persistent reads its sequence files from its pipe: no FILE, no --probe");
  }
  if (args.file.empty() && !args.probe && args.persistent.empty()) {
    throw InputError("no sequence file given\n" + runnerUsageText());
  }
  return args;
}

}  // namespace gpufuzz
