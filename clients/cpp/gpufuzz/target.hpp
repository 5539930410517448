// gpufuzz/target.hpp: the C++ client library of the target protocol (docs/target.md), header-only,
// standard library and POSIX only. A program that includes it, implements gpufuzz::target::Target
// for its own renderer or runtime wrapper, and calls gpufuzz::target::main() from its main() can
// be fuzzed with `gpufuzz fuzz --target "PROGRAM ARGS..."`:
//
//   struct MyTarget : gpufuzz::target::Target {
//     MyTarget() {
//       handle("create", [this](const gpufuzz::target::Operation& op) { ... });
//       handleRelease("queue", [this](const std::string& name) { ... });  // optional
//     }
//   };
//   int main(int argc, char** argv) {
//     return gpufuzz::target::main(argc, argv, "my-renderer 1.0",
//                                  [] { return std::make_unique<MyTarget>(); });
//   }
//
// (or override Target::run(op) and dispatch on op.op yourself, throwing Unsupported for what the
// target lacks).
//
// What main() does: `PROGRAM FILE` reads the lifecycle model as the normalized facts gpufuzz
// writes (docs/models.md: the file GPUFUZZ_MODEL_FACTS names, else the facts beside the model file
// GPUFUZZ_MODEL or the sequence's `# model:` names, else the built-in `all`, kBuiltinModel),
// reads FILE in it (a normalized sequence: directives, then one operation a line), calls
// Target::start(), Target::run() for each operation (on its thread, for `@T` lines), and
// Target::release() for what is still alive at the end (kind by kind in the model's `release`
// order, each kind's names in creation order: the built-in's renderers, then bare buffers, then
// bare contexts), then Target::leaks(); it writes the events to GPUFUZZ_EVENTS_FD as it goes, and
// turns a Failure (or any other exception, as `error`) into the outcome line. `PROGRAM --version`
// prints the version string. With GPUFUZZ_FORK_SERVER_FD set and no FILE, the program is a fork
// server: it says hello, and runs each sequence the harness asks for in a fork of itself, so
// start-up (static initialisation, a JIT, a runtime's libraries) is paid once. The device must not
// be touched before the fork: do that in Target::start(), which runs in the fork.
//
// The fork-server messages (one per SOCK_SEQPACKET packet):
//   server -> harness   "hello 1"                 once start-up is done
//   harness -> server   "run" NUL COUNT NUL NAME=VALUE NUL (COUNT times) ARG NUL ...
//                       with descriptors [output, events] (SCM_RIGHTS)
//   server -> harness   "pid P"                   the fork that runs it (or "error MESSAGE")
//   server -> harness   "exit S"                  once it exited, unreaped: waitpid(2) status S
//   harness -> server   "reap"                    the server reaps it and waits for the next
// End of file on the socket: the server kills its running child, if any, and exits 0. In the
// fork: its own process group, SIGKILL when the server dies, every signal at its default but
// SIGTERM and SIGINT (ignored: the harness ends its children itself), an empty signal mask,
// stdout and stderr on the output descriptor, events on 3, no other descriptor, and the
// request's NAME=VALUE pairs in its environment.
//
// Stacks: with GPUFUZZ_STACKS_FILE set, main() installs the handler of gpufuzz/stacks.hpp in the
// process that runs the sequence. When the harness finds the run stuck or late, every thread
// writes its own native frames, and those inside a call into the Target say so. A program with a
// main() of its own calls installStacksHandler() itself.
#pragma once

#include <dlfcn.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/types.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cerrno>
#include <condition_variable>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <fstream>
#include <functional>
#include <initializer_list>
#include <map>
#include <memory>
#include <mutex>
#include <optional>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <thread>
#include <utility>
#include <vector>

#include "stacks.hpp"

namespace gpufuzz::target {

// --- the protocol's constants ------------------------------------------------------------------

inline constexpr const char* kEventsFdVariable = "GPUFUZZ_EVENTS_FD";
inline constexpr const char* kForkServerFdVariable = "GPUFUZZ_FORK_SERVER_FD";
/// The descriptor a child's events go to, and the fork server's socket.
inline constexpr int kEventsFd = 3;
inline constexpr const char* kForkServerHello = "hello 1";
inline constexpr std::size_t kForkServerMaxMessage = 64 * 1024;
inline constexpr int kForkServerMaxFds = 2;

// --- events ------------------------------------------------------------------------------------

/// Writes the events of docs/target.md, one write(2) a line, unbuffered. A negative fd writes
/// nothing (a target run by hand).
class Events {
 public:
  explicit Events(int fd) : fd_(fd) {}
  /// The descriptor GPUFUZZ_EVENTS_FD names, or -1.
  static Events fromEnvironment() {
    const char* text = std::getenv(kEventsFdVariable);
    if (!text || !*text) return Events(-1);
    char* end = nullptr;
    const long fd = std::strtol(text, &end, 10);
    return Events(*end == '\0' && fd >= 0 && fd < (1 << 20) ? static_cast<int>(fd) : -1);
  }

  int fd() const { return fd_; }

  void start(std::size_t operations) const { line("start " + std::to_string(operations)); }
  /// `at`: the 1-based ordinal, or "end".
  void begin(std::string_view at, std::string_view op) const {
    line("begin " + std::string(at) + " " + std::string(op));
  }
  void done(std::string_view at) const { line("done " + std::string(at)); }
  /// The operation failed as its mark asked (docs/failures.md); the run goes on.
  void fail(std::string_view at, std::string_view detail) const {
    line("fail " + std::string(at) + " " + std::string(detail));
  }
  /// The operation was not run: it uses a name a failed operation never made.
  void skip(std::string_view at) const { line("skip " + std::string(at)); }
  /// `cls`: pass, error, invalid, mismatch or leak; `at`, `op`: "-" when none.
  void outcome(std::string_view cls, std::string_view at, std::string_view op,
               std::string_view detail) const {
    std::string text = "outcome " + std::string(cls) + " " + std::string(at.empty() ? "-" : at) +
                       " " + std::string(op.empty() ? "-" : op) + " ";
    for (const char c : detail)
      text.push_back(c == '\n' || c == '\r' ? ' ' : c);
    line(text);
  }
  /// One line as it is (without its newline).
  void line(std::string text) const {
    if (fd_ < 0) return;
    text.push_back('\n');
    std::size_t off = 0;
    while (off < text.size()) {
      const ssize_t n = ::write(fd_, text.data() + off, text.size() - off);
      if (n < 0 && errno == EINTR) continue;
      if (n <= 0) return;  // the harness is gone; the run itself goes on
      off += static_cast<std::size_t>(n);
    }
  }

 private:
  int fd_;
};

// --- lifecycle models ----------------------------------------------------------------------------

/// The variable that names the model file of the run (docs/models.md; the harness always sets it).
inline constexpr const char* kModelVariable = "GPUFUZZ_MODEL";
/// The variable that names that model's normalized facts, the form this library reads (the
/// harness always sets it too).
inline constexpr const char* kModelFactsVariable = "GPUFUZZ_MODEL_FACTS";
/// The first line of the facts this library reads: the form and its version.
inline constexpr std::string_view kModelFactsHeader = "gpufuzz-model-facts 1";
/// How many threads a sequence may have (`@0` .. `@7`).
inline constexpr unsigned kMaxThreads = 8;

/// The built-in model `all` as its normalized facts (`gpufuzz model normalize all`): the
/// vocabulary of a sequence that names no model. The Python library holds the same text
/// (BUILTIN_MODEL), and a test checks both against gpufuzz's output.
inline constexpr std::string_view kBuiltinModel = R"gpufuzz(gpufuzz-model-facts 1
model all 26fc6db1938459b1
note The shipped GpuRenderer and the bare device runtime beneath it: the union of renderer and device.
resource renderer r
resource context c
resource buffer b
owner buffer context
op create
weight create 15
slot create renderer new
arg create width int 64 1 4096
arg create height int 64 1 4096
fails create oom host-oom lost
op draw
weight draw 30
slot draw renderer use
arg draw triangles int 4 1 1024
arg draw seed int 0 0 4294967295
fails draw host-oom lost
effect draw set pending renderer
op sync
weight sync 7
slot sync renderer use
fails sync host-oom lost
effect sync clear pending renderer
op set_textures
weight set_textures 10
slot set_textures renderer use
arg set_textures count int 1 0 16
arg set_textures size int 32 1 2048
arg set_textures seed int 0 0 4294967295
fails set_textures oom host-oom lost
effect set_textures set textured renderer
op read_back
weight read_back 7
slot read_back renderer use
fails read_back host-oom lost
effect read_back clear pending renderer
op destroy
weight destroy 16
slot destroy renderer end
fails destroy host-oom lost
op ctx_create
weight ctx_create 9
slot ctx_create context new
fails ctx_create oom host-oom
op buf_create
weight buf_create 16
slot buf_create context use
slot buf_create buffer new
arg buf_create bytes int 256 1 2147483648
fails buf_create oom host-oom lost
op buf_destroy
weight buf_destroy 9
slot buf_destroy buffer end
op ctx_destroy
weight ctx_destroy 8
slot ctx_destroy context end
release renderer destroy
release buffer buf_destroy
release context ctx_destroy
)gpufuzz";

/// A sequence file that is not what the harness writes.
class BadSequence : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Model facts this library cannot read (`FILE:LINE:COLUMN: message`), or a model file without
/// facts beside it. A BadSequence too: the sequence cannot be read without its model.
class BadModel : public BadSequence {
 public:
  using BadSequence::BadSequence;
};

/// A kind of name: `resource KIND PREFIX`, and `owner KIND OWNER` when it has one.
struct Resource {
  std::string kind;
  std::string prefix;
  std::string owner;  // empty: none
  int line = 0;       // of its `resource` fact
};

