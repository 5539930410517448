/* fill-buffer-beyond-16gib.c: clEnqueueFillBuffer with a 4-byte pattern at an offset of 16 GiB or
 * more, inside a buffer larger than 16 GiB, must write the pattern there and nowhere else (OpenCL
 * 3.0, clEnqueueFillBuffer: "offset is the location in bytes of the region being filled").
 *
 *   cc -O2 -o fill-buffer-beyond-16gib fill-buffer-beyond-16gib.c -lOpenCL
 *   OCL_ICD_VENDORS=DIR ./fill-buffer-beyond-16gib nvidia [GIB [CASE]]   # DIR holds nvidia.icd
 *
 * Each case makes a context, a queue and a buffer of GIB GiB (default 20; at most the device's CL_DEVICE_MAX_MEM_ALLOC_SIZE is legal,
 * and the program says when it is larger). Every case zeroes two 4 KiB windows first, with
 * clEnqueueWriteBuffer: one at the offset, one at the offset modulo 16 GiB. Then it fills 4 KiB
 * at the offset with a pattern and reads both windows back with clEnqueueReadBuffer.
 *   low-N:   offset 1 GiB + N * 8 KiB (below 16 GiB), an N-byte pattern: the controls;
 *   write:   offset 16 GiB + 8192, written by clEnqueueWriteBuffer instead of a fill: the
 *            transfer path at the same offset;
 *   high-N:  offset 16 GiB + N * 8 KiB + 4096, an N-byte pattern, N = 1, 2, 4, ..., 128;
 *   cross-4: 4 KiB that start 2 KiB below 16 GiB, a 4-byte pattern: a fill across the line;
 *   whole-N: the whole buffer from offset 0, an N-byte pattern (N = 4, 16), then 4 KiB windows
 *            read at 1 GiB, below and above 4 GiB, below 16 GiB and at the buffer's end.
 * Exit 0: every case wrote where it should and only there; 1: a case wrote elsewhere (the bytes
 * say where); 2: the setup failed (no platform, allocation refused).
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <ctype.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define WINDOW 4096u
#define GIB ((uint64_t)1 << 30)

static int containsIgnoringCase(const char* haystack, const char* needle) {
  for (const char* h = haystack; *h; ++h) {
    size_t i = 0;
    while (needle[i] && h[i] && tolower((unsigned char)h[i]) == tolower((unsigned char)needle[i])) ++i;
    if (!needle[i]) return 1;
  }
  return 0;
}

static cl_device_id device;
static uint64_t bufferBytes;
static cl_context context;
static cl_command_queue queue;
static cl_mem buffer;

static int check(cl_int e, const char* what) {
  if (e != CL_SUCCESS) fprintf(stderr, "%s: error %d\n", what, (int)e);
  return e == CL_SUCCESS;
}

/* How many 32-bit words of the window at `offset` equal `word`. */
static unsigned countWords(uint64_t offset, uint32_t word) {
  static uint32_t host[WINDOW / 4];
  if (!check(clEnqueueReadBuffer(queue, buffer, CL_TRUE, (size_t)offset, WINDOW, host, 0, NULL, NULL),
             "clEnqueueReadBuffer"))
    return ~0u;
  unsigned n = 0;
  for (unsigned i = 0; i < WINDOW / 4; ++i) n += host[i] == word;
  return n;
}

static int zero(uint64_t offset) {
  static const uint32_t zeros[WINDOW / 4];
  return check(clEnqueueWriteBuffer(queue, buffer, CL_TRUE, (size_t)offset, WINDOW, zeros, 0, NULL, NULL),
               "clEnqueueWriteBuffer (zero)");
}

static int fillAndCheck(const char* name, uint64_t offset, size_t size, uint64_t alias, uint32_t word,
                        uint8_t byte);

/* One case: 0 when the pattern landed at `offset` only, 1 when it did not, 2 when a call failed.
 * `size` is the fill's pattern size in bytes; 0 writes with clEnqueueWriteBuffer instead. A word of
 * 4 identical bytes makes every pattern size write the same words. */
static const char* onlyCase;

