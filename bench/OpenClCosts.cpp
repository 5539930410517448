// OpenClCosts.cpp: gpufuzz-opencl-costs, where a fresh process's time goes on an OpenCL device
// before its first draw completes: loading the ICD loader, platform start-up (enumeration, which
// loads every vendor's runtime), the first context, building the raster program from source and,
// for a second context, from the kept binary, and the first draw read back. One process measures
// one cold start, as a child of the harness pays it; gpufuzz-bench-throughput runs it several
// times and publishes the medians.
//
//   gpufuzz-opencl-costs DEVICE OUT.json
#include <chrono>
#include <cstdio>
#include <fstream>
#include <string>

#include "renderer/GpuRenderer.h"
#include "renderer/device/Device.h"
#include "renderer/opencl/OpenClBackend.h"
#include "renderer/opencl/RasterProgram.h"

namespace {

using Clock = std::chrono::steady_clock;

double msBetween(Clock::time_point a, Clock::time_point b) {
  return std::chrono::duration<double, std::milli>(b - a).count();
}

}  // namespace

int main(int argc, char** argv) {
  using namespace gpufuzz;
  if (argc != 3) {
    std::fprintf(stderr, "usage: gpufuzz-opencl-costs DEVICE OUT.json\n");
    return 2;
  }
  try {
    const auto t0 = Clock::now();
    const OpenClApi& api = openClApi();
    const auto t1 = Clock::now();
    auto backend = std::make_unique<OpenClBackend>(api, argv[1]);
    const auto t2 = Clock::now();
    const std::string identity = backend->device().identity();
    Device device(std::move(backend));
    const ContextId ctx = device.createContext();
    const auto t3 = Clock::now();
    device.destroyContext(ctx);
    double firstDraw = 0;
    for (int i = 0; i < 2; ++i) {
      const auto start = Clock::now();
      GpuRenderer r(device, 64, 64, TeardownPolicy::Shipped);
      r.draw(4, 1);
      r.readBack();
      r.release();
      if (i == 0) firstDraw = msBetween(start, Clock::now());
    }
    const auto t4 = Clock::now();
    const opencl::ProgramBuildCosts builds = opencl::programBuildCosts();
    std::ofstream out(argv[2]);
    out << "{\"device\": \"" << identity << "\", \"loader_ms\": " << msBetween(t0, t1)
        << ", \"platforms_ms\": " << msBetween(t1, t2) << ", \"context_ms\": " << msBetween(t2, t3)
        << ", \"source_build_ms\": " << builds.sourceMs
        << ", \"binary_build_ms\": " << builds.binaryMs << ", \"first_renderer_ms\": " << firstDraw
        << ", \"total_ms\": " << msBetween(t0, t4) << "}\n";
    return out ? 0 : 3;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "gpufuzz-opencl-costs: %s\n", e.what());
    return 2;
  }
}