/// A used name of an operation: `KIND`, `KIND!` (ends it) or `KIND*` (zero or more names).
struct Slot {
  enum class Mode { Use, End, List };
  std::string kind;
  Mode mode = Mode::Use;
};

/// An unsigned integer argument in [min, max], or one of `words`.
struct Argument {
  std::string key;
  std::uint64_t defaultValue = 0;
  std::uint64_t min = 0;
  std::uint64_t max = 0;
  std::vector<std::string> words;  // empty: an integer argument
  std::string defaultWord;
  bool isWord() const { return !words.empty(); }
};

/// A flag the operation sets or clears on its first name of `kind`.
struct Flag {
  bool set = true;
  std::string name;
  std::string kind;
};

/// The failures a mark may ask for (docs/failures.md), and how far `!WORD@N` counts.
inline constexpr std::array<std::string_view, 3> kFailWords = {"oom", "host-oom", "lost"};
inline constexpr std::uint64_t kMaxMarkNth = 64;

/// One operation: its used slots, the kinds of its new names, its arguments in declaration
/// order, its weight, the failures a mark may ask of it, and its flags.
struct OperationSpec {
  std::string name;
  std::vector<Slot> slots;
  std::vector<std::string> introduces;
  std::vector<Argument> args;
  std::uint64_t weight = 1;
  /// The words of `fails:`: what a mark on this operation may ask for.
  std::vector<std::string> fails;
  std::vector<Flag> flags;
  int line = 0;  // of its `op` fact

  bool hasList() const {
    for (const Slot& s : slots) {
      if (s.mode == Slot::Mode::List) return true;
    }
    return false;
  }
  /// The names an operation line of this kind has at least (exactly, without a KIND* slot).
  std::size_t fewestNames() const { return slots.size() - (hasList() ? 1 : 0) + introduces.size(); }
  const Argument* arg(std::string_view key) const {
    for (const Argument& a : args) {
      if (a.key == key) return &a;
    }
    return nullptr;
  }
};

/// A model as its facts give it: its kinds and operations in declaration order, the release
/// order, and each kind's default release.
struct Model {
  std::string name;
  /// 16 hex digits: the hash of the model file's text that the facts were written from.
  std::string hash;
  std::string note;
  /// The facts' path, and their text.
  std::string path;
  std::string text;
  std::vector<Resource> resources;
  std::vector<OperationSpec> ops;
  std::vector<std::string> release;
  /// Kind -> the operation that releases a leftover of it by default (`release KIND OP`).
  std::map<std::string, std::string, std::less<>> releasedBy;

  const OperationSpec* op(std::string_view opName) const {
    for (const OperationSpec& o : ops) {
      if (o.name == opName) return &o;
    }
    return nullptr;
  }
  const Resource* resource(std::string_view kind) const {
    for (const Resource& r : resources) {
      if (r.kind == kind) return &r;
    }
    return nullptr;
  }
  /// The operation that releases a leftover of `kind` by default: the kind's only ending
  /// operation, when it has no other slot (nor a new name); else null. gpufuzz works it out.
  const OperationSpec* releaseOperation(std::string_view kind) const {
    const auto it = releasedBy.find(kind);
    return it == releasedBy.end() ? nullptr : op(it->second);
  }
};

namespace detail {

/// The lines of a text, numbered from 1, each without its newline and a CR before it.
class Lines {
 public:
  explicit Lines(std::string_view text) : text_(text) {}
  /// The next line; false past the last.
  bool next(std::string_view& line) {
    if (begin_ > text_.size()) return false;
    const std::size_t end = std::min(text_.find('\n', begin_), text_.size());
    line = text_.substr(begin_, end - begin_);
    begin_ = end + 1;
    ++number_;
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    return true;
  }
  int number() const { return number_; }

 private:
  std::string_view text_;
  std::size_t begin_ = 0;
  int number_ = 0;
};

/// `0|[1-9][0-9]*`, at most 2^64-1.
inline std::optional<std::uint64_t> parseUnsigned(std::string_view s) {
  if (s.empty() || (s.size() > 1 && s[0] == '0')) return std::nullopt;
  std::uint64_t v = 0;
  for (const char c : s) {
    if (c < '0' || c > '9') return std::nullopt;
    const auto digit = static_cast<std::uint64_t>(c - '0');
    if (v > (UINT64_MAX - digit) / 10) return std::nullopt;
    v = v * 10 + digit;
  }
  return v;
}

inline std::string_view trim(std::string_view s) {
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.front())))
    s.remove_prefix(1);
  while (!s.empty() && std::isspace(static_cast<unsigned char>(s.back())))
    s.remove_suffix(1);
  return s;
}

/// A word of a line and its 1-based column.
struct Token {
  std::string text;
  std::size_t column = 0;
};

/// The words of a sequence line up to its comment, split at blanks.
inline std::vector<Token> words(std::string_view line) {
  std::vector<Token> out;
  std::size_t i = 0;
  while (i < line.size() && line[i] != '#') {
    if (std::isspace(static_cast<unsigned char>(line[i]))) {
      ++i;
      continue;
    }
    const std::size_t start = i;
    while (i < line.size() && line[i] != '#' && !std::isspace(static_cast<unsigned char>(line[i])))
      ++i;
    out.push_back({std::string(line.substr(start, i - start)), start + 1});
  }
  return out;
}

/// Where a message of a file begins: `FILE:LINE:COLUMN: `.
inline std::string place(const std::string& file, int line, std::size_t column) {
  return file + ":" + std::to_string(line) + ":" + std::to_string(column) + ": ";
}

/// The hash gpufuzz takes of a model file's text: 64-bit FNV-1a, as 16 hex digits.
inline std::string modelHash(std::string_view text) {
  std::uint64_t h = 14695981039346656037ULL;
  for (const char c : text) {
    h ^= static_cast<unsigned char>(c);
    h *= 1099511628211ULL;
  }
  static constexpr char kHex[] = "0123456789abcdef";
  std::string out(16, '0');
  for (int i = 15; i >= 0; --i, h >>= 4)
    out[static_cast<std::size_t>(i)] = kHex[h & 0xf];
  return out;
}

inline std::string readWhole(const std::string& path, const char* what) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw BadModel(path + ": cannot read the " + what + ": " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return text.str();
}

}  // namespace detail

/// Where a model file's facts are kept: its path with `.model` replaced by `.facts` (`.facts`
/// added when it does not end in `.model`). gpufuzz writes them beside every model file it writes.
inline std::string modelFactsPath(std::string_view modelPath) {
  if (modelPath.ends_with(".model")) modelPath.remove_suffix(6);
  return std::string(modelPath) + ".facts";
}

