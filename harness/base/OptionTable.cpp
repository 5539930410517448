// OptionTable.cpp: typed values, their bounds, help lines and the parse of a command line.
#include "harness/base/OptionTable.h"

#include <algorithm>
#include <charconv>

#include "base/InputError.h"

namespace gpufuzz {

namespace {

bool bounded(OptionKind kind) {
  return kind == OptionKind::Count || kind == OptionKind::AutoOrCount ||
         kind == OptionKind::Duration;
}

std::string boundText(const OptionSpec& spec, uint64_t n) {
  return std::to_string(n) + (spec.kind == OptionKind::Duration ? "s" : "");
}

void checkBounds(const OptionSpec& spec, const std::string& text, uint64_t n) {
  if (n >= spec.min && n <= spec.max) return;
  throw InputError(std::string(spec.flag) + ": " + text + " is out of bounds (" +
                   optionBoundsText(spec) + ")");
}

uint64_t parseCount(const OptionSpec& spec, const std::string& text) {
  uint64_t n = 0;
  auto [ptr, ec] = std::from_chars(text.data(), text.data() + text.size(), n);
  if (text.empty() || ec != std::errc() || ptr != text.data() + text.size()) {
    throw InputError(std::string(spec.flag) + ": '" + text + "' is not a number" +
                     (spec.kind == OptionKind::AutoOrCount ? " nor 'auto'" : ""));
  }
  checkBounds(spec, text, n);
  return n;
}

}  // namespace

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

OptionValue parseOptionValue(const OptionSpec& spec, const std::string& text) {
  OptionValue v{text, 0, false};
  switch (spec.kind) {
    case OptionKind::Flag:
      throw InputError("option " + std::string(spec.flag) + " takes no value");
    case OptionKind::Count:
      v.number = parseCount(spec, text);
      break;
    case OptionKind::AutoOrCount:
      if (text == "auto") {
        v.automatic = true;
      } else {
        v.number = parseCount(spec, text);
      }
      break;
    case OptionKind::Duration: {
      // The bounds say whether zero is allowed; parseDuration reads the units.
      v.number = static_cast<uint64_t>(parseDuration(text, spec.flag, true).count());
      checkBounds(spec, text, v.number);
      break;
    }
    case OptionKind::Choice: {
      const std::string words = spec.metavar;
      std::size_t start = 0;
      bool found = false;
      while (start <= words.size()) {
        const std::size_t bar = std::min(words.find('|', start), words.size());
        if (words.compare(start, bar - start, text) == 0 && bar - start == text.size())
          found = true;
        start = bar + 1;
      }
      if (!found) {
        throw InputError(std::string(spec.flag) + ": '" + text + "' is not one of " + words);
      }
      break;
    }
    case OptionKind::Text:
    case OptionKind::Path:
      if (text.empty()) {
        throw InputError(std::string(spec.flag) + " needs a non-empty " + spec.metavar);
      }
      break;
  }
  return v;
}

std::optional<OptionValue> optionDefault(const OptionSpec& spec) {
  if (*spec.def == '\0') return std::nullopt;
  return parseOptionValue(spec, spec.def);
}

std::string optionBoundsText(const OptionSpec& spec) {
  if (!bounded(spec.kind)) return "";
  if (spec.max == UINT64_MAX) {
    return spec.kind == OptionKind::Duration ? boundText(spec, spec.min) + " or more"
                                             : "at least " + std::to_string(spec.min);
  }
  return boundText(spec, spec.min) + ".." + boundText(spec, spec.max);
}

std::string optionDefaultAndBounds(const OptionSpec& spec, const char* def) {
  const std::string given = def ? def : spec.def;
  std::string text = "[default: ";
  if (spec.kind == OptionKind::Flag) {
    text += "off";
  } else {
    text += given.empty() ? std::string(*spec.shownDefault ? spec.shownDefault : "none") : given;
  }
  if (const std::string bounds = optionBoundsText(spec); !bounds.empty()) {
    text += "; bounds: " + bounds;
  }
  return text + "]";
}

std::string optionHelpLine(const OptionSpec& spec, const char* def) {
  std::string left = std::string(spec.flag) +
                     (spec.kind == OptionKind::Flag ? "" : " " + std::string(spec.metavar));
  left.resize(std::max<std::size_t>(left.size() + 2, 30), ' ');
  return "  " + left + spec.help + " " + optionDefaultAndBounds(spec, def) + "\n";
}

ParsedOptions parseOptions(std::span<const OptionSpec> table, const std::vector<std::string>& args,
                           const std::function<void(std::size_t row)>& accept,
                           const std::string& helpHint) {
  ParsedOptions parsed;
  parsed.values.resize(table.size());
  for (std::size_t i = 0; i < args.size(); ++i) {
    std::string arg = args[i];
    if (arg.size() < 2 || arg[0] != '-') {
      parsed.operands.push_back(arg);
      continue;
    }
    std::optional<std::string> inlineValue;
    if (const auto eq = arg.find('='); arg.starts_with("--") && eq != std::string::npos) {
      inlineValue = arg.substr(eq + 1);
      arg.resize(eq);
    }
    const auto row = std::find_if(table.begin(), table.end(),
                                  [&](const OptionSpec& s) { return arg == s.flag; });
    if (row == table.end()) throw InputError("unknown option '" + arg + "' (" + helpHint + ")");
    const auto index = static_cast<std::size_t>(row - table.begin());
    accept(index);
    if (row->kind == OptionKind::Flag) {
      if (inlineValue) throw InputError("option " + arg + " takes no value");
      parsed.values[index] = OptionValue{};
      continue;
    }
    if (!inlineValue && i + 1 >= args.size()) {
      throw InputError("option " + arg + " needs a value (" + row->metavar + ")");
    }
    parsed.values[index] = parseOptionValue(*row, inlineValue ? *inlineValue : args[++i]);
  }
  return parsed;
}

std::vector<std::string> optionWords(const OptionSpec& spec,
                                     const std::optional<OptionValue>& value) {
  if (!value) return {};
  if (spec.kind == OptionKind::Flag) return {spec.flag};
  return {spec.flag, value->text};
}

}  // namespace gpufuzz