static int runCase(const char* name, uint64_t offset, size_t size) {
  if (onlyCase && strcmp(onlyCase, name) != 0) return 0;
  const uint64_t alias = offset % (16 * GIB);
  const uint8_t byte = (uint8_t)(0xA1u + size);
  const uint32_t word = byte * 0x01010101u;
  /* Each case in a context of its own: a case that breaks its queue leaves the others alone. */
  cl_int e;
  context = clCreateContext(NULL, 1, &device, NULL, NULL, &e);
  if (!check(e, "clCreateContext")) return 2;
  queue = clCreateCommandQueue(context, device, 0, &e);
  if (!check(e, "clCreateCommandQueue")) return 2;
  buffer = clCreateBuffer(context, CL_MEM_READ_WRITE, (size_t)bufferBytes, NULL, &e);
  if (!check(e, "clCreateBuffer")) return 2;
  const int result = fillAndCheck(name, offset, size, alias, word, byte);
  clReleaseMemObject(buffer);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
  return result;
}

static int fillAndCheck(const char* name, uint64_t offset, size_t size, uint64_t alias, uint32_t word,
                        uint8_t byte) {
  if (!zero(offset) || (alias != offset && !zero(alias))) return 2;
  cl_int e;
  if (size == 0) {
    static uint32_t host[WINDOW / 4];
    for (unsigned i = 0; i < WINDOW / 4; ++i) host[i] = word;
    e = clEnqueueWriteBuffer(queue, buffer, CL_TRUE, (size_t)offset, WINDOW, host, 0, NULL, NULL);
  } else {
    uint8_t pattern[128];
    memset(pattern, byte, sizeof pattern);
    e = clEnqueueFillBuffer(queue, buffer, pattern, size, (size_t)offset, WINDOW, 0, NULL, NULL);
  }
  if (!check(e, name)) return 2;
  const cl_int finished = clFinish(queue);
  if (finished != CL_SUCCESS) {
    printf("%-13s offset %llu (%.3f GiB): clEnqueueFillBuffer CL_SUCCESS, then clFinish %d: WRONG\n",
           name, (unsigned long long)offset, (double)offset / (double)GIB, (int)finished);
    return 1;
  }
  const unsigned at = countWords(offset, word);
  const unsigned there = alias != offset ? countWords(alias, word) : 0;
  const int ok = at == WINDOW / 4 && there == 0;
  printf("%-13s offset %llu (%.3f GiB): %u of %u words at the offset, %u at the offset mod 16 GiB: %s\n",
         name, (unsigned long long)offset, (double)offset / (double)GIB, at, WINDOW / 4, there,
         ok ? "ok" : "WRONG");
  return ok ? 0 : 1;
}

/* The whole buffer filled with an N-byte pattern from offset 0; every window must hold it. */
static int wholeCase(const char* name, size_t size) {
  if (onlyCase && strcmp(onlyCase, name) != 0) return 0;
  const uint8_t byte = (uint8_t)(0xB1u + size);
  const uint32_t word = byte * 0x01010101u;
  const uint64_t end = bufferBytes / 128 * 128;
  const uint64_t places[] = {1 * GIB, 4 * GIB - WINDOW, 4 * GIB, 16 * GIB - WINDOW, end - WINDOW};
  cl_int e;
  context = clCreateContext(NULL, 1, &device, NULL, NULL, &e);
  if (!check(e, "clCreateContext")) return 2;
  queue = clCreateCommandQueue(context, device, 0, &e);
  if (!check(e, "clCreateCommandQueue")) return 2;
  buffer = clCreateBuffer(context, CL_MEM_READ_WRITE, (size_t)bufferBytes, NULL, &e);
  if (!check(e, "clCreateBuffer")) return 2;
  int result = 0;
  for (unsigned i = 0; i < sizeof places / sizeof places[0]; ++i)
    if (!zero(places[i])) result = 2;
  uint8_t pattern[128];
  memset(pattern, byte, sizeof pattern);
  if (result == 0 &&
      !check(clEnqueueFillBuffer(queue, buffer, pattern, size, 0, (size_t)end, 0, NULL, NULL), name))
    result = 2;
  const cl_int finished = result == 0 ? clFinish(queue) : CL_SUCCESS;
  if (finished != CL_SUCCESS) {
    printf("%-13s %llu bytes: clEnqueueFillBuffer CL_SUCCESS, then clFinish %d: WRONG\n", name,
           (unsigned long long)end, (int)finished);
    result = 1;
  }
  for (unsigned i = 0; result == 0 && i < sizeof places / sizeof places[0]; ++i) {
    const unsigned at = countWords(places[i], word);
    printf("%-13s %llu bytes: %u of %u words at %llu (%.3f GiB): %s\n", name,
           (unsigned long long)end, at, WINDOW / 4, (unsigned long long)places[i],
           (double)places[i] / (double)GIB, at == WINDOW / 4 ? "ok" : "WRONG");
    if (at != WINDOW / 4) result = result > 1 ? result : 1;
  }
  clReleaseMemObject(buffer);
  clReleaseCommandQueue(queue);
  clReleaseContext(context);
  return result;
}