/// Reads a model's normalized facts (docs/models.md: the text `gpufuzz model normalize` prints).
/// A line whose first word this library does not know is skipped: later versions of the form
/// may add facts. Throws BadModel (`FILE:LINE:COLUMN: message`) for another form or version, a
/// fact with the wrong number of words, a value that is not one, or a name no earlier line
/// declares.
inline Model parseModelFacts(std::string_view text, const std::string& file = "facts") {
  Model model;
  model.path = file;
  model.text = std::string(text);
  detail::Lines lines(text);
  std::string_view line;
  if (!lines.next(line) || line != kModelFactsHeader) {
    const std::string first(line.substr(0, 40));
    throw BadModel(detail::place(file, 1, 1) +
                   (first.starts_with("gpufuzz-model-facts ")
                        ? "'" + first + "' is a version of the facts this library cannot read (" +
                              std::string(kModelFactsHeader) + ")"
                        : "not a model's facts: the first line is '" +
                              std::string(kModelFactsHeader) + "' (gpufuzz model normalize)"));
  }
  while (lines.next(line)) {
    const int lineNo = lines.number();
    const std::vector<detail::Token> w = detail::words(line);
    if (w.empty()) continue;
    const auto bad = [&](std::size_t field, const std::string& message) {
      return BadModel(detail::place(file, lineNo, w[std::min(field, w.size() - 1)].column) +
                      message);
    };
    const std::string& fact = w[0].text;
    const auto fields = [&](std::size_t fewest, std::size_t most, const char* form) {
      if (w.size() < fewest || w.size() > most) throw bad(0, "'" + fact + "' is " + form);
    };
    const auto kind = [&](std::size_t field) -> const std::string& {
      if (!model.resource(w[field].text)) {
        throw bad(field, "'" + w[field].text + "' is not a kind of an earlier resource fact");
      }
      return w[field].text;
    };
    const auto operation = [&](std::size_t field) -> OperationSpec& {
      for (OperationSpec& o : model.ops) {
        if (o.name == w[field].text) return o;
      }
      throw bad(field, "'" + w[field].text + "' is not an operation of an earlier op fact");
    };
    const auto number = [&](std::size_t field) {
      const std::optional<std::uint64_t> n = detail::parseUnsigned(w[field].text);
      if (!n) throw bad(field, "'" + w[field].text + "' is not an unsigned decimal integer");
      return *n;
    };
    if (fact == "note") {
      model.note = std::string(detail::trim(line.substr(w[0].column + 3)));
    } else if (fact == "model") {
      fields(3, 3, "model NAME HASH");
      if (!model.name.empty()) throw bad(0, "a second model fact");
      model.name = w[1].text;
      model.hash = w[2].text;
    } else if (fact == "resource") {
      fields(3, 3, "resource KIND PREFIX");
      if (model.resource(w[1].text)) throw bad(1, "kind '" + w[1].text + "' is declared twice");
      model.resources.push_back({w[1].text, w[2].text, "", lineNo});
    } else if (fact == "owner") {
      fields(3, 3, "owner KIND OWNER");
      const std::string& owned = kind(1);
      const std::string& owner = kind(2);
      for (Resource& r : model.resources) {
        if (r.kind == owned) r.owner = owner;
      }
    } else if (fact == "op") {
      fields(2, 2, "op NAME");
      if (model.op(w[1].text)) throw bad(1, "operation '" + w[1].text + "' is declared twice");
      OperationSpec o;
      o.name = w[1].text;
      o.line = lineNo;
      model.ops.push_back(std::move(o));
    } else if (fact == "weight") {
      fields(3, 3, "weight OP N");
      OperationSpec& o = operation(1);
      o.weight = number(2);
      if (o.weight < 1) throw bad(2, "a weight is at least 1");
    } else if (fact == "slot") {
      fields(4, 4, "slot OP KIND use|end|list|new");
      OperationSpec& o = operation(1);
      const std::string& k = kind(2);
      const std::string& mode = w[3].text;
      if (mode == "new") {
        o.introduces.push_back(k);
      } else if (mode == "use" || mode == "end" || mode == "list") {
        if (!o.introduces.empty()) throw bad(3, "a used slot after a new one");
        if (mode == "list" && o.hasList()) throw bad(3, "a second list slot");
        o.slots.push_back({k, mode == "use"   ? Slot::Mode::Use
                              : mode == "end" ? Slot::Mode::End
                                              : Slot::Mode::List});
      } else {
        throw bad(3, "'" + mode + "' is not a slot's use: use, end, list or new");
      }
    } else if (fact == "arg") {
      fields(6, SIZE_MAX, "arg OP KEY int DEFAULT MIN MAX, or arg OP KEY word DEFAULT WORD...");
      OperationSpec& o = operation(1);
      if (o.arg(w[2].text)) throw bad(2, "argument '" + w[2].text + "' is declared twice");
      Argument a;
      a.key = w[2].text;
      if (w[3].text == "int") {
        fields(7, 7, "arg OP KEY int DEFAULT MIN MAX");
        a.defaultValue = number(4);
        a.min = number(5);
        a.max = number(6);
        if (a.min > a.max || a.defaultValue < a.min || a.defaultValue > a.max) {
          throw bad(4, "the default is not within MIN..MAX");
        }
      } else if (w[3].text == "word") {
        for (std::size_t i = 5; i < w.size(); ++i)
          a.words.push_back(w[i].text);
        const auto at = std::find(a.words.begin(), a.words.end(), w[4].text);
        if (at == a.words.end()) throw bad(4, "the default is not one of the words");
        a.defaultWord = w[4].text;
        a.defaultValue = static_cast<std::uint64_t>(at - a.words.begin());
        a.max = a.words.size() - 1;
      } else {
        throw bad(3, "'" + w[3].text + "' is not an argument's type: int or word");
      }
      o.args.push_back(std::move(a));
    } else if (fact == "fails") {
      fields(3, 2 + kFailWords.size(), "fails OP WORD...");
      OperationSpec& o = operation(1);
      for (std::size_t i = 2; i < w.size(); ++i) {
        if (std::find(kFailWords.begin(), kFailWords.end(), w[i].text) == kFailWords.end()) {
          throw bad(i, "unknown failure '" + w[i].text + "': oom, host-oom or lost");
        }
        o.fails.push_back(w[i].text);
      }
    } else if (fact == "effect") {
      fields(5, 5, "effect OP set|clear FLAG KIND");
      OperationSpec& o = operation(1);
      if (w[2].text != "set" && w[2].text != "clear") {
        throw bad(2, "'" + w[2].text + "' is not an effect: set or clear");
      }
      o.flags.push_back({w[2].text == "set", w[3].text, kind(4)});
    } else if (fact == "release") {
      fields(2, 3, "release KIND [OP]");
      const std::string& k = kind(1);
      if (std::find(model.release.begin(), model.release.end(), k) != model.release.end()) {
        throw bad(1, "kind '" + k + "' is released twice");
      }
      model.release.push_back(k);
      if (w.size() == 3) model.releasedBy[k] = operation(2).name;
    }
  }
  if (model.name.empty()) {
    throw BadModel(detail::place(file, lines.number(), 1) + "the facts have no 'model NAME HASH'");
  }
  return model;
}

namespace detail {

/// Read models by path ("built-in": the built-in), read once per process and text.
inline std::map<std::string, std::shared_ptr<const Model>>& modelCache() {
  static std::map<std::string, std::shared_ptr<const Model>> cache;
  return cache;
}

inline std::mutex& modelCacheMutex() {
  static std::mutex m;
  return m;
}

inline std::shared_ptr<const Model> cachedFacts(const std::string& path, const std::string& text) {
  const std::lock_guard<std::mutex> lock(modelCacheMutex());
  std::shared_ptr<const Model>& cached = modelCache()["facts:" + path];
  if (!cached || cached->text != text) {
    cached = std::make_shared<const Model>(parseModelFacts(text, path));
  }
  return cached;
}

}  // namespace detail

/// Reads a file of model facts (the same file's same text is read once per process).
inline std::shared_ptr<const Model> loadModelFacts(const std::string& path) {
  return detail::cachedFacts(path, detail::readWhole(path, "model facts"));
}

/// The model a model file declares, read from the facts beside it (modelFactsPath). Throws
/// BadModel when the model file cannot be read, when there are no facts beside it, and when
/// they were written from another text of it.
inline std::shared_ptr<const Model> loadModel(const std::string& path) {
  const std::string hash = detail::modelHash(detail::readWhole(path, "model file"));
  const std::string factsPath = modelFactsPath(path);
  const std::string again =
      "write them with `gpufuzz model normalize " + path + " > " + factsPath + "`";
  std::ifstream in(factsPath, std::ios::binary);
  if (!in) throw BadModel(path + ": no facts beside the model file (" + factsPath + "): " + again);
  std::ostringstream text;
  text << in.rdbuf();
  std::shared_ptr<const Model> model = detail::cachedFacts(factsPath, text.str());
  if (model->hash != hash) {
    throw BadModel(factsPath + ": the facts are of another text of " + path + " (hash " +
                   model->hash + ", the file's is " + hash + "): " + again);
  }
  return model;
}

/// The built-in model `all` (kBuiltinModel).
inline std::shared_ptr<const Model> builtinModel() {
  const std::lock_guard<std::mutex> lock(detail::modelCacheMutex());
  std::shared_ptr<const Model>& cached = detail::modelCache()["built-in"];
  if (!cached) {
    cached = std::make_shared<const Model>(parseModelFacts(kBuiltinModel, "<built-in model all>"));
  }
  return cached;
}

// --- sequences ---------------------------------------------------------------------------------

/// One operation: `[@T] OP NAME... [key=value]...`.
struct Operation {
  std::string op;
  /// As written: in slot order, a KIND* slot's names in its place, new names last.
  std::vector<std::string> names;
  /// The integer arguments: every key of the model, defaults filled in, in declaration order.
  std::vector<std::pair<std::string, std::uint64_t>> args;
  /// The {a|b|c} arguments, the same way: each key and its word.
  std::vector<std::pair<std::string, std::string>> words{};
  /// The 1-based ordinal in the file; 0 for the release of a leftover.
  std::size_t at = 0;
  /// The T of `@T` (0 without).
  unsigned thread = 0;
  /// Its declaration in the sequence's model (null for an operation made by hand).
  const OperationSpec* spec = nullptr;
  /// A trailing `!WORD@N` (docs/failures.md): the word, empty without a mark, and N.
  std::string markWord{};
  std::uint64_t markNth = 1;

  /// The value of `key`, or `otherwise` when the operation has no such integer argument (read in
  /// a model, the model's default fills in what the line leaves out).
  std::uint64_t arg(std::string_view key, std::uint64_t otherwise) const {
    for (const auto& [k, v] : args) {
      if (k == key) return v;
    }
    return otherwise;
  }
  /// The value of the integer argument `key` (the model's default when the line leaves it out).
  std::uint64_t arg(std::string_view key) const {
    for (const auto& [k, v] : args) {
      if (k == key) return v;
    }
    throw std::out_of_range(op + ": no integer argument " + std::string(key));
  }
  /// The word of the {a|b|c} argument `key`.
  const std::string& word(std::string_view key) const {
    for (const auto& [k, v] : words) {
      if (k == key) return v;
    }
    throw std::out_of_range(op + ": no word argument " + std::string(key));
  }
  const std::string& name(std::size_t i = 0) const {
    if (i >= names.size()) throw std::out_of_range(op + ": no name " + std::to_string(i + 1));
    return names[i];
  }
  /// How many names the KIND* slot has (0 without one).
  std::size_t listSize() const {
    return spec && spec->hasList() ? names.size() - spec->fewestNames() : 0;
  }
  /// The names of the KIND* slot, in order.
  std::vector<std::string> list() const {
    if (!spec) return {};
    std::size_t k = 0;
    for (const Slot& s : spec->slots) {
      if (s.mode == Slot::Mode::List) {
        return {names.begin() + static_cast<std::ptrdiff_t>(k),
                names.begin() + static_cast<std::ptrdiff_t>(k + listSize())};
      }
      ++k;
    }
    return {};
  }
  /// The i-th new name (`-> KIND`).
  const std::string& introduced(std::size_t i = 0) const {
    const std::size_t first = spec ? names.size() - spec->introduces.size() : names.size();
    return name(first + i);
  }
};

/// What is still alive at the end, in the order it is released.
struct Leftover {
  /// The built-in model's kinds; Other for any other model's.
  enum class Kind { Renderer, Buffer, Context, Other } kind;
  std::string name;
  /// Its kind in the model (empty for a Leftover made by hand).
  std::string resource{};
  /// The kind's default release (Model::releaseOperation), or null.
  const OperationSpec* ending = nullptr;
};

/// Each used name of an operation with its slot, and each new name with its kind.
struct Roles {
  std::vector<std::pair<std::string, const Slot*>> used;
  std::vector<std::pair<std::string, std::string>> introduced;
};

