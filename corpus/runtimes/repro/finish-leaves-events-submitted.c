/* finish-leaves-events-submitted.c: after clFinish (or a blocking clEnqueueReadBuffer) returns,
 * every command enqueued before it must report CL_COMPLETE (OpenCL 3.0, 5.15: clFinish "blocks
 * until all previously queued commands ... have completed"; 5.11: a blocking read returns once
 * the data has been read and copied). Counts, over N rounds, the status an upload's event
 * reports right after the wait.
 *
 *   cc -O2 -o finish-leaves-events-submitted finish-leaves-events-submitted.c -lOpenCL
 *   RUSTICL_ENABLE=llvmpipe ./finish-leaves-events-submitted rusticl 1000
 *   ./finish-leaves-events-submitted pocl 1000
 */
#define CL_TARGET_OPENCL_VERSION 120
#include <CL/cl.h>
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int containsIgnoringCase(const char* haystack, const char* needle) {
  for (const char* h = haystack; *h; ++h) {
    size_t i = 0;
    while (needle[i] && h[i] && tolower((unsigned char)h[i]) == tolower((unsigned char)needle[i])) ++i;
    if (!needle[i]) return 1;
  }
  return 0;
}

int main(int argc, char** argv) {
  const char* want = argc > 1 ? argv[1] : "";
  const int rounds = argc > 2 ? atoi(argv[2]) : 1000;
  cl_platform_id platforms[16];
  cl_uint count = 0;
  clGetPlatformIDs(16, platforms, &count);
  cl_device_id device = NULL;
  char name[256] = "", vendor[256] = "", version[256] = "", dname[256] = "";
  for (cl_uint p = 0; p < count && !device; ++p) {
    // By platform name or vendor: pocl's name is "Portable Computing Language", its vendor
    // "The pocl project".
    clGetPlatformInfo(platforms[p], CL_PLATFORM_NAME, sizeof name, name, NULL);
    clGetPlatformInfo(platforms[p], CL_PLATFORM_VENDOR, sizeof vendor, vendor, NULL);
    if (!containsIgnoringCase(name, want) && !containsIgnoringCase(vendor, want)) continue;
    if (clGetDeviceIDs(platforms[p], CL_DEVICE_TYPE_ALL, 1, &device, NULL) != CL_SUCCESS) device = NULL;
  }
  if (!device) { fprintf(stderr, "no platform matching '%s' with a device\n", want); return 2; }
  clGetDeviceInfo(device, CL_DEVICE_NAME, sizeof dname, dname, NULL);
  clGetDeviceInfo(device, CL_DRIVER_VERSION, sizeof version, version, NULL);
  cl_int err = 0;
  cl_context ctx = clCreateContext(NULL, 1, &device, NULL, NULL, &err);
  cl_command_queue q = clCreateCommandQueue(ctx, device, 0, &err);
  cl_mem buf = clCreateBuffer(ctx, CL_MEM_READ_WRITE, 1 << 16, NULL, &err);
  const char* source = "__kernel void touch(__global uint* p) { p[get_global_id(0)] += 1u; }";
  cl_program program = clCreateProgramWithSource(ctx, 1, &source, NULL, &err);
  clBuildProgram(program, 1, &device, "", NULL, NULL);
  cl_kernel kernel = clCreateKernel(program, "touch", &err);
  clSetKernelArg(kernel, 0, sizeof buf, &buf);
  const size_t global = 64;
  int afterKernel[4] = {0};
  static unsigned char host[1 << 16], back[1 << 16];
  int afterFinish[4] = {0}, afterRead[4] = {0}, readStatus[4] = {0}, afterBoth[4] = {0}, wrongData = 0;
  for (int i = 0; i < rounds; ++i) {
    memset(host, i & 0xff, sizeof host);
    cl_event write = NULL, read = NULL;
    clEnqueueWriteBuffer(q, buf, CL_FALSE, 0, sizeof host, host, 0, NULL, &write);
    clFinish(q);
    cl_int s = -1;
    clGetEventInfo(write, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL);
    if (s >= 0 && s <= 3) ++afterFinish[s];
    clReleaseEvent(write);

    /* an upload, then a kernel, then clFinish: the renderer's draw and sync */
    cl_event launched = NULL;
    clEnqueueWriteBuffer(q, buf, CL_FALSE, 0, sizeof host, host, 0, NULL, &write);
    clEnqueueNDRangeKernel(q, kernel, 1, NULL, &global, NULL, 0, NULL, &launched);
    clFinish(q);
    clGetEventInfo(write, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL);
    if (s >= 0 && s <= 3) ++afterKernel[s];
    clReleaseEvent(write);
    clReleaseEvent(launched);

    clEnqueueWriteBuffer(q, buf, CL_FALSE, 0, sizeof host, host, 0, NULL, &write);
    clEnqueueReadBuffer(q, buf, CL_TRUE, 0, sizeof back, back, 0, NULL, &read);
    clGetEventInfo(write, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL);
    if (s >= 0 && s <= 3) ++afterRead[s];
    if (memcmp(back, host, sizeof back) != 0) ++wrongData;
    clFinish(q);
    clGetEventInfo(write, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL);
    if (s >= 0 && s <= 3) ++afterBoth[s];
    clGetEventInfo(read, CL_EVENT_COMMAND_EXECUTION_STATUS, sizeof s, &s, NULL);
    if (s >= 0 && s <= 3) ++readStatus[s];
    clReleaseEvent(write);
    clReleaseEvent(read);
  }
  printf("%s / %s / driver %s, %d rounds\n", name, dname, version, rounds);
  printf("  upload's status after clFinish:        COMPLETE %d RUNNING %d SUBMITTED %d QUEUED %d\n",
         afterFinish[0], afterFinish[1], afterFinish[2], afterFinish[3]);
  printf("  upload's status after a kernel and clFinish: COMPLETE %d RUNNING %d SUBMITTED %d QUEUED %d\n",
         afterKernel[0], afterKernel[1], afterKernel[2], afterKernel[3]);
  printf("  upload's status after a blocking read: COMPLETE %d RUNNING %d SUBMITTED %d QUEUED %d\n",
         afterRead[0], afterRead[1], afterRead[2], afterRead[3]);
  printf("  the read's own status after it:        COMPLETE %d RUNNING %d SUBMITTED %d QUEUED %d\n",
         readStatus[0], readStatus[1], readStatus[2], readStatus[3]);
  printf("  ... and after a clFinish following it: COMPLETE %d RUNNING %d SUBMITTED %d QUEUED %d\n",
         afterBoth[0], afterBoth[1], afterBoth[2], afterBoth[3]);
  printf("  read-backs that differed from the upload: %d\n", wrongData);
  clReleaseKernel(kernel);
  clReleaseProgram(program);
  clReleaseMemObject(buf);
  clReleaseCommandQueue(q);
  clReleaseContext(ctx);
  return wrongData == 0 && afterKernel[0] == rounds && afterBoth[0] == rounds && afterFinish[0] == rounds && afterRead[0] == rounds && readStatus[0] == rounds ? 0 : 1;
}
