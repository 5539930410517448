/* ndrange-foreign-event.c: an enqueue whose wait list holds an event of another context must fail.
 * OpenCL 3.0, clEnqueueNDRangeKernel and the other enqueues: "CL_INVALID_CONTEXT if context
 * associated with command_queue and events in event_wait_list are not the same".
 * pocl 3.1 to current source returns CL_SUCCESS from clEnqueueNDRangeKernel (and clEnqueueTask)
 * instead: since the code it shares with command buffers, that path never checks the wait list.
 *
 *   cc -O2 -o ndrange-foreign-event ndrange-foreign-event.c -lOpenCL
 *   ./ndrange-foreign-event pocl [CASE...]        # every case when none is named
 *   RUSTICL_ENABLE=llvmpipe ./ndrange-foreign-event rusticl
 *   tools/runtime-root run build/runtime-root -- ./ndrange-foreign-event pocl   # pocl 6.0
 *
 * Each case runs in a child process of its own, forked before any OpenCL call, so a crash ends
 * only its case (a process that made an OpenCL call must not fork: pocl's threads do not follow).
 * A child still running after 20 s (5 s once in a clFinish that may wait for ever) is killed and
 * its case reported as hung.
 *
 * Every case makes a context c0 with an in-order queue q0, a program of c0 with the kernel
 * `pattern` (word i of its buffer argument becomes i * 2654435761 ^ seed), two 256-byte buffers
 * b0 and b1 of c0, and a second context c1 on the same device with a user event u1. The call's
 * wait list is one of:
 *   none:     no list (CL_SUCCESS expected);
 *   own:      a user event of c0, set CL_COMPLETE before the call (CL_SUCCESS expected);
 *   omarker:  a marker of q0 (CL_SUCCESS expected);
 *   foreign:  u1, set CL_COMPLETE before the call, or left unset ("-unset");
 *   fmarker:  a marker of a queue q1 of c1, finished before the call;
 *   mixed:    an unset user event of c0 and u1 unset, as gpufuzz found it;
 *   null-in-list: one NULL handle (CL_INVALID_EVENT_WAIT_LIST expected);
 *   count-no-list: a count of 1 with a NULL list (CL_INVALID_EVENT_WAIT_LIST expected).
 * The calls: clEnqueueNDRangeKernel of 64 work-items on b0 ("ndrange"), clEnqueueTask ("task");
 * and, as controls, clEnqueueReadBuffer, clEnqueueWriteBuffer, clEnqueueCopyBuffer (b1 to b0),
 * clEnqueueFillBuffer, clEnqueueMarkerWithWaitList and clEnqueueBarrierWithWaitList, none blocking.
 *
 * A kernel enqueue that is accepted while a listed user event is unset is followed, to see whether
 * the dependency holds: the kernel's event is watched for 1 s (does it run before the event is
 * set?), then the listed user events are set CL_COMPLETE and the kernel watched for 2 s more, and
 * b0 is read back and compared. "-finish" cases call clFinish with the user event still unset.
 * "ndrange-own-unset" is the same with a user event of c0, which the specification allows.
 * Exit 0: every case answered as the specification says; 1: some did not; 2: setup failed.
 */
#define CL_TARGET_OPENCL_VERSION 300
#define CL_USE_DEPRECATED_OPENCL_1_2_APIS /* clEnqueueTask, deprecated by OpenCL 2.0 */
#include <CL/cl.h>
#include <ctype.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

enum Op { NDRANGE, TASK, READ_BUFFER, WRITE_BUFFER, COPY_BUFFER, FILL_BUFFER, MARKER, BARRIER };
enum List { NONE, OWN, OWN_MARKER, FOREIGN, FOREIGN_MARKER, MIXED, NULL_ENTRY, COUNT_NO_LIST };
/* What follows an accepted call: clFinish, or a watch of an unset dependency, or clFinish with
 * the user events still unset. */
enum Then { FINISH, WATCH, FINISH_UNSET };

struct Case {
  const char* name;
  enum Op op;
  enum List list;
  int set; /* the listed user events are set CL_COMPLETE before the call */
  enum Then then;
};

