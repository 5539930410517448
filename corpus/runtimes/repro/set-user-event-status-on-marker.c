/* set-user-event-status-on-marker.c: clSetUserEventStatus on an event that is not a user event
 * (a marker's) must fail with CL_INVALID_EVENT (OpenCL 3.0, clSetUserEventStatus: "CL_INVALID_EVENT
 * if event is not a valid user event object"), and must leave the marker's status alone.
 *
 *   cc -O2 -o set-user-event-status-on-marker set-user-event-status-on-marker.c -lOpenCL
 *   RUSTICL_ENABLE=llvmpipe ./set-user-event-status-on-marker rusticl   # exit 1 on Mesa 25.0.7
 *   ./set-user-event-status-on-marker pocl                              # exit 0
 *   OCL_ICD_VENDORS=DIR ./set-user-event-status-on-marker nvidia        # exit 1 on 580.159.04
 *
 * Four cases, each in a fresh context and queue:
 *   user:     a user event (the control): CL_SUCCESS;
 *   complete: a marker after clFinish: expected CL_INVALID_EVENT;
 *   pending:  a flushed marker waiting on a user event not yet set: expected CL_INVALID_EVENT, and
 *             the marker must not report CL_COMPLETE before the user event is set;
 *   again:    a user event set a second time: expected CL_INVALID_OPERATION ("if the
 *             execution_status for event has already been changed by a previous call").
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
    case CL_INVALID_EVENT: return "CL_INVALID_EVENT";
    case CL_INVALID_OPERATION: return "CL_INVALID_OPERATION";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
    default: return "another error";
  }
}

static cl_int statusOf(cl_event e) {
  cl_int s = -1;
  clGetEventInfo(e, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL);
  return s;
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
  printf("%s, driver %s\n", name, version);
  int wrong = 0;
  for (int mode = 0; mode < 4; ++mode) {
    cl_int err = 0;
    cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
    cl_command_queue q = clCreateCommandQueue(ctx, device, 0, &err);
    cl_event gate = clCreateUserEvent(ctx, &err);
    cl_event target = gate;
    if (mode == 1) {
      clEnqueueMarkerWithWaitList(q, 0, NULL, &target);
      clFinish(q);
    } else if (mode == 2) {
      clEnqueueMarkerWithWaitList(q, 1, &gate, &target);
      clFlush(q);
    } else if (mode == 3) {
      clSetUserEventStatus(gate, CL_COMPLETE);  /* the first time: CL_SUCCESS */
    }
    const cl_int before = statusOf(target);
    err = clSetUserEventStatus(target, CL_COMPLETE);
    const cl_int after = statusOf(target);
    const char* what = mode == 0   ? "user event"
                       : mode == 1 ? "completed marker"
                       : mode == 2 ? "pending marker"
                                   : "user event again";
    const cl_int expected = mode == 0 ? CL_SUCCESS : mode == 3 ? CL_INVALID_OPERATION : CL_INVALID_EVENT;
    const int bad = err != expected || (mode == 2 && after == CL_COMPLETE);
    printf("%-16s status %d -> clSetUserEventStatus %s (expected %s) -> status %d%s\n", what,
           before, errorName(err), errorName(expected), after,
           mode == 2 && after == CL_COMPLETE ? "  [complete before the event it waits for]" : "");
    wrong += bad;
    if (mode == 1 || mode == 2) {
      clSetUserEventStatus(gate, CL_COMPLETE);  // the gate itself is still unset
      clFinish(q);
      clReleaseEvent(target);
    }
    clReleaseEvent(gate);
    clReleaseCommandQueue(q);
    clReleaseContext(ctx);
  }
  printf("%d of 4 cases wrong\n", wrong);
  return wrong != 0;
}
