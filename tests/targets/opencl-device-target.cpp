// opencl-device-target: the device model (contexts and buffers) over OpenCL, linked against the
// ICD loader, as a program of a user's would be. It calls no mayFail(): the interposer gpufuzz
// preloads fails its marked OpenCL calls (docs/failures.md, Targets). Its teardown releases the
// context even when the wait before it fails, so every marked run passes.
//
//   gpufuzz sweep --model device --target opencl-device-target FILE
#include <CL/cl.h>

#include <map>
#include <memory>
#include <string>

#include "gpufuzz/target.hpp"

namespace {

namespace gt = gpufuzz::target;

void check(cl_int status, const char* call) {
  if (status != CL_SUCCESS)
    throw gt::Failure("error", std::string(call) + ": OpenCL error " + std::to_string(status));
}

struct Context {
  cl_context context = nullptr;
  cl_command_queue queue = nullptr;
};

class OpenClDeviceTarget final : public gt::Target {
 public:
  OpenClDeviceTarget() {
    handle("ctx_create", [this](const gt::Operation& op) { create(op.name()); });
    handle("buf_create", [this](const gt::Operation& op) {
      cl_int status = CL_SUCCESS;
      cl_mem mem = clCreateBuffer(contexts_.at(op.names.at(0)).context, CL_MEM_READ_WRITE,
                                  op.arg("bytes", 256), nullptr, &status);
      check(status, "clCreateBuffer");
      buffers_[op.names.at(1)] = mem;
    });
    handle("buf_destroy", [this](const gt::Operation& op) {
      clReleaseMemObject(buffers_.at(op.name()));
      buffers_.erase(op.name());
    });
    handle("ctx_destroy", [this](const gt::Operation& op) {
      const Context c = contexts_.at(op.name());
      contexts_.erase(op.name());
      const cl_int finished = clFinish(c.queue);
      // Released whether or not the wait failed: what a failed teardown leaves is a leak.
      clReleaseCommandQueue(c.queue);
      clReleaseContext(c.context);
      check(finished, "clFinish");
    });
  }

  // The first platform with a device: the loader lists its vendors in no set order, and Mesa's
  // Clover and rusticl (unless enabled) list none.
  void start(const gt::Sequence&) override {
    cl_platform_id platforms[8];
    cl_uint count = 0;
    check(clGetPlatformIDs(8, platforms, &count), "clGetPlatformIDs");
    for (cl_uint i = 0; i < count && i < 8; ++i) {
      if (clGetDeviceIDs(platforms[i], CL_DEVICE_TYPE_ALL, 1, &device_, nullptr) == CL_SUCCESS) {
        return;
      }
    }
    throw gt::Failure("error", "no OpenCL platform has a device");
  }

  std::optional<std::string> leaks() override {
    if (contexts_.empty() && buffers_.empty()) return std::nullopt;
    return std::to_string(contexts_.size()) + " contexts and " + std::to_string(buffers_.size()) +
           " buffers still held";
  }

 private:
  void create(const std::string& name) {
    cl_int status = CL_SUCCESS;
    Context c;
    c.context = clCreateContext(nullptr, 1, &device_, nullptr, nullptr, &status);
    check(status, "clCreateContext");
    c.queue = clCreateCommandQueue(c.context, device_, 0, &status);
    if (status != CL_SUCCESS) clReleaseContext(c.context);  // the context was never made
    check(status, "clCreateCommandQueue");
    contexts_[name] = c;
  }

  cl_device_id device_ = nullptr;
  std::map<std::string, Context> contexts_;
  std::map<std::string, cl_mem> buffers_;
};

}  // namespace

int main(int argc, char** argv) {
  return gt::main(argc, argv, "opencl-device-target 1.0",
                  [] { return std::make_unique<OpenClDeviceTarget>(); });
}