int main(int argc, char** argv) {
  const char* want = argc > 1 ? argv[1] : "";
  const uint64_t gib = argc > 2 ? strtoull(argv[2], NULL, 10) : 20;
  const char* only = argc > 3 ? argv[3] : NULL; /* one case by name: a case that breaks the
                                                   process's device leaves the next ones unrun */
  cl_platform_id platforms[16];
  cl_uint count = 0;
  clGetPlatformIDs(16, platforms, &count);
  char name[256] = "", vendor[256] = "", version[256] = "", devname[256] = "";
  for (cl_uint p = 0; p < count && !device; ++p) {
    clGetPlatformInfo(platforms[p], CL_PLATFORM_NAME, sizeof name, name, NULL);
    clGetPlatformInfo(platforms[p], CL_PLATFORM_VENDOR, sizeof vendor, vendor, NULL);
    if (!containsIgnoringCase(name, want) && !containsIgnoringCase(vendor, want)) continue;
    if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 1, &device, NULL) != CL_SUCCESS) device = NULL;
  }
  if (!device) { fprintf(stderr, "no platform matching '%s' with a device\n", want); return 2; }
  cl_ulong maxAlloc = 0, global = 0;
  clGetDeviceInfo(device, CL_DRIVER_VERSION, sizeof version, version, NULL);
  clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof devname, devname, NULL);
  clGetDeviceInfo(device, CL_DEVICE_MAX_MEM_ALLOC_SIZE, sizeof maxAlloc, &maxAlloc, NULL);
  clGetDeviceInfo(device, CL_DEVICE_GLOBAL_MEM_SIZE, sizeof global, &global, NULL);
  printf("%s / %s / driver %s: max alloc %.2f GiB, global %.2f GiB; buffer %llu GiB%s\n", name, devname,
         version, (double)maxAlloc / (double)GIB, (double)global / (double)GIB, (unsigned long long)gib,
         gib * GIB > maxAlloc ? " (beyond CL_DEVICE_MAX_MEM_ALLOC_SIZE)" : "");
  if (gib <= 17) { fprintf(stderr, "the buffer must be larger than 17 GiB\n"); return 2; }
  bufferBytes = gib * GIB;
  onlyCase = only;
  int worst = 0, r;
  char label[32];
  for (size_t size = 1; size <= 128; size *= 2) {
    snprintf(label, sizeof label, "low-%zu", size);
    r = runCase(label, 1 * GIB + size * 8192, size);
    worst = r > worst ? r : worst;
  }
  r = runCase("write", 16 * GIB + 8192, 0);
  worst = r > worst ? r : worst;
  for (size_t size = 1; size <= 128; size *= 2) {
    snprintf(label, sizeof label, "high-%zu", size);
    r = runCase(label, 16 * GIB + size * 8192 + 4096, size);
    worst = r > worst ? r : worst;
  }
  r = runCase("cross-4", 16 * GIB - 2048, 4);
  worst = r > worst ? r : worst;
  r = wholeCase("whole-4", 4);
  worst = r > worst ? r : worst;
  r = wholeCase("whole-16", 16);
  worst = r > worst ? r : worst;
  return worst;
}
