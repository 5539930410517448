// TeardownBench.cpp: gpufuzz-bench-teardown, the latency of dropping a GpuRenderer, by backend,
// policy, number and size of textures and queued draws, against the bare minimum of backend calls
// for the same state (synchronize, free each buffer, destroy the context), measured in the same
// run so that the cost of the shipped defenses is a ratio at each parameter point.
//
// Cases are named teardown/BACKEND/SUBJECT/textures:N/size:S/draws:K. SUBJECT is a policy (the
// renderer's GpuRenderer::release(), what dropping it runs, on a Device without interceptors),
// `bare` (the minimal calls on the Backend itself) or, on sim, `seam` (the same minimal calls
// through the Device, which tells the seam's cost from the renderer's). Each iteration builds its
// state untimed on a fresh backend: the framebuffer and vertex buffer, N textures of S x S texels
// uploaded and waited for, then K draws queued without a wait. Only the teardown is timed, with a
// steady clock. Every case first tears one state down untimed, so that no first-use cost lands in
// its samples. The samples give the p50_us, p99_us, mean_us, min_us and max_us counters (p99 is
// the nearest-rank percentile: with few iterations it is the slowest one).
//
// The CUDA backends' cases, cuda (a context per renderer: the teardown ends in cuCtxDestroy) and
// cuda-async (a stream and a memory pool on the retained primary context: the teardown ends in
// cuStreamDestroy and cuMemPoolDestroy), share one reduced matrix and one workload, so that the two
// read side by side. Each backend's cases are registered only when it is usable; otherwise stderr
// says why they were skipped, and so does the JSON's context (key `cuda` or `cuda-async`: measured,
// or skipped: why). A teardown that fails (context-first on cuda: cuCtxDestroy frees the
// context's buffers, so the frees that follow are errors) ends its case with the error recorded
// in the JSON (error_occurred, error_message) instead of ending the run. --cuda_iterations=N
// sets the teardowns per case on either CUDA backend (20).
#include <benchmark/benchmark.h>

#include <malloc.h>
#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdint>
#include <cstdlib>
#include <exception>
#include <iostream>
#include <memory>
#include <numeric>
#include <optional>
#include <span>
#include <string>
#include <type_traits>
#include <vector>

#include "renderer/Backends.h"
#include "renderer/GpuRenderer.h"
#include "renderer/Raster.h"
#include "renderer/TeardownPolicy.h"
#include "renderer/device/Backend.h"
#include "renderer/device/Device.h"
#include "renderer/device/DeviceError.h"

namespace gpufuzz {
namespace {

using Clock = std::chrono::steady_clock;

constexpr uint32_t kSeed = 0x7ea4d0c5U;

/// What the renderer holds and what is queued when it is dropped. `textureSize` is 0 when there
/// are no textures.
struct Point {
  uint32_t textures = 0;
  uint32_t textureSize = 0;
  uint32_t draws = 0;
};

/// The CUDA backends, which share the reduced matrix, the iterations and the workload.
bool isCuda(std::string_view backend) {
  return backend == "cuda" || backend == "cuda-async";
}

/// What one draw is on a backend. On sim a draw is rasterized on the CPU when the queue is waited
/// for, on the CUDA backends it is a kernel on the GPU, so the same "heavy" queue needs different
/// sizes.
struct Workload {
  uint32_t side = 0;  // the framebuffer is side x side
  uint32_t trianglesPerDraw = 0;
};

Workload workloadOf(std::string_view backend) {
  if (isCuda(backend)) return Workload{1024, 256};
  return Workload{64, 16};
}

/// What a case tears down: a renderer under a policy, or the minimal calls on the backend (bare)
/// or through the Device seam (seam).
enum class Subject : uint8_t { Renderer, Bare, Seam };

/// One benchmark case.
struct Case {
  std::string backend;
  Subject subject = Subject::Bare;
  TeardownPolicy policy = TeardownPolicy::Shipped;  // for Subject::Renderer
  Point point;
  Workload workload;
  int64_t iterations = 0;

