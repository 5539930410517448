// RasterProgram.h: the raster kernel as an OpenCL program: its source (RasterKernel.cl with the
// shared raster arithmetic inlined at build time), its argument layout, and building it.
//
// Building is the expensive step (pocl: ~450 ms cold, 100-150 ms from source even with its
// kernel cache warm, measured by gpufuzz-opencl-costs), and the harness starts a fresh process
// per sequence. A cl_program belongs to one context, so each context needs its own: the first
// build per device compiles the source and keeps the binary (CL_PROGRAM_BINARIES), in the process
// for later contexts and on disk for later processes (GPUFUZZ_OPENCL_CACHE=DIR, default
// $XDG_CACHE_HOME/gpufuzz/opencl or ~/.cache/gpufuzz/opencl; `off` disables it), keyed by the
// source and the device's name, version and driver version. Every other build is from that
// binary (~2 ms on pocl); a kept binary the runtime refuses is rebuilt from source. Costs are
// counted so the throughput benchmark can say where a child's time goes.
#pragma once

#include <cstdint>

#include "renderer/device/CallPoint.h"
#include "renderer/opencl/OpenClApi.h"

namespace gpufuzz::opencl {

inline constexpr const char* kRasterKernelName = "gpufuzzRaster";

/// Argument indices of gpufuzzRaster (RasterKernel.cl).
inline constexpr cl_uint kArgFramebuffer = 0;
inline constexpr cl_uint kArgTriangles = 1;
inline constexpr cl_uint kArgFirstTexture = 2;  // 16 texture buffers follow
inline constexpr cl_uint kArgTextureCount = 18;
inline constexpr cl_uint kArgTextureSize = 19;
inline constexpr cl_uint kArgWidth = 20;
inline constexpr cl_uint kArgHeight = 21;
inline constexpr cl_uint kArgTriangleCount = 22;
inline constexpr cl_uint kArgCorruptXor = 23;

/// RasterKernel.cl with renderer/RasterCore.h inlined (generated at build time).
extern const char kRasterSource[];

/// Where this process's program builds went.
struct ProgramBuildCosts {
  uint32_t fromSource = 0;
  uint32_t fromBinary = 0;
  double sourceMs = 0;  // total over the source builds
  double binaryMs = 0;  // total over the binary builds
};

/// A built raster program for `context` on `device` (see above). Throws DeviceError at
/// `point` naming the call that failed; a failed build carries the compiler's log.
cl_program buildRasterProgram(const OpenClApi& api, cl_context context, cl_device_id device,
                              CallPoint point);

/// Any program of the project's built as the raster program is (above): from `source` once per
/// device and process, from its kept binary after that, on disk as `cacheName-KEY.bin`. `source`
/// must be a string with static storage: the process's cache is keyed by its address.
cl_program buildCachedProgram(const OpenClApi& api, cl_context context, cl_device_id device,
                              const char* source, const char* cacheName, CallPoint point);

/// Where this process's builds went, every program's together.
ProgramBuildCosts programBuildCosts();

}  // namespace gpufuzz::opencl
