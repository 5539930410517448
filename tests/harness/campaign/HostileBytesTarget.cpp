// HostileBytesTarget.cpp: a target (target.md) that writes bytes of any kind where the harness
// reads text: in its events, its outcome's detail, a fault's rule, its output, its --version
// line; and that ends in any way (an outcome, an exit status without one, a signal, a line that
// is no event). For hostile-bytes-test.
//
//   gpufuzz-hostile-bytes-target CASES [--version | FILE]
//
// It serves forks (the client library's fork server) when asked to. FILE's `# seed: N` picks what
// it does. When CASES/N exists it is a script, followed step by
// step: records of one action byte, a 4-byte little-endian length and that many bytes:
//   E  write the bytes to the events descriptor (one write)
//   O  write them to standard output        R  to standard error
//   X  exit with the status of the first byte
//   K  kill itself with the signal of the first byte
//   C  close the events descriptor
// and exits 0 at the script's end. Otherwise N itself draws a behaviour (a campaign's sequences):
// at the first operation of one kind (by N), one of an outcome with random bytes for its detail,
// a fault and an outcome, a line of random bytes, an exit without an outcome, a signal; every
// operation before it passes and prints random bytes. The bytes depend on N alone, so a shrunk
// sequence fails as its original did.
#include <fcntl.h>
#include <signal.h>
#include <unistd.h>

#include <cstdint>
#include <cstdlib>
#include <fstream>
#include <iterator>
#include <sstream>
#include <string>
#include <vector>

#include "gpufuzz/target.hpp"

