/* sub-buffer-release-pending-fill.c: the calls of a sequence that crashed NVIDIA's OpenCL at its
 * end, as gpufuzz's opencl executor makes them. A 256-byte buffer gets two sub-buffers at offset
 * 0, of 64 and 4 bytes; the first is read, blocking; a 4-byte pattern fills the second; then
 * everything is released, sub-buffers first, and the destructor callbacks are awaited. OpenCL 3.0
 * lets an application release objects whose commands are pending: "the memory object is deleted
 * once ... commands queued to a command-queue(s) that use memobj have finished".
 *
 *   cc -O2 -o sub-buffer-release-pending-fill sub-buffer-release-pending-fill.c -lOpenCL -lpthread
 *   OCL_ICD_VENDORS=DIR ./sub-buffer-release-pending-fill nvidia [VARIANT]
 *
 * Variants: as-run (the executor's calls); no-callbacks (no destructor callbacks); finish-first
 * (clFinish before the releases); no-read (no read of the first sub-buffer); keep-event (the
 * fill's event released after the context, not before). Exit 0: every callback ran and nothing
 * crashed; 1: a callback never ran within 5 s; 2: a call failed.
 */
#define CL_TARGET_OPENCL_VERSION 200
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS
#include <CL/cl.h>
#include <ctype.h>
#include <stdatomic.h>
#include <stdio.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

static atomic_int destructors;

static void CL_CALLBACK destructor(cl_mem mem, void* data) {
  (void)mem;
  (void)data;
  atomic_fetch_add(&destructors, 1);
}

static int ok(cl_int e, const char* what) {
  if (e != CL_SUCCESS) fprintf(stderr, "%s: error %d\n", what, (int)e);
  return e == CL_SUCCESS;
}

static int contains(const char* h, const char* n) {
  for (; *h; ++h) {
    size_t i = 0;
    while (n[i] && h[i] && tolower((unsigned char)h[i]) == tolower((unsigned char)n[i])) ++i;
    if (!n[i]) return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  const char* want = argc > 1 ? argv[1] : "";
  const char* variant = argc > 2 ? argv[2] : "as-run";
  const int callbacks = strcmp(variant, "no-callbacks") != 0;
  cl_platform_id platforms[16];
  cl_uint count = 0;
  cl_device_id device = NULL;
  clGetPlatformIDs(16, platforms, &count);
  for (cl_uint p = 0; p < count && !device; ++p) {
    char name[256] = "";
    clGetPlatformInfo(platforms[p], CL_PLATFORM_NAME, sizeof name, name, NULL);
    if (contains(name, want) &&
        clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 1, &device, NULL) != CL_SUCCESS)
      device = NULL;
  }
  if (!device) { fprintf(stderr, "no platform matching '%s'\n", want); return 2; }
  cl_int e;
  cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &e);
  if (!ok(e, "clCreateContext")) return 2;
  cl_mem b0 = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 256, NULL, &e);
  if (!ok(e, "clCreateBuffer")) return 2;
  if (callbacks && !ok(clSetMemObjectDestructorCallback(b0, destructor, NULL), "callback b0")) return 2;
  cl_command_queue q0 = clCreateCommandQueue(ctx, device, 0, &e);
  if (!ok(e, "clCreateCommandQueue")) return 2;
  const cl_buffer_region r0 = {0, 64}, r1 = {0, 4};
  cl_mem sb0 = clCreateSubBuffer(b0, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r0, &e);
  if (!ok(e, "clCreateSubBuffer sb0")) return 2;
  if (callbacks && !ok(clSetMemObjectDestructorCallback(sb0, destructor, NULL), "callback sb0")) return 2;
  cl_mem sb1 = clCreateSubBuffer(b0, CL_MEM_READ_WRITE, CL_BUFFER_CREATE_TYPE_REGION, &r1, &e);
  if (!ok(e, "clCreateSubBuffer sb1")) return 2;
  if (callbacks && !ok(clSetMemObjectDestructorCallback(sb1, destructor, NULL), "callback sb1")) return 2;
  if (strcmp(variant, "no-read") != 0) {
    static unsigned char host[64];
    cl_event read;
    if (!ok(clEnqueueReadBuffer(q0, sb0, CL_TRUE, 0, 64, host, 0, NULL, &read), "read sb0")) return 2;
    cl_int status = 0;
    clGetEventInfo(read, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
    clReleaseEvent(read);
  }
  const cl_uint pattern = 0;
  cl_event fill;
  if (!ok(clEnqueueFillBuffer(q0, sb1, &pattern, 4, 0, 4, 0, NULL, &fill), "fill sb1")) return 2;
  if (strcmp(variant, "finish-first") == 0 && !ok(clFinish(q0), "clFinish")) return 2;
  const int keep = strcmp(variant, "keep-event") == 0;
  if (!keep) clReleaseEvent(fill);
  printf("releasing\n");
  fflush(stdout);
  if (!ok(clReleaseMemObject(sb0), "release sb0") || !ok(clReleaseMemObject(sb1), "release sb1") ||
      !ok(clReleaseMemObject(b0), "release b0") || !ok(clReleaseCommandQueue(q0), "release q0") ||
      !ok(clReleaseContext(ctx), "release context"))
    return 2;
  if (keep) clReleaseEvent(fill);
  const int want_callbacks = callbacks ? 3 : 0;
  for (int i = 0; i < 500 && atomic_load(&destructors) < want_callbacks; ++i) usleep(10000);
  printf("%s: %d of %d destructor callbacks ran\n", variant, atomic_load(&destructors), want_callbacks);
  return atomic_load(&destructors) == want_callbacks ? 0 : 1;
}
