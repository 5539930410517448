// CommandLine.cpp: the gpufuzz command line parsed against the option table (Options.def).
#include "harness/cli/CommandLine.h"

#include <algorithm>
#include <cstring>

#include "base/InputError.h"

namespace gpufuzz {

namespace {

struct OptionRow {
  OptionSpec spec;
  const char* commands;
};

constexpr OptionRow kOptions[] = {
#define GPUFUZZ_OPTION(id, flag, kind, metavar, def, min, max, shown, commands, help) \
  {{flag, OptionKind::kind, metavar, def, min, max, shown, help}, commands},
#include "harness/cli/Options.def"
#undef GPUFUZZ_OPTION
};

/// A subcommand's own default for an option (GPUFUZZ_COMMAND_DEFAULT).
struct CommandDefault {
  Option option;
  char command;
  const char* def;
};
constexpr CommandDefault kCommandDefaults[] = {
#define GPUFUZZ_OPTION(id, flag, kind, metavar, def, min, max, shown, commands, help)
#define GPUFUZZ_COMMAND_DEFAULT(id, command, def) {Option::id, command, def},
#include "harness/cli/Options.def"
#undef GPUFUZZ_OPTION
};

std::vector<OptionSpec> optionSpecs() {
  std::vector<OptionSpec> specs;
  for (const OptionRow& row : kOptions)
    specs.push_back(row.spec);
  return specs;
}

struct CommandRow {
  const char* name;
  char letter;
  std::size_t minFiles, maxFiles;
  const char* operands;  // what it takes, for the message when the count is wrong
  const char* synopsis;
};
constexpr CommandRow kCommands[] = {
    {"fuzz", 'f', 0, SIZE_MAX, "no files but --seeds' paths",
     "gpufuzz fuzz    [options]            generate, run, shrink and report failures"},
    {"replay", 'r', 1, SIZE_MAX, "one or more files",
     "gpufuzz replay  FILE... [options]    run sequence files; check each against its `expect`"},
    {"shrink", 's', 1, 1, "one file",
     "gpufuzz shrink  FILE [-o OUT]        shrink a failing sequence to a minimal one"},
    {"explain", 'e', 1, 1, "one file",
     "gpufuzz explain FILE [options]       report what the failure needs and what prevents it"},
    {"promote", 'p', 1, 1, "one finding (its folder or its minimal.seq)",
     "gpufuzz promote FINDING [options]    copy a finding into the corpus as a regression test"},
    {"merge", 'm', 1, SIZE_MAX, "one or more findings folders",
     "gpufuzz merge   DIR... [--out OUT]   merge findings folders and their stats into OUT"},
    {"plot", 'l', 1, 1, "one findings folder",
     "gpufuzz plot    DIR                  draw DIR/plot_data into DIR/plot.png and plot.svg"},
    {"report", 'R', 1, 1, "one findings folder",
     "gpufuzz report  DIR [-o FILE.html]   one self-contained HTML page of DIR's campaign"},
    {"sweep", 'w', 1, SIZE_MAX, "one or more files",
     "gpufuzz sweep   FILE... [--inject W] fail each call that can fail, one run a call"},
    {"model", 'o', 2, 2, "'check FILE', 'show NAME' or 'normalize NAME|FILE'",
     "gpufuzz model   check FILE | show NAME | normalize MODEL   check a model; print one or its "
     "facts"},
};

std::string commandNames() {
  std::string names;
  for (std::size_t i = 0; i < std::size(kCommands); ++i) {
    names += (i == 0                          ? ""
              : i + 1 == std::size(kCommands) ? " or "
                                              : ", ") +
             std::string(kCommands[i].name);
  }
  return names;
}

const CommandRow* findCommand(const std::string& name) {
  for (const CommandRow& c : kCommands) {
    if (name == c.name) return &c;
  }
  return nullptr;
}

const char* defaultFor(std::size_t option, char letter) {
  for (const CommandDefault& d : kCommandDefaults) {
    if (static_cast<std::size_t>(d.option) == option && d.command == letter) return d.def;
  }
  return kOptions[option].spec.def;
}

const char* kExitStatusText =
    "\nexit status: 0 nothing found / all met, 1 a failure found / an expectation missed,\n"
    "             2 bad usage or input, 3 the harness itself failed\n";

}  // namespace

const OptionSpec& optionSpec(Option o) {
  return kOptions[static_cast<std::size_t>(o)].spec;
}

const char* optionFlag(Option o) {
  return optionSpec(o).flag;
}

const char* optionDefaultFor(Option o, const std::string& command) {
  const CommandRow* c = findCommand(command);
  return c ? defaultFor(static_cast<std::size_t>(o), c->letter) : optionSpec(o).def;
}

std::string usageText() {
  std::string text = "usage:\n";
  for (const CommandRow& c : kCommands)
    text += "  " + std::string(c.synopsis) + "\n";
  text += "\noptions:\n";
  for (std::size_t i = 0; i < std::size(kOptions); ++i) {
    std::string def = kOptions[i].spec.def;
    for (const CommandDefault& d : kCommandDefaults) {
      if (static_cast<std::size_t>(d.option) != i) continue;
      for (const CommandRow& c : kCommands) {
        if (c.letter == d.command) def += "; " + std::string(c.name) + ": " + d.def;
      }
    }
    text += optionHelpLine(kOptions[i].spec, def.c_str());
  }
  return text + kExitStatusText;
}

std::string commandUsageText(const std::string& command) {
  const CommandRow* c = findCommand(command);
  if (c == nullptr) {
    throw InputError("unknown subcommand '" + command + "' (expected " + commandNames() + ")");
  }
  std::string text = "usage:\n  " + std::string(c->synopsis) + "\n\noptions:\n";
  for (std::size_t i = 0; i < std::size(kOptions); ++i) {
    if (std::strchr(kOptions[i].commands, c->letter) == nullptr) continue;
    text += optionHelpLine(kOptions[i].spec, defaultFor(i, c->letter));
  }
  return text + kExitStatusText;
}

std::optional<std::string> helpRequested(int argc, char** argv) {
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--help") != 0 && std::strcmp(argv[i], "-h") != 0) continue;
    if (argc > 1 && findCommand(argv[1]) != nullptr) return commandUsageText(argv[1]);
    return usageText();
  }
  return std::nullopt;
}

