/* cuda-pool-orphan-release.c: does a pool destroyed with an allocation outstanding give back what
 * it holds once that allocation is freed? cuMemPoolDestroy's documentation says it does: "the
 * resources associated with the pool will be released automatically once there are no more
 * outstanding allocations". A pool made with maxSize 0 reserves address space of about twice
 * the device's memory (measured upstream, NVIDIA/cuda-python#2381), so pools that are never
 * released make cuMemPoolCreate fail with CUDA_ERROR_OUT_OF_MEMORY after some dozens.
 *
 *   cc -O2 -I/usr/local/cuda/include -o pool-orphan-release cuda-pool-orphan-release.c \
 *      -L/usr/local/cuda/lib64/stubs -lcuda
 *   ./pool-orphan-release ROUNDS MODE
 *
 * One round (MODE orphan):
 *   pool A, stream SA; a = alloc(A, SA); sync SA; destroy SA; destroy A     (a outstanding)
 *   free a on R (the one stream kept for the process); sync R
 * MODE:
 *   orphan      as above: every pool should be released by its round's end
 *   free-first  a is freed on SA before SA and A are destroyed (control: released at destroy)
 *   never-free  a is never freed (control: no pool is ever released)
 * Prints "round N vm M MiB" after each round, M the process's virtual size (VmSize of
 * /proc/self/status, where the driver's reservations show), then "done: N rounds, mode M".
 * Exit status 0 when every call succeeded, 1 at the first failed call (named, with its round).
 */
#include <cuda.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int round_ = 0;

static void check(CUresult r, const char* call, int line) {
  if (r == CUDA_SUCCESS) return;
  const char* name = NULL;
  cuGetErrorName(r, &name);
  printf("round %d, line %d: %s: %s\n", round_, line, call, name ? name : "unknown error");
  exit(1);
}
#define CHECK(call) check((call), #call, __LINE__)

/* The process's virtual size in MiB, or -1 where /proc cannot tell. */
static long virtualMiB(void) {
  FILE* f = fopen("/proc/self/status", "r");
  if (f == NULL) return -1;
  char line[256];
  long kib = -1;
  while (fgets(line, sizeof line, f) != NULL) {
    if (strncmp(line, "VmSize:", 7) == 0) {
      kib = strtol(line + 7, NULL, 10);
      break;
    }
  }
  fclose(f);
  return kib < 0 ? -1 : kib / 1024;
}

int main(int argc, char** argv) {
  const int rounds = argc > 1 ? atoi(argv[1]) : 100;
  const char* mode = argc > 2 ? argv[2] : "orphan";
  const int orphan = strcmp(mode, "orphan") == 0;
  const int freeFirst = strcmp(mode, "free-first") == 0;
  const int neverFree = strcmp(mode, "never-free") == 0;
  if (!orphan && !freeFirst && !neverFree) {
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
  printf("round 0 vm %ld MiB\n", virtualMiB());
  for (round_ = 1; round_ <= rounds; ++round_) {
    CUmemPoolProps props;
    memset(&props, 0, sizeof props);
    props.allocType = CU_MEM_ALLOCATION_TYPE_PINNED;
    props.handleTypes = CU_MEM_HANDLE_TYPE_NONE;
    props.location.type = CU_MEM_LOCATION_TYPE_DEVICE;
    props.location.id = 0;
    CUmemoryPool pool;
    CUstream stream;
    CUdeviceptr a;
    CHECK(cuMemPoolCreate(&pool, &props));
    CHECK(cuStreamCreate(&stream, CU_STREAM_NON_BLOCKING));
    CHECK(cuMemAllocFromPoolAsync(&a, 256, pool, stream));
    if (freeFirst) CHECK(cuMemFreeAsync(a, stream));
    CHECK(cuStreamSynchronize(stream));
    CHECK(cuStreamDestroy(stream));
    CHECK(cuMemPoolDestroy(pool));
    if (orphan) {
      CHECK(cuMemFreeAsync(a, release));
      CHECK(cuStreamSynchronize(release));
    }
    printf("round %d vm %ld MiB\n", round_, virtualMiB());
    fflush(stdout);
  }
  CHECK(cuStreamDestroy(release));
  printf("done: %d rounds, mode %s\n", rounds, mode);
  return 0;
}
