"""stuck_target: a Python target whose `draw` does not return, for the stacks a stuck target gives
of itself (TargetStacksTest.cpp, test_client_python.py). Its first argument says how draw stays
in stuck_in_submit: `wait` on an event no one sets, `spin` in Python, or `gil` in a C call that
holds the GIL. With `late` the first draw returns from slow_submit after 0.6 s, and the next one
waits. Every other operation passes.

    python3 tests/targets/stuck_target.py wait|spin|gil|late FILE
"""

import ctypes
import os
import sys
import threading
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "../../clients/python"))
import gpufuzz_target as gpufuzz  # noqa: E402


def stuck_in_submit(how):
    if how == "wait":
        threading.Event().wait()
    elif how == "spin":
        while True:
            pass
    elif how == "gil":
        # PyDLL keeps the GIL through the call: no other Python thread runs while it waits.
        libc = ctypes.PyDLL(None)
        while True:
            libc.pause()


def slow_submit():
    time.sleep(0.6)


class Stuck(gpufuzz.Target):
    name, version = "stuck-target", "1.0"

    def configure(self, args):
        self.how = args[0] if args else "wait"
        self.slowed = False

    def run(self, operation):
        if operation.op != "draw":
            return
        if self.how == "late" and not self.slowed:
            self.slowed = True
            slow_submit()
        else:
            stuck_in_submit("wait" if self.how == "late" else self.how)


if __name__ == "__main__":
    gpufuzz.main(Stuck())