static const struct Case cases[] = {
    {"ndrange-none", NDRANGE, NONE, 1, FINISH},
    {"ndrange-own", NDRANGE, OWN, 1, FINISH},
    {"ndrange-omarker", NDRANGE, OWN_MARKER, 1, FINISH},
    {"ndrange-own-unset", NDRANGE, OWN, 0, WATCH},
    {"ndrange-foreign", NDRANGE, FOREIGN, 1, FINISH},
    {"ndrange-foreign-unset", NDRANGE, FOREIGN, 0, WATCH},
    {"ndrange-foreign-unset-finish", NDRANGE, FOREIGN, 0, FINISH_UNSET},
    {"ndrange-fmarker", NDRANGE, FOREIGN_MARKER, 1, FINISH},
    {"ndrange-mixed", NDRANGE, MIXED, 0, WATCH},
    {"ndrange-null-in-list", NDRANGE, NULL_ENTRY, 1, FINISH},
    {"ndrange-count-no-list", NDRANGE, COUNT_NO_LIST, 1, FINISH},
    {"task-own", TASK, OWN, 1, FINISH},
    {"task-foreign", TASK, FOREIGN, 1, FINISH},
    {"read-buffer-own", READ_BUFFER, OWN, 1, FINISH},
    {"read-buffer-foreign", READ_BUFFER, FOREIGN, 1, FINISH},
    {"read-buffer-fmarker", READ_BUFFER, FOREIGN_MARKER, 1, FINISH},
    {"read-buffer-null-in-list", READ_BUFFER, NULL_ENTRY, 1, FINISH},
    {"write-buffer-own", WRITE_BUFFER, OWN, 1, FINISH},
    {"write-buffer-foreign", WRITE_BUFFER, FOREIGN, 1, FINISH},
    {"copy-buffer-own", COPY_BUFFER, OWN, 1, FINISH},
    {"copy-buffer-foreign", COPY_BUFFER, FOREIGN, 1, FINISH},
    {"fill-buffer-own", FILL_BUFFER, OWN, 1, FINISH},
    {"fill-buffer-foreign", FILL_BUFFER, FOREIGN, 1, FINISH},
    {"marker-own", MARKER, OWN, 1, FINISH},
    {"marker-foreign", MARKER, FOREIGN, 1, FINISH},
    {"marker-count-no-list", MARKER, COUNT_NO_LIST, 1, FINISH},
    {"barrier-own", BARRIER, OWN, 1, FINISH},
    {"barrier-foreign", BARRIER, FOREIGN, 1, FINISH},
};
enum { CASES = sizeof cases / sizeof cases[0], WORDS = 64, BYTES = WORDS * 4, SEED = 0x1234 };

static const char* source =
    "__kernel void pattern(__global uint* words, uint seed) {\n"
    "  const uint i = (uint)get_global_id(0);\n"
    "  words[i] = (i * 2654435761u) ^ seed;\n"
    "}\n";

static int containsIgnoringCase(const char* haystack, const char* needle) {
  for (const char* h = haystack; *h; ++h) {
    size_t i = 0;
    while (needle[i] && h[i] && tolower((unsigned char)h[i]) == tolower((unsigned char)needle[i]))
      ++i;
    if (!needle[i]) return 1;
  }
  return 0;
}

static const char* errorName(cl_int e) {
  static char other[32];
  switch (e) {
    case CL_SUCCESS:
      return "CL_SUCCESS";
    case CL_INVALID_CONTEXT:
      return "CL_INVALID_CONTEXT";
    case CL_INVALID_EVENT_WAIT_LIST:
      return "CL_INVALID_EVENT_WAIT_LIST";
    case CL_INVALID_VALUE:
      return "CL_INVALID_VALUE";
    case CL_INVALID_OPERATION:
      return "CL_INVALID_OPERATION";
    default:
      snprintf(other, sizeof other, "error %d", e);
      return other;
  }
}

static const char* statusName(cl_int s) {
  switch (s) {
    case CL_COMPLETE:
      return "CL_COMPLETE";
    case CL_RUNNING:
      return "CL_RUNNING";
    case CL_SUBMITTED:
      return "CL_SUBMITTED";
    case CL_QUEUED:
      return "CL_QUEUED";
    default:
      return "an error status";
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
    if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 1, &device, NULL) != CL_SUCCESS)
      device = NULL;
  }
  return device;
}

static double now(void) {
  struct timespec t;
  clock_gettime(CLOCK_MONOTONIC, &t);
  return t.tv_sec + t.tv_nsec / 1e9;
}

/* The event's status once it is CL_COMPLETE (or an error), or when `seconds` have passed. */
static cl_int watch(cl_event event, double seconds, double* took) {
  const double start = now();
  cl_int status = CL_QUEUED;
  for (;;) {
    clGetEventInfo(event, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof status, &status, NULL);
    *took = now() - start;
    if (status <= CL_COMPLETE || *took >= seconds) return status;
    usleep(10000);
  }
}

/* b0 holds the kernel's pattern (all 64 words for ndrange, word 0 for task). */
static int patternHeld(cl_command_queue q0, cl_mem b0, enum Op op) {
  cl_uint words[WORDS];
  if (clEnqueueReadBuffer(q0, b0, CL_TRUE, 0, BYTES, words, 0, NULL, NULL) != CL_SUCCESS) return 0;
  const int n = op == TASK ? 1 : WORDS;
  for (int i = 0; i < n; ++i)
    if (words[i] != (((cl_uint)i * 2654435761u) ^ SEED)) return 0;
  return 1;
}