namespace {

int eventsFd = 3;

void writeAll(int fd, const std::string& bytes) {
  std::size_t off = 0;
  while (off < bytes.size()) {
    const ssize_t n = ::write(fd, bytes.data() + off, bytes.size() - off);
    if (n <= 0) return;
    off += static_cast<std::size_t>(n);
  }
}

void event(const std::string& line) {
  writeAll(eventsFd, line + "\n");
}

struct Random {
  uint64_t state;
  uint64_t next() {  // SplitMix64
    uint64_t z = (state += 0x9e3779b97f4a7c15ULL);
    z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
    z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
    return z ^ (z >> 31);
  }
  uint64_t below(uint64_t n) { return next() % n; }
  /// Bytes of every kind: invalid UTF-8, control characters, valid multibyte characters, text.
  std::string bytes(std::size_t most, bool newlines) {
    static const std::vector<std::string> pieces{"\xff",
                                                 "\xfe",
                                                 "\xc0\xaf",
                                                 "\xed\xa0\x80",
                                                 "\xe2\x82",
                                                 "\x1b[31m",
                                                 "\x07",
                                                 std::string(1, '\0'),
                                                 "\r",
                                                 "\x7f",
                                                 "\xc2\x9b",
                                                 "\xe2\x82\xac",
                                                 "\xf0\x9f\x98\x80",
                                                 "\xc3\xa9",
                                                 "\\x41",
                                                 "\"",
                                                 "\\",
                                                 "\t",
                                                 "  ",
                                                 "garbage",
                                                 "{}",
                                                 "[",
                                                 "null"};
    std::string out;
    const std::size_t n = below(most + 1);
    while (out.size() < n) {
      if (below(3) == 0) {
        out += static_cast<char>(below(256));
      } else {
        out += pieces[below(pieces.size())];
      }
      if (!newlines) {
        for (char& c : out)
          if (c == '\n') c = ' ';
      }
    }
    return out;
  }
};

std::string readAll(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

void runScript(const std::string& script) {
  std::size_t at = 0;
  while (at + 5 <= script.size()) {
    const char action = script[at];
    uint32_t length = 0;
    for (int i = 0; i < 4; ++i)
      length |= static_cast<uint32_t>(static_cast<unsigned char>(script[at + 1 + i])) << (8 * i);
    const std::string bytes = script.substr(at + 5, length);
    at += 5 + length;
    const int first = bytes.empty() ? 0 : static_cast<unsigned char>(bytes[0]);
    switch (action) {
      case 'E':
        writeAll(eventsFd, bytes);
        break;
      case 'O':
        writeAll(1, bytes);
        break;
      case 'R':
        writeAll(2, bytes);
        break;
      case 'X':
        ::_exit(first);
      case 'K':
        ::kill(::getpid(), first);
        ::_exit(99);
      case 'C':
        ::close(eventsFd);
        break;
      default:
        ::_exit(98);
    }
  }
  ::_exit(0);
}

/// A behaviour drawn from the sequence's seed (a campaign's sequences, shrunk or not).
void runDrawn(uint64_t seed, const std::vector<std::string>& ops) {
  Random random{seed};
  static const std::vector<std::string> kinds{"draw", "sync", "set_textures", "read_back",
                                              "destroy"};
  const std::string failing = kinds[random.below(kinds.size())];
  const uint64_t behaviour = random.below(6);
  const std::string output = random.bytes(120, true);
  const std::string detail = random.bytes(200, false);
  event("start " + std::to_string(ops.size()));
  for (std::size_t k = 1; k <= ops.size(); ++k) {
    const std::string at = std::to_string(k);
    event("begin " + at + " " + ops[k - 1]);
    writeAll(k % 2 ? 1 : 2, output);
    if (ops[k - 1] == failing) {
      switch (behaviour) {
        case 0:
          event("outcome error " + at + " " + ops[k - 1] + " " + detail);
          ::_exit(1);
        case 1:
          event("outcome mismatch " + at + " " + ops[k - 1] + " " + detail);
          ::_exit(0);  // the outcome line stands, whatever the status
        case 2:
          event("fault error x" + detail);
          event("outcome error " + at + " " + ops[k - 1] + " " + detail);
          ::_exit(1);
        case 3:
          event("\xff" + detail);
          ::pause();  // killed by the harness at the protocol error
          ::_exit(1);
        case 4:
          ::_exit(static_cast<int>(2 + random.below(200)));
        default:
          ::kill(::getpid(), SIGSEGV);
          ::_exit(99);
      }
    }
    event("done " + at);
  }
  event("begin end end");
  event("done end");
  event("outcome pass - - ");
  ::_exit(0);
}

int runCase(const std::string& cases, const std::string& file) {
  if (file == "--version") {
    writeAll(1, "hostile-bytes-target \xff\xfe\x1b[31m 1.0\x07\xc0\n");
    return 0;
  }
  if (const char* fd = std::getenv("GPUFUZZ_EVENTS_FD")) eventsFd = std::atoi(fd);
  std::vector<std::string> ops;
  uint64_t seed = 0;
  std::istringstream lines(readAll(file));
  for (std::string line; std::getline(lines, line);) {
    if (line.rfind("# seed:", 0) == 0) seed = std::strtoull(line.c_str() + 7, nullptr, 10);
    if (line.empty() || line[0] == '#') continue;
    ops.push_back(line.substr(0, line.find(' ')));
  }
  if (ops.empty()) {  // the empty sequence gpufuzz checks a target with first
    event("start 0");
    event("outcome pass - - ");
    return 0;
  }
  const std::string script = readAll(cases + "/" + std::to_string(seed));
  if (!script.empty()) runScript(script);
  runDrawn(seed, ops);
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc == 2) {
    if (const int socket = gpufuzz::target::forkServerSocket(); socket >= 0) {
      // A request holds the words after the program, or only the file.
      const std::string cases = argv[1];
      return gpufuzz::target::serveForks(socket, [&](const std::vector<std::string>& args) {
        if (args.empty()) return 2;
        return runCase(args.size() >= 2 ? args[args.size() - 2] : cases, args.back());
      });
    }
  }
  if (argc != 3) {
    writeAll(2, "usage: gpufuzz-hostile-bytes-target CASES [--version | FILE]\n");
    return 2;
  }
  return runCase(argv[1], argv[2]);
}
