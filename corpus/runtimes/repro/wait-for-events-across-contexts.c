/* wait-for-events-across-contexts.c: clWaitForEvents on events of two contexts must fail with
 * CL_INVALID_CONTEXT (OpenCL 3.0, clWaitForEvents: "CL_INVALID_CONTEXT if events specified in
 * event_list do not belong to the same context").
 *
 *   cc -O2 -o wait-for-events-across-contexts wait-for-events-across-contexts.c -lOpenCL
 *   OCL_ICD_VENDORS=DIR ./wait-for-events-across-contexts nvidia   # DIR holds nvidia.icd
 *   ./wait-for-events-across-contexts pocl
 *
 * Two contexts on the same device, a queue in each. Every event is complete before the wait
 * (user events set to CL_COMPLETE, markers after clFinish), so no case can block.
 *   same:      a user event and a marker of context 0 (the control): CL_SUCCESS;
 *   users:     a user event of each context: expected CL_INVALID_CONTEXT;
 *   mixed:     a user event of context 0 and a marker of context 1: expected CL_INVALID_CONTEXT;
 *   markers:   a marker of each context: expected CL_INVALID_CONTEXT.
 * Exit 0: every case answered as the specification says; 1: some did not; 2: setup failed.
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <ctype.h>
#include <stdio.h>
#include <string.h>

static int containsIgnoringCase(const char* haystack, const char* needle) {
  for (const char* h = haystack; *h; ++h) {
    size_t i = 0;
    while (needle[i] && h[i] && tolower((unsigned char)h[i]) == tolower((unsigned char)needle[i])) ++i;
    if (!needle[i]) return 1;
  }
  return 0;
}

static const char* errorName(cl_int e) {
  switch (e) {
    case CL_SUCCESS: return "CL_SUCCESS";
    case CL_INVALID_CONTEXT: return "CL_INVALID_CONTEXT";
    case CL_INVALID_EVENT: return "CL_INVALID_EVENT";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
    default: return "another error";
  }
}

static cl_context contexts[2];
static cl_command_queue queues[2];

static cl_event userEvent(int c) {
  cl_int e;
  cl_event ev = clCreateUserEvent(contexts[c], &e);
  if (e != CL_SUCCESS) return NULL;
  clSetUserEventStatus(ev, CL_COMPLETE);
  return ev;
}

static cl_event marker(int c) {
  cl_event ev = NULL;
  if (clEnqueueMarker(queues[c], &ev) != CL_SUCCESS) return NULL;
  clFinish(queues[c]);
  return ev;
}

static int runCase(const char* name, cl_event a, cl_event b, cl_int expected) {
  if (!a || !b) {
    printf("%-8s setup failed\n", name);
    return 2;
  }
  cl_event list[2] = {a, b};
  const cl_int got = clWaitForEvents(2, list);
  printf("%-8s clWaitForEvents: %s (%d), expected %s: %s\n", name, errorName(got), (int)got,
         errorName(expected), got == expected ? "ok" : "WRONG");
  clReleaseEvent(a);
  clReleaseEvent(b);
  return got == expected ? 0 : 1;
}

int main(int argc, char** argv) {
  const char* want = argc > 1 ? argv[1] : "";
  cl_platform_id platforms[16];
  cl_uint count = 0;
  clGetPlatformIDs(16, platforms, &count);
  cl_device_id device = NULL;
  char name[256] = "", vendor[256] = "", version[256] = "";
  for (cl_uint p = 0; p < count && !device; ++p) {
    clGetPlatformInfo(platforms[p], CL_PLATFORM_NAME, sizeof name, name, NULL);
    clGetPlatformInfo(platforms[p], CL_PLATFORM_VENDOR, sizeof vendor, vendor, NULL);
    if (!containsIgnoringCase(name, want) && !containsIgnoringCase(vendor, want)) continue;
    if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 1, &device, NULL) != CL_SUCCESS) device = NULL;
  }
  if (!device) { fprintf(stderr, "no platform matching '%s' with a device\n", want); return 2; }
  clGetDeviceInfo(device, CL_DRIVER_VERSION, sizeof version, version, NULL);
  printf("%s / driver %s\n", name, version);
  for (int c = 0; c < 2; ++c) {
    cl_int e;
    contexts[c] = clCreateContext(NULL, 1, &device, NULL, NULL, &e);
    if (e != CL_SUCCESS) { fprintf(stderr, "clCreateContext: %d\n", (int)e); return 2; }
    queues[c] = clCreateCommandQueue(contexts[c], device, 0, &e);
    if (e != CL_SUCCESS) { fprintf(stderr, "clCreateCommandQueue: %d\n", (int)e); return 2; }
  }
  int worst = 0, r;
  r = runCase("same", userEvent(0), marker(0), CL_SUCCESS);
  worst = r > worst ? r : worst;
  r = runCase("users", userEvent(0), userEvent(1), CL_INVALID_CONTEXT);
  worst = r > worst ? r : worst;
  r = runCase("mixed", userEvent(0), marker(1), CL_INVALID_CONTEXT);
  worst = r > worst ? r : worst;
  r = runCase("markers", marker(0), marker(1), CL_INVALID_CONTEXT);
  worst = r > worst ? r : worst;
  for (int c = 0; c < 2; ++c) {
    clReleaseCommandQueue(queues[c]);
    clReleaseContext(contexts[c]);
  }
  return worst;
}
