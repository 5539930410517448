// CommandLine.cpp: parsing of the gpufuzz command line against the option table.
#include "harness/cli/CommandLine.h"

#include <algorithm>
#include <charconv>
#include <cstring>

#include "renderer/InputError.h"

namespace gpufuzz {

namespace {

struct OptionRow {
  const char* flag;
  bool takesValue;
  const char* metavar;
  const char* def;
  const char* commands;
  const char* help;
};

constexpr OptionRow kOptions[] = {
#define GPUFUZZ_OPTION(id, flag, takesValue, metavar, def, commands, help) \
  {flag, takesValue, metavar, def, commands, help},
#include "harness/cli/Options.def"
#undef GPUFUZZ_OPTION
};

struct CommandRow {
  const char* name;
  char letter;
  std::size_t minFiles, maxFiles;
  const char* operands;  // what it takes, for the message when the count is wrong
  const char* synopsis;
};
constexpr CommandRow kCommands[] = {
    {"fuzz", 'f', 0, 0, "no files",
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
    {"model", 'o', 2, 2, "'check FILE' or 'show NAME'",
     "gpufuzz model   check FILE | show NAME   validate a lifecycle model; print a built-in one"},
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

}  // namespace

const char* optionFlag(Option o) {
  return kOptions[static_cast<std::size_t>(o)].flag;
}

uint64_t CommandLine::number(Option o, uint64_t fallback, uint64_t min, uint64_t max) const {
  const auto text = get(o);
  if (!text) return fallback;
  const char* flag = optionFlag(o);
  uint64_t n = 0;
  auto [ptr, ec] = std::from_chars(text->data(), text->data() + text->size(), n);
  if (text->empty() || ec != std::errc() || ptr != text->data() + text->size()) {
    throw InputError(std::string(flag) + ": '" + *text + "' is not a number");
  }
  if (n < min || n > max) {
    throw InputError(std::string(flag) + ": " + *text + " is out of range (" + std::to_string(min) +
                     ".." + std::to_string(max) + ")");
  }
  return n;
}

std::chrono::seconds parseDuration(const std::string& text, const std::string& option,
                                   bool zeroAllowed) {
  std::chrono::seconds total{0};
  std::size_t i = 0;
  if (text.empty()) throw InputError(option + ": empty duration");
  while (i < text.size()) {
    uint64_t n = 0;
    auto [ptr, ec] = std::from_chars(text.data() + i, text.data() + text.size(), n);
    if (ec != std::errc() || n > 10'000'000) {
      throw InputError(option + ": '" + text + "' is not a duration (like 30s, 10m, 8h, 1h30m)");
    }
    i = static_cast<std::size_t>(ptr - text.data());
    const char unit = i < text.size() ? text[i++] : 's';
    const uint64_t scale = unit == 's'   ? 1
                           : unit == 'm' ? 60
                           : unit == 'h' ? 3600
                           : unit == 'd' ? 86400
                                         : 0;
    if (scale == 0) {
      throw InputError(option + ": unknown unit '" + std::string(1, unit) + "' in '" + text +
                       "' (s, m, h or d)");
    }
    total += std::chrono::seconds(static_cast<int64_t>(n * scale));
  }
  if (total.count() == 0 && !zeroAllowed) {
    throw InputError(option + ": the duration must be positive");
  }
  return total;
}

std::string usageText() {
  std::string text = "usage:\n";
  for (const CommandRow& c : kCommands)
    text += "  " + std::string(c.synopsis) + "\n";
  text += "\noptions:\n";
  for (const OptionRow& o : kOptions) {
    std::string left = std::string(o.flag) + (o.takesValue ? " " + std::string(o.metavar) : "");
    left.resize(std::max<std::size_t>(left.size() + 2, 30), ' ');
    text += "  " + left + o.help;
    if (*o.def) text += " [" + std::string(o.def) + "]";
    text += "\n";
  }
  text +=
      "\nexit status: 0 nothing found / all met, 1 a failure found / an expectation missed,\n"
      "             2 bad usage or input, 3 the harness itself failed\n";
  return text;
}

CommandLine parseCommandLine(int argc, char** argv) {
  if (argc < 2) throw InputError("no subcommand given\n" + usageText());
  CommandLine cl;
  cl.command = argv[1];
  const CommandRow* command = nullptr;
  for (const CommandRow& c : kCommands) {
    if (cl.command == c.name) command = &c;
  }
  if (command == nullptr) {
    throw InputError("unknown subcommand '" + cl.command + "' (expected " + commandNames() + ")");
  }
  for (int i = 0; i < argc; ++i)
    cl.asTyped += (i == 0 ? "" : " ") + std::string(argv[i]);
  for (int i = 2; i < argc; ++i) {
    std::string arg = argv[i];
    if (arg.size() < 2 || arg[0] != '-') {
      cl.files.push_back(arg);
      continue;
    }
    std::optional<std::string> inlineValue;
    if (const auto eq = arg.find('='); arg.starts_with("--") && eq != std::string::npos) {
      inlineValue = arg.substr(eq + 1);
      arg.resize(eq);
    }
    std::size_t index = std::size(kOptions);
    for (std::size_t k = 0; k < std::size(kOptions); ++k) {
      if (arg == kOptions[k].flag) index = k;
    }
    if (index == std::size(kOptions)) {
      throw InputError("unknown option '" + arg + "' (gpufuzz " + cl.command +
                       " --help lists them)");
    }
    const OptionRow& row = kOptions[index];
    if (std::strchr(row.commands, command->letter) == nullptr) {
      throw InputError("option " + arg + " does not apply to '" + cl.command + "'");
    }
    if (!row.takesValue) {
      if (inlineValue) throw InputError("option " + arg + " takes no value");
      cl.values[index] = "";
      continue;
    }
    if (!inlineValue && i + 1 >= argc)
      throw InputError("option " + arg + " needs a value (" + row.metavar + ")");
    cl.values[index] = inlineValue ? *inlineValue : std::string(argv[++i]);
  }
  if (cl.files.size() < command->minFiles || cl.files.size() > command->maxFiles) {
    throw InputError("'" + cl.command + "' takes " + command->operands + "\n" + usageText());
  }
  return cl;
}

}  // namespace gpufuzz