/* One case, in the child: exit 0 when the call answered as expected, 1 when not, 2 on setup. */
static int runCase(const char* want, const struct Case* c) {
  cl_device_id device = findDevice(want);
  if (!device) return 2;
  cl_int err = 0;
  cl_context c0 = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
  cl_command_queue q0 = clCreateCommandQueueWithProperties(c0, device, NULL, &err);
  cl_program program = clCreateProgramWithSource(c0, 1, &source, NULL, &err);
  if (!program || clBuildProgram(program, 1, &device, "", NULL, NULL) != CL_SUCCESS) return 2;
  cl_kernel kernel = clCreateKernel(program, "pattern", &err);
  cl_mem b0 = clCreateBuffer(c0, CL_MEM_READ_WRITE, BYTES, NULL, &err);
  cl_mem b1 = clCreateBuffer(c0, CL_MEM_READ_WRITE, BYTES, NULL, &err);
  cl_context c1 = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
  cl_event u1 = clCreateUserEvent(c1, &err);
  if (!c0 || !q0 || !kernel || !b0 || !b1 || !c1 || !u1) return 2;
  const cl_uint seed = SEED;
  clSetKernelArg(kernel, 0, sizeof b0, &b0);
  clSetKernelArg(kernel, 1, sizeof seed, &seed);
  const cl_uint zero = 0;
  clEnqueueFillBuffer(q0, b0, &zero, sizeof zero, 0, BYTES, 0, NULL, NULL);
  clEnqueueFillBuffer(q0, b1, &zero, sizeof zero, 0, BYTES, 0, NULL, NULL);
  clFinish(q0);

  /* The list, and the user events in it that the case sets (before the call, or later). */
  cl_event list[2] = {NULL, NULL}, users[2] = {NULL, NULL}, owned[2] = {NULL, NULL};
  cl_uint n = 0, nUsers = 0, nOwned = 0;
  cl_command_queue q1 = NULL;
  switch (c->list) {
    case NONE:
      break;
    case OWN:
      list[n++] = owned[nOwned++] = users[nUsers++] = clCreateUserEvent(c0, &err);
      break;
    case OWN_MARKER:
      clEnqueueMarkerWithWaitList(q0, 0, NULL, &list[n]);
      owned[nOwned++] = list[n++];
      break;
    case FOREIGN:
      list[n++] = users[nUsers++] = u1;
      break;
    case FOREIGN_MARKER:
      q1 = clCreateCommandQueueWithProperties(c1, device, NULL, &err);
      clEnqueueMarkerWithWaitList(q1, 0, NULL, &list[n]);
      owned[nOwned++] = list[n++];
      clFinish(q1);
      break;
    case MIXED:
      list[n++] = owned[nOwned++] = users[nUsers++] = clCreateUserEvent(c0, &err);
      list[n++] = users[nUsers++] = u1;
      break;
    case NULL_ENTRY:
      list[n++] = NULL;
      break;
    case COUNT_NO_LIST:
      n = 1;
      break;
  }
  if (c->set)
    for (cl_uint i = 0; i < nUsers; ++i)
      clSetUserEventStatus(users[i], CL_COMPLETE);
  const int foreign = c->list == FOREIGN || c->list == FOREIGN_MARKER || c->list == MIXED;
  const cl_int expected = foreign ? CL_INVALID_CONTEXT
                          : c->list == NULL_ENTRY || c->list == COUNT_NO_LIST
                              ? CL_INVALID_EVENT_WAIT_LIST
                              : CL_SUCCESS;
  const cl_event* wait = c->list == NONE || c->list == COUNT_NO_LIST ? NULL : list;
  const size_t global = WORDS;
  cl_uint host[WORDS] = {0};
  const cl_uint pattern = 0x5a5a5a5a;
  cl_event made = NULL;
  printf("%-29s ", c->name);
  fflush(stdout); /* the line so far survives a crash in the call */
  switch (c->op) {
    case NDRANGE:
      err = clEnqueueNDRangeKernel(q0, kernel, 1, NULL, &global, NULL, n, wait, &made);
      break;
    case TASK:
      err = clEnqueueTask(q0, kernel, n, wait, &made);
      break;
    case READ_BUFFER:
      err = clEnqueueReadBuffer(q0, b0, CL_FALSE, 0, BYTES, host, n, wait, &made);
      break;
    case WRITE_BUFFER:
      err = clEnqueueWriteBuffer(q0, b0, CL_FALSE, 0, BYTES, host, n, wait, &made);
      break;
    case COPY_BUFFER:
      err = clEnqueueCopyBuffer(q0, b1, b0, 0, 0, BYTES, n, wait, &made);
      break;
    case FILL_BUFFER:
      err = clEnqueueFillBuffer(q0, b0, &pattern, sizeof pattern, 0, BYTES, n, wait, &made);
      break;
    case MARKER:
      err = clEnqueueMarkerWithWaitList(q0, n, wait, &made);
      break;
    case BARRIER:
      err = clEnqueueBarrierWithWaitList(q0, n, wait, &made);
      break;
  }
  printf("%s (expected %s)\n", errorName(err), errorName(expected));
  fflush(stdout);
  int right = err == expected;

  if (err == CL_SUCCESS && made && c->then == WATCH) {
    /* Does the kernel wait for the unset user events, and run once they are set? */
    clFlush(q0);
    double took = 0;
    cl_int status = watch(made, 1.0, &took);
    printf("    before the user events are set: %s after %.2f s\n", statusName(status), took);
    const int ranEarly = status == CL_COMPLETE;
    for (cl_uint i = 0; i < nUsers; ++i)
      clSetUserEventStatus(users[i], CL_COMPLETE);
    status = watch(made, 2.0, &took);
    printf("    after they are set:             %s after %.2f s\n", statusName(status), took);
    fflush(stdout);
    clFinish(q0);
    const int held = patternHeld(q0, b0, c->op);
    printf("    b0 %s the kernel's pattern\n", held ? "holds" : "does not hold");
    if (expected == CL_SUCCESS) right = right && !ranEarly && status == CL_COMPLETE && held;
  } else if (err == CL_SUCCESS && c->then == FINISH_UNSET) {
    printf("    clFinish with the user events unset: ");
    fflush(stdout);
    alarm(5);
    clFinish(q0);
    alarm(0);
    printf("returned\n");
  } else if (err == CL_SUCCESS && (c->op == NDRANGE || c->op == TASK)) {
    clFinish(q0);
    const int held = patternHeld(q0, b0, c->op);
    printf("    b0 %s the kernel's pattern\n", held ? "holds" : "does not hold");
    if (expected == CL_SUCCESS) right = right && held;
  }
  fflush(stdout);
  /* Let anything accepted end, then release what the case made. */
  for (cl_uint i = 0; i < nUsers; ++i)
    clSetUserEventStatus(users[i], CL_COMPLETE);
  clFinish(q0);
  if (q1) clFinish(q1);
  if (made) clReleaseEvent(made);
  for (cl_uint i = 0; i < nOwned; ++i)
    clReleaseEvent(owned[i]);
  if (q1) clReleaseCommandQueue(q1);
  clReleaseEvent(u1);
  clReleaseContext(c1);
  clReleaseMemObject(b1);
  clReleaseMemObject(b0);
  clReleaseKernel(kernel);
  clReleaseProgram(program);
  clReleaseCommandQueue(q0);
  clReleaseContext(c0);
  return right ? 0 : 1;
}

