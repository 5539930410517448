"""A small renderer over CuPy, as a gpufuzz target (README.md beside it says how to fuzz it).

A renderer is a render stream, a transfer stream for texture uploads, and a framebuffer, all
memory from CuPy's default memory pool. A draw uploads its triangles and launches a RawKernel on
the render stream without waiting; read_back copies the framebuffer back and checks it against
the numpy reference of the same raster (examples/targets/common/raster.py). Device ops: a context
is a stream with a memory pool of its own (cupy.cuda.MemoryPool), its buffers that pool's blocks.

`import cupy` happens once, in the fork server (startup), which then checks that CUDA was not
initialised by it (cuDeviceGetCount must still answer CUDA_ERROR_NOT_INITIALIZED) before it says
hello; each forked run initialises CUDA itself in setup().

    python3 target.py [--device N] FILE
    python3 target.py --self-test          (on a GPU machine: checks all of the above; exit 0/1)
"""

import ctypes
import os
import sys

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "../../../clients/python"), os.path.join(HERE, "../common")]
import gpufuzz_target as gpufuzz  # noqa: E402
from renderers import RendererOps  # noqa: E402
from raster import CUDA_KERNEL, compare, reference_raster, texels, triangles  # noqa: E402

cupy = None  # imported by startup(), in the fork server when there is one
CUDA_ERROR_NOT_INITIALIZED = 3
BLOCK = (16, 16, 1)


def cuda_initialised():
    """Whether this process has called cuInit (None: no driver to ask)."""
    try:
        libcuda = ctypes.CDLL("libcuda.so.1")
    except OSError:
        return None
    count = ctypes.c_int(0)
    return libcuda.cuDeviceGetCount(ctypes.byref(count)) != CUDA_ERROR_NOT_INITIALIZED


def import_cupy():
    global cupy
    if cupy is None:
        import cupy as imported  # noqa: PLC0415 - once, where startup() runs
        cupy = imported
    return cupy