/// The roles of `names` in an operation of `spec` (names.size() >= spec.fewestNames()).
inline Roles rolesOf(const OperationSpec& spec, const std::vector<std::string>& names) {
  Roles roles;
  const std::size_t listed = spec.hasList() ? names.size() - spec.fewestNames() : 0;
  std::size_t k = 0;
  for (const Slot& s : spec.slots) {
    const std::size_t n = s.mode == Slot::Mode::List ? listed : 1;
    for (std::size_t i = 0; i < n; ++i)
      roles.used.emplace_back(names[k++], &s);
  }
  for (const std::string& kind : spec.introduces)
    roles.introduced.emplace_back(names[k++], kind);
  return roles;
}

/// An operation of `spec` on `names` with every argument at its default.
inline Operation makeOperation(const OperationSpec& spec, std::vector<std::string> names) {
  Operation o;
  o.op = spec.name;
  o.names = std::move(names);
  o.spec = &spec;
  for (const Argument& a : spec.args) {
    if (a.isWord()) {
      o.words.emplace_back(a.key, a.defaultWord);
    } else {
      o.args.emplace_back(a.key, a.defaultValue);
    }
  }
  return o;
}

struct Sequence {
  /// `# key: value` lines before the first operation (policy, faults, backend, ...).
  std::vector<std::pair<std::string, std::string>> directives;
  std::vector<Operation> ops;
  /// The model it was read in (null: the built-in).
  std::shared_ptr<const Model> model{};
  /// How many threads its `@T` lines and `# threads:` ask for.
  unsigned threads = 1;
  /// Whether the environment or `# model:` named the model (then a missing handler is
  /// `unsupported`; else the older `error ... unsupported operation`).
  bool modelGiven = false;

  std::optional<std::string> directive(std::string_view key) const {
    for (const auto& [k, v] : directives) {
      if (k == key) return v;
    }
    return std::nullopt;
  }
  const Model& vocabulary() const { return model ? *model : *builtinModel(); }
  /// What is alive after the last operation, in the order it is released: the model's `release`
  /// order, each kind's names in creation order.
  std::vector<Leftover> leftovers() const {
    const Model& m = vocabulary();
    std::vector<std::pair<std::string, std::string>> alive;  // name, kind
    for (const Operation& o : ops) {
      const OperationSpec* spec = o.spec ? o.spec : m.op(o.op);
      if (!spec || o.names.size() < spec->fewestNames()) continue;
      const Roles roles = rolesOf(*spec, o.names);
      for (const auto& [name, slot] : roles.used) {
        if (slot->mode == Slot::Mode::End) {
          std::erase_if(alive, [&name](const auto& a) { return a.first == name; });
        }
      }
      for (const auto& entry : roles.introduced)
        alive.push_back(entry);
    }
    std::vector<Leftover> out;
    for (const std::string& kind : m.release) {
      const Leftover::Kind builtin = kind == "renderer"  ? Leftover::Kind::Renderer
                                     : kind == "buffer"  ? Leftover::Kind::Buffer
                                     : kind == "context" ? Leftover::Kind::Context
                                                         : Leftover::Kind::Other;
      for (const auto& [name, k] : alive) {
        if (k == kind) out.push_back({builtin, name, kind, m.releaseOperation(kind)});
      }
    }
    return out;
  }
};

namespace detail {

/// The model of a sequence: GPUFUZZ_MODEL_FACTS's, else the facts beside GPUFUZZ_MODEL's file,
/// else its `# model:` directive's (the facts beside a file relative to the sequence, or a
/// built-in name), else the built-in.
inline std::shared_ptr<const Model> modelOf(const Sequence& seq, const std::string& file,
                                            int directiveLine, bool& given) {
  given = true;
  if (const char* facts = std::getenv(kModelFactsVariable); facts && *facts) {
    return loadModelFacts(facts);
  }
  if (const char* named = std::getenv(kModelVariable); named && *named) return loadModel(named);
  const std::optional<std::string> value = seq.directive("model");
  if (!value) {
    given = false;
    return builtinModel();
  }
  if (value->find('/') != std::string::npos || value->ends_with(".model")) {
    if ((*value)[0] == '/') return loadModel(*value);
    const std::size_t slash = file.rfind('/');
    return loadModel((slash == std::string::npos ? std::string() : file.substr(0, slash + 1)) +
                     *value);
  }
  if (*value == "all" || *value == "renderer" || *value == "device") return builtinModel();
  throw BadSequence(detail::place(file, directiveLine, 1) + "the built-in model '" + *value +
                    "' is not one this library holds (all, renderer, device): set " +
                    kModelFactsVariable + " to its facts (gpufuzz model normalize " + *value +
                    " > FILE)");
}

}  // namespace detail

/// Parses the normalized form of docs/sequences.md in `model` (null: the one the environment or
/// the file's `# model:` names, else the built-in): blank lines and comments are skipped, `# key:
/// value` before the first operation is a directive, every other line an operation of the
/// model, checked as the harness wrote it (its names alive and of their slots' kinds, its
/// arguments the model's). Throws BadSequence (`FILE:LINE:COLUMN: message`), or BadModel.
inline Sequence parseSequence(std::string_view text, std::shared_ptr<const Model> model,
                              const std::string& file = "sequence") {
  Sequence seq;
  seq.model = std::move(model);
  seq.modelGiven = seq.model != nullptr;
  std::vector<std::pair<std::string, const std::string*>> kinds;  // name, its kind (null: ended)
  const auto kindOf = [&kinds](const std::string& name) -> const std::string** {
    for (auto& [n, k] : kinds) {
      if (n == name) return &k;
    }
    return nullptr;
  };
  int modelLine = 0;
  detail::Lines lines(text);
  std::string_view line;
  while (lines.next(line)) {
    const int lineNo = lines.number();
    const auto bad = [&](std::size_t column, const std::string& message) {
      return BadSequence(detail::place(file, lineNo, column) + message);
    };
    const std::size_t hash = line.find('#');
    if (hash != std::string_view::npos && seq.ops.empty() &&
        line.substr(0, hash).find_first_not_of(" \t") == std::string_view::npos) {
      const std::string_view comment = line.substr(hash + 1);
      const std::size_t colon = comment.find(':');
      std::string_view key = detail::trim(comment.substr(0, std::min(colon, comment.size())));
      if (colon != std::string_view::npos && !key.empty() &&
          key.find_first_of(" \t") == std::string_view::npos) {
        const std::string value(detail::trim(comment.substr(colon + 1)));
        if (key == "threads") {
          const std::optional<std::uint64_t> n = detail::parseUnsigned(value);
          if (!n || *n < 1 || *n > kMaxThreads) {
            throw bad(hash + 1,
                      "threads: " + value + ": expected 1.." + std::to_string(kMaxThreads));
          }
          seq.threads = std::max(seq.threads, static_cast<unsigned>(*n));
        }
        if (key == "model") modelLine = lineNo;
        seq.directives.emplace_back(std::string(key), value);
      }
    }
    std::vector<detail::Token> tokens = detail::words(line);
    if (tokens.empty()) continue;
    if (!seq.model) seq.model = detail::modelOf(seq, file, modelLine, seq.modelGiven);
    Operation op;
    op.at = seq.ops.size() + 1;
    if (tokens[0].text[0] == '@') {
      const std::optional<std::uint64_t> t = detail::parseUnsigned(tokens[0].text.substr(1));
      if (!t || *t >= kMaxThreads) {
        throw bad(tokens[0].column, "'" + tokens[0].text + "' is not a thread (@0..@" +
                                        std::to_string(kMaxThreads - 1) + ")");
      }
      op.thread = static_cast<unsigned>(*t);
      seq.threads = std::max(seq.threads, op.thread + 1);
      tokens.erase(tokens.begin());
      if (tokens.empty()) throw bad(1, "a thread without an operation");
    }
    if (tokens[0].text[0] == '!') {
      throw bad(tokens[0].column, "'" + tokens[0].text +
                                      "': a mark ends an operation line, and this line has no "
                                      "operation");
    }
    if (tokens.back().text[0] == '!') {
      const std::string& mark = tokens.back().text;
      const std::size_t at = mark.find('@');
      op.markWord = mark.substr(1, at == std::string::npos ? std::string::npos : at - 1);
      if (std::find(kFailWords.begin(), kFailWords.end(), op.markWord) == kFailWords.end()) {
        throw bad(tokens.back().column, "unknown failure '" + op.markWord +
                                            "' in a mark: expected oom, host-oom or lost");
      }
      if (at != std::string::npos) {
        const std::optional<std::uint64_t> n = detail::parseUnsigned(mark.substr(at + 1));
        if (!n || *n < 1 || *n > kMaxMarkNth) {
          throw bad(tokens.back().column, "'" + mark.substr(at + 1) +
                                              "' after '@' in a mark: expected a call count in "
                                              "1.." +
                                              std::to_string(kMaxMarkNth));
        }
        op.markNth = *n;
      }
      tokens.pop_back();
    }
    for (const detail::Token& t : tokens) {
      if (t.text[0] == '!') {
        throw bad(t.column, "'" + t.text + "': " +
                                (op.markWord.empty() ? "a mark ends the line" : "a second mark"));
      }
    }
    op.op = tokens[0].text;
    op.spec = seq.model->op(op.op);
    if (!op.spec) {
      std::string known;
      for (const OperationSpec& o : seq.model->ops)
        known += (known.empty() ? "" : ", ") + o.name;
      throw bad(tokens[0].column, "unknown operation '" + op.op + "' (known: " + known + ")");
    }
    const OperationSpec& spec = *op.spec;
    if (!op.markWord.empty() &&
        std::find(spec.fails.begin(), spec.fails.end(), op.markWord) == spec.fails.end()) {
      throw bad(tokens[0].column, op.op + " cannot fail with " + op.markWord +
                                      ": its model declares " +
                                      (spec.fails.empty() ? "no fails: for it" : "other fails:"));
    }
    std::size_t k = 1;
    for (; k < tokens.size() && tokens[k].text.find('=') == std::string::npos; ++k) {
      const std::string& name = tokens[k].text;
      const bool valid = name.size() <= 32 && std::islower(static_cast<unsigned char>(name[0])) &&
                         std::all_of(name.begin(), name.end(), [](char c) {
                           return std::islower(static_cast<unsigned char>(c)) ||
                                  std::isdigit(static_cast<unsigned char>(c)) || c == '_';
                         });
      if (!valid) {
        throw bad(tokens[k].column,
                  "'" + name + "' is not a name ([a-z][a-z0-9_]*, at most 32 characters)");
      }
      if (std::find(op.names.begin(), op.names.end(), name) != op.names.end()) {
        throw bad(tokens[k].column, "'" + name + "' is named twice in one operation");
      }
      op.names.push_back(name);
    }
    if (op.names.size() < spec.fewestNames() ||
        (!spec.hasList() && op.names.size() > spec.fewestNames())) {
      throw bad(tokens[0].column, "'" + op.op + "' takes " + (spec.hasList() ? "at least " : "") +
                                      std::to_string(spec.fewestNames()) + " name(s), not " +
                                      std::to_string(op.names.size()));
    }
    const auto columnOf = [&](const std::string& name) {
      for (std::size_t i = 1; i < tokens.size(); ++i) {
        if (tokens[i].text == name) return tokens[i].column;
      }
      return tokens[0].column;
    };
    const Roles roles = rolesOf(spec, op.names);
    for (const auto& [name, slot] : roles.used) {
      const std::string** kind = kindOf(name);
      if (!kind || !*kind || **kind != slot->kind) {
        throw bad(columnOf(name), "'" + name + "' is not a live " + slot->kind + " here");
      }
    }
    for (const auto& [name, kind] : roles.introduced) {
      if (kindOf(name)) throw bad(columnOf(name), "'" + name + "' is introduced twice");
    }
    Operation defaults = makeOperation(spec, {});
    std::vector<std::string> given;
    for (; k < tokens.size(); ++k) {
      const std::string& word = tokens[k].text;
      const std::size_t column = tokens[k].column;
      const std::size_t equals = word.find('=');
      if (equals == std::string::npos) throw bad(column, "a name after an argument: " + word);
      const std::string key = word.substr(0, equals), value = word.substr(equals + 1);
      const Argument* a = spec.arg(key);
      if (!a) {
        std::string keys;
        for (const Argument& each : spec.args)
          keys += (keys.empty() ? "" : ", ") + each.key;
        throw bad(column, "unknown argument '" + word + "' for '" + op.op +
                              "' (keys: " + (keys.empty() ? "none" : keys) + ")");
      }
      if (std::find(given.begin(), given.end(), key) != given.end()) {
        throw bad(column, "argument '" + key + "' given twice");
      }
      given.push_back(key);
      if (a->isWord()) {
        if (std::find(a->words.begin(), a->words.end(), value) == a->words.end()) {
          std::string words;
          for (const std::string& w : a->words)
            words += (words.empty() ? "" : ", ") + w;
          throw bad(column, key + "=" + value + ": expected one of " + words);
        }
        for (auto& [k2, v] : defaults.words) {
          if (k2 == key) v = value;
        }
      } else {
        const std::optional<std::uint64_t> n = detail::parseUnsigned(value);
        if (!n || *n < a->min || *n > a->max) {
          throw bad(column, key + "=" + value + ": expected an integer in " +
                                std::to_string(a->min) + ".." + std::to_string(a->max));
        }
        for (auto& [k2, v] : defaults.args) {
          if (k2 == key) v = *n;
        }
      }
    }
    op.args = std::move(defaults.args);
    op.words = std::move(defaults.words);
    for (const auto& [name, slot] : roles.used) {
      if (slot->mode == Slot::Mode::End) *kindOf(name) = nullptr;
    }
    for (const auto& [name, kind] : roles.introduced) {
      const Resource* r = seq.model->resource(kind);
      kinds.emplace_back(name, &r->kind);
    }
    seq.ops.push_back(std::move(op));
  }
  if (!seq.model) seq.model = detail::modelOf(seq, file, modelLine, seq.modelGiven);
  return seq;
}

