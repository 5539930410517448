/* cuda-pool-orphan-stream-sync.c: the driver calls the cuda-async backend makes for
 * ../nvidia-580/stream-sync-crash-after-orphan-free.seq (traced through tests/gpu/fake-libcuda),
 * in the same order, with nothing of the project, and smaller variants of it. That sequence
 * crashed at its end in cuStreamSynchronize, not in cuMemPoolDestroy: does the driver alone?
 * Every call is valid by the driver API's documentation of the stream-ordered allocator: a pool
 * destroyed (cuMemPoolDestroy) while an allocation from it is outstanding "will return
 * immediately and the resources associated with the pool will be released automatically once
 * there are no more outstanding allocations"; that allocation, its own stream destroyed, is
 * freed on another stream (cuMemFreeAsync) and waited for.
 *
 *   cc -O2 -I/usr/local/cuda/include -o pool-orphan-stream-sync cuda-pool-orphan-stream-sync.c \
 *      -L/usr/local/cuda/lib64/stubs -lcuda
 *   ./pool-orphan-stream-sync ROUNDS MODE [SECONDS]
 *
 * MODE:
 *   as-found      the 19 operations of the sequence and the release of what it leaves, as the
 *                 backend makes them (default); ROUNDS rounds in one process, as --persistent
 *   two-orphans   per round: context c0 (a stream and a pool), b0 = alloc(c0); c0 destroyed
 *                 with b0 outstanding; b0 freed on R, the one stream kept for the process, and
 *                 R waited for; then the same with c1 and b1
 *   free-first    two-orphans, but each buffer is freed on its own stream before its context's
 *                 destroy (control: no pool is destroyed with an allocation outstanding)
 *   fresh-stream  two-orphans, but each orphan is freed on a stream made for that free and
 *                 destroyed after it (control)
 * Each driver call is named before it is made. A crash prints the call in flight on the main
 * thread and the thread that took the signal, then dies of the signal. A call that has not
 * returned after SECONDS (default 8) prints its name and exits with 3.
 * Exit status: 0 when every call succeeded; 1 at the first failed call (named); 2 bad usage;
 * 3 a call never returned; the signal's number (through the shell, 128 + it) on a crash.
 */
#ifndef _GNU_SOURCE
#define _GNU_SOURCE
#endif
#include <cuda.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

static const char* mode = "as-found";
static volatile const char* inFlight = "(none)";
static volatile int round_ = 0;
static volatile int step = 0;
static long mainThread;

static void say(const char* s) {
  ssize_t ignored = write(2, s, strlen(s));
  (void)ignored;
}

static void sayNumber(long n) {
  char digits[24];
  int i = (int)sizeof digits;
  digits[--i] = '\0';
  if (n == 0) digits[--i] = '0';
  while (n > 0 && i > 0) {
    digits[--i] = (char)('0' + n % 10);
    n /= 10;
  }
  say(digits + i);
}

static void where(void) {
  say((const char*)inFlight);
  say(" (round ");
  sayNumber(round_);
  say(", call ");
  sayNumber(step);
  say(")");
}

static void onCrash(int sig) {
  say(sig == SIGSEGV ? "SIGSEGV" : sig == SIGBUS ? "SIGBUS" : sig == SIGABRT ? "SIGABRT" : "signal");
  say(" while the main thread was in ");
  where();
  say(syscall(SYS_gettid) == mainThread ? "; taken by the main thread\n"
                                          : "; taken by another thread\n");
  signal(sig, SIG_DFL);
  raise(sig);
}

static void onAlarm(int sig) {
  (void)sig;
  say("no return from ");
  where();
  say("\n");
  _exit(3);
}