class Renderer:
    def __init__(self, target, width, height):
        self.target, self.width, self.height = target, width, height
        self.stream = cupy.cuda.Stream(non_blocking=True)
        self.transfers = cupy.cuda.Stream(non_blocking=True)
        with self.stream:
            self.fb = cupy.zeros(width * height, dtype=cupy.uint32)
            self.no_texture = cupy.zeros(1, dtype=cupy.uint32)
        self.textures, self.texture_size = [], 0
        self.frame = []  # the triangle arrays the queued draws read
        self.image = np.zeros((height, width), dtype=np.uint32)  # the reference
        self.model_textures = []

    def draw(self, count, seed):
        tris = triangles(self.width, self.height, count, seed)
        grid = ((self.width + BLOCK[0] - 1) // BLOCK[0], (self.height + BLOCK[1] - 1) // BLOCK[1])
        with self.stream:
            tris_d = cupy.asarray(tris)
            tex, tsize = ((self.textures[0], self.texture_size) if self.textures
                          else (self.no_texture, 0))
            self.target.kernel(grid, BLOCK[:2], (self.fb, np.int32(self.width),
                                                 np.int32(self.height), tris_d, np.int32(count),
                                                 tex, np.int32(tsize)))
        self.frame.append(tris_d)
        reference_raster(self.image, tris, self.model_textures[0] if self.model_textures else None)

    def wait(self):
        self.stream.synchronize()
        self.frame = []

    def set_textures(self, count, size, seed, wait):
        if wait:
            self.wait()  # no queued draw still reads the textures dropped below
        self.textures = []  # their blocks go back to the transfer stream's arena of the pool
        with self.transfers:
            self.textures = [cupy.asarray(t) for t in texels(count, size, seed)]
        self.stream.wait_event(self.transfers.record())  # draws after this see the uploads
        self.texture_size = size
        self.model_textures = texels(count, size, seed)

    def read_back(self, name):
        self.wait()
        got = self.fb.get(stream=self.stream)
        mismatch = compare(name, self.width, got, self.image)
        if mismatch:
            raise gpufuzz.Mismatch(mismatch)

    def release(self, policy):
        """The teardown, under the sequence's policy (README.md: what each one does)."""
        if policy != "no-destroy-sync":
            self.transfers.synchronize()
            self.stream.synchronize()
        if policy == "context-first":
            self.stream = self.transfers = None  # cudaStreamDestroy before the memory goes
        self.frame = self.textures = []
        self.fb = self.no_texture = None
        self.stream = self.transfers = None


class CuPyRenderer(RendererOps, gpufuzz.Target):
    name = "cupy-renderer"
    version = "1.0"

    def configure(self, args):
        self.device_id = 0
        while args:
            if args[0] == "--device" and len(args) > 1:
                self.device_id, args = int(args[1]), args[2:]
            else:
                raise SystemExit(f"{self.name}: unknown arguments: {' '.join(args)}")

    def startup(self):
        import_cupy()
        if self.fork_server and cuda_initialised():
            raise SystemExit(f"{self.name}: importing cupy initialised CUDA; a forked child could "
                             "not use it: run without the fork server")

    def setup(self, sequence):
        cupy.cuda.Device(self.device_id).use()
        self.kernel = cupy.RawKernel(CUDA_KERNEL, "raster")
        self.policy = sequence.policy
        self.renderers, self.contexts, self.buffers, self.pools = {}, {}, {}, []

    def make_renderer(self, width, height):  # the renderer vocabulary: RendererOps
        return Renderer(self, width, height)

    # Device vocabulary: a context is a stream and a memory pool of its own.
    def ctx_create(self, c):
        pool = cupy.cuda.MemoryPool()
        self.pools.append(pool)
        self.contexts[c] = (cupy.cuda.Stream(non_blocking=True), pool)

    def buf_create(self, c, b, bytes):
        stream, pool = self.contexts[c]
        with stream:
            self.buffers[b] = pool.malloc(bytes)

    def buf_destroy(self, b):
        del self.buffers[b]  # the block goes back to its pool

    def ctx_destroy(self, c):
        stream, pool = self.contexts.pop(c)
        stream.synchronize()
        pool.free_all_blocks()  # what is still allocated stays with its buffers

    def leak_check(self):
        cupy.cuda.Device(self.device_id).synchronize()
        used = cupy.get_default_memory_pool().used_bytes()
        used_by_contexts = sum(p.used_bytes() for p in self.pools)
        if used or used_by_contexts:
            return (f"after everything was released CuPy's memory pools still hold {used} bytes "
                    f"(default pool) and {used_by_contexts} bytes (the contexts' pools)")
        return None


# ---------------------------------------------------------------------------------------------
# --self-test: what the GPU machine must show before the target is fuzzed there.


def _in_fork(check):
    """Runs check() in a forked child (as the fork server would); True when it passed."""
    sys.stdout.flush()
    pid = os.fork()
    if pid == 0:
        try:
            ok = check()
        except BaseException as e:  # noqa: BLE001
            print(f"  {type(e).__name__}: {e}")
            ok = False
        sys.stdout.flush()
        os._exit(0 if ok else 1)
    _, status = os.waitpid(pid, 0)
    return status == 0


def _raster_agrees():
    target = CuPyRenderer()
    target.configure([])
    target.setup(gpufuzz.parse_sequence("", "<self-test>"))
    # textures: how many set_textures makes (None: no set_textures; 0: it makes none).
    for width, height, count, seed, textures in [(64, 64, 4, 0, None), (37, 19, 200, 7, 1),
                                                 (512, 300, 1024, 3, 2), (1, 1, 16, 9, 1),
                                                 (64, 64, 64, 5, 0)]:
        r = Renderer(target, width, height)
        if textures is not None:
            r.set_textures(textures, 13, seed, wait=True)
        r.draw(count, seed)
        r.draw(count, seed + 1)
        r.read_back(f"{width}x{height}")  # raises Mismatch when the kernel and numpy differ
        r.release("shipped")
    return target.leak_check() is None


def _sequences_pass():
    body = ("create r0\nset_textures r0 count=2 size=16\ndraw r0 triangles=64\n"
            "set_textures r0 count=1 size=16 seed=5\ndraw r0\nread_back r0\ncreate r1 width=200\n"
            "draw r1 triangles=300 seed=2\ndestroy r0\nctx_create c0\nbuf_create c0 b0 bytes=4096\n"
            "ctx_destroy c0\nbuf_destroy b0\nctx_create c1\nbuf_create c1 b1\n")
    ok = True
    for policy in ("shipped", "context-first"):
        target = CuPyRenderer()
        target.configure([])
        status = gpufuzz.run_sequence(
            target, gpufuzz.parse_sequence(f"# policy: {policy}\n{body}", "<self-test>"),
            gpufuzz._Events(None))
        print(f"  {policy}: exit status {status}")
        ok &= status == 0
    target = CuPyRenderer()
    target.configure([])
    target.setup(gpufuzz.parse_sequence("", "<self-test>"))
    target.create("r0", 64, 64)
    kept = target.renderers["r0"].fb  # a planted leak: the framebuffer outlives its renderer
    target.destroy("r0")
    leak = target.leak_check()
    print(f"  planted leak: {leak}")
    del kept
    return ok and leak is not None and target.leak_check() is None


def self_test():
    results = []
    import_cupy()
    initialised = cuda_initialised()
    results.append(("import cupy leaves CUDA uninitialised", initialised is False))
    print(f"cupy {cupy.__version__}; CUDA initialised by the import: {initialised}")
    results.append(("the raster kernel agrees with numpy, in a fork", _in_fork(_raster_agrees)))
    results.append(("sequences pass and leaks are seen, in a fork", _in_fork(_sequences_pass)))
    results.append(("the server process still has not initialised CUDA",
                    cuda_initialised() is False))
    for what, ok in results:
        print(f"{'PASS' if ok else 'FAIL'}  {what}")
    return 0 if all(ok for _, ok in results) else 1


if __name__ == "__main__":
    if sys.argv[1:] == ["--self-test"]:
        sys.exit(self_test())
    gpufuzz.main(CuPyRenderer())
