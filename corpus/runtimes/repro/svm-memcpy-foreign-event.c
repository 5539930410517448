/* svm-memcpy-foreign-event.c: an enqueue that fails must return its error and leave the caller's
 * event alone. OpenCL 3.0, clEnqueueSVMMemcpy and the other enqueues: "CL_INVALID_CONTEXT if
 * context associated with command_queue and events in event_wait_list are not the same".
 * pocl 6.0 crashes in clEnqueueSVMMemcpy instead, when an SVM pointer is one side of the copy
 * and an event is asked for: it writes the command type through *event after the failed call.
 *
 *   cc -O2 -o svm-memcpy-foreign-event svm-memcpy-foreign-event.c -lOpenCL
 *   ./svm-memcpy-foreign-event pocl [CASE...]        # every case when none is named
 *   tools/runtime-root run build/runtime-root -- ./svm-memcpy-foreign-event pocl   # pocl 6.0
 *   tools/runtime-root run build/runtime-root -- ./svm-memcpy-foreign-event rusticl
 *
 * Each case runs in a child process of its own, forked before any OpenCL call, so a crash ends
 * only its case (a process that made an OpenCL call must not fork: pocl's threads do not follow).
 * A child that has not finished after 5 s is killed and its case reported as hung: a runtime that
 * accepts an unset user event in a blocking call's list waits for it forever.
 *
 * Every case makes a context c0 with a queue q0, two 256-byte SVM allocations of c0 and a buffer
 * of c0, and a second context c1 on the same device with a user event u1. The wait list is one of:
 *   own:     a user event of c0, set CL_COMPLETE (the controls: CL_SUCCESS expected);
 *   foreign: u1 alone;
 *   markers: two markers of q0 (the second waiting on the first) and u1, as gpufuzz found it;
 *   fmarker: a marker of a queue of c1 (an event of c1 that is not a user event);
 *   null-in-list: one NULL handle (CL_INVALID_EVENT_WAIT_LIST expected).
 * u1 is set CL_COMPLETE before the call, or left unset ("-unset" cases). The call's event
 * argument is a cl_event set to NULL; "-noevent" passes NULL instead; "-stale" passes a cl_event
 * still holding an earlier marker's event, whose CL_EVENT_COMMAND_TYPE must stay
 * CL_COMMAND_MARKER. The calls: clEnqueueSVMMemcpy from SVM to host ("svm-read", blocking or
 * "-nb" not), host to SVM ("svm-write"), SVM to SVM ("svm-copy"), host to host ("host-copy");
 * and, as controls, clEnqueueSVMMemFill, clEnqueueSVMMap, clEnqueueReadBuffer and
 * clEnqueueMarkerWithWaitList with u1 listed.
 * Exit 0: every case answered as the specification says; 1: some did not; 2: setup failed.
 */
#define CL_TARGET_OPENCL_VERSION 200
#include <CL/cl.h>
#include <ctype.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

enum Op { SVM_READ, SVM_WRITE, SVM_COPY, HOST_COPY, SVM_FILL, SVM_MAP, READ_BUFFER, MARKER };
enum List { OWN, FOREIGN, MARKERS, FOREIGN_MARKER, NULL_ENTRY };
/* What the call's event argument is: a cl_event set to NULL, a NULL pointer (no event asked
 * for), or a cl_event that still holds an earlier marker's event of q0. */
enum EventArg { FRESH, NONE, STALE };

struct Case {
  const char* name;
  enum Op op;
  cl_bool blocking;
  enum List list;
  int foreignSet; /* u1 set CL_COMPLETE before the call */
  enum EventArg eventArg;
};