static void check(CUresult r, const char* call, int line) {
  if (r == CUDA_SUCCESS) return;
  const char* name = NULL;
  cuGetErrorName(r, &name);
  printf("line %d: %s: %s\n", line, call, name ? name : "unknown error");
  exit(1);
}
/* Names the call before it is made, so that a crash or a hang in it can say which. */
#define CALL(name, call)   \
  do {                     \
    inFlight = name;       \
    ++step;                \
    check((call), #call, __LINE__); \
    inFlight = "(none)";   \
  } while (0)

static CUcontext primary;
static CUstream releaseStream;

/* A context of the backend: a non-blocking stream and a pool of its own. */
typedef struct {
  CUstream stream;
  CUmemoryPool pool;
} Ctx;

/* A renderer: its context, a framebuffer of width x 64 pixels, room for 1024 triangles of 48 B. */
typedef struct {
  Ctx ctx;
  CUdeviceptr framebuffer, vertices;
} Renderer;

static void current(void) { CALL("cuCtxSetCurrent", cuCtxSetCurrent(primary)); }

static Ctx ctxCreate(void) {
  Ctx c;
  current();
  CALL("cuStreamCreate", cuStreamCreate(&c.stream, CU_STREAM_NON_BLOCKING));
  CUmemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CALL("cuMemPoolCreate", cuMemPoolCreate(&c.pool, &props));
  return c;
}

/* The wait, the stream's state after it, the stream's destroy, the pool's destroy. */
static void ctxDestroy(Ctx* c) {
  current();
  CALL("cuStreamSynchronize (the context's stream)", cuStreamSynchronize(c->stream));
  CALL("cuStreamQuery", cuStreamQuery(c->stream));
  CALL("cuStreamDestroy", cuStreamDestroy(c->stream));
  CALL("cuMemPoolDestroy", cuMemPoolDestroy(c->pool));
}

static CUdeviceptr bufCreate(Ctx* c, size_t bytes) {
  CUdeviceptr p = 0;
  current();
  CALL("cuMemAllocFromPoolAsync", cuMemAllocFromPoolAsync(&p, bytes, c->pool, c->stream));
  return p;
}

static unsigned char clearPixels[64 * 64 * 4];

static Renderer create(unsigned width) {
  Renderer r;
  const size_t bytes = (size_t)width * 64 * 4;
  r.ctx = ctxCreate();
  r.framebuffer = bufCreate(&r.ctx, bytes);
  r.vertices = bufCreate(&r.ctx, 1024 * 48);
  current();
  CALL("cuMemcpyHtoDAsync", cuMemcpyHtoDAsync(r.framebuffer, clearPixels, bytes, r.ctx.stream));
  current();
  CALL("cuStreamSynchronize (the renderer's stream)", cuStreamSynchronize(r.ctx.stream));
  CALL("cuStreamQuery", cuStreamQuery(r.ctx.stream));
  return r;
}

/* The shipped teardown: wait, free the buffers on the renderer's stream, destroy the context. */
static void destroy(Renderer* r) {
  current();
  CALL("cuStreamSynchronize (the renderer's stream)", cuStreamSynchronize(r->ctx.stream));
  CALL("cuStreamQuery", cuStreamQuery(r->ctx.stream));
  current();
  CALL("cuMemFreeAsync", cuMemFreeAsync(r->vertices, r->ctx.stream));
  current();
  CALL("cuMemFreeAsync", cuMemFreeAsync(r->framebuffer, r->ctx.stream));
  ctxDestroy(&r->ctx);
}

/* A buffer whose context was destroyed: freed on the release stream and waited for. */
static void freeOrphan(CUdeviceptr p) {
  current();
  if (strcmp(mode, "fresh-stream") == 0) {
    CUstream s;
    CALL("cuStreamCreate (a stream for the free)", cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
    CALL("cuMemFreeAsync (an orphan, on its own stream)", cuMemFreeAsync(p, s));
    CALL("cuStreamSynchronize (the free's own stream)", cuStreamSynchronize(s));
    CALL("cuStreamDestroy", cuStreamDestroy(s));
    return;
  }
  CALL("cuMemFreeAsync (an orphan, on R)", cuMemFreeAsync(p, releaseStream));
  CALL("cuStreamSynchronize (R, after an orphan's free)", cuStreamSynchronize(releaseStream));
}

/* ../nvidia-580/stream-sync-crash-after-orphan-free.seq, then the release of what it leaves. */
static void asFound(void) {
  Renderer r0 = create(64);
  Renderer r1 = create(64);
  Renderer r2 = create(64);
  destroy(&r1);
  Renderer r3 = create(64);
  Ctx c0 = ctxCreate();
  destroy(&r3);
  Renderer r4 = create(64);
  Renderer r5 = create(28);
  CUdeviceptr b0 = bufCreate(&c0, 256);
  destroy(&r4);
  ctxDestroy(&c0); /* b0 outstanding */
  destroy(&r5);
  destroy(&r0);
  destroy(&r2);
  freeOrphan(b0);
  Ctx c1 = ctxCreate();
  CUdeviceptr b1 = bufCreate(&c1, 256);
  ctxDestroy(&c1); /* b1 outstanding */
  /* end: no renderer is left; the bare buffer b1 is freed; no bare context is left */
  freeOrphan(b1);
}

/* A context, one buffer of it, the context destroyed, the buffer freed after (or before). */
static void orphanOnce(void) {
  Ctx c = ctxCreate();
  CUdeviceptr b = bufCreate(&c, 256);
  if (strcmp(mode, "free-first") == 0) {
    current();
    CALL("cuMemFreeAsync (on the buffer's own stream)", cuMemFreeAsync(b, c.stream));
    ctxDestroy(&c);
    return;
  }
  ctxDestroy(&c);
  freeOrphan(b);
}

/* A kernel that does nothing: the backend loads a module too. */
static const char kPtx[] =
    ".version 7.0\n.target sm_70\n.address_size 64\n.visible .entry noop()\n{\n  ret;\n}\n";

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 1;
  if (argc > 2) mode = argv[2];
  const unsigned seconds = argc > 3 ? (unsigned)atoi(argv[3]) : 8;
  static const char* const kModes[] = {"as-found", "two-orphans", "free-first", "fresh-stream"};
  int known = 0;
  for (size_t i = 0; i < sizeof kModes / sizeof kModes[0]; ++i)
    known = known || strcmp(mode, kModes[i]) == 0;
  if (!known || rounds < 1) {
    fprintf(stderr, "usage: %s ROUNDS as-found|two-orphans|free-first|fresh-stream [SECONDS]\n",
            argv[0]);
    return 2;
  }
  mainThread = syscall(SYS_gettid);
  signal(SIGSEGV, onCrash);
  signal(SIGBUS, onCrash);
  signal(SIGABRT, onCrash);
  signal(SIGALRM, onAlarm);
  CUdevice device;
  CUmodule module = NULL;
  CUfunction function;
  CALL("cuInit", cuInit(0));
  CALL("cuDeviceGet", cuDeviceGet(&device, 0));
  CALL("cuDevicePrimaryCtxRetain", cuDevicePrimaryCtxRetain(&primary, device));
  current();
  CALL("cuStreamCreate (R)", cuStreamCreate(&releaseStream, CU_STREAM_NON_BLOCKING));
  CALL("cuModuleLoadData", cuModuleLoadData(&module, kPtx));
  CALL("cuModuleGetFunction", cuModuleGetFunction(&function, module, "noop"));
  for (int i = 1; i <= rounds; ++i) {
    round_ = i;
    step = 0;
    alarm(seconds);
    if (strcmp(mode, "as-found") == 0) {
      asFound();
    } else {
      orphanOnce();
      orphanOnce();
    }
    alarm(0);
    printf("round %d ok\n", i);
    fflush(stdout);
  }
  /* The backend's destructor at the process's end. */
  round_ = rounds + 1;
  step = 0;
  alarm(seconds);
  current();
  CALL("cuStreamSynchronize (R, at the end)", cuStreamSynchronize(releaseStream));
  CALL("cuStreamDestroy (R)", cuStreamDestroy(releaseStream));
  CALL("cuModuleUnload", cuModuleUnload(module));
  alarm(0);
  printf("done: %d rounds, mode %s\n", rounds, mode);
  return 0;
}
