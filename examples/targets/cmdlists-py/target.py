"""cmdlists-py: a target of a model that is not a renderer's (../common/cmdlists.model), on a
simulated GPU command runtime in pure Python. It needs no GPU and no package.

The runtime has queues, fences, command lists and images. A command list records draws into
images; `submit` hands a snapshot of it to a queue, with a fence to signal and a wait-list of
fences. As a real driver batches work, the queue runs what was submitted only when the host waits:
on a fence (`fence_wait`), on the queue (`queue_wait_idle`) or by destroying it. Images are
reference counted: a recorded draw and a submission in flight each hold the image, so destroying
an image in use only drops the handle, and the memory goes with the last user.

The planted bug (EXAMPLE_PLANTED_BUG=1, off by default): `image_destroy` of an image that a
submission still in flight draws into waits for that submission to finish, without flushing the
queue. Nothing runs the queue while the host waits there, so it waits forever: a hang at
image_destroy, found by the harness, shrunk to seven operations (README.md).

    python3 target.py FILE
    gpufuzz fuzz --model ../common/cmdlists.model --target "python3 target.py"
"""

import os
import sys
import threading
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "../../../clients/python"))
import gpufuzz_target as gpufuzz  # noqa: E402

BYTES_PER_TEXEL = {"rgba8": 4, "rgba16f": 8, "r32f": 4}


class Image:
    def __init__(self, nbytes):
        self.nbytes = nbytes
        self.refs = 1  # the handle; each recorded draw and each submission in flight add one
        self.users = []  # the submissions that draw into it


class Submission:
    def __init__(self, number, queue, draws, waits):
        self.number, self.queue, self.draws, self.waits = number, queue, draws, waits
        self.retired = False


class Queue:
    def __init__(self):
        self.pending = []  # submissions in the order they were made
        self.destroyed = False


class Fence:
    def __init__(self):
        self.submissions = []  # signalled once each of these has retired


class CommandList:
    def __init__(self, queue):
        self.queue = queue  # the queue whose pool it was recorded from
        self.commands = []  # ("draw", image, vertices) or ("barrier", stage)


class Runtime:
    """The simulated driver: one lock over everything, as a real one's submission lock."""

    def __init__(self, planted_bug):
        self.planted_bug = planted_bug
        self.lock = threading.Lock()
        self.bytes_in_use = 0
        self.submissions = []

    def image_create(self, width, height, fmt):
        with self.lock:
            image = Image(width * height * BYTES_PER_TEXEL[fmt])
            self.bytes_in_use += image.nbytes
            return image

    def _unref(self, image):
        image.refs -= 1
        if image.refs == 0:
            self.bytes_in_use -= image.nbytes

    def image_destroy(self, image):
        with self.lock:
            in_flight = [s for s in image.users if not s.retired]
            if in_flight and self.planted_bug:
                # The planted bug: wait for the GPU to be done with the image instead of deferring
                # the free. The queue runs only when the host waits on it, so this never ends.
                while not all(s.retired for s in in_flight):
                    time.sleep(0.05)
            self._unref(image)

    def record_draw(self, commands, image, vertices):
        with self.lock:
            image.refs += 1
            commands.commands.append(("draw", image, vertices))

    def record_barrier(self, commands, stage):
        with self.lock:
            commands.commands.append(("barrier", stage))

    def reset(self, commands):
        with self.lock:
            for command in commands.commands:
                if command[0] == "draw":
                    self._unref(command[1])
            commands.commands = []

    def submit(self, commands, queue, fence, waits):
        with self.lock:
            if queue.destroyed:
                raise gpufuzz.Error("submit: the queue was destroyed")
            draws = [(c[1], c[2]) for c in commands.commands if c[0] == "draw"]
            before = [s for w in waits for s in w.submissions if not s.retired]
            s = Submission(len(self.submissions), queue, draws, before)
            self.submissions.append(s)
            for image, _ in draws:
                image.refs += 1
                image.users.append(s)
            queue.pending.append(s)
            fence.submissions.append(s)

    def wait_fence(self, fence):
        with self.lock:
            self._retire(fence.submissions)

    def wait_idle(self, queue):
        with self.lock:
            self._retire(queue.pending)

    def destroy_queue(self, queue):
        with self.lock:
            self._retire(queue.pending)
            queue.destroyed = True

    def _retire(self, wanted):
        """Runs `wanted` and all they need: the submissions of their wait-lists and those before
        them on their queues; every one of those was made earlier, so in the order made."""
        need, stack = set(), list(wanted)
        while stack:
            s = stack.pop()
            if s.retired or s.number in need:
                continue
            need.add(s.number)
            stack.extend(s.waits)
            stack.extend(p for p in s.queue.pending if p.number < s.number)
        for number in sorted(need):
            s = self.submissions[number]
            for image, _ in s.draws:
                if image.refs <= 0:
                    raise gpufuzz.Error(f"queue: submission {number} draws into a freed image")
                self._unref(image)
            s.queue.pending.remove(s)
            s.retired = True


class CmdListsTarget(gpufuzz.Target):
    """One method per operation of cmdlists.model, named as the operation."""

    name, version = "cmdlists-py", "1.0"

    def setup(self, sequence):
        self.runtime = Runtime(os.environ.get("EXAMPLE_PLANTED_BUG", "0") not in ("", "0"))
        self.queues, self.fences, self.lists, self.images = {}, {}, {}, {}

    def queue_create(self, q):
        self.queues[q] = Queue()

    def queue_wait_idle(self, q):
        self.runtime.wait_idle(self.queues[q])

    def queue_destroy(self, q):
        self.runtime.destroy_queue(self.queues.pop(q))

    def fence_create(self, f):
        self.fences[f] = Fence()

    def fence_wait(self, f):
        self.runtime.wait_fence(self.fences[f])

    def fence_destroy(self, f):
        del self.fences[f]  # what was submitted with it still runs

    def image_create(self, i, width, height, format):
        self.images[i] = self.runtime.image_create(width, height, format)

    def image_destroy(self, i):
        self.runtime.image_destroy(self.images.pop(i))

    def list_create(self, q, cl):
        self.lists[cl] = CommandList(self.queues[q])

    def list_draw(self, cl, i, vertices):
        self.runtime.record_draw(self.lists[cl], self.images[i], vertices)

    def list_barrier(self, cl, stage):
        self.runtime.record_barrier(self.lists[cl], stage)

    def list_reset(self, cl):
        self.runtime.reset(self.lists[cl])

    def list_destroy(self, cl):
        self.runtime.reset(self.lists.pop(cl))

    def submit(self, cl, q, f, waits, priority):
        self.runtime.submit(self.lists[cl], self.queues[q], self.fences[f],
                            [self.fences[w] for w in waits])

    def leak_check(self):
        held = self.runtime.bytes_in_use
        return f"the images still hold {held} bytes" if held else None


if __name__ == "__main__":
    gpufuzz.main(CmdListsTarget())
