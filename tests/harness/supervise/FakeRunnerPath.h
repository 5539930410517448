// FakeRunnerPath.h: where the supervision tests find gpufuzz-fake-runner (FakeRunner.cpp), the
// stand-in child they supervise: next to the test executable, as tests/ProjectPaths.h decides.
#pragma once

#include <string>

#include "tests/ProjectPaths.h"

namespace gpufuzz::testing {

inline const std::string kFakeRunner = (binDir() / "gpufuzz-fake-runner").string();

}  // namespace gpufuzz::testing