  std::string subjectName() const {
    switch (subject) {
      case Subject::Renderer:
        return std::string(policyName(policy));
      case Subject::Bare:
        return "bare";
      case Subject::Seam:
        return "seam";
    }
    return "?";
  }
  std::string name() const {
    return "teardown/" + backend + "/" + subjectName() +
           "/textures:" + std::to_string(point.textures) +
           "/size:" + std::to_string(point.textureSize) + "/draws:" + std::to_string(point.draws);
  }
};

std::span<const std::byte> bytesOf(const auto& container) {
  return std::as_bytes(std::span(container));
}

/// A GpuRenderer under a policy on a Device (no interceptors) over a fresh backend, with its
/// textures uploaded and waited for, then `draws` draws queued without a wait.
class RendererState {
 public:
  explicit RendererState(const Case& c) : device_(makeBackend(c.backend)) {
    renderer_.emplace(device_, c.workload.side, c.workload.side, c.policy);
    if (c.point.textures > 0) renderer_->setTextures(c.point.textures, c.point.textureSize, kSeed);
    renderer_->sync();
    for (uint32_t k = 0; k < c.point.draws; ++k)
      renderer_->draw(c.workload.trianglesPerDraw, kSeed + k);
  }
  void tearDown() { renderer_->release(); }

 private:
  Device device_;
  std::optional<GpuRenderer> renderer_;  // destroyed before the device: nothing left to release
};

/// The same buffers, contents and queued work as the renderer's, made with the same calls in the
/// same order and the same host allocations (so that the host heap is in the same shape when the
/// teardown frees memory), and torn down with the fewest calls that release everything. `Calls`
/// is Backend (the bare minimum) or Device (the same calls through the seam, to tell the seam's
/// cost from the renderer's).
template <typename Calls>
class MinimalState {
 public:
  explicit MinimalState(const Case& c) : calls_(make(c.backend)) {
    Calls& d = *calls_;
    const uint32_t side = c.workload.side;
    context_ = d.createContext();
    {
      const std::vector<uint32_t> clear(uint64_t{side} * side, 0U);
      framebuffer_ = d.allocBuffer(context_, clear.size() * 4);
      vertices_ = d.allocBuffer(context_, raster::kMaxTriangles * sizeof(raster::Triangle));
      d.copyToDevice(context_, framebuffer_, bytesOf(clear));
      d.synchronize(context_);
    }
    const uint32_t size = c.point.textureSize;
    std::vector<uint32_t> texels(uint64_t{size} * size);
    for (uint32_t t = 0; t < c.point.textures; ++t) {
      textures_.push_back(d.allocBuffer(context_, texels.size() * 4));
      for (uint32_t y = 0; y < size; ++y) {
        for (uint32_t x = 0; x < size; ++x)
          texels[uint64_t{y} * size + x] = raster::texel(kSeed, t, x, y);
      }
      d.copyToDevice(context_, textures_.back(), bytesOf(texels));
    }
    texels = {};
    d.synchronize(context_);
    for (uint32_t k = 0; k < c.point.draws; ++k) {
      std::vector<raster::Triangle> triangles(c.workload.trianglesPerDraw);
      for (uint32_t i = 0; i < c.workload.trianglesPerDraw; ++i)
        triangles[i] = raster::makeTriangle(kSeed + k, i, side, side);
      d.copyToDevice(context_, vertices_, bytesOf(triangles));
      RasterLaunch launch;
      launch.framebuffer = framebuffer_;
      launch.vertices = vertices_;
      launch.textureCount = static_cast<uint32_t>(textures_.size());
      std::copy(textures_.begin(), textures_.end(), launch.textures);
      launch.textureSize = size;
      launch.width = side;
      launch.height = side;
      launch.triangleCount = c.workload.trianglesPerDraw;
      d.launch(context_, launch);
    }
  }
  [[gnu::noinline]] void tearDown() {
    Calls& d = *calls_;
    d.synchronize(context_);
    for (BufferId texture : textures_)
      d.freeBuffer(texture);
    d.freeBuffer(vertices_);
    d.freeBuffer(framebuffer_);
    d.destroyContext(context_);
  }

 private:
  static std::unique_ptr<Calls> make(const std::string& backend) {
    if constexpr (std::is_same_v<Calls, Device>) {
      return std::make_unique<Device>(makeBackend(backend));
    } else {
      return makeBackend(backend);
    }
  }

