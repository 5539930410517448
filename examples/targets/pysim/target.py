"""A renderer on a simulated device, in pure Python: a gpufuzz target that needs no GPU.

The device keeps contexts, buffers and one in-order queue per context, counts the bytes it holds,
and checks what a real runtime leaves undefined: a context destroyed while commands are queued on
it, a queued command that reads a freed buffer, a buffer freed twice, all are device errors. A
draw is queued work (a checksum over its triangles and its texture, run when the queue is
waited for); read_back compares the framebuffer's checksum with the reference's. The benchmark
of Python targets (bench/) runs it; tests/targets/ plants a lifecycle bug in it.

    python3 target.py FILE
"""

import os
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.join(HERE, "../../../clients/python"), os.path.join(HERE, "../common")]
import gpufuzz_target as gpufuzz  # noqa: E402
from renderers import RendererOps  # noqa: E402

MASK = 0xFFFFFFFF


def mix(h, v):
    return ((h ^ v) * 0x01000193) & MASK


def draw_checksum(pixels, triangles, seed, texels):
    """What a draw does to the framebuffer's checksum (the same on the device and the reference)."""
    for t in range(triangles):
        pixels = mix(pixels, (seed + t * 0x9E3779B9) & MASK)
    return mix(pixels, texels)


class SimDevice:
    """Contexts with a queue each, buffers, and the bytes held."""

    def __init__(self):
        self.next_id = 0
        self.queues = {}  # context -> queued commands (callables)
        self.buffers = {}  # buffer -> [context, bytes, content]
        self.bytes_in_use = 0

    def _id(self):
        self.next_id += 1
        return self.next_id

    def create_context(self):
        ctx = self._id()
        self.queues[ctx] = []
        return ctx

    def destroy_context(self, ctx):
        queued = len(self.queues[ctx])
        if queued:
            raise gpufuzz.Error(f"destroy_context: context {ctx} has {queued} commands queued")
        del self.queues[ctx]

    def alloc(self, ctx, nbytes, content=0):
        if ctx not in self.queues:
            raise gpufuzz.Error(f"alloc: context {ctx} was destroyed")
        buf = self._id()
        self.buffers[buf] = [ctx, nbytes, content]
        self.bytes_in_use += nbytes
        return buf

    def free(self, buf):
        if buf not in self.buffers:
            raise gpufuzz.Error(f"free: buffer {buf} is not allocated (freed twice?)")
        self.bytes_in_use -= self.buffers.pop(buf)[1]

    def read(self, buf, by):
        if buf not in self.buffers:
            raise gpufuzz.Error(f"{by}: reads buffer {buf}, which was freed")
        return self.buffers[buf][2]

    def write(self, buf, value, by):
        self.read(buf, by)
        self.buffers[buf][2] = value

    def enqueue(self, ctx, command):
        self.queues[ctx].append(command)

    def finish(self, ctx):
        if ctx not in self.queues:
            raise gpufuzz.Error(f"finish: context {ctx} was destroyed")
        queue = self.queues[ctx]
        while queue:
            queue.pop(0)()


class Renderer:
    def __init__(self, device, width, height):
        self.device, self.width, self.height = device, width, height
        self.ctx = device.create_context()
        self.fb = device.alloc(self.ctx, width * height * 4)
        self.textures = []
        self.expected = 0  # the reference's checksum of the framebuffer
        self.model_texels = 0

    def draw(self, triangles, seed):
        device, fb = self.device, self.fb
        texture = self.textures[0] if self.textures else None

        def command():
            texels = device.read(texture, "draw") if texture else 0
            device.write(fb, draw_checksum(device.read(fb, "draw"), triangles, seed, texels),
                         "draw")

        device.enqueue(self.ctx, command)
        self.expected = draw_checksum(self.expected, triangles, seed, self.model_texels)

    def wait(self):
        self.device.finish(self.ctx)

    def set_textures(self, count, size, seed, wait):
        if wait:
            self.wait()
        for t in self.textures:
            self.device.free(t)
        self.textures = [self.device.alloc(self.ctx, size * size * 4, mix(seed, i + 1))
                         for i in range(count)]
        self.model_texels = mix(seed, 1) if count else 0

    def read_back(self, name):
        self.wait()
        got = self.device.read(self.fb, "read_back")
        if got != self.expected:
            raise gpufuzz.Mismatch(f"read_back {name}: framebuffer checksum 0x{got:08x}, the "
                                   f"reference expects 0x{self.expected:08x}")

    def release(self, policy):
        if policy != "no-destroy-sync":
            self.wait()
        if policy == "context-first":
            self.device.destroy_context(self.ctx)
        for buf in self.textures + [self.fb]:
            self.device.free(buf)
        if policy != "context-first":
            self.device.destroy_context(self.ctx)


class PySimRenderer(RendererOps, gpufuzz.Target):
    name = "pysim-renderer"
    version = "1.0"
    renderer_class = Renderer

    def setup(self, sequence):
        self.device = SimDevice()
        self.policy = sequence.policy
        self.renderers, self.contexts, self.buffers = {}, {}, {}

    def make_renderer(self, width, height):  # the renderer vocabulary: RendererOps
        return self.renderer_class(self.device, width, height)

    def ctx_create(self, c):
        self.contexts[c] = self.device.create_context()

    def buf_create(self, c, b, bytes):
        self.buffers[b] = self.device.alloc(self.contexts[c], bytes)

    def buf_destroy(self, b):
        self.device.free(self.buffers.pop(b))

    def ctx_destroy(self, c):
        self.device.destroy_context(self.contexts.pop(c))

    def leak_check(self):
        held = self.device.bytes_in_use
        return f"the device still holds {held} bytes ({len(self.device.buffers)} buffers)" \
            if held else None


if __name__ == "__main__":
    gpufuzz.main(PySimRenderer())
