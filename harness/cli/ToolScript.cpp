// ToolScript.cpp: the drawing tools found and run (posix_spawn: safe from a threaded campaign).
#include "harness/cli/ToolScript.h"

#include <fcntl.h>
#include <spawn.h>
#include <sys/wait.h>

#include <cerrno>

#include "harness/search/Trial.h"
#include "renderer/device/DeviceError.h"

extern char** environ;

namespace gpufuzz {

std::filesystem::path toolScript(const std::string& name) {
  const auto beside = executableDir() / name;
  if (std::filesystem::exists(beside)) return beside;
  return std::filesystem::path(GPUFUZZ_TOOLS_DIR) / name;
}

int runToolScript(const std::string& name, const std::vector<std::string>& args, bool quiet) {
  const std::string script = toolScript(name).string();
  std::vector<char*> argv{const_cast<char*>(script.c_str())};
  for (const std::string& a : args)
    argv.push_back(const_cast<char*>(a.c_str()));
  argv.push_back(nullptr);
  posix_spawn_file_actions_t actions;
  posix_spawn_file_actions_init(&actions);
  if (quiet) {
    posix_spawn_file_actions_addopen(&actions, 1, "/dev/null", O_WRONLY, 0);
    posix_spawn_file_actions_addopen(&actions, 2, "/dev/null", O_WRONLY, 0);
  }
  // A campaign's pipes to its children stay out of the tool.
  posix_spawn_file_actions_addclosefrom_np(&actions, 3);
  pid_t pid = 0;
  const int error = ::posix_spawn(&pid, script.c_str(), &actions, nullptr, argv.data(), environ);
  posix_spawn_file_actions_destroy(&actions);
  if (error != 0) {
    throw DeviceUnavailable("cannot run " + script + " (python3 with matplotlib draws it)");
  }
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  return WIFEXITED(status) ? WEXITSTATUS(status) : -1;
}

}  // namespace gpufuzz
