/* cuda-async-pool-teardown.c: the driver calls the cuda-async backend makes for
 * ../nvidia-580/pool-teardown-at-end.seq (traced through tests/gpu/fake-libcuda), in the same
 * order, with nothing of the project: does the driver alone crash at the teardown? Every call is
 * valid by the driver API's documentation of the stream-ordered allocator: a pool destroyed
 * (cuMemPoolDestroy) while an allocation from it is outstanding returns at once and is released
 * with the last allocation; that allocation, its own stream destroyed, is freed on another stream
 * (cuMemFreeAsync) and waited for.
 *
 *   cc -O2 -I/usr/local/cuda/include -o pool-teardown cuda-async-pool-teardown.c \
 *      -L/usr/local/cuda/lib64/stubs -lcuda
 *   ./pool-teardown ROUNDS VARIANT      (ROUNDS rounds in one process, as --persistent runs)
 *
 * VARIANT:
 *   as-found      the sequence as the backend runs it (default)
 *   free-first    the same, but b0 is freed on c2's own stream before c2's destroy (control: no
 *                 pool is destroyed with an allocation outstanding)
 *   no-orphan-free  the same as as-found but b0 is never freed (its pool is never released)
 *   fresh-stream  b0 freed on a stream made for that free and destroyed after it, instead of the
 *                 one release stream kept for the process
 *   no-module     as-found without the module the backend loads at its start (a kernel that
 *                 does nothing here; no sequence of this one launches it)
 *   no-upload     as-found without the renderers' upload of their cleared framebuffer
 * Prints "round N ok" after each round and "done" at the end; exit status 0 when every call
 * succeeded, 1 at the first failed call (named), and the signal's if the driver crashes.
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static const char* variant = "as-found";

static void check(CUresult r, const char* call, int line) {
  if (r == CUDA_SUCCESS) return;
  const char* name = NULL;
  cuGetErrorName(r, &name);
  printf("line %d: %s: %s\n", line, call, name ? name : "unknown error");
  exit(1);
}
#define CHECK(call) check((call), #call, __LINE__)

static CUcontext primary;
static CUstream releaseStream;

/* A context of the backend: a non-blocking stream and a pool of its own. */
typedef struct {
  CUstream stream;
  CUmemoryPool pool;
} Ctx;

/* A renderer: its context, a 64 x 64 framebuffer and room for 1024 triangles of 48 bytes. */
typedef struct {
  Ctx ctx;
  CUdeviceptr framebuffer, vertices;
} Renderer;

static void current(void) {
  CHECK(cuCtxSetCurrent(primary));
}

static Ctx ctxCreate(void) {
  Ctx c;
  current();
  CHECK(cuStreamCreate(&c.stream, CU_STREAM_NON_BLOCKING));
  CUmemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CHECK(cuMemPoolCreate(&c.pool, &props));
  return c;
}

/* The wait, the stream's state after it, the stream's destroy, the pool's destroy. */
static void ctxDestroy(Ctx* c) {
  current();
  CHECK(cuStreamSynchronize(c->stream));
  CHECK(cuStreamQuery(c->stream));
  CHECK(cuStreamDestroy(c->stream));
  CHECK(cuMemPoolDestroy(c->pool));
}

static CUdeviceptr bufCreate(Ctx* c, size_t bytes) {
  CUdeviceptr p = 0;
  current();
  CHECK(cuMemAllocFromPoolAsync(&p, bytes, c->pool, c->stream));
  return p;
}

static unsigned char clearPixels[64 * 64 * 4];

static Renderer create(void) {
  Renderer r;
  r.ctx = ctxCreate();
  r.framebuffer = bufCreate(&r.ctx, sizeof clearPixels);
  r.vertices = bufCreate(&r.ctx, 1024 * 48);
  if (strcmp(variant, "no-upload") != 0) {
    current();
    CHECK(cuMemcpyHtoDAsync(r.framebuffer, clearPixels, sizeof clearPixels, r.ctx.stream));
  }
  current();
  CHECK(cuStreamSynchronize(r.ctx.stream));
  CHECK(cuStreamQuery(r.ctx.stream));
  return r;
}

