// PendingWork.h: what a wait left unfinished, as every backend reports it to the seam, which
// turns it into the error "<waitCall> returned while <pending>".
#pragma once

#include <string>
#include <vector>

namespace gpufuzz {

struct PendingWork {
  std::string waitCall;  // "clFinish", "cuStreamSynchronize"
  std::string pending;   // "1 command enqueued before it was CL_QUEUED (clEnqueueWriteBuffer)"
};

/// One command a wait should have completed, in the runtime's words.
struct PendingCommand {
  std::string call;   // what enqueued it: "clEnqueueWriteBuffer", "upload"
  std::string state;  // where it stands: "CL_QUEUED", "still queued"
};

/// "1 command enqueued before it was CL_QUEUED (clEnqueueWriteBuffer)", or for several
/// "3 commands enqueued before it were not complete: clEnqueueWriteBuffer CL_QUEUED, ...";
/// at most 8 are listed. `commands` must not be empty.
std::string describePendingCommands(const std::vector<PendingCommand>& commands);

}  // namespace gpufuzz
