// CrashSite.cpp: a crashed child's frames: the runner's crash file symbolised, a target's taken by
// a debugger, and the crash state that buckets them.
#include "harness/supervise/CrashSite.h"

#include <cxxabi.h>
#include <elf.h>
#include <signal.h>
#include <string.h>
#include <unistd.h>

#include <algorithm>
#include <array>
#include <atomic>
#include <cinttypes>
#include <cstdio>
#include <cstdlib>
#include <fstream>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <sstream>
#include <thread>

#include "harness/base/OutsideText.h"
#include "harness/base/ScratchFolder.h"
#include "harness/protocol/CrashReport.h"

namespace gpufuzz {

namespace {

using namespace std::chrono_literals;

constexpr std::size_t kMostFramesShown = 64;
/// Frames given to addr2line for file:line: the top ones are what a reader looks at.
constexpr std::size_t kMostFramesWithLines = 12;
constexpr auto kAddr2lineTimeout = 10s;
constexpr auto kDebuggerOutputLimit = std::size_t{256} * 1024;
constexpr const char* kThreadLine = "Thread 1 (crashed):";

std::string signalName(int sig) {
  if (const char* abbrev = ::sigabbrev_np(sig)) return std::string("SIG") + abbrev;
  return "signal " + std::to_string(sig);
}

std::string baseName(const std::string& path) {
  const auto slash = path.rfind('/');
  return slash == std::string::npos ? path : path.substr(slash + 1);
}

/// "ns::f" from "ns::f(int, char const*) const"; gdb's names come without their parameters.
std::string withoutParameters(std::string name) {
  // A compiler's copy of a function: "f(int) [clone .isra.0]".
  for (std::size_t clone;
       (clone = name.rfind(" [clone ")) != std::string::npos && name.ends_with("]");)
    name.resize(clone);
  if (name.ends_with(" const")) name.resize(name.size() - 6);
  if (name.empty() || name.back() != ')') return name;
  int depth = 0;
  for (std::size_t i = name.size(); i-- > 0;) {
    if (name[i] == ')') ++depth;
    if (name[i] == '(' && --depth == 0) return name.substr(0, i);
  }
  return name;
}

std::string demangled(const char* symbol) {
  int status = 0;
  std::unique_ptr<char, decltype(&std::free)> text(
      abi::__cxa_demangle(symbol, nullptr, nullptr, &status), &std::free);
  return status == 0 && text ? withoutParameters(text.get()) : std::string(symbol);
}

/// A module's function symbols (.symtab, else .dynsym) and load segments, read once per crash.
class ElfSymbols {
 public:
  explicit ElfSymbols(const std::string& path) {
    std::ifstream in(path, std::ios::binary);
    if (!in) return;
    data_.assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
    if (data_.size() < sizeof(Elf64_Ehdr) || std::memcmp(data_.data(), ELFMAG, SELFMAG) != 0 ||
        data_[EI_CLASS] != ELFCLASS64) {
      data_.clear();
      return;
    }
    const auto* eh = at<Elf64_Ehdr>(0);
    for (unsigned i = 0; eh && i < eh->e_phnum; ++i) {
      const auto* ph = at<Elf64_Phdr>(eh->e_phoff + std::size_t{i} * eh->e_phentsize);
      if (ph && ph->p_type == PT_LOAD) loads_.push_back(*ph);
    }
    for (const uint32_t wanted : {SHT_SYMTAB, SHT_DYNSYM}) {
      readSymbols(*eh, wanted);
      if (!functions_.empty()) break;
    }
    std::sort(functions_.begin(), functions_.end());
  }

  /// The module's own address (ELF virtual address) of a byte at `fileOffset` in its file.
  std::optional<uint64_t> addressOf(uint64_t fileOffset) const {
    for (const Elf64_Phdr& ph : loads_) {
      if (fileOffset >= ph.p_offset && fileOffset < ph.p_offset + ph.p_filesz)
        return fileOffset - ph.p_offset + ph.p_vaddr;
    }
    return std::nullopt;
  }

  /// The function that holds `address`, demangled; empty when none does.
  std::string functionAt(uint64_t address) const {
    auto it =
        std::upper_bound(functions_.begin(), functions_.end(), Function{address, UINT64_MAX, {}});
    if (it == functions_.begin()) return {};
    --it;
    if (address >= it->start + std::max<uint64_t>(it->size, 1)) return {};
    return demangled(it->name.c_str());
  }

 private:
  struct Function {
    uint64_t start = 0, size = 0;
    std::string name;
    bool operator<(const Function& o) const {
      return start != o.start ? start < o.start : size < o.size;
    }
  };

  template <typename T>
  const T* at(uint64_t offset) const {
    return offset + sizeof(T) <= data_.size() ? reinterpret_cast<const T*>(&data_[offset])
                                              : nullptr;
  }