/// Parses a sequence in the model the environment or its `# model:` names (else the built-in).
inline Sequence parseSequence(std::string_view text, const std::string& file = "sequence") {
  return parseSequence(text, nullptr, file);
}

inline Sequence loadSequence(const std::string& path,
                             std::shared_ptr<const Model> model = nullptr) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw BadSequence(path + ": cannot read: " + std::strerror(errno));
  std::ostringstream text;
  text << in.rdbuf();
  return parseSequence(text.str(), std::move(model), path);
}

// --- what a target implements ------------------------------------------------------------------

/// A failure the target saw itself: `cls` is error, invalid, mismatch or leak.
class Failure : public std::runtime_error {
 public:
  Failure(std::string cls, const std::string& detail)
      : std::runtime_error(detail), cls_(std::move(cls)) {}
  const std::string& cls() const { return cls_; }

 private:
  std::string cls_;
};

/// Thrown for an operation the target does not implement: `outcome unsupported AT OP DETAIL`.
class Unsupported : public std::runtime_error {
 public:
  Unsupported() : std::runtime_error("unsupported operation") {}
  explicit Unsupported(const std::string& detail) : std::runtime_error(detail) {}
};

/// Thrown by mayFail() at the call a mark picks (docs/failures.md). Let it out of the handler: the
/// operation then ends with `fail`, its new names are never made, and the run goes on.
class Injected : public std::runtime_error {
 public:
  Injected(const std::string& word, const std::string& call)
      : std::runtime_error((call.empty() ? "" : call + ": ") + word + " (injected)"), word_(word) {}
  const std::string& word() const { return word_; }

 private:
  std::string word_;
};

/// A target: register a handler per operation of its model (handle()), or override run(). With
/// a threaded sequence, run() and release() are called from several threads at once, never two
/// at once on one name.
class Target {
 public:
  /// Runs one operation; throws Failure, Unsupported, or anything else (an `error`).
  using Handler = std::function<void(const Operation&)>;
  /// Releases the leftover of that name.
  using ReleaseHandler = std::function<void(const std::string&)>;

  virtual ~Target() = default;
  /// Whether the handlers call mayFail() before their runtime calls, so that a mark can fail
  /// one (docs/failures.md). A target that does not answers `unsupported` to a marked file.
  virtual bool honoursMarks() const { return false; }
  /// In the process that runs the sequence (a fork, under a fork server), before the first
  /// operation: the place to open the device. `seq.vocabulary()` is the model.
  virtual void start(const Sequence&) {}
  /// One operation; throw Failure, Unsupported, or anything else (an `error` with its text).
  /// By default: the handler registered for `op.op`, else Unsupported.
  virtual void run(const Operation& op) {
    if (const auto it = handlers_.find(op.op); it != handlers_.end()) {
      it->second(op);
      return;
    }
    throw Unsupported();
  }
  /// Releases one leftover after the last operation. By default: the release handler of its
  /// kind; else its kind's default release operation (Model::releaseOperation) with default
  /// arguments, through run(); else nothing (left to the process's exit). A Leftover made by
  /// hand (no `resource`) runs `destroy R`, `buf_destroy B` or `ctx_destroy C`, as it always did.
  virtual void release(const Leftover& left) {
    if (const auto it = releases_.find(left.resource); it != releases_.end()) {
      it->second(left.name);
    } else if (left.ending) {
      run(makeOperation(*left.ending, {left.name}));
    } else if (left.resource.empty() && left.kind != Leftover::Kind::Other) {
      static constexpr const char* kOps[] = {"destroy", "buf_destroy", "ctx_destroy"};
      run(Operation{kOps[static_cast<int>(left.kind)], {left.name}, {}});
    }
  }
  /// After everything was released: a description of what leaked, or nothing.
  virtual std::optional<std::string> leaks() { return std::nullopt; }

  /// Registers the handler of the operation `op` (replacing one registered before). Register
  /// in the constructor or in start(), before the operation runs.
  void handle(std::string op, Handler handler) { handlers_[std::move(op)] = std::move(handler); }
  /// Registers the release of a leftover of `kind` (the model's name of the kind).
  void handleRelease(std::string kind, ReleaseHandler handler) {
    releases_[std::move(kind)] = std::move(handler);
  }
  /// Whether a handler is registered for `op`.
  bool handles(std::string_view op) const { return handlers_.find(op) != handlers_.end(); }

 private:
  std::map<std::string, Handler, std::less<>> handlers_;
  std::map<std::string, ReleaseHandler, std::less<>> releases_;
};

/// What is alive, in creation order, from the built-in model's operations that create and
/// destroy names (runSequence tracks any model's names itself; this stays for callers of old).
class LiveNames {
 public:
  void after(const Operation& op) {
    if ((op.op == "create" || op.op == "ctx_create") && !op.names.empty()) {
      add(op.op == "create" ? Leftover::Kind::Renderer : Leftover::Kind::Context, op.names[0]);
    } else if (op.op == "buf_create" && op.names.size() >= 2) {
      add(Leftover::Kind::Buffer, op.names[1]);
    } else if ((op.op == "destroy" || op.op == "buf_destroy" || op.op == "ctx_destroy") &&
               !op.names.empty()) {
      std::erase_if(live_, [&](const Leftover& l) { return l.name == op.names[0]; });
    }
  }
  /// Renderers in creation order, then bare buffers, then bare contexts.
  std::vector<Leftover> leftovers() const {
    std::vector<Leftover> out;
    for (const auto kind :
         {Leftover::Kind::Renderer, Leftover::Kind::Buffer, Leftover::Kind::Context}) {
      for (const Leftover& l : live_) {
        if (l.kind == kind) out.push_back(l);
      }
    }
    return out;
  }

 private:
  void add(Leftover::Kind kind, const std::string& name) { live_.push_back({kind, name}); }
  std::vector<Leftover> live_;
};

