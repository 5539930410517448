"""current_renderer_target: examples/targets/pysim with a lifecycle bug planted, for the test that
gpufuzz finds, shrinks and explains it through --target. The renderer's teardown waits for the
queue of the *current* renderer (the one created last, as a "current context" global would) instead
of its own: with one renderer they are the same; once a second renderer is created, dropping the
first waits for the wrong queue: with draws of its own queued, its context is destroyed under
them; with the second already dropped, it waits on a destroyed context (either way a device
error at destroy; the shrinker keeps whichever it meets first, each 1-minimal in 4 steps)."""

import os
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)),
                                "../../examples/targets/pysim"))
import target as pysim  # noqa: E402

current = None  # the renderer created last


class CurrentRenderer(pysim.Renderer):
    def __init__(self, device, width, height):
        global current
        super().__init__(device, width, height)
        current = self

    def release(self, policy):
        self.device.finish(current.ctx)  # the bug: the current renderer's queue, not its own
        for buf in self.textures + [self.fb]:
            self.device.free(buf)
        self.device.destroy_context(self.ctx)


class CurrentRendererTarget(pysim.PySimRenderer):
    name = "current-renderer"
    renderer_class = CurrentRenderer


if __name__ == "__main__":
    pysim.gpufuzz.main(CurrentRendererTarget())