/* The shipped teardown: wait, free the buffers on the renderer's stream, destroy the context. */
static void destroy(Renderer* r) {
  current();
  CHECK(cuStreamSynchronize(r->ctx.stream));
  CHECK(cuStreamQuery(r->ctx.stream));
  current();
  CHECK(cuMemFreeAsync(r->vertices, r->ctx.stream));
  current();
  CHECK(cuMemFreeAsync(r->framebuffer, r->ctx.stream));
  ctxDestroy(&r->ctx);
}

/* A buffer whose context was destroyed: freed on the release stream and waited for. */
static void freeOrphan(CUdeviceptr p) {
  current();
  if (strcmp(variant, "fresh-stream") == 0) {
    CUstream s;
    CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CHECK(cuMemFreeAsync(p, s));
    CHECK(cuStreamSynchronize(s));
    CHECK(cuStreamDestroy(s));
    return;
  }
  CHECK(cuMemFreeAsync(p, releaseStream));
  CHECK(cuStreamSynchronize(releaseStream));
}

/* ../nvidia-580/pool-teardown-at-end.seq, then the release of its leftovers. */
static void round_(void) {
  Renderer r0 = create();
  destroy(&r0);
  Ctx c0 = ctxCreate();
  Renderer r1 = create();
  destroy(&r1);
  Ctx c1 = ctxCreate();
  Renderer r2 = create();
  Renderer r3 = create();
  destroy(&r3);
  Ctx c2 = ctxCreate();
  ctxDestroy(&c1);
  destroy(&r2);
  CUdeviceptr b0 = bufCreate(&c2, 256);
  int freeFirst = strcmp(variant, "free-first") == 0;
  if (freeFirst) {
    current();
    CHECK(cuMemFreeAsync(b0, c2.stream));
  }
  ctxDestroy(&c2);
  if (!freeFirst && strcmp(variant, "no-orphan-free") != 0) freeOrphan(b0);
  Ctx c3 = ctxCreate();
  Ctx c4 = ctxCreate();
  Renderer r4 = create();
  /* end: renderers, then bare contexts, each in creation order */
  destroy(&r4);
  ctxDestroy(&c0);
  ctxDestroy(&c3);
  ctxDestroy(&c4);
}

/* A kernel that does nothing: the backend loads a module too, and that may matter. */
static const char kPtx[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry noop()\n{\n  ret;\n}\n";

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 1;
  if (argc > 2) variant = argv[2];
  static const char* const kVariants[] = {"as-found",     "free-first", "no-orphan-free",
                                          "fresh-stream", "no-module",  "no-upload"};
  int known = 0;
  for (size_t i = 0; i < sizeof kVariants / sizeof kVariants[0]; ++i)
    known = known || strcmp(variant, kVariants[i]) == 0;
  if (!known) {
    fprintf(stderr, "unknown variant '%s'\n", variant);
    return 2;
  }
  CUdevice device;
  CUmodule module = NULL;
  CUfunction function;
  const int withModule = strcmp(variant, "no-module") != 0;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&device, 0));
  CHECK(cuDevicePrimaryCtxRetain(&primary, device));
  current();
  CHECK(cuStreamCreate(&releaseStream, CU_STREAM_NON_BLOCKING));
  if (withModule) {
    CHECK(cuModuleLoadData(&module, kPtx));
    CHECK(cuModuleGetFunction(&function, module, "noop"));
  }
  for (int i = 1; i <= rounds; ++i) {
    round_();
    printf("round %d ok\n", i);
    fflush(stdout);
  }
  /* The backend's destructor at the process's end. */
  current();
  CHECK(cuStreamSynchronize(releaseStream));
  CHECK(cuStreamDestroy(releaseStream));
  if (withModule) CHECK(cuModuleUnload(module));
  printf("done: %d rounds, variant %s\n", rounds, variant);
  return 0;
}
