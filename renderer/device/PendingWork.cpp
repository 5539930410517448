// PendingWork.cpp: the one wording of a wait that returned early.
#include "renderer/device/PendingWork.h"

namespace gpufuzz {

std::string describePendingCommands(const std::vector<PendingCommand>& commands) {
  if (commands.size() == 1) {
    return "1 command enqueued before it was " + commands[0].state + " (" + commands[0].call + ")";
  }
  constexpr std::size_t kListed = 8;
  std::string text =
      std::to_string(commands.size()) + " commands enqueued before it were not complete: ";
  for (std::size_t i = 0; i < commands.size() && i < kListed; ++i) {
    if (i > 0) text += ", ";
    text += commands[i].call + " " + commands[i].state;
  }
  if (commands.size() > kListed) text += ", ...";
  return text;
}

}  // namespace gpufuzz
