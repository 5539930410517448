// Explain.cpp: `gpufuzz explain FILE`.
#include <cstdio>

#include "harness/Commands.h"

namespace gpufuzz {

int runExplain(Session&) {
  std::fprintf(stderr, "gpufuzz: explain is not available in this build\n");
  return 3;
}

}  // namespace gpufuzz