  std::unique_ptr<Calls> calls_;
  ContextId context_ = 0;
  BufferId framebuffer_ = 0;
  BufferId vertices_ = 0;
  std::vector<BufferId> textures_;
};

/// Nearest-rank percentile of sorted samples.
double percentile(const std::vector<double>& sorted, double p) {
  const auto rank = static_cast<std::size_t>(std::ceil(p * static_cast<double>(sorted.size())));
  return sorted[std::clamp<std::size_t>(rank, 1, sorted.size()) - 1];
}

void publish(benchmark::State& state, const Case& c, std::vector<double> samples) {
  state.counters["textures"] = c.point.textures;
  state.counters["texture_size"] = c.point.textureSize;
  state.counters["draws"] = c.point.draws;
  state.counters["buffers"] = c.point.textures + 2;
  state.counters["side"] = c.workload.side;
  state.counters["triangles_per_draw"] = c.workload.trianglesPerDraw;
  if (samples.empty()) return;
  std::sort(samples.begin(), samples.end());
  const double mean =
      std::accumulate(samples.begin(), samples.end(), 0.0) / static_cast<double>(samples.size());
  state.counters["p50_us"] = percentile(samples, 0.50) * 1e6;
  state.counters["p99_us"] = percentile(samples, 0.99) * 1e6;
  state.counters["mean_us"] = mean * 1e6;
  state.counters["min_us"] = samples.front() * 1e6;
  state.counters["max_us"] = samples.back() * 1e6;
}

/// Builds a State, tears it down, and returns the teardown's seconds. A failure in either part
/// ends the case with the error recorded.
template <typename State>
std::optional<double> teardownOnce(benchmark::State& state, const Case& c) {
  std::unique_ptr<State> built;
  try {
    built = std::make_unique<State>(c);
  } catch (const std::exception& e) {
    state.SkipWithError(("setup failed: " + std::string(e.what())).c_str());
    return std::nullopt;
  }
  const Clock::time_point start = Clock::now();
  try {
    built->tearDown();
  } catch (const std::exception& e) {
    state.SkipWithError(("teardown does not complete on " + c.backend + ": " + e.what()).c_str());
    return std::nullopt;
  }
  const Clock::time_point stop = Clock::now();
  return std::chrono::duration<double>(stop - start).count();
}

template <typename State>
void runCase(benchmark::State& state, const Case& c) {
  std::vector<double> samples;
  samples.reserve(static_cast<std::size_t>(c.iterations));
  const bool warm = teardownOnce<State>(state, c).has_value();
  for (auto _ : state) {
    if (!warm) break;
    const std::optional<double> seconds = teardownOnce<State>(state, c);
    if (!seconds) break;
    state.SetIterationTime(*seconds);
    samples.push_back(*seconds);
  }
  publish(state, c, std::move(samples));
}

/// Teardowns per case on the CUDA backends, where each costs a context create and destroy on cuda
/// (about 0.2 s): --cuda_iterations=N.
int64_t cudaIterations = 20;

/// Enough teardowns for a stable p50 while the whole matrix stays short: on sim an iteration is
/// dominated by making big textures and rasterizing the queued draws.
int64_t iterationsFor(std::string_view backend, const Point& p) {
  if (isCuda(backend)) return cudaIterations;
  if (uint64_t{p.textures} * p.textureSize * p.textureSize >= (1U << 20)) return 40;
  if (p.draws >= 64) return 60;
  return 200;
}

/// The points of a backend's matrix, and the policies each is measured under: shipped and bare
/// everywhere; the other policies where the textures are small (or absent).
std::vector<Case> casesFor(std::string_view backend) {
  std::vector<Point> points;
  const bool cuda = isCuda(backend);
  if (!cuda) {
    for (uint32_t draws : {0U, 1U, 8U, 64U}) {
      points.push_back(Point{0, 0, draws});
      for (uint32_t size : {64U, 512U}) {
        for (uint32_t textures : {1U, 4U, 16U})
          points.push_back(Point{textures, size, draws});
      }
    }
  } else {
    // Each context costs ~0.2 s on cuda (and cuda-async is measured at the same points): the
    // queued-work sweep at 4 textures, the buffer sweep with nothing queued and with heavy work
    // queued, and one small-texture point.
    for (uint32_t draws : {0U, 1U, 8U, 64U})
      points.push_back(Point{4, 512, draws});
    for (uint32_t draws : {0U, 64U}) {
      points.push_back(Point{0, 0, draws});
      points.push_back(Point{1, 512, draws});
      points.push_back(Point{16, 512, draws});
    }
    points.push_back(Point{16, 64, 0});
  }
  const auto allPolicies = [&](const Point& p) {
    if (cuda) return p.textures == 4 && (p.draws == 0 || p.draws == 64);
    return p.textureSize <= 64;
  };

  std::vector<Case> cases;
  const Workload workload = workloadOf(backend);
  for (const Point& p : points) {
    const int64_t iterations = iterationsFor(backend, p);
    const std::string name(backend);
    const auto add = [&](Subject subject, TeardownPolicy policy) {
      cases.push_back(Case{name, subject, policy, p, workload, iterations});
    };
    add(Subject::Bare, TeardownPolicy::Shipped);
    add(Subject::Renderer, TeardownPolicy::Shipped);
    // The seam's bookkeeping is a fixed cost per call: it shows only next to sim's short
    // teardowns, and a cuda context is too dear to spend on it (cuda-async keeps cuda's matrix).
    if (!cuda) add(Subject::Seam, TeardownPolicy::Shipped);
    if (!allPolicies(p)) continue;
    for (TeardownPolicy policy : {TeardownPolicy::ContextFirst, TeardownPolicy::NoDestroySync,
                                  TeardownPolicy::NoTextureWait})
      add(Subject::Renderer, policy);
  }
  return cases;
}

void registerCases(std::string_view backend) {
  for (const Case& c : casesFor(backend)) {
    const auto run = [c](benchmark::State& state) {
      switch (c.subject) {
        case Subject::Renderer:
          runCase<RendererState>(state, c);
          break;
        case Subject::Bare:
          runCase<MinimalState<Backend>>(state, c);
          break;
        case Subject::Seam:
          runCase<MinimalState<Device>>(state, c);
          break;
      }
    };
    benchmark::RegisterBenchmark(c.name().c_str(), run)
        ->UseManualTime()
        ->Iterations(c.iterations)
        ->Unit(benchmark::kMicrosecond);
  }
  const Workload w = workloadOf(backend);
  benchmark::AddCustomContext("workload_" + std::string(backend),
                              "framebuffer " + std::to_string(w.side) + "x" +
                                  std::to_string(w.side) + ", " +
                                  std::to_string(w.trianglesPerDraw) + " triangles per draw");
}

/// Registers a CUDA backend's cases when that backend can be made here, and says in the JSON's
/// context (key: the backend's name) whether they are measured or skipped, and why.
void registerIfUsable(std::string_view backend) {
  std::string status = "measured";
  try {
    makeBackend(backend);
    registerCases(backend);
  } catch (const DeviceUnavailable& e) {
    status = std::string("skipped: ") + e.what();
    std::cerr << "gpufuzz-bench-teardown: " << backend
              << " cases skipped, no usable CUDA device: " << e.what() << '\n';
  }
  benchmark::AddCustomContext(std::string(backend), status);
}

}  // namespace
}  // namespace gpufuzz