namespace detail {

/// A failure as its outcome has it: the class and the detail.
struct Caught {
  std::string cls;
  std::string detail;
};

/// The running operation's mark on this thread (docs/failures.md).
struct Armed {
  std::string word;
  std::uint64_t nth = 0, seen = 0;
  bool fired = false;
};
inline thread_local std::optional<Armed> armed;

/// The class attempt() gives an operation whose marked call failed and came out of it.
inline constexpr std::string_view kFailedAsMarked = "fail";

/// Names that failed operations never made: what uses one is skipped, and its own new names are
/// never made in turn.
class Unmade {
 public:
  void failed(const Operation& o) {
    if (o.spec == nullptr) return;
    for (const auto& [name, kind] : rolesOf(*o.spec, o.names).introduced)
      names_.insert(name);
  }
  bool skips(const Operation& o) {
    if (names_.empty() || o.spec == nullptr) return false;
    for (const auto& [name, slot] : rolesOf(*o.spec, o.names).used) {
      if (names_.count(name) != 0) {
        failed(o);
        return true;
      }
    }
    return false;
  }
  const std::set<std::string>& names() const { return names_; }

 private:
  std::set<std::string> names_;
};

/// Runs `f`; what it threw, as an outcome's class and detail, or nothing.
template <class F>
std::optional<Caught> attempt(F&& f, const std::string& unsupportedClass) {
  try {
    const HandlerScope inTargetCode;  // this thread is the stuck one if the harness asks now
    f();
    return std::nullopt;
  } catch (const Injected& e) {
    if (armed && armed->fired) return Caught{std::string(kFailedAsMarked), e.what()};
    return Caught{"error", e.what()};
  } catch (const Failure& e) {
    return Caught{e.cls(), e.what()};
  } catch (const Unsupported& e) {
    return Caught{unsupportedClass, e.what()};
  } catch (const std::exception& e) {
    return Caught{"error", e.what()};
  } catch (...) {
    return Caught{"error", "an exception that is not a std::exception"};
  }
}

/// The interposer gpufuzz preloads into targets (libgpufuzz-interpose.so, docs/failures.md): it
/// fails the marked call of a runtime the target calls, OpenCL, CUDA or Vulkan, without
/// mayFail().
struct Interposer {
  int (*arm)(const char* word, unsigned nth) = nullptr;
  int (*disarm)(char* call, std::size_t size) = nullptr;
};

/// The interposer, when it is in this process and the target links a runtime it covers; else
/// null. Asked once, before a marked sequence starts.
inline const Interposer* interposer() {
  static const std::optional<Interposer> found = []() -> std::optional<Interposer> {
    const auto covers =
        reinterpret_cast<int (*)()>(dlsym(RTLD_DEFAULT, "gpufuzz_interpose_covers"));
    Interposer i;
    i.arm = reinterpret_cast<int (*)(const char*, unsigned)>(
        dlsym(RTLD_DEFAULT, "gpufuzz_interpose_arm"));
    i.disarm = reinterpret_cast<int (*)(char*, std::size_t)>(
        dlsym(RTLD_DEFAULT, "gpufuzz_interpose_disarm"));
    if (covers == nullptr || i.arm == nullptr || i.disarm == nullptr || covers() == 0) {
      return std::nullopt;
    }
    return i;
  }();
  return found ? &*found : nullptr;
}

/// Runs operation `o` on `target` with its mark armed on this thread: what it threw, a failure as
/// marked being of class kFailedAsMarked. A target that honours marks is armed for mayFail(); any
/// other through the interposer, whose failed call turns what the operation threw into the fail.
inline std::optional<Caught> runOp(Target& target, const Operation& o,
                                   const std::string& unsupportedClass) {
  const Interposer* via = o.markWord.empty() || target.honoursMarks() ? nullptr : interposer();
  if (!o.markWord.empty() && via == nullptr) armed = Armed{o.markWord, o.markNth, 0, false};
  if (via != nullptr) via->arm(o.markWord.c_str(), static_cast<unsigned>(o.markNth));
  std::optional<Caught> c = attempt([&] { target.run(o); }, unsupportedClass);
  if (via != nullptr) {
    std::array<char, 128> call{};
    if (via->disarm(call.data(), call.size()) != 0 && c && c->cls == "error") {
      c = Caught{std::string(kFailedAsMarked), std::string(call.data()) + ": " + c->detail};
    }
  }
  armed.reset();
  return c;
}

/// The threads of a threaded sequence (docs/sequences.md, Threads): made, waiting, before `start`;
/// released together by run(), which runs thread 0 on the calling thread. An operation begins
/// once its thread's previous operation and, for each of its names, the file's previous
/// operation on that name are done; after a failure nothing new begins.
class Lanes {
 public:
  Lanes(const Sequence& seq, Target& target, const Events& events, std::string unsupported,
        Unmade& unmade)
      : seq_(seq),
        target_(target),
        events_(events),
        unmade_(unmade),
        unsupported_(std::move(unsupported)),
        done_(seq.ops.size(), false),
        waits_(seq.ops.size()) {
    std::map<unsigned, std::size_t> lastOfThread;
    std::map<std::string, std::size_t> lastOfName;
    for (std::size_t i = 0; i < seq.ops.size(); ++i) {
      const Operation& o = seq.ops[i];
      if (const auto it = lastOfThread.find(o.thread); it != lastOfThread.end()) {
        waits_[i].push_back(it->second);
      }
      for (const std::string& n : o.names) {
        if (const auto it = lastOfName.find(n); it != lastOfName.end()) {
          waits_[i].push_back(it->second);
        }
      }
      lastOfThread[o.thread] = i;
      for (const std::string& n : o.names)
        lastOfName[n] = i;
      lanes_[o.thread].push_back(i);
    }
    for (const auto& [thread, indexes] : lanes_) {
      if (thread != 0) workers_.emplace_back([this, &indexes = indexes] { lane(indexes); });
    }
  }
  Lanes(const Lanes&) = delete;
  Lanes& operator=(const Lanes&) = delete;
  ~Lanes() { cancel(); }

  /// Ends the threads before they begin anything (a start() that failed).
  void cancel() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      stopped_ = true;
      go_ = true;
    }
    changed_.notify_all();
    join();
  }

  /// Runs the sequence; the failure of the lowest ordinal (its index and what it threw).
  std::optional<std::pair<std::size_t, Caught>> run() {
    {
      const std::lock_guard<std::mutex> lock(mutex_);
      go_ = true;
    }
    changed_.notify_all();
    if (const auto it = lanes_.find(0); it != lanes_.end()) lane(it->second);
    join();
    std::optional<std::pair<std::size_t, Caught>> lowest;
    for (const auto& f : failures_) {
      if (!lowest || f.first < lowest->first) lowest = f;
    }
    return lowest;
  }

 private:
  void join() {
    for (std::thread& t : workers_) {
      if (t.joinable()) t.join();
    }
  }

  void lane(const std::vector<std::size_t>& indexes) {
    for (const std::size_t i : indexes) {
      {
        std::unique_lock<std::mutex> lock(mutex_);
        changed_.wait(lock, [&] {
          if (stopped_) return true;
          if (!go_) return false;
          for (const std::size_t w : waits_[i]) {
            if (!done_[w]) return false;
          }
          return true;
        });
        if (stopped_) return;
      }
      const Operation& o = seq_.ops[i];
      const std::string at = std::to_string(i + 1);
      bool skipped = false;
      {
        const std::lock_guard<std::mutex> lock(mutex_);
        skipped = unmade_.skips(o);
      }
      if (skipped) {
        events_.skip(at);
      } else {
        events_.begin(at, o.op);
        std::optional<Caught> c = runOp(target_, o, unsupported_);
        if (c && c->cls == kFailedAsMarked) {
          {
            const std::lock_guard<std::mutex> lock(mutex_);
            unmade_.failed(o);
          }
          events_.fail(at, c->detail);
        } else if (c) {
          {
            const std::lock_guard<std::mutex> lock(mutex_);
            failures_.emplace_back(i, std::move(*c));
            stopped_ = true;
          }
          changed_.notify_all();
          return;
        } else {
          events_.done(at);
        }
      }
      {
        const std::lock_guard<std::mutex> lock(mutex_);
        done_[i] = true;
      }
      changed_.notify_all();
    }
  }

  const Sequence& seq_;
  Target& target_;
  const Events& events_;
  Unmade& unmade_;
  const std::string unsupported_;
  std::mutex mutex_;
  std::condition_variable changed_;
  bool go_ = false;
  bool stopped_ = false;
  std::vector<bool> done_;
  std::vector<std::vector<std::size_t>> waits_;
  std::map<unsigned, std::vector<std::size_t>> lanes_;
  std::vector<std::pair<std::size_t, Caught>> failures_;
  std::vector<std::thread> workers_;
};

}  // namespace detail

/// Call it in a handler before each runtime call that can fail with one of `words` ("oom",
/// "host-oom", "lost"): throws Injected when the running operation's mark picks this call, the
/// N-th such call of its word. `call` names the runtime call for the detail. Release calls are
/// never marked: call it only before calls that make or use something.
inline void mayFail(std::initializer_list<std::string_view> words, std::string_view call = {}) {
  std::optional<detail::Armed>& a = detail::armed;
  if (!a || a->fired || std::find(words.begin(), words.end(), a->word) == words.end()) return;
  if (++a->seen == a->nth) {
    a->fired = true;
    throw Injected(a->word, std::string(call));
  }
}