  void readSymbols(const Elf64_Ehdr& eh, uint32_t type) {
    for (unsigned i = 0; i < eh.e_shnum; ++i) {
      const auto* sh = at<Elf64_Shdr>(eh.e_shoff + std::size_t{i} * eh.e_shentsize);
      if (!sh || sh->sh_type != type || sh->sh_entsize != sizeof(Elf64_Sym)) continue;
      const auto* strings = at<Elf64_Shdr>(eh.e_shoff + std::size_t{sh->sh_link} * eh.e_shentsize);
      if (!strings || strings->sh_offset + strings->sh_size > data_.size()) continue;
      for (uint64_t k = 0; k < sh->sh_size / sizeof(Elf64_Sym); ++k) {
        const auto* sym = at<Elf64_Sym>(sh->sh_offset + k * sizeof(Elf64_Sym));
        if (!sym || ELF64_ST_TYPE(sym->st_info) != STT_FUNC || sym->st_value == 0 ||
            sym->st_name >= strings->sh_size)
          continue;
        const char* name = &data_[strings->sh_offset + sym->st_name];
        const std::size_t most = strings->sh_size - sym->st_name;
        functions_.push_back({sym->st_value, sym->st_size, std::string(name, strnlen(name, most))});
      }
    }
  }

  std::vector<char> data_;
  std::vector<Elf64_Phdr> loads_;
  std::vector<Function> functions_;
};

struct Mapping {
  uint64_t start = 0, end = 0, offset = 0;
  std::string path;
};

struct RawFrame {
  uint64_t address = 0;
  const Mapping* mapping = nullptr;
  uint64_t moduleAddress = 0;
  std::string function;
  std::string source;  // file:line
};

Mapping parseMapping(const std::string& line) {
  Mapping m;
  unsigned long long start = 0, end = 0, offset = 0;
  char perms[8] = {};
  int pathAt = 0;
  if (std::sscanf(line.c_str(), "%llx-%llx %7s %llx %*s %*s %n", &start, &end, perms, &offset,
                  &pathAt) < 4)
    return m;
  m.start = start;
  m.end = end;
  m.offset = offset;
  if (pathAt > 0 && static_cast<std::size_t>(pathAt) <= line.size()) m.path = line.substr(pathAt);
  return m;
}

/// file:line for each of `frames` in `module`, by addr2line when it is on PATH.
void addSourceLines(const std::string& module, std::vector<RawFrame*>& frames) {
  static const std::optional<std::string> addr2line = findOnPath("addr2line");
  if (!addr2line || frames.empty()) return;
  ChildCommand command{*addr2line, {"-e", module}};
  for (const RawFrame* f : frames) {
    char hex[32];
    std::snprintf(hex, sizeof hex, "0x%" PRIx64, f->moduleAddress);
    command.args.emplace_back(hex);
  }
  try {
    const CapturedRun run = runCaptured(command, kAddr2lineTimeout, 64 * 1024);
    std::istringstream lines(run.output);
    for (RawFrame* f : frames) {
      std::string line;
      if (!std::getline(lines, line)) break;
      if (!line.starts_with("??")) f->source = line.substr(0, line.find(" (discriminator"));
    }
  } catch (const ChildStartError&) {
    // file:line is a plus; the function names stand without it.
  }
}

std::string frameLine(std::size_t k, const RawFrame& f, const std::string& program) {
  char address[32];
  std::snprintf(address, sizeof address, "0x%016" PRIx64, f.address);
  std::string line = "#" + std::to_string(k) + "  " + address + " in " +
                     (f.function.empty() ? "??" : f.function) + " ()";
  const std::string module = f.mapping ? f.mapping->path : "";
  if (!f.source.empty()) {
    line += " at " + f.source;
  }
  if (!module.empty()) line += " from " + module;
  return line + " [" + std::string(frameOwnerName(frameOwner(module, program))) + "]";
}

// Runtimes and drivers, by the start of a module's file name.
constexpr std::array kRuntimePrefixes{
    "libcuda.",         "libcudart.",     "libnvidia-",    "libnvcuda",     "libOpenCL.",
    "libvulkan.",       "libnvoptix",     "libGLX_nvidia", "libEGL_nvidia", "libamdhip",
    "libamdocl",        "libhsa-runtime", "libze_",        "libigdrcl",     "libpocl.",
    "libRusticlOpenCL", "libvulkan_",     "libMesa",       "libgallium",    "libdxcore",
    "libnvrtc",         "libcupti"};
constexpr std::array kSystemPrefixes{"libc.",    "libc-",      "libstdc++.", "libgcc_s.",
                                     "ld-linux", "libm.",      "libpthread", "libdl.",
                                     "ld64.",    "linux-vdso", "[vdso]"};

// Frames of signal handling and aborting: not where a crash happened.
constexpr std::array kHandlingFrames{"raise",
                                     "abort",
                                     "gsignal",
                                     "pthread_kill",
                                     "__pthread_kill",
                                     "__pthread_kill_implementation",
                                     "__pthread_kill_internal",
                                     "__GI_raise",
                                     "__GI_abort",
                                     "__restore_rt",
                                     "__assert_fail",
                                     "__assert_fail_base",
                                     "__assert_perror_fail",
                                     "__libc_message",
                                     "__libc_message_impl",
                                     "__fortify_fail",
                                     "__chk_fail",
                                     "__stack_chk_fail",
                                     "malloc_printerr",
                                     "std::terminate",
                                     "std::__terminate",
                                     "__cxxabiv1::__terminate",
                                     "__gnu_cxx::__verbose_terminate_handler",
                                     "__cxa_throw",
                                     "__cxa_rethrow",
                                     "__cxa_call_terminate"};

/// The runtime-call seam's wrapper (renderer/device/RuntimeSeam.h): it passes a call through, so
/// the frame under it is the program's caller. Its name begins with its return type.
bool isSeamFrame(const CrashFrame& f) {
  return f.function.find("gpufuzz::seam::") != std::string::npos;
}

bool isHandlingFrame(const CrashFrame& f) {
  if (f.function.starts_with("<")) return true;  // gdb's "<signal handler called>"
  if (f.function.find("onFatalSignal") != std::string::npos) return true;  // the runner's handler
  if (isSeamFrame(f)) return true;
  // An unnamed frame of the system's libraries under an abort: raise's internals.
  if (f.function.empty() && f.owner == FrameOwner::System) return true;
  return std::find(kHandlingFrames.begin(), kHandlingFrames.end(), f.function) !=
         kHandlingFrames.end();
}

/// The frame's name in a crash state: its function, or "in MODULE" without one.
std::string stateName(const CrashFrame& f) {
  if (!f.function.empty()) return f.function;
  return "in " + (f.module.empty() ? std::string("??") : baseName(f.module));
}

}  // namespace

std::string_view frameOwnerName(FrameOwner owner) {
  switch (owner) {
    case FrameOwner::Program:
      return "program";
    case FrameOwner::Runtime:
      return "runtime";
    case FrameOwner::System:
      return "system";
    case FrameOwner::Library:
      break;
  }
  return "library";
}

FrameOwner frameOwner(const std::string& module, const std::string& program) {
  if (module.empty()) return FrameOwner::Library;
  if (!program.empty() && module == program) return FrameOwner::Program;
  const std::string name = baseName(module);
  for (const char* prefix : kRuntimePrefixes) {
    if (name.starts_with(prefix)) return FrameOwner::Runtime;
  }
  for (const char* prefix : kSystemPrefixes) {
    if (name.starts_with(prefix)) return FrameOwner::System;
  }
  return FrameOwner::Library;
}

CrashFile::CrashFile(bool runner) : runner_(runner) {
  static std::atomic<uint64_t> counter{0};
  const auto dir = scratchFolder();
  const std::string id = std::to_string(::getpid()) + "-" + std::to_string(counter++);
  if (runner_) path_ = dir / ("gpufuzz-crash-" + id);
  stacksPath_ = dir / ("gpufuzz-stacks-" + id);
}

CrashFile::~CrashFile() {
  std::error_code ignored;
  // A record's part and the taken record exist once stacks were asked for, and a Python
  // target's part from its start: the runner's runs that were not asked skip two removals.
  const bool records = asked_ || !runner_;
  for (const std::string suffix : {"", kStacksPartSuffix, kStacksTakenSuffix}) {
    if (stacksPath_.empty() || (!suffix.empty() && !records)) continue;
    std::filesystem::remove(stacksPath_.string() + suffix, ignored);
  }
  if (!path_.empty()) std::filesystem::remove(path_, ignored);
}

std::string CrashFile::text(long pid) const {
  return path_.empty() ? std::string() : crashTextFromFile(path_, pid);
}

std::string CrashFile::askStacks(std::chrono::milliseconds wait) const {
  if (stacksPath_.empty()) return {};
  asked_ = true;
  // "pid N": the process that answers, which a wrapper such as compute-sanitizer may have
  // started. A Python target says how it answers after it.
  std::ifstream marker(stacksPath_);
  std::string word, how;
  long pid = 0;
  if (!(marker >> word >> pid) || word != "pid" || pid <= 0) return {};
  if (marker >> how && how == kStacksFaulthandler) return askFaulthandler(pid, wait);
  std::error_code ec;
  const std::filesystem::path taken = stacksPath_.string() + kStacksTakenSuffix;
  std::filesystem::remove(taken, ec);
  if (::kill(static_cast<pid_t>(pid), kStacksSignal) != 0) return {};
  const auto until = std::chrono::steady_clock::now() + wait;
  while (!std::filesystem::exists(taken, ec)) {
    if (std::chrono::steady_clock::now() >= until) return {};
    std::this_thread::sleep_for(5ms);
  }
  std::string text = stacksTextFromFile(taken, pid, runner_ ? kRunnerStacksBy : kTargetStacksBy);
  std::filesystem::remove(taken, ec);
  return text;
}

namespace {

std::string wholeFile(const std::filesystem::path& file) {
  std::ifstream in(file, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
}

}  // namespace

std::string CrashFile::askFaulthandler(long pid, std::chrono::milliseconds wait) const {
  // The target appends to the record's file for its whole life: it is emptied, never removed,
  // so that the target's descriptor still writes where the harness reads.
  const std::filesystem::path part = stacksPath_.string() + kStacksPartSuffix;
  std::error_code ec;
  std::filesystem::resize_file(part, 0, ec);
  if (ec || ::kill(static_cast<pid_t>(pid), kStacksSignal) != 0) return {};
  const auto until = std::chrono::steady_clock::now() + wait;
  std::string record = wholeFile(part);
  // Without the end byte the dump may still be whole: a target may take Python's wakeup
  // descriptor for itself (asyncio's signal handlers do). What came by then is kept.
  while (!record.ends_with(kStacksFaulthandlerEnd) && std::chrono::steady_clock::now() < until) {
    std::this_thread::sleep_for(5ms);
    record = wholeFile(part);
  }
  std::filesystem::resize_file(part, 0, ec);
  return stacksTextFromFaulthandler(record, pid);
}

namespace {

/// One thread's record in a crash or stacks file.
struct ThreadRecord {
  std::string heading;  // "Thread 1 (crashed):"
  uint64_t pc = 0;
  std::vector<uint64_t> addresses;
};

/// What a crash or stacks file holds (CrashReport.h).
struct FrameRecords {
  int signal = 0;
  std::string exe;
  std::vector<ThreadRecord> threads;
  std::vector<Mapping> maps;
};

/// The records of `file` when it opens with `header`.
std::optional<FrameRecords> readFrameRecords(const std::filesystem::path& file,
                                             const char* header) {
  std::ifstream in(file);
  std::string line;
  if (!in || !std::getline(in, line) || line != header) return std::nullopt;
  FrameRecords records;
  bool inMaps = false;
  while (std::getline(in, line)) {
    if (inMaps) {
      Mapping m = parseMapping(line);
      if (m.end > m.start) records.maps.push_back(std::move(m));
    } else if (line == "maps") {
      inMaps = true;
    } else if (line.starts_with("signal ")) {
      records.signal = std::atoi(line.c_str() + 7);
    } else if (line.starts_with("exe ")) {
      records.exe = line.substr(4);
    } else if (line.starts_with("thread ")) {
      // "thread TID NAME", from a stacks file.
      const std::string rest = line.substr(7);
      const auto space = rest.find(' ');
      const std::string tid = rest.substr(0, space);
      const std::string name = space == std::string::npos ? "" : rest.substr(space + 1);
      records.threads.push_back(
          {"(LWP " + tid + (name.empty() ? "" : " \"" + name + "\"") + "):", 0, {}});
    } else if (line == "handler" && !records.threads.empty()) {
      // The thread runs the target's code for its client library (gpufuzz/stacks.hpp).
      std::string& heading = records.threads.back().heading;
      heading.insert(heading.size() - 1, kInHandler);
    } else if (line.starts_with("pc ") || line.starts_with("frame ")) {
      if (records.threads.empty()) records.threads.push_back({"(crashed):", 0, {}});
      ThreadRecord& t = records.threads.back();
      if (line.starts_with("pc ")) {
        t.pc = std::strtoull(line.c_str() + 3, nullptr, 16);
      } else {
        t.addresses.push_back(std::strtoull(line.c_str() + 6, nullptr, 16));
      }
    }
  }
  return records;
}

/// Each thread's frames as "Thread K HEADING" and gdb-style frame lines, symbolised from the
/// modules the records' map names.
std::string symbolisedThreads(const FrameRecords& records) {
  std::map<std::string, std::unique_ptr<ElfSymbols>> modules;
  std::map<std::string, std::vector<RawFrame*>> forLines;
  std::vector<std::vector<RawFrame>> threads;
  for (const ThreadRecord& thread : records.threads) {
    const std::vector<uint64_t>& addresses = thread.addresses;
    // The handler's own frames come before the one where the signal came.
    std::size_t first = 0;
    if (const auto it = std::find(addresses.begin(), addresses.end(), thread.pc);
        it != addresses.end()) {
      first = static_cast<std::size_t>(it - addresses.begin());
    } else if (addresses.size() > 2) {
      first = 2;  // the handler, and the kernel's return to it
    }
    std::vector<RawFrame>& frames = threads.emplace_back();
    for (std::size_t i = first; i < addresses.size() && frames.size() < kMostFramesShown; ++i) {
      RawFrame f;
      f.address = addresses[i];
      frames.push_back(std::move(f));
    }
  }
  for (std::vector<RawFrame>& frames : threads) {
    for (std::size_t k = 0; k < frames.size(); ++k) {
      RawFrame& f = frames[k];
      const auto m =
          std::find_if(records.maps.begin(), records.maps.end(), [&](const Mapping& candidate) {
            return f.address >= candidate.start && f.address < candidate.end;
          });
      if (m == records.maps.end() || m->path.empty() || m->path.starts_with("[")) continue;
      f.mapping = &*m;
      auto& symbols = modules[m->path];
      if (!symbols) symbols = std::make_unique<ElfSymbols>(m->path);
      // A return address is the instruction after its call: the call is the byte before it.
      const uint64_t looked = k == 0 ? f.address : f.address - 1;
      const std::optional<uint64_t> address = symbols->addressOf(looked - m->start + m->offset);
      if (!address) continue;
      f.moduleAddress = *address;
      f.function = symbols->functionAt(*address);
      if (k < kMostFramesWithLines && frameOwner(m->path, records.exe) == FrameOwner::Program)
        forLines[m->path].push_back(&f);
    }
  }
  for (auto& [module, list] : forLines)
    addSourceLines(module, list);
  std::string text;
  for (std::size_t t = 0; t < threads.size(); ++t) {
    text += "Thread " + std::to_string(t + 1) + " " + records.threads[t].heading + "\n";
    for (std::size_t k = 0; k < threads[t].size(); ++k)
      text += frameLine(k, threads[t][k], records.exe) + "\n";
  }
  return text;
}

/// "(LWP 1234 ...)": the thread's id, for ordering; 0 without one.
long headingThreadId(const std::string& heading) {
  return heading.starts_with("(LWP ") ? std::atol(heading.c_str() + 5) : 0;
}

}  // namespace

std::string crashTextFromFile(const std::filesystem::path& file, long pid) {
  std::optional<FrameRecords> records = readFrameRecords(file, kCrashFileHeader);
  if (!records) return {};
  if (records->threads.size() > 1) records->threads.resize(1);
  if (records->threads.empty()) records->threads.push_back({"(crashed):", 0, {}});
  const std::string text = std::string(kRunnerCrashFramesBy) + ", " + signalName(records->signal) +
                           ", process " + std::to_string(pid) + "\n" + symbolisedThreads(*records);
  return outsideText(text);
}

std::string stacksTextFromFile(const std::filesystem::path& file, long pid, std::string_view by) {
  std::optional<FrameRecords> records = readFrameRecords(file, kStacksFileHeader);
  if (!records || records->threads.empty()) return {};
  // By thread id: the main thread first, then the others as they were started, whoever answered
  // first.
  std::stable_sort(records->threads.begin(), records->threads.end(),
                   [](const ThreadRecord& a, const ThreadRecord& b) {
                     return headingThreadId(a.heading) < headingThreadId(b.heading);
                   });
  const std::string text =
      std::string(by) + ", process " + std::to_string(pid) + "\n" + symbolisedThreads(*records);
  return outsideText(text);
}

namespace {

/// GPU runtimes' Python packages, by their directory under site-packages or dist-packages.
constexpr std::array<std::string_view, 11> kPythonRuntimePackages{
    "cupy",  "cupyx",  "cupy_backends", "pyopencl", "pycuda", "cuda",
    "numba", "vulkan", "wgpu",          "torch",    "triton"};
/// The Python client library's file: its frames are the harness's side of a target.
constexpr std::string_view kPythonClient = "gpufuzz_target.py";

bool isPythonClient(const std::string& file) {
  return baseName(file) == kPythonClient;
}

/// Whose code a Python frame runs, by its file.
FrameOwner pythonFrameOwner(const std::string& file) {
  if (file.starts_with("<frozen ") || isPythonClient(file)) return FrameOwner::System;
  for (const std::string_view packages : {"/site-packages/", "/dist-packages/"}) {
    const auto at = file.find(packages);
    if (at == std::string::npos) continue;
    const std::string_view rest = std::string_view(file).substr(at + packages.size());
    const std::string_view top = rest.substr(0, rest.find_first_of("/."));
    return std::find(kPythonRuntimePackages.begin(), kPythonRuntimePackages.end(), top) !=
                   kPythonRuntimePackages.end()
               ? FrameOwner::Runtime
               : FrameOwner::Library;
  }
  // The standard library is lib/python3.X under the interpreter's prefix.
  if (file.find("/lib/python3.") != std::string::npos ||
      file.find("/lib64/python3.") != std::string::npos)
    return FrameOwner::System;
  return FrameOwner::Program;
}

struct PythonFrame {
  std::string file;  // empty when faulthandler did not know it
  std::string line;
  std::string function;
};

struct PythonThread {
  std::string id;
  bool current = false;
  std::vector<PythonFrame> frames;
};

/// `  File "PATH", line N in NAME`, as faulthandler writes it ("???" for what it does not know).
std::optional<PythonFrame> parsePythonFrame(std::string_view line) {
  line.remove_prefix(std::min(line.find_first_not_of(' '), line.size()));
  if (!line.starts_with("File ")) return std::nullopt;
  line.remove_prefix(5);
  PythonFrame f;
  if (line.starts_with("\"")) {
    const auto end = line.rfind("\", line ");
    if (end == std::string_view::npos) return std::nullopt;
    f.file = line.substr(1, end - 1);
    line.remove_prefix(end + 1);
  } else if (line.starts_with("???")) {
    line.remove_prefix(3);
  }
  if (!line.starts_with(", line ")) return std::nullopt;
  line.remove_prefix(7);
  const auto in = line.find(" in ");
  if (in == std::string_view::npos) return std::nullopt;
  f.line = line.substr(0, in);
  f.function = line.substr(in + 4);
  if (f.function == "???") f.function.clear();
  if (f.line == "???") f.line.clear();
  return f;
}

/// Whether the thread runs the target's code for the client library: a frame of the client's
/// lies under one of the target's own. The client's threads that wait for their turn, and the
/// main thread that waits for them, have only the client's and the standard library's above.
bool pythonThreadInHandler(const PythonThread& thread) {
  bool ownAbove = false;
  for (const PythonFrame& f : thread.frames) {
    if (isPythonClient(f.file)) {
      if (ownAbove) return true;
    } else if (pythonFrameOwner(f.file) != FrameOwner::System) {
      ownAbove = true;
    }
  }
  return false;
}

}  // namespace

std::string stacksTextFromFaulthandler(std::string_view record, long pid) {
  if (record.ends_with(kStacksFaulthandlerEnd)) record.remove_suffix(1);
  // A line cut short, from an answer taken before it was whole, is left out.
  record = record.substr(0, record.rfind('\n') + 1);
  std::vector<PythonThread> threads;
  std::size_t at = 0;
  while (at < record.size()) {
    const std::size_t end = record.find('\n', at);
    const std::string_view line = record.substr(at, end - at);
    at = end + 1;
    // "Thread 0x...", "Current thread 0x..." (the one that took the signal), or "Stack" when
    // faulthandler wrote one thread.
    const bool current = line.starts_with("Current thread ");
    if (current || line.starts_with("Thread ") || line.starts_with("Stack ")) {
      PythonThread& t = threads.emplace_back();
      t.current = current;
      if (const auto hex = line.find("0x"); hex != std::string_view::npos)
        t.id = line.substr(hex, line.find(' ', hex) - hex);
    } else if (!threads.empty() && threads.back().frames.size() < kMostFramesShown) {
      if (std::optional<PythonFrame> f = parsePythonFrame(line))
        threads.back().frames.push_back(std::move(*f));
    }
  }
  if (threads.empty()) return {};
  // faulthandler writes the newest thread first: the main thread is its last.
  std::reverse(threads.begin(), threads.end());
  std::string text = std::string(kPythonStacksBy) + ", process " + std::to_string(pid) + "\n";
  for (std::size_t t = 0; t < threads.size(); ++t) {
    const PythonThread& thread = threads[t];
    text += "Thread " + std::to_string(t + 1) + " (Python thread " +
            (thread.id.empty() ? std::string("?") : thread.id) +
            (thread.current ? ", took the signal)" : ")") +
            (pythonThreadInHandler(thread) ? std::string(kInHandler) : std::string()) + ":\n";
    for (std::size_t k = 0; k < thread.frames.size(); ++k) {
      const PythonFrame& f = thread.frames[k];
      text += "#" + std::to_string(k) + "  0x0000000000000000 in " +
              (f.function.empty() ? std::string("??") : f.function) + " ()";
      if (!f.file.empty()) text += " at " + f.file + (f.line.empty() ? "" : ":" + f.line);
      text += " [" + std::string(frameOwnerName(pythonFrameOwner(f.file))) + "]\n";
    }
  }
  return outsideText(text);
}

ChildCommand crashDebuggerCommand(const std::string& debugger, const ChildCommand& command) {
  ChildCommand wrapped{debugger,
                       {"-batch", "-nx", "-iex", "set debuginfod enabled off", "-iex",
                        "set startup-with-shell off", "-iex", "set pagination off", "-ex", "run",
                        "-ex", "bt 64", "-ex", "kill", "--args", command.executable}};
  if (baseName(debugger).starts_with("cuda-gdb")) {
    wrapped.args.insert(wrapped.args.begin() + 4, {"-iex", "set cuda api_failures ignore"});
  }
  wrapped.args.insert(wrapped.args.end(), command.args.begin(), command.args.end());
  return wrapped;
}

std::string crashTextFromDebugger(const std::string& debuggerName, const std::string& output) {
  // "Program received signal SIGSEGV, Segmentation fault." then the `bt` of the thread it came in.
  std::istringstream in(output);
  std::string line, signal;
  std::vector<std::string> frames;
  while (std::getline(in, line)) {
    if (signal.empty()) {
      const auto at = line.find("received signal ");
      if (at != std::string::npos) {
        signal = line.substr(at + 16);
        signal = signal.substr(0, signal.find(','));
      }
    } else if (line.starts_with("#")) {
      frames.push_back(line);
    } else if (!frames.empty() && !line.starts_with(" ")) {
      break;
    } else if (!frames.empty()) {
      frames.back() += " " + line.substr(line.find_first_not_of(' '));  // a wrapped frame
    }
  }
  if (signal.empty() || frames.empty()) return {};
  std::string text = "crash frames by " + debuggerName + ", " + signal + "\n" + kThreadLine + "\n";
  for (const std::string& f : frames) {
    const auto from = f.find(" from ");
    const std::string module = from == std::string::npos ? "" : f.substr(from + 6);
    // A frame with a source file has debug information: the program's own, or built with it.
    const FrameOwner owner = module.empty() ? FrameOwner::Program : frameOwner(module, "");
    text += f + " [" + std::string(frameOwnerName(owner)) + "]\n";
  }
  return outsideText(text);
}

bool isCrashText(const std::string& stacks) {
  return stacks.starts_with("crash frames by ");
}

namespace {

/// One frame line, gdb's or the crash text's: "#K  0xADDR in NAME (ARGS) at FILE:LINE from
/// MODULE [OWNER]" or "#K  NAME (ARGS) ..."; without an owner tag, by its module (none: the
/// program's, which gdb names by source file).
CrashFrame parseFrameLine(const std::string& line) {
  CrashFrame f;
  std::size_t start = line.find_first_not_of(' ', line.find(' '));
  if (start != std::string::npos && line.compare(start, 2, "0x") == 0) {
    const std::size_t inAt = line.find(" in ", start);
    start = inAt == std::string::npos ? std::string::npos : inAt + 4;
  }
  if (start != std::string::npos) {
    const std::size_t end = line.find(" (", start);
    f.function =
        withoutParameters(line.substr(start, end == std::string::npos ? end : end - start));
    if (f.function == "??") f.function.clear();
  }
  const auto from = line.find(" from ");
  const auto tag = line.rfind(" [");
  const bool tagged =
      tag != std::string::npos && line.ends_with("]") && (from == std::string::npos || tag > from);
  if (from != std::string::npos) {
    f.module = line.substr(from + 6, tagged ? tag - from - 6 : std::string::npos);
  }
  f.owner = f.module.empty() ? FrameOwner::Program : frameOwner(f.module, "");
  if (tagged) {
    const std::string name = line.substr(tag + 2, line.size() - tag - 3);
    for (const FrameOwner o :
         {FrameOwner::Program, FrameOwner::Runtime, FrameOwner::System, FrameOwner::Library}) {
      if (name == frameOwnerName(o)) f.owner = o;
    }
  }
  return f;
}

/// One "Thread ..." of `stacks`: whether its heading marks it as in a target's handler, and its
/// frames.
struct ThreadFrames {
  bool inHandler = false;
  std::vector<CrashFrame> frames;
};

/// The threads of `stacks`, in order.
std::vector<ThreadFrames> threadFrames(const std::string& stacks) {
  std::vector<ThreadFrames> threads;
  std::istringstream in(stacks);
  std::string line;
  while (std::getline(in, line)) {
    if (line.starts_with("Thread ")) {
      threads.push_back({line.ends_with(std::string(kInHandler) + ":"), {}});
    } else if (!threads.empty() && line.starts_with("#")) {
      threads.back().frames.push_back(parseFrameLine(line));
    }
  }
  return threads;
}

bool hasFrame(const std::vector<CrashFrame>& frames, const auto& which) {
  return std::any_of(frames.begin(), frames.end(), which);
}

}  // namespace

std::vector<CrashFrame> crashFrames(const std::string& stacks) {
  if (!isCrashText(stacks)) return {};
  std::vector<ThreadFrames> threads = threadFrames(stacks);
  return threads.empty() ? std::vector<CrashFrame>{} : std::move(threads.front().frames);
}

std::vector<CrashFrame> stuckFrames(const std::string& stacks) {
  if (isCrashText(stacks)) return {};
  std::vector<ThreadFrames> threads = threadFrames(stacks);
  const bool python = stacks.starts_with(kPythonStacksBy);
  const bool target = python || stacks.starts_with(kTargetStacksBy);
  // The program's threads. A target's client says which run the target's code; the runner's
  // run a gpufuzz:: function. A target's own answer without either has its program's frames.
  const std::vector<std::function<bool(const ThreadFrames&)>> rules{
      [](const ThreadFrames& t) { return t.inHandler; },
      [](const ThreadFrames& t) {
        return hasFrame(t.frames,
                        [](const CrashFrame& f) { return f.function.starts_with("gpufuzz::"); });
      },
      [target](const ThreadFrames& t) {
        return target && hasFrame(t.frames, [](const CrashFrame& f) {
                 return f.owner == FrameOwner::Program;
               });
      }};
  std::vector<std::vector<CrashFrame>*> ours;
  for (const auto& rule : rules) {
    for (ThreadFrames& t : threads) {
      if (rule(t)) ours.push_back(&t.frames);
    }
    if (!ours.empty()) break;
  }
  if (ours.empty()) return {};
  // Of several, the first inside a runtime's call: the others of a threaded run wait for it.
  std::vector<CrashFrame>* stuck = ours.front();
  for (std::vector<CrashFrame>* frames : ours) {
    const auto call = std::find_if(frames->begin(), frames->end(), [](const CrashFrame& f) {
      return f.owner == FrameOwner::Runtime || f.owner == FrameOwner::Program;
    });
    if (call != frames->end() && call->owner == FrameOwner::Runtime) {
      stuck = frames;
      break;
    }
  }
  std::vector<CrashFrame> frames = std::move(*stuck);
  // A Python target's top frames are its own: the standard library's and the client library's
  // differ with the Python and the client, not with the bug.
  if (python && hasFrame(frames, [](const CrashFrame& f) { return f.owner != FrameOwner::System; }))
    std::erase_if(frames, [](const CrashFrame& f) { return f.owner == FrameOwner::System; });
  return frames;
}

std::string frameSite(const std::string& stacks) {
  const std::vector<CrashFrame> frames =
      isCrashText(stacks) ? crashFrames(stacks) : stuckFrames(stacks);
  if (std::string runtime = runtimeTopFrame(frames); !runtime.empty()) return runtime;
  if (std::string program = programTopFrame(frames); !program.empty()) return program;
  const std::vector<std::string> state = crashState(stacks, 1);
  return state.empty() ? std::string() : state.front();
}

std::vector<std::string> crashState(const std::string& stacks, std::size_t count) {
  return frameState(crashFrames(stacks), count);
}

std::vector<std::string> stuckState(const std::string& stacks, std::size_t count) {
  return frameState(stuckFrames(stacks), count);
}

std::vector<std::string> frameState(const std::vector<CrashFrame>& frames, std::size_t count) {
  // The handling frames on top go: raise inside abort, an assertion's, a terminate handler's.
  std::size_t first = 0;
  while (first < frames.size() && isHandlingFrame(frames[first]))
    ++first;
  // So do the system's frames on top of a caller of another owner: a crash in pthread_spin_lock
  // or free under cuMemPoolDestroy is cuMemPoolDestroy's; otherwise one driver fault splits
  // into two causes.
  std::size_t caller = first;
  while (caller < frames.size() && frames[caller].owner == FrameOwner::System)
    ++caller;
  if (caller < frames.size()) first = caller;
  std::vector<std::string> state;
  for (std::size_t i = first; i < frames.size() && state.size() < count; ++i) {
    // Every call into a runtime goes through the seam: its frame tells no two crashes apart.
    if (isSeamFrame(frames[i])) continue;
    std::string name = stateName(frames[i]);
    if (!state.empty() && state.back() == name) continue;
    state.push_back(std::move(name));
  }
  return state;
}

namespace {

std::string firstOf(const std::vector<CrashFrame>& frames, FrameOwner owner) {
  for (const CrashFrame& f : frames) {
    if (f.owner == owner && !isHandlingFrame(f)) return stateName(f);
  }
  return {};
}

}  // namespace

std::string runtimeTopFrame(const std::vector<CrashFrame>& frames) {
  // A named frame says more than "in libcuda.so.1": the entry point the program called.
  for (const CrashFrame& f : frames) {
    if (f.owner == FrameOwner::Runtime && !f.function.empty()) return f.function;
  }
  return firstOf(frames, FrameOwner::Runtime);
}

std::string programTopFrame(const std::vector<CrashFrame>& frames) {
  return firstOf(frames, FrameOwner::Program);
}

std::string runtimeEntry(const std::string& stacks) {
  const std::vector<CrashFrame> frames =
      isCrashText(stacks) ? crashFrames(stacks) : stuckFrames(stacks);
  auto it = std::find_if(frames.begin(), frames.end(),
                         [](const CrashFrame& f) { return f.owner == FrameOwner::Runtime; });
  std::string entry;
  // The system's frames inside the runtime (a lock, a free) belong to the run.
  for (; it != frames.end() && it->owner != FrameOwner::Program && it->owner != FrameOwner::Library;
       ++it) {
    if (it->owner == FrameOwner::Runtime && !it->function.empty()) entry = it->function;
  }
  return entry;
}

}  // namespace gpufuzz