CommandLine parseCommandLine(int argc, char** argv) {
  CommandLine cl =
      parseCommandLine(std::vector<std::string>(argv + std::min(argc, 1), argv + argc));
  cl.asTyped.clear();
  for (int i = 0; i < argc; ++i)
    cl.asTyped += (i == 0 ? "" : " ") + std::string(argv[i]);
  return cl;
}

CommandLine parseCommandLine(const std::vector<std::string>& args) {
  if (args.empty()) throw InputError("no subcommand given\n" + usageText());
  CommandLine cl;
  cl.command = args.front();
  const CommandRow* command = findCommand(cl.command);
  if (command == nullptr) {
    throw InputError("unknown subcommand '" + cl.command + "' (expected " + commandNames() + ")");
  }
  cl.asTyped = "gpufuzz";
  for (const std::string& arg : args)
    cl.asTyped += " " + arg;
  static const std::vector<OptionSpec> specs = optionSpecs();
  const auto accept = [&](std::size_t row) {
    if (std::strchr(kOptions[row].commands, command->letter) == nullptr) {
      throw InputError("option " + std::string(kOptions[row].spec.flag) + " does not apply to '" +
                       cl.command + "'");
    }
  };
  ParsedOptions parsed = parseOptions(specs, std::vector<std::string>(args.begin() + 1, args.end()),
                                      accept, "gpufuzz " + cl.command + " --help lists them");
  cl.files = std::move(parsed.operands);
  for (std::size_t i = 0; i < std::size(kOptions); ++i) {
    cl.values[i] = std::move(parsed.values[i]);
    const char* def = defaultFor(i, command->letter);
    if (*def != '\0') cl.defaults[i] = parseOptionValue(kOptions[i].spec, def);
  }
  if (cl.files.size() < command->minFiles || cl.files.size() > command->maxFiles) {
    throw InputError("'" + cl.command + "' takes " + command->operands + "\n" + usageText());
  }
  return cl;
}

}  // namespace gpufuzz