/// Runs `seq` on `target`, writing its events; the exit status (0 pass, 1 a failure). The
/// operations run in file order, or on their threads (`@T`); then, between `begin end end` and
/// `done end`, Target::release() for each leftover in the model's release order; then
/// Target::leaks().
inline int runSequence(const Sequence& seq, Target& target, const Events& events) {
  // Without a model named, the older form of `unsupported`, which every harness reads.
  const std::string unsupported = seq.modelGiven ? "unsupported" : "error";
  // A marked file asks a call to fail (docs/failures.md): a target whose handlers do not call
  // mayFail() says so rather than pass a run whose mark never acted.
  for (const Operation& op : seq.ops) {
    if (op.markWord.empty() || target.honoursMarks() || detail::interposer()) continue;
    events.start(seq.ops.size());
    events.outcome("unsupported", std::to_string(op.at), op.op,
                   "the target does not honour marks: override honoursMarks() and call mayFail() "
                   "before each runtime call");
    return 1;
  }
  detail::Unmade unmade;
  std::optional<detail::Lanes> lanes;
  if (seq.threads > 1 && !seq.ops.empty()) lanes.emplace(seq, target, events, unsupported, unmade);
  events.start(seq.ops.size());
  const auto fail = [&](std::string_view at, std::string_view op, const detail::Caught& c) {
    events.outcome(c.cls, at, op, c.detail);
    return 1;
  };
  // A start that fails fails the first operation (or the release, for an empty sequence).
  const std::string first = seq.ops.empty() ? "end" : "1";
  const std::string firstOp = seq.ops.empty() ? "end" : seq.ops[0].op;
  if (const auto c = detail::attempt([&] { target.start(seq); }, unsupported)) {
    if (lanes) lanes->cancel();
    return fail(first, firstOp, *c);
  }
  if (lanes) {
    if (const auto f = lanes->run())
      return fail(std::to_string(f->first + 1), seq.ops[f->first].op, f->second);
  } else {
    for (std::size_t i = 0; i < seq.ops.size(); ++i) {
      const std::string at = std::to_string(i + 1);
      if (unmade.skips(seq.ops[i])) {
        events.skip(at);
        continue;
      }
      events.begin(at, seq.ops[i].op);
      if (const auto c = detail::runOp(target, seq.ops[i], unsupported)) {
        if (c->cls != detail::kFailedAsMarked) return fail(at, seq.ops[i].op, *c);
        unmade.failed(seq.ops[i]);
        events.fail(at, c->detail);
        continue;
      }
      events.done(at);
    }
  }
  events.begin("end", "end");
  for (const Leftover& left : seq.leftovers()) {
    if (unmade.names().count(left.name) != 0) continue;  // never made, so never released
    if (const auto c = detail::attempt([&] { target.release(left); }, unsupported)) {
      return fail("end", "end", *c);
    }
  }
  events.done("end");
  std::optional<std::string> leaked;
  if (const auto c = detail::attempt([&] { leaked = target.leaks(); }, unsupported)) {
    return fail("-", "-", *c);
  }
  if (leaked) return fail("-", "-", {"leak", *leaked});
  events.outcome("pass", "-", "-", "");
  return 0;
}

// --- the fork server ---------------------------------------------------------------------------

/// Sends one message (no SIGPIPE); false when the peer is gone.
inline bool sendMessage(int fd, std::string_view text) {
  for (;;) {
    if (::send(fd, text.data(), text.size(), MSG_NOSIGNAL) >= 0) return true;
    if (errno != EINTR) return false;
  }
}

/// Sends one message with up to kForkServerMaxFds descriptors (SCM_RIGHTS); false when the peer
/// is gone.
inline bool sendMessage(int fd, std::string_view text, const std::vector<int>& fds) {
  iovec io{const_cast<char*>(text.data()), text.size()};
  alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int) * kForkServerMaxFds)> control{};
  const std::size_t count = std::min(fds.size(), static_cast<std::size_t>(kForkServerMaxFds));
  msghdr msg{};
  msg.msg_iov = &io;
  msg.msg_iovlen = 1;
  if (count > 0) {
    msg.msg_control = control.data();
    msg.msg_controllen = CMSG_SPACE(sizeof(int) * count);
    cmsghdr* c = CMSG_FIRSTHDR(&msg);
    c->cmsg_level = SOL_SOCKET;
    c->cmsg_type = SCM_RIGHTS;
    c->cmsg_len = CMSG_LEN(sizeof(int) * count);
    std::memcpy(CMSG_DATA(c), fds.data(), sizeof(int) * count);
  }
  for (;;) {
    if (::sendmsg(fd, &msg, MSG_NOSIGNAL) >= 0) return true;
    if (errno != EINTR) return false;
  }
}

/// Receives one message; empty at end of file, on error or when truncated. Descriptors that
/// came with it are close-on-exec and appended to `fds` (closed when `fds` is null).
inline std::string receiveMessage(int fd, std::vector<int>* fds = nullptr) {
  // A buffer kept by each thread, never filled: filling kForkServerMaxMessage bytes for every
  // message cost more than the message, and a fork server's write to each page of it after a
  // fork is a copy-on-write fault. A longer packet is refused as truncated.
  thread_local const std::unique_ptr<char[]> buffer(new char[kForkServerMaxMessage]);
  iovec io{buffer.get(), kForkServerMaxMessage};
  alignas(cmsghdr) std::array<char, CMSG_SPACE(sizeof(int) * kForkServerMaxFds)> control{};
  msghdr msg{};
  msg.msg_iov = &io;
  msg.msg_iovlen = 1;
  msg.msg_control = control.data();
  msg.msg_controllen = control.size();
  ssize_t n;
  do {
    n = ::recvmsg(fd, &msg, MSG_CMSG_CLOEXEC);
  } while (n < 0 && errno == EINTR);
  for (cmsghdr* c = CMSG_FIRSTHDR(&msg); n >= 0 && c; c = CMSG_NXTHDR(&msg, c)) {
    if (c->cmsg_level != SOL_SOCKET || c->cmsg_type != SCM_RIGHTS) continue;
    const std::size_t count = (c->cmsg_len - CMSG_LEN(0)) / sizeof(int);
    for (std::size_t i = 0; i < count; ++i) {
      int received = -1;
      std::memcpy(&received, CMSG_DATA(c) + i * sizeof(int), sizeof(int));
      if (fds) {
        fds->push_back(received);
      } else {
        ::close(received);
      }
    }
  }
  if (n <= 0 || (msg.msg_flags & MSG_TRUNC) != 0) return {};
  return std::string(buffer.get(), static_cast<std::size_t>(n));
}

/// Whether `fd` is readable within `timeoutMs` (0: now).
inline bool readableWithin(int fd, int timeoutMs) {
  pollfd p{fd, POLLIN, 0};
  int n;
  do {
    n = ::poll(&p, 1, timeoutMs);
  } while (n < 0 && errno == EINTR);
  return n > 0;
}

/// What a supervised child becomes before it runs, started afresh or forked: leads a new process
/// group, is killed (SIGKILL) when `parent` dies (exits with status 127 at once if it already
/// has), lets `tracer` attach (gdb under Yama ptrace_scope 1), and has every signal at its
/// default but SIGTERM and SIGINT, which it ignores, and an empty mask. Async-signal-safe calls
/// only (it also runs between fork and exec in a multithreaded process). 0, or the errno.
inline int becomeSupervisedChild(pid_t parent, pid_t tracer) {
  if (::setpgid(0, 0) != 0) return errno;
  if (::prctl(PR_SET_PDEATHSIG, SIGKILL) != 0) return errno;
  if (::getppid() != parent) ::_exit(127);  // the parent died before the signal was armed
  ::prctl(PR_SET_PTRACER, static_cast<unsigned long>(tracer), 0UL, 0UL, 0UL);
  // Ignored signals and the mask survive fork and execve; the harness's must not reach the child.
  sigset_t none;
  ::sigemptyset(&none);
  ::sigprocmask(SIG_SETMASK, &none, nullptr);
  struct sigaction byDefault {};
  byDefault.sa_handler = SIG_DFL;
  for (int sig = 1; sig < NSIG; ++sig)
    ::sigaction(sig, &byDefault, nullptr);
  // A stop meant for the whole job (Slurm signals every process of it on cancel, requeue or time
  // limit, at times a child before the harness) is the harness's to act on: it kills its
  // children itself (SIGKILL) and keeps what they found.
  struct sigaction ignored {};
  ignored.sa_handler = SIG_IGN;
  ::sigaction(SIGTERM, &ignored, nullptr);
  ::sigaction(SIGINT, &ignored, nullptr);
  return 0;
}

/// Makes `outputFd` stdout and stderr and `eventsFd` (unless -1) kEventsFd, whatever numbers
/// they have now (no dup2 overwrites another's source). 0, or the errno that failed.
inline int placeOutputAndEvents(int outputFd, int eventsFd) {
  const int output = ::fcntl(outputFd, F_DUPFD_CLOEXEC, 10);
  const int events = eventsFd >= 0 ? ::fcntl(eventsFd, F_DUPFD_CLOEXEC, 10) : -1;
  if (output < 0 || (eventsFd >= 0 && events < 0)) return errno;
  if (::dup2(output, STDOUT_FILENO) < 0 || ::dup2(output, STDERR_FILENO) < 0) return errno;
  if (events >= 0 && ::dup2(events, kEventsFd) < 0) return errno;
  return 0;
}

