/* opencl-create-context-threads.c: clCreateContext from several host threads at once. OpenCL
 * 3.0, appendix "Multiple Host Threads": "All OpenCL API calls are thread-safe except those that
 * modify the state of cl_kernel objects". Built with ThreadSanitizer, any report whose stacks are
 * inside the runtime alone is the runtime's own data race.
 *
 *   cc -O1 -g -fsanitize=thread -o opencl-create-context-threads opencl-create-context-threads.c \
 *      -lOpenCL -lpthread
 *   OCL_ICD_VENDORS=DIR ./opencl-create-context-threads nvidia 4 100
 *
 * Arguments: a text the platform's name or vendor contains (default: the first platform), threads
 * (default 4), rounds each (default 200). Each round makes a context of the platform's first device
 * and releases it; the threads start together from a barrier. Exit 0 when every call succeeded,
 * 1 when one failed (ThreadSanitizer reports on its own, with exitcode 66 by default).
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

static cl_device_id device;
static pthread_barrier_t start;
static int rounds = 200;
static int failures;
static pthread_mutex_t failuresLock = PTHREAD_MUTEX_INITIALIZER;

static int containsIgnoringCase(const char* haystack, const char* needle) {
  for (const char* h = haystack; *h; ++h) {
    size_t i = 0;
    while (needle[i] && h[i] && tolower((unsigned char)h[i]) == tolower((unsigned char)needle[i])) ++i;
    if (!needle[i]) return 1;
  }
  return 0;
}

static void* worker(void* arg) {
  (void)arg;
  pthread_barrier_wait(&start);
  for (int i = 0; i < rounds; ++i) {
    cl_int err = CL_SUCCESS;
    cl_context context = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    if (err != CL_SUCCESS || context == NULL) {
      pthread_mutex_lock(&failuresLock);
      ++failures;
      pthread_mutex_unlock(&failuresLock);
      fprintf(stderr, "clCreateContext: error %d\n", err);
      continue;
    }
    clReleaseContext(context);
  }
  return NULL;
}

int main(int argc, char** argv) {
  const char* want = argc > 1 ? argv[1] : "";
  const int threads = argc > 2 ? atoi(argv[2]) : 4;
  if (argc > 3) rounds = atoi(argv[3]);
  if (threads < 1 || threads > 64 || rounds < 1) {
    fprintf(stderr, "usage: %s [PLATFORM] [THREADS 1..64] [ROUNDS]\n", argv[0]);
    return 2;
  }
  cl_platform_id platforms[16];
  cl_uint count = 0;
  if (clGetPlatformIDs(16, platforms, &count) != CL_SUCCESS || count == 0) {
    fprintf(stderr, "no OpenCL platform\n");
    return 2;
  }
  cl_platform_id platform = NULL;
  for (cl_uint p = 0; p < count && platform == NULL; ++p) {
    char name[256] = "", vendor[256] = "";
    clGetPlatformInfo(platforms[p], CL_PLATFORM_NAME, sizeof name, name, NULL);
    clGetPlatformInfo(platforms[p], CL_PLATFORM_VENDOR, sizeof vendor, vendor, NULL);
    if (containsIgnoringCase(name, want) || containsIgnoringCase(vendor, want)) platform = platforms[p];
  }
  if (platform == NULL || clGetDeviceIDs(platform, CL_DEVICE_TYPE_ALL, 1, &device, NULL) != CL_SUCCESS) {
    fprintf(stderr, "no device on a platform matching '%s'\n", want);
    return 2;
  }
  pthread_t ids[64];
  pthread_barrier_init(&start, NULL, (unsigned)threads);
  for (int t = 0; t < threads; ++t) pthread_create(&ids[t], NULL, worker, NULL);
  for (int t = 0; t < threads; ++t) pthread_join(ids[t], NULL);
  printf("%d threads, %d contexts each: %d calls failed\n", threads, rounds, failures);
  return failures == 0 ? 0 : 1;
}
