/* cuda-pool-orphan-free.c: the smallest driver-only program found for the crash (or endless
 * spin) in cuMemPoolDestroy that ../nvidia-580/pool-destroy-after-orphan-free.seq shows: a pool
 * destroyed while one of its allocations is outstanding, that allocation then freed on another
 * stream that lives on, and a later pool's destroy. Every call is valid by the documentation of
 * cuMemPoolDestroy ("If any pointers obtained from this pool haven't been freed or the pool has
 * free operations that haven't completed when cuMemPoolDestroy is invoked, the function will
 * return immediately and the resources associated with the pool will be released automatically
 * once there are no more outstanding allocations") and of cuMemFreeAsync (any stream may free).
 *
 *   cc -O2 -I/usr/local/cuda/include -o pool-orphan-free cuda-pool-orphan-free.c \
 *      -L/usr/local/cuda/lib64/stubs -lcuda
 *   ./pool-orphan-free ROUNDS MODE
 *
 * One round (MODE orphan):
 *   pool A, stream SA; a = alloc(A, SA); sync SA; destroy SA; destroy A     (a outstanding)
 *   free a on R (the one stream kept for the process); sync R
 *   pool B, stream SB; b = alloc(B, SB); free b on SB; sync SB; destroy SB; destroy B
 * MODE:
 *   orphan        as above
 *   orphan-empty  pool B makes no allocation
 *   fresh-stream  a is freed on a stream made for that free and destroyed after it (control)
 *   free-first    a is freed on SA before SA and A are destroyed (control)
 * Prints "round N ok" after each round; exit status 0 when every call succeeded, 1 at the first
 * failed call (named), and the signal's if the driver crashes.
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static void check(CUresult r, const char* call, int line) {
  if (r == CUDA_SUCCESS) return;
  const char* name = NULL;
  cuGetErrorName(r, &name);
  printf("line %d: %s: %s\n", line, call, name ? name : "unknown error");
  exit(1);
}
#define CHECK(call) check((call), #call, __LINE__)

static CUmemoryPool makePool(void) {
  CUmemPoolProps props;
  memset(&props, 0, sizeof props);
  props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
  props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
  props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
  props.location.id = 0;
  CUmemoryPool pool;
  CHECK(cuMemPoolCreate(&pool, &props));
  return pool;
}

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 3;
  const char* mode = argc > 2 ? argv[2] : "orphan";
  if (strcmp(mode, "orphan") != 0 && strcmp(mode, "orphan-empty") != 0 &&
      strcmp(mode, "fresh-stream") != 0 && strcmp(mode, "free-first") != 0) {
    fprintf(stderr, "unknown mode '%s'\n", mode);
    return 2;
  }
  CUdevice device;
  CUcontext primary;
  CUstream release;
  CHECK(cuInit(0));
  CHECK(cuDeviceGet(&device, 0));
  CHECK(cuDevicePrimaryCtxRetain(&primary, device));
  CHECK(cuCtxSetCurrent(primary));
  CHECK(cuStreamCreate(&release, CU_STREAM_NON_BLOCKING));
  for (int i = 1; i <= rounds; ++i) {
    CUstream sa, sb;
    CUdeviceptr a, b;
    CUmemoryPool pa = makePool();
    CHECK(cuStreamCreate(&sa, CU_STREAM_NON_BLOCKING));
    CHECK(cuMemAllocFromPoolAsync(&a, 256, pa, sa));
    if (strcmp(mode, "free-first") == 0) CHECK(cuMemFreeAsync(a, sa));
    CHECK(cuStreamSynchronize(sa));
    CHECK(cuStreamDestroy(sa));
    CHECK(cuMemPoolDestroy(pa));
    if (strcmp(mode, "fresh-stream") == 0) {
      CUstream s;
      CHECK(cuStreamCreate(&s, CU_STREAM_NON_BLOCKING));
      CHECK(cuMemFreeAsync(a, s));
      CHECK(cuStreamSynchronize(s));
      CHECK(cuStreamDestroy(s));
    } else if (strcmp(mode, "free-first") != 0) {
      CHECK(cuMemFreeAsync(a, release));
      CHECK(cuStreamSynchronize(release));
    }
    CUmemoryPool pb = makePool();
    CHECK(cuStreamCreate(&sb, CU_STREAM_NON_BLOCKING));
    if (strcmp(mode, "orphan-empty") != 0) {
      CHECK(cuMemAllocFromPoolAsync(&b, 4096, pb, sb));
      CHECK(cuMemFreeAsync(b, sb));
    }
    CHECK(cuStreamSynchronize(sb));
    CHECK(cuStreamDestroy(sb));
    CHECK(cuMemPoolDestroy(pb));
    printf("round %d ok\n", i);
    fflush(stdout);
  }
  CHECK(cuStreamDestroy(release));
  printf("done: %d rounds, mode %s\n", rounds, mode);
  return 0;
}