namespace detail {

/// The waitpid(2) status of an exited, still unreaped child.
inline int statusOf(pid_t pid) {
  siginfo_t info{};
  while (::waitid(P_PID, static_cast<id_t>(pid), &info, WEXITED | WNOWAIT) != 0) {
    if (errno != EINTR) return 0;
  }
  if (info.si_code == CLD_EXITED) return (info.si_status & 0xff) << 8;
  return (info.si_status & 0x7f) | (info.si_code == CLD_DUMPED ? 0x80 : 0);
}

inline void reap(pid_t pid) {
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
}

using RunChild = std::function<int(const std::vector<std::string>&)>;

/// A request's environment entries and arguments.
struct ForkRequest {
  std::vector<char*> env;  // NAME=VALUE entries, in the request's own buffer
  std::vector<std::string> args;
};

/// `request` ("run" NUL COUNT NUL, COUNT entries NAME=VALUE NUL, then arguments, each followed by
/// NUL) that came with `fdCount` descriptors; nullopt when it does not parse. Its environment
/// entries point into `request`, which must outlive them.
inline std::optional<ForkRequest> parseForkRequest(std::string& request, std::size_t fdCount) {
  std::vector<char*> fields;  // each field's first character; the NUL after it ends it
  std::size_t begin = 0;
  for (std::size_t i = 0; i < request.size(); ++i) {
    if (request[i] != '\0') continue;
    fields.push_back(request.data() + begin);
    begin = i + 1;
  }
  char* end = nullptr;
  const unsigned long envCount = fields.size() >= 2 ? std::strtoul(fields[1], &end, 10) : 0;
  if (fields.size() < 2 || std::strcmp(fields[0], "run") != 0 || *end != '\0' ||
      envCount > fields.size() - 2 || fdCount == 0 || fdCount > kForkServerMaxFds ||
      begin != request.size()) {
    return std::nullopt;
  }
  const auto envEnd = fields.begin() + 2 + static_cast<long>(envCount);
  return ForkRequest{{fields.begin() + 2, envEnd}, {envEnd, fields.end()}};
}

/// The rest of a forked child's setup once its request came: output on 1 and 2, events on 3, no
/// other descriptor, the request's environment; then it runs the request and exits.
[[noreturn]] inline void runRequest(const std::vector<int>& fds, const ForkRequest& request,
                                    const RunChild& runChild) {
  const int eventsFd = fds.size() > 1 ? fds[1] : -1;
  if (placeOutputAndEvents(fds[0], eventsFd) != 0) ::_exit(127);
  ::close_range(eventsFd >= 0 ? kEventsFd + 1 : kEventsFd, ~0U, 0);
  for (char* entry : request.env) {
    // NAME=VALUE goes into the environment where the request holds it, which lives until the
    // fork exits: setenv would copy each entry and track the copies, a page fault or more each.
    const char* equals = std::strchr(entry, '=');
    if (equals != nullptr && equals != entry) {
      ::putenv(entry);
    } else {
      const std::string name(
          entry, equals ? static_cast<std::size_t>(equals - entry) : std::strlen(entry));
      ::setenv(name.c_str(), equals ? equals + 1 : "", 1);
    }
  }
  const int status = runChild(request.args);
  std::fflush(nullptr);
  ::_exit(status);
}

/// A child forked ahead of its request, while the previous child runs. Its fork and the setup
/// that needs no request (a process group, the signals reset) then take no time between a run's
/// end and the next run's start; the request comes on a socket of its own. A runtime that
/// `beforeFork` maps for a request is in the forks made after that request: a spare forked ahead
/// of it maps the runtime itself.
class Spare {
 public:
  Spare() = default;
  Spare(const Spare&) = delete;
  Spare& operator=(const Spare&) = delete;
  ~Spare() { discard(); }

  explicit operator bool() const { return pid_ > 0; }

  /// Forks the spare; without one (no process or socket left) requests are forked as they come.
  void fork(int serverSocket, pid_t server, pid_t harness, const RunChild& runChild) {
    int pair[2];
    if (::socketpair(AF_UNIX, SOCK_SEQPACKET | SOCK_CLOEXEC, 0, pair) != 0) return;
    std::fflush(nullptr);
    const pid_t pid = ::fork();
    if (pid == 0) {
      ::close(serverSocket);
      ::close(pair[0]);
      if (becomeSupervisedChild(server, harness) != 0) ::_exit(127);
      std::vector<int> fds;
      std::string request = receiveMessage(pair[1], &fds);
      ::close(pair[1]);
      const std::optional<ForkRequest> parsed = parseForkRequest(request, fds.size());
      if (!parsed) ::_exit(0);  // the server is done with it
      runRequest(fds, *parsed, runChild);
    }
    ::close(pair[1]);
    if (pid < 0) {
      ::close(pair[0]);
      return;
    }
    pid_ = pid;
    socket_ = pair[0];
  }

  /// Passes `request` and its descriptors on: the spare's pid, or -1 when it is gone (reaped).
  pid_t start(const std::string& request, const std::vector<int>& fds) {
    const pid_t pid = std::exchange(pid_, -1);
    const bool sent = sendMessage(socket_, request, fds);
    ::close(std::exchange(socket_, -1));
    if (sent) return pid;
    ::kill(pid, SIGKILL);
    reap(pid);
    return -1;
  }

  /// Kills an unused spare and reaps it.
  void discard() {
    if (pid_ <= 0) return;
    ::close(std::exchange(socket_, -1));
    ::kill(pid_, SIGKILL);
    reap(std::exchange(pid_, -1));
  }

 private:
  pid_t pid_ = -1;
  int socket_ = -1;
};

}  // namespace detail

/// Serves requests on `socketFd` until the harness closes it: says hello, then runs each
/// request's arguments in a fork, through `runChild` (whose return is the fork's exit status).
/// From the second request on, the fork is made ahead of the request, while the previous child
/// runs (detail::Spare). `beforeFork`, when set, runs in the server with each request's
/// arguments before the request goes to its fork (to map a runtime's libraries once, for every
/// later child). The server's exit status.
inline int serveForks(int socketFd, const detail::RunChild& runChild,
                      const std::function<void(const std::vector<std::string>&)>& beforeFork = {}) {
  const pid_t server = ::getpid();
  const pid_t harness = ::getppid();
  // backtrace() loads its unwinder on first use: loaded here once, not again in every fork that
  // installs the stacks handler.
  signal_safe::warmUnwinder();
  if (!sendMessage(socketFd, kForkServerHello)) return 0;
  detail::Spare spare;
  for (;;) {
    std::vector<int> fds;
    std::string request = receiveMessage(socketFd, &fds);
    const auto closeFds = [&fds] {
      for (const int fd : fds)
        ::close(fd);
    };
    if (request.empty()) {
      closeFds();
      return 0;  // the harness is done with this server
    }
    const std::optional<detail::ForkRequest> parsed = detail::parseForkRequest(request, fds.size());
    if (!parsed) {
      closeFds();
      if (!sendMessage(socketFd, "error malformed fork server request")) return 3;
      continue;
    }
    if (beforeFork) beforeFork(parsed->args);
    pid_t pid = spare ? spare.start(request, fds) : -1;
    if (pid < 0) {
      std::fflush(nullptr);
      pid = ::fork();
      if (pid == 0) {
        ::close(socketFd);
        if (becomeSupervisedChild(server, harness) != 0) ::_exit(127);
        detail::runRequest(fds, *parsed, runChild);
      }
    }
    closeFds();
    if (pid < 0) {
      if (!sendMessage(socketFd, std::string("error fork: ") + std::strerror(errno))) return 3;
      continue;
    }
    const bool told = sendMessage(socketFd, "pid " + std::to_string(pid));
    // The next request's child is forked while this one runs, on the core the harness leaves idle
    // as it waits for this run's events.
    if (told) spare.fork(socketFd, server, harness, runChild);
    if (!told || !sendMessage(socketFd, "exit " + std::to_string(detail::statusOf(pid))) ||
        receiveMessage(socketFd) != "reap") {
      ::kill(-pid, SIGKILL);
      detail::reap(pid);
      return 0;
    }
    detail::reap(pid);
  }
}

/// The socket GPUFUZZ_FORK_SERVER_FD names, or -1 when the program is not asked to serve.
inline int forkServerSocket() {
  const char* text = std::getenv(kForkServerFdVariable);
  if (!text || !*text) return -1;
  char* end = nullptr;
  const long fd = std::strtol(text, &end, 10);
  return *end == '\0' && fd >= 0 && fd < (1 << 20) ? static_cast<int>(fd) : -1;
}

/// A target's whole main(): `PROGRAM FILE`, `PROGRAM --version`, or a fork server (no FILE,
/// GPUFUZZ_FORK_SERVER_FD set). `make` is called once per sequence, in the process that runs it.
/// Exit status: 0 pass, 1 a failure, 2 bad usage or an unreadable sequence.
inline int main(int argc, char** argv, std::string_view version,
                const std::function<std::unique_ptr<Target>()>& make) {
  const std::vector<std::string> args(argv + 1, argv + argc);
  const auto runFile = [&](const std::vector<std::string>& a) -> int {
    // Every thread's frames when the harness asks, in the process that runs the sequence.
    installStacksHandler();
    if (a.size() != 1) {
      std::fprintf(stderr, "usage: %s FILE | --version\n", argc > 0 ? argv[0] : "target");
      return 2;
    }
    Sequence seq;
    try {
      seq = loadSequence(a[0]);
    } catch (const BadSequence& e) {
      std::fprintf(stderr, "%s\n", e.what());
      return 2;
    }
    // The fork server's environment entries were set after the server started: read it now.
    const Events events = Events::fromEnvironment();
    std::unique_ptr<Target> target;
    try {
      target = make();
    } catch (const std::exception& e) {
      events.start(seq.ops.size());
      events.outcome("error", "-", "-", std::string("the target could not be made: ") + e.what());
      return 1;
    }
    return runSequence(seq, *target, events);
  };
  if (args.size() == 1 && args[0] == "--version") {
    std::printf("%.*s\n", static_cast<int>(version.size()), version.data());
    return 0;
  }
  if (args.empty()) {
    if (const int socket = forkServerSocket(); socket >= 0) {
      // The models are read once, before any fork, for every child that reads them.
      try {
        builtinModel();
        if (const char* facts = std::getenv(kModelFactsVariable); facts && *facts) {
          loadModelFacts(facts);
        } else if (const char* named = std::getenv(kModelVariable); named && *named) {
          loadModel(named);
        }
      } catch (const BadSequence&) {
        // each run says so itself
      }
      return serveForks(socket, runFile);
    }
  }
  return runFile(args);
}

}  // namespace gpufuzz::target