static const struct Case cases[] = {
    {"svm-read-own", SVM_READ, CL_TRUE, OWN, 1, FRESH},
    {"svm-read-none", SVM_READ, CL_TRUE, OWN, -1, FRESH}, /* -1: an empty wait list */
    {"svm-read-foreign", SVM_READ, CL_TRUE, FOREIGN, 1, FRESH},
    {"svm-read-foreign-unset", SVM_READ, CL_TRUE, FOREIGN, 0, FRESH},
    {"svm-read-markers", SVM_READ, CL_TRUE, MARKERS, 1, FRESH},
    {"svm-read-fmarker", SVM_READ, CL_TRUE, FOREIGN_MARKER, 1, FRESH},
    {"svm-read-foreign-noevent", SVM_READ, CL_TRUE, FOREIGN, 1, NONE},
    {"svm-read-foreign-stale", SVM_READ, CL_TRUE, FOREIGN, 1, STALE},
    {"svm-read-null-in-list", SVM_READ, CL_TRUE, NULL_ENTRY, 1, FRESH},
    {"svm-read-nb-own", SVM_READ, CL_FALSE, OWN, 1, FRESH},
    {"svm-read-nb-foreign", SVM_READ, CL_FALSE, FOREIGN, 1, FRESH},
    {"svm-read-nb-foreign-unset", SVM_READ, CL_FALSE, FOREIGN, 0, FRESH},
    {"svm-write-foreign", SVM_WRITE, CL_FALSE, FOREIGN, 1, FRESH},
    {"svm-copy-own", SVM_COPY, CL_FALSE, OWN, 1, FRESH},
    {"svm-copy-foreign", SVM_COPY, CL_FALSE, FOREIGN, 1, FRESH},
    {"host-copy-foreign", HOST_COPY, CL_FALSE, FOREIGN, 1, FRESH},
    {"svm-fill-own", SVM_FILL, CL_FALSE, OWN, 1, FRESH},
    {"svm-fill-foreign", SVM_FILL, CL_FALSE, FOREIGN, 1, FRESH},
    {"svm-map-own", SVM_MAP, CL_TRUE, OWN, 1, FRESH},
    {"svm-map-foreign", SVM_MAP, CL_TRUE, FOREIGN, 1, FRESH},
    {"read-buffer-own", READ_BUFFER, CL_TRUE, OWN, 1, FRESH},
    {"read-buffer-foreign", READ_BUFFER, CL_TRUE, FOREIGN, 1, FRESH},
    {"marker-foreign", MARKER, CL_FALSE, FOREIGN, 1, FRESH},
};
enum { CASES = sizeof cases / sizeof cases[0], BYTES = 256 };

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
    case CL_INVALID_EVENT_WAIT_LIST: return "CL_INVALID_EVENT_WAIT_LIST";
    case CL_INVALID_VALUE: return "CL_INVALID_VALUE";
    case CL_INVALID_OPERATION: return "CL_INVALID_OPERATION";
    default: return "another error";
  }
}

static cl_device_id findDevice(const char* want) {
  cl_platform_id platforms[16];
  cl_uint count = 0;
  clGetPlatformIDs(16, platforms, &count);
  cl_device_id device = NULL;
  char name[256] = "", vendor[256] = "";
  for (cl_uint p = 0; p < count && !device; ++p) {
    clGetPlatformInfo(platforms[p], CL_PLATFORM_NAME, sizeof name, name, NULL);
    clGetPlatformInfo(platforms[p], CL_PLATFORM_VENDOR, sizeof vendor, vendor, NULL);
    if (!containsIgnoringCase(name, want) && !containsIgnoringCase(vendor, want)) continue;
    if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 1, &device, NULL) != CL_SUCCESS) device = NULL;
  }
  return device;
}