namespace {

/// Takes --cuda_iterations=N out of argv (Google Benchmark rejects flags it does not know).
bool takeOwnFlags(int& argc, char** argv) {
  constexpr std::string_view kFlag = "--cuda_iterations=";
  int kept = 1;
  for (int i = 1; i < argc; ++i) {
    const std::string_view arg = argv[i];
    if (!arg.starts_with(kFlag)) {
      argv[kept++] = argv[i];
      continue;
    }
    const std::string value(arg.substr(kFlag.size()));
    char* end = nullptr;
    const long long n = std::strtoll(value.c_str(), &end, 10);
    if (value.empty() || *end != '\0' || n < 1) {
      std::cerr << "gpufuzz-bench-teardown: " << arg << ": expected a positive integer\n";
      return false;
    }
    gpufuzz::cudaIterations = n;
  }
  argc = kept;
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  // Freed memory stays in the heap instead of going back to the kernel: otherwise whether a free
  // in a timed teardown (sim's buffer storage) unmaps pages depends on the heap's history, which
  // differs between cases, and the munmap dwarfs the teardown itself.
  mallopt(M_MMAP_THRESHOLD, 32 << 20);
  mallopt(M_TRIM_THRESHOLD, 1 << 30);
  benchmark::Initialize(&argc, argv);
  if (!takeOwnFlags(argc, argv)) return 2;
  if (benchmark::ReportUnrecognizedArguments(argc, argv)) return 2;
  benchmark::AddCustomContext("teardown",
                              "policies: GpuRenderer::release() on a Device without "
                              "interceptors; bare: Backend synchronize, free each buffer, "
                              "destroy the context; seam: the bare calls through a Device");
  gpufuzz::registerCases("sim");
  for (const std::string_view backend : {"cuda", "cuda-async"})
    gpufuzz::registerIfUsable(backend);
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();
  return 0;
}