/* In a child too: the platform and driver version. */
static int printVersion(const char* want) {
  cl_device_id device = findDevice(want);
  if (!device) return 2;
  cl_platform_id platform = NULL;
  char name[256] = "", device_name[256] = "", version[256] = "";
  clGetDeviceInfo(device, CL_DEVICE_PLATFORM, sizeof platform, &platform, NULL);
  clGetPlatformInfo(platform, CL_PLATFORM_NAME, sizeof name, name, NULL);
  clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof device_name, device_name, NULL);
  clGetDeviceInfo(device, CL_DRIVER_VERSION, sizeof version, version, NULL);
  printf("%s, %s, driver %s\n", name, device_name, version);
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
    for (int a = 2; a < argc; ++a)
      named |= strcmp(argv[a], cases[i].name) == 0;
    if (!named) continue;
    ++ran;
    fflush(stdout);
    const pid_t child = fork();
    if (child < 0) return 2;
    if (child == 0) {
      alarm(20);
      exit(runCase(want, &cases[i]));
    }
    int status = 0;
    waitpid(child, &status, 0);
    if (WIFEXITED(status) && WEXITSTATUS(status) == 2) {
      fprintf(stderr, "%s: setup failed (no platform matching '%s' with a device?)\n",
              cases[i].name, want);
      return 2;
    }
    if (WIFSIGNALED(status)) {
      const int sig = WTERMSIG(status);
      printf("%s\n", sig == SIGALRM ? "hung: killed by its alarm" : strsignal(sig));
    }
    wrong += !(WIFEXITED(status) && WEXITSTATUS(status) == 0);
  }
  printf("%d of %d cases wrong\n", wrong, ran);
  return wrong != 0;
}