/* One case, in the child: exit 0 when the call answered as expected, 1 when not, 2 on setup. */
static int runCase(const char* want, const struct Case* c) {
  cl_device_id device = findDevice(want);
  if (!device) return 2;
  cl_int err = 0;
  cl_context c0 = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
  cl_command_queue q0 = clCreateCommandQueueWithProperties(c0, device, NULL, &err);
  void* svm = clSVMAlloc(c0, CL_MEM_READ_WRITE, BYTES, 0);
  void* svm2 = clSVMAlloc(c0, CL_MEM_READ_WRITE, BYTES, 0);
  cl_mem buffer = clCreateBuffer(c0, CL_MEM_READ_WRITE, BYTES, NULL, &err);
  cl_context c1 = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
  cl_event u1 = clCreateUserEvent(c1, &err);
  if (!c0 || !q0 || !svm || !svm2 || !buffer || !c1 || !u1) return 2;
  if (c->foreignSet == 1) clSetUserEventStatus(u1, CL_COMPLETE);

  cl_event list[3];
  cl_uint n = 0;
  cl_event ownUser = NULL;
  cl_command_queue q1 = NULL;
  switch (c->list) {
    case OWN:
      if (c->foreignSet < 0) break;
      ownUser = clCreateUserEvent(c0, &err);
      clSetUserEventStatus(ownUser, CL_COMPLETE);
      list[n++] = ownUser;
      break;
    case FOREIGN: list[n++] = u1; break;
    case MARKERS:
      clEnqueueMarkerWithWaitList(q0, 0, NULL, &list[n++]);
      clEnqueueMarkerWithWaitList(q0, 1, &list[0], &list[n++]);
      list[n++] = u1;
      break;
    case FOREIGN_MARKER:
      q1 = clCreateCommandQueueWithProperties(c1, device, NULL, &err);
      clEnqueueMarkerWithWaitList(q1, 0, NULL, &list[n++]);
      clFinish(q1);
      break;
    case NULL_ENTRY: list[n++] = NULL; break;
  }
  const cl_int expected = c->list == OWN         ? CL_SUCCESS
                          : c->list == NULL_ENTRY ? CL_INVALID_EVENT_WAIT_LIST
                                                  : CL_INVALID_CONTEXT;
  char host[BYTES], host2[BYTES] = {0};
  cl_event made = NULL, stale = NULL;
  if (c->eventArg == STALE) {
    clEnqueueMarkerWithWaitList(q0, 0, NULL, &stale);
    clFinish(q0);
    made = stale;
  }
  cl_event* event = c->eventArg == NONE ? NULL : &made;
  cl_event* const wait = n ? list : NULL;
  printf("%-26s ", c->name);
  fflush(stdout); /* the line so far survives a crash in the call */
  switch (c->op) {
    case SVM_READ: err = clEnqueueSVMMemcpy(q0, c->blocking, host, svm, BYTES, n, wait, event); break;
    case SVM_WRITE: err = clEnqueueSVMMemcpy(q0, c->blocking, svm, host2, BYTES, n, wait, event); break;
    case SVM_COPY: err = clEnqueueSVMMemcpy(q0, c->blocking, svm2, svm, BYTES, n, wait, event); break;
    case HOST_COPY: err = clEnqueueSVMMemcpy(q0, c->blocking, host, host2, BYTES, n, wait, event); break;
    case SVM_FILL: {
      const cl_uint pattern = 0x5a5a5a5a;
      err = clEnqueueSVMMemFill(q0, svm, &pattern, sizeof pattern, BYTES, n, wait, event);
      break;
    }
    case SVM_MAP:
      err = clEnqueueSVMMap(q0, c->blocking, CL_MAP_READ, svm, BYTES, n, wait, event);
      if (err == CL_SUCCESS) clEnqueueSVMUnmap(q0, svm, 0, NULL, NULL);
      break;
    case READ_BUFFER:
      err = clEnqueueReadBuffer(q0, buffer, c->blocking, 0, BYTES, host, n, wait, event);
      break;
    case MARKER: err = clEnqueueMarkerWithWaitList(q0, n, wait, event); break;
  }
  printf("%s (expected %s)", errorName(err), errorName(expected));
  /* A failed call must leave the caller's event alone (OpenCL 3.0 sets *event only on success). */
  cl_command_type staleType = CL_COMMAND_MARKER;
  if (stale) {
    clGetEventInfo(stale, CL_EVENT_COMMAND_TYPE, sizeof staleType, &staleType, NULL);
    if (staleType != CL_COMMAND_MARKER)
      printf(", and the earlier marker's event now says CL_EVENT_COMMAND_TYPE 0x%x", staleType);
  }
  printf("\n");
  fflush(stdout);
  if (c->foreignSet == 0) clSetUserEventStatus(u1, CL_COMPLETE); /* lets an accepted call end */
  clFinish(q0);
  if (made && made != stale) clReleaseEvent(made);
  if (stale) clReleaseEvent(stale);
  for (cl_uint i = 0; i < n; ++i)
    if (list[i] && list[i] != u1) clReleaseEvent(list[i]);
  if (q1) clReleaseCommandQueue(q1);
  clReleaseEvent(u1);
  clReleaseContext(c1);
  clReleaseMemObject(buffer);
  clSVMFree(c0, svm2);
  clSVMFree(c0, svm);
  clReleaseCommandQueue(q0);
  clReleaseContext(c0);
  return err == expected && staleType == CL_COMMAND_MARKER ? 0 : 1;
}

/* In a child too: the platform and driver version. */
static int printVersion(const char* want) {
  cl_device_id device = findDevice(want);
  if (!device) return 2;
  cl_platform_id platform = NULL;
  char name[256] = "", version[256] = "";
  clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof platform, &platform, NULL);
  clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof name, name, NULL);
  clGetDeviceInfo(device, CL_DRIVER_VERSION, sizeof version, version, NULL);
  printf("%s, driver %s\n", name, version);
  return 0;
}

int main(int argc, char** argv) {
  const char* want = argc > 1 ? argv[1] : "";
  int wrong = 0, ran = 0;
  const pid_t first = fork();
  if (first < 0) return 2;
  if (first == 0) exit(printVersion(want));
  int firstStatus = 0;
  waitpid(first, &firstStatus, 0);
  if (!WIFEXITED(firstStatus) || WEXITSTATUS(firstStatus) != 0) {
    fprintf(stderr, "no platform matching '%s' with a device\n", want);
    return 2;
  }
  for (int i = 0; i < CASES; ++i) {
    int named = argc <= 2;
    for (int a = 2; a < argc; ++a) named |= strcmp(argv[a], cases[i].name) == 0;
    if (!named) continue;
    ++ran;
    fflush(stdout);
    const pid_t child = fork();
    if (child < 0) return 2;
    if (child == 0) {
      alarm(5);
      exit(runCase(want, &cases[i]));
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 2) {
      fprintf(stderr, "%s: setup failed (no platform matching '%s' with a device and SVM?)\n",
              cases[i].name, want);
      return 2;
    }
    if (WIFSIGNALED(status)) {
      const int sig = WTERMSIG(status);
      printf("%s\n", sig == SIGALRM ? "hung: killed after 5 s" : strsignal(sig));
    }
    wrong += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  printf("%d of %d cases wrong\n", wrong, ran);
  return wrong != 0;
}
