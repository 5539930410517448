"""The Python client library (clients/python/gpufuzz_target.py) against a driver of its own: the
events of docs/target.md for every outcome, errors as outcomes, unsupported operations, the order of
leftovers, bad files, the answer to the stacks signal, and the fork-server messages of TARGET side
(hello, run, pid, exit, reap; malformed requests; end of file idle and while a child runs; the
server's death).

    python3 tests/targets/test_client_python.py [-v]
"""

import json
import os
import select
import signal
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
PROBE = os.path.join(HERE, "probe_target.py")
STUCK = os.path.join(HERE, "stuck_target.py")
PYTHON = sys.executable
CHILD_SIGNALS_IGNORED = (signal.SIGTERM, signal.SIGINT)


def harness_like_start():
    """What the harness does before it starts a target: own group, SIGTERM/SIGINT ignored."""
    os.setpgid(0, 0)
    for sig in CHILD_SIGNALS_IGNORED:
        signal.signal(sig, signal.SIG_IGN)


def gone(pid):
    """The process has exited (reaped, or a zombie no one has reaped yet)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except FileNotFoundError:
        return True


def wait_gone(pid, timeout=10.0):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline and not gone(pid):
        time.sleep(0.01)
    return gone(pid)


def read_all(fd, timeout=30.0):
    chunks, deadline = [], time.monotonic() + timeout
    while time.monotonic() < deadline:
        ready, _, _ = select.select([fd], [], [], max(0.0, deadline - time.monotonic()))
        if not ready:
            break
        data = os.read(fd, 65536)
        if not data:
            break
        chunks.append(data)
    os.close(fd)
    return b"".join(chunks).decode()


class Fixture(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="gpufuzz-client-python-")

    def tearDown(self):
        self.dir.cleanup()

    def seq(self, body, policy="shipped"):
        path = os.path.join(self.dir.name, f"s{len(os.listdir(self.dir.name))}.seq")
        with open(path, "w") as f:
            f.write(f"# gpufuzz sequence\n# policy: {policy}\n# faults: none\n{body}")
        return path

    def run_target(self, path, extra_env=None):
        """Starts the probe as the harness would: (status, events, output)."""
        r, w = os.pipe()
        env = dict(os.environ, GPUFUZZ_EVENTS_FD=str(w), **(extra_env or {}))
        env.pop("GPUFUZZ_FORK_SERVER_FD", None)
        proc = subprocess.Popen([PYTHON, PROBE, path], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=env,
                                pass_fds=(w,), preexec_fn=harness_like_start)
        os.close(w)
        events = read_all(r)
        out = proc.communicate(timeout=60)[0].decode()
        return proc.returncode, events.splitlines(), out

    def calls(self, out):
        return [line[5:] for line in out.splitlines() if line.startswith("call ")]


class FreshStart(Fixture):

    def test_pass_writes_every_event_in_order(self):
        status, events, out = self.run_target(self.seq(
            "create r0\ndraw r0 triangles=2 seed=9\nset_textures r0 count=3\nread_back r0\n"
            "destroy r0\n"))
        self.assertEqual(status, 0, out)
        self.assertEqual(events, [
            "start 5", "begin 1 create", "done 1", "begin 2 draw", "done 2",
            "begin 3 set_textures", "done 3", "begin 4 read_back", "done 4", "begin 5 destroy",
            "done 5", "begin end end", "done end", "outcome pass - - "])
        self.assertEqual(self.calls(out)[:4], [
            "setup shipped", "create r0 width=64 height=64", "draw r0 triangles=2 seed=9",
            "set_textures r0 count=3 size=32 seed=0"])

    def test_each_failure_class_is_an_outcome_at_its_operation(self):
        cases = {
            1: "outcome error 2 draw clFinish: CL_OUT_OF_RESOURCES",
            2: "outcome invalid 2 draw VUID-vkDestroyDevice-device-00378",
            3: "outcome mismatch 2 draw pixel (1, 2) is 0x0, expected 0x1",
            4: "outcome error 2 draw ValueError: a plain bug over two lines",
            5: "outcome leak 2 draw 12 bytes",
        }
        for seed, want in cases.items():
            with self.subTest(seed=seed):
                status, events, out = self.run_target(
                    self.seq(f"create r0\ndraw r0 seed={seed}\ndestroy r0\n"))
                self.assertEqual(status, 1, out)
                self.assertEqual(events, ["start 3", "begin 1 create", "done 1", "begin 2 draw",
                                          want])
                self.assertNotIn("destroy", self.calls(out)[-1])  # nothing runs after it
        _, _, out = self.run_target(self.seq("create r0\ndraw r0 seed=4\n"))
        self.assertIn("Traceback", out)  # a plain exception's traceback, for the finding
        self.assertIn("ValueError: a plain bug", out)

    def test_an_operation_the_target_lacks_is_unsupported(self):
        status, events, _ = self.run_target(self.seq("create r0\nsync r0\ndestroy r0\n"))
        self.assertEqual(status, 1)
        self.assertEqual(events[-2:], ["begin 2 sync", "outcome error 2 sync unsupported operation"])

    def test_leftovers_are_released_in_the_order_of_sequences_md(self):
        status, events, out = self.run_target(self.seq(
            "ctx_create c0\ncreate r0\nbuf_create c0 b0 bytes=16\nctx_create c1\ncreate r1\n"
            "buf_create c1 b1\ncreate r2\nbuf_create c0 b2\ndestroy r1\nbuf_destroy b1\n"
            "ctx_destroy c0\n"))
        self.assertEqual(status, 0, out)
        calls = self.calls(out)
        released = calls[calls.index("ctx_destroy c0") + 1:]
        self.assertEqual(released, ["destroy r0", "destroy r2", "buf_destroy b0", "buf_destroy b2",
                                    "ctx_destroy c1", "leak_check"])
        self.assertEqual(events[-4:], ["done 11", "begin end end", "done end", "outcome pass - - "])

    def test_a_failed_release_of_leftovers_is_at_end(self):
        status, events, out = self.run_target(self.seq("create r0\ncreate r1\n", "fail-destroy"))
        self.assertEqual(status, 1)
        self.assertEqual(events[-2:], ["begin end end",
                                       "outcome error end end destroy r0: destroy r0 failed"])
        self.assertNotIn("destroy r1", self.calls(out))

    def test_the_leak_check_hook_reports_a_leak_without_a_place(self):
        status, events, _ = self.run_target(self.seq("create r0\n", "leaky"))
        self.assertEqual(status, 1)
        self.assertEqual(events[-3:], [
            "begin end end", "done end",
            "outcome leak - - after everything was released 64 bytes are held"])

    def test_a_file_that_is_not_a_sequence_is_refused_with_its_place(self):
        cases = {
            "create r0\nfrobnicate r0\n": ":5:1: unknown operation 'frobnicate'",
            "create r0\ndraw r0 triangles=0\n": ":5:9: triangles=0: expected an integer in 1..1024",
            "create r0\ndraw r0 triangles=x\n": ":5:9: triangles=x: expected an integer",
            "create r0\ndraw r0 colour=3\n": ":5:9: unknown argument 'colour=3'",
            "draw r0\n": ":4:6: 'r0' is not a live renderer here",
            "create r0\ncreate r0\n": ":5:8: 'r0' is introduced twice",
            "ctx_create c0\nctx_destroy c0\nbuf_create c0 b0\n": ":6:12: 'c0' is not a live",
            "create\n": ":4:1: 'create' takes 1 name(s)",
        }
        for body, want in cases.items():
            with self.subTest(body=body):
                path = self.seq(body)
                status, events, out = self.run_target(path)
                self.assertEqual(status, 2, out)
                self.assertEqual(events, [])  # nothing ran
                self.assertIn(path + want, out)
        status, events, out = self.run_target(os.path.join(self.dir.name, "missing.seq"))
        self.assertEqual((status, events), (2, []))
        self.assertIn("cannot read the sequence file", out)

    def test_version_and_usage(self):
        out = subprocess.run([PYTHON, PROBE, "--version"], capture_output=True, text=True)
        self.assertEqual((out.returncode, out.stdout), (0, "probe-target 1.2.3\n"))
        out = subprocess.run([PYTHON, PROBE], capture_output=True, text=True)
        self.assertEqual(out.returncode, 2)
        self.assertIn("no sequence file given", out.stderr)

    def test_by_hand_the_events_go_to_standard_output(self):
        env = dict(os.environ)
        env.pop("GPUFUZZ_EVENTS_FD", None)
        out = subprocess.run([PYTHON, PROBE, self.seq("create r0\n")], capture_output=True,
                             text=True, env=env)
        self.assertEqual(out.returncode, 0)
        self.assertIn("begin 1 create\n", out.stdout)
        self.assertTrue(out.stdout.endswith("outcome pass - - \n"))


class ForkServer(Fixture):
    def setUp(self):
        super().setUp()
        self.sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = dict(os.environ, GPUFUZZ_FORK_SERVER_FD=str(theirs.fileno()))
        self.server = subprocess.Popen([PYTHON, PROBE], stdin=subprocess.DEVNULL, env=env,
                                       pass_fds=(theirs.fileno(),), preexec_fn=harness_like_start)
        theirs.close()
        self.assertEqual(self.receive(), b"hello 1")

    def tearDown(self):
        self.sock.close()
        try:
            self.server.wait(timeout=30)
        finally:
            if self.server.poll() is None:
                self.server.kill()
            super().tearDown()

    def receive(self, timeout=30.0):
        ready, _, _ = select.select([self.sock], [], [], timeout)
        self.assertTrue(ready, "the fork server said nothing")
        return self.sock.recv(65536)

    def request(self, args, env=(), fds=None):
        fields = [b"run", str(len(env)).encode()] + [e.encode() for e in env]
        fields += [a.encode() for a in args]
        return b"".join(f + b"\0" for f in fields)

    def fork_run(self, path, env=("GPUFUZZ_EVENTS_FD=3",), keep_waiting=None):
        """One run through the server: (status word, events, output)."""
        out_r, out_w = os.pipe()
        ev_r, ev_w = os.pipe()
        socket.send_fds(self.sock, [self.request([path], env)], [out_w, ev_w])
        os.close(out_w)
        os.close(ev_w)
        pid_message = self.receive()
        self.assertRegex(pid_message, rb"^pid [0-9]+$")
        self.child = int(pid_message.split()[1])
        if keep_waiting:
            keep_waiting()
            return None
        exit_message = self.receive(60)
        self.assertRegex(exit_message, rb"^exit [0-9]+$")
        events, out = read_all(ev_r), read_all(out_r)
        os.kill(self.child, 0)  # exited, not yet reaped: the pid is still the child's
        self.sock.send(b"reap")
        return int(exit_message.split()[1]), events.splitlines(), out

    def test_a_run_reads_as_a_fresh_start_does(self):
        path = self.seq("create r0\ndraw r0\nread_back r0\n")
        status, events, out = self.fork_run(path, ("GPUFUZZ_EVENTS_FD=3", "PROBE_X=a=b"))
        fresh_status, fresh_events, fresh_out = self.run_target(path, {"PROBE_X": "a=b"})
        self.assertEqual(status, 0, out)
        self.assertEqual(fresh_status, 0, fresh_out)
        self.assertEqual(events, fresh_events)
        forked = json.loads(out.split("facts ", 1)[1].splitlines()[0])
        fresh = json.loads(fresh_out.split("facts ", 1)[1].splitlines()[0])
        self.assertEqual(forked["pid"], self.child)
        self.assertEqual(forked["pgid"], self.child)  # a process group of its own
        self.assertEqual(forked["ppid"], self.server.pid)
        self.assertEqual(forked["started_in"], self.server.pid)  # start-up ran once, in the server
        self.assertEqual(forked["fds"][:4], [0, 1, 2, 3])
        self.assertEqual(forked["fds"][4:], [4])  # /proc/self/fd's own descriptor only
        self.assertEqual(forked["sigblk"], "0000000000000000")
        self.assertEqual(forked["sigign"], fresh["sigign"])
        # The server's environment (what this test runs under: CI sets GPUFUZZ_* variables of
        # its own), less the server's socket, plus the request's entries.
        inherited = {k: v for k, v in os.environ.items()
                     if k.startswith(("GPUFUZZ", "PROBE")) and k != "GPUFUZZ_FORK_SERVER_FD"}
        self.assertEqual(forked["env"], {**inherited, "GPUFUZZ_EVENTS_FD": "3", "PROBE_X": "a=b"})
        self.assertEqual(forked["stdin"], "/dev/null")
        # Reaped once asked: the pid is gone.
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline and os.path.exists(f"/proc/{self.child}"):
            time.sleep(0.01)
        self.assertFalse(os.path.exists(f"/proc/{self.child}"), "not reaped after reap")

    def test_exit_is_the_waitpid_status_word(self):
        cases = {"draw r0 seed=7\n": signal.SIGKILL, "draw r0 seed=8\n": 5 << 8,
                 "draw r0 seed=1\n": 1 << 8, "draw r0\n": 0}
        for body, want in cases.items():
            with self.subTest(body=body):
                status, events, _ = self.fork_run(self.seq("create r0\n" + body))
                self.assertEqual(status, want)
                self.assertEqual(events[:3], ["start 2", "begin 1 create", "done 1"])

    def test_several_runs_in_a_row_each_in_a_new_child(self):
        children = set()
        for _ in range(5):
            status, events, _ = self.fork_run(self.seq("create r0\n"))
            self.assertEqual((status, events[-1]), (0, "outcome pass - - "))
            children.add(self.child)
        self.assertEqual(len(children), 5)

    def test_a_malformed_request_is_answered_and_the_server_serves_on(self):
        out_r, out_w = os.pipe()
        bad = [
            (b"bogus\0", [out_w]),
            (b"run\0" + b"5\0" + b"A=1\0", [out_w]),  # more entries than fields
            (b"run\0x\0/a.seq\0", [out_w]),  # count not a number
            (b"run\0" + b"0\0" + b"/a.seq", [out_w]),  # not NUL-terminated
            (self.request(["/a.seq"]), []),  # no output descriptor
            (b"run\0" + b"1\0" + b"=NONAME\0/a.seq\0", [out_w]),
        ]
        for message, fds in bad:
            with self.subTest(message=message):
                if fds:
                    socket.send_fds(self.sock, [message], fds)
                else:
                    self.sock.send(message)
                self.assertEqual(self.receive(), b"error malformed fork server request")
        os.close(out_w)
        os.close(out_r)
        status, events, _ = self.fork_run(self.seq("create r0\n"))
        self.assertEqual((status, events[-1]), (0, "outcome pass - - "))

    def test_end_of_file_while_idle_ends_the_server(self):
        self.sock.close()
        self.assertEqual(self.server.wait(timeout=30), 0)

    def test_end_of_file_while_a_child_runs_kills_its_group(self):
        def hang_up():
            deadline = time.monotonic() + 30
            while time.monotonic() < deadline:  # the child is in its endless draw
                with open(f"/proc/{self.child}/cmdline", "rb") as f:
                    if f.read() and os.getpgid(self.child) == self.child:
                        break
                time.sleep(0.01)
            time.sleep(0.3)
            self.sock.close()
            self.assertEqual(self.server.wait(timeout=30), 0)
            self.assertTrue(gone(self.child), "the server left its child running")

        self.fork_run(self.seq("create r0\ndraw r0 seed=6\n"), keep_waiting=hang_up)

    def test_anything_but_reap_after_exit_ends_the_server(self):
        out_r, out_w = os.pipe()
        socket.send_fds(self.sock, [self.request([self.seq("create r0\n")])], [out_w])
        os.close(out_w)
        self.assertRegex(self.receive(), rb"^pid ")
        self.assertEqual(self.receive(), b"exit 0")
        self.sock.send(b"run\0")
        self.assertEqual(self.server.wait(timeout=30), 0)
        read_all(out_r)

    def test_the_child_dies_with_the_server(self):
        def kill_server():
            time.sleep(0.5)
            self.server.kill()
            self.server.wait(timeout=30)
            self.assertTrue(wait_gone(self.child), "the child outlived its server")

        self.fork_run(self.seq("create r0\ndraw r0 seed=6\n"), keep_waiting=kill_server)


class StacksSignal(Fixture):
    """The answer to the harness's stacks signal (harness/protocol/CrashReport.h): faulthandler's
    text for every thread, appended to FILE.part, then the signal's number as one byte."""

    def start_stuck(self, how, stacks_file=None):
        """stuck_target.py `how` on a draw that does not return, once its draw has begun:
        (process, stacks file)."""
        r, w = os.pipe()
        env = dict(os.environ, GPUFUZZ_EVENTS_FD=str(w))
        env.pop("GPUFUZZ_FORK_SERVER_FD", None)
        env.pop("GPUFUZZ_STACKS_FILE", None)
        if stacks_file:
            env["GPUFUZZ_STACKS_FILE"] = stacks_file
        proc = subprocess.Popen([PYTHON, STUCK, how, self.seq("create r0\ndraw r0\n")],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, env=env, pass_fds=(w,),
                                preexec_fn=harness_like_start)
        os.close(w)
        self.addCleanup(os.close, r)
        self.addCleanup(proc.wait, 30)
        self.addCleanup(proc.kill)
        events, deadline = b"", time.monotonic() + 30
        while b"begin 2 draw\n" not in events and time.monotonic() < deadline:
            if select.select([r], [], [], 1)[0]:
                events += os.read(r, 4096)
        self.assertIn(b"begin 2 draw\n", events)
        time.sleep(0.1)  # into stuck_in_submit
        return proc

    def ask(self, proc, stacks_file):
        """The record the signal gets, emptied first as the harness empties it."""
        part = stacks_file + ".part"
        os.truncate(part, 0)
        os.kill(proc.pid, signal.SIGURG)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            with open(part, "rb") as f:
                record = f.read()
            if record.endswith(bytes([signal.SIGURG])):
                return record[:-1].decode()
            time.sleep(0.01)
        self.fail(f"no end byte in {record!r}")

    def test_every_thread_answers_even_while_a_c_call_holds_the_gil(self):
        for how in ("wait", "spin", "gil"):
            with self.subTest(how=how):
                stacks_file = os.path.join(self.dir.name, f"stacks-{how}")
                proc = self.start_stuck(how, stacks_file)
                with open(stacks_file) as f:
                    self.assertEqual(f.read(), f"pid {proc.pid} faulthandler\n")
                for _ in range(2):  # a late run is asked, then asked again once stuck
                    record = self.ask(proc, stacks_file)
                    self.assertRegex(record, r"^(Current thread|Thread) 0x[0-9a-f]+ \(most recent")
                    self.assertIn("Current thread 0x", record)
                    self.assertIn(f'File "{STUCK}", line ', record)
                    self.assertIn(" in stuck_in_submit\n", record)
                    self.assertIn("gpufuzz_target.py\", line ", record)
                    self.assertEqual(record.count("Current thread"), 1, record)
                self.assertIsNone(proc.poll())  # the answer stops nothing

    def test_without_a_stacks_file_the_signal_is_ignored(self):
        proc = self.start_stuck("wait")
        os.kill(proc.pid, signal.SIGURG)
        time.sleep(0.3)
        self.assertIsNone(proc.poll())


sys.path.insert(0, os.path.join(HERE, "../../clients/python"))
import gpufuzz_target as gpufuzz  # noqa: E402


class Lines:
    """Events as the harness would read them, one string a line."""

    def __init__(self):
        self.lines = []

    def write(self, *words):
        self.lines.append(" ".join(str(w) for w in words))


class MarkedTarget(gpufuzz.Target):
    """A renderer whose create makes three calls that can run out, each asking may_fail first."""

    name = "marked"
    honours_marks = True

    def __init__(self):
        self.alive, self.made = set(), []

    def create(self, r, width, height):
        for call in ("ctx_create", "buf_alloc", "buf_alloc"):
            gpufuzz.may_fail("oom", "host-oom", call=call)
            self.made.append((r, call))
        self.alive.add(r)

    def draw(self, r, triangles, seed):
        gpufuzz.may_fail("host-oom", "lost", call="launch")
        assert r in self.alive

    def destroy(self, r):
        self.alive.discard(r)

    def leak_check(self):
        return f"{sorted(self.alive)} alive" if self.alive else None


class Marks(unittest.TestCase):
    """docs/failures.md in the Python client: marks parsed with their place, the marked call
    failed through may_fail, `fail` and `skip` written, and a target that cannot honour marks
    answering unsupported rather than pass."""

    def run_text(self, text, target=None):
        events = Lines()
        status = gpufuzz.run_sequence(target or MarkedTarget(), gpufuzz.parse_sequence(text),
                                      events)
        return status, events.lines

    def test_a_marked_call_fails_and_what_uses_its_names_is_skipped(self):
        status, lines = self.run_text("create r0 !oom@2\ndraw r0\ncreate r1\ndraw r1 !lost\n")
        self.assertEqual(status, 0, lines)
        self.assertEqual(lines[:3], ["start 4", "begin 1 create", "fail 1 buf_alloc: oom (injected)"])
        self.assertEqual(lines[3], "skip 2")
        self.assertIn("fail 4 launch: lost (injected)", lines)
        self.assertEqual(lines[-1], "outcome pass - - ")
        # r0 was never made, so the release at the end leaves it alone; r1 is released.
        self.assertEqual(lines[-3:-1], ["begin end end", "done end"])

    def test_a_mark_whose_call_never_comes_does_nothing(self):
        status, lines = self.run_text("create r0 !oom@4\ndraw r0\n")
        self.assertEqual(status, 0, lines)
        self.assertEqual(lines[1:5], ["begin 1 create", "done 1", "begin 2 draw", "done 2"])

    def test_a_swallowed_failure_is_judged_by_what_follows(self):
        class Swallows(MarkedTarget):
            def create(self, r, width, height):
                try:
                    super().create(r, width, height)
                except gpufuzz.Injected:
                    pass  # the bug: the failure is ignored and r is never recorded as made

        status, lines = self.run_text("create r0 !host-oom\ndraw r0\n", Swallows())
        self.assertEqual(status, 1, lines)
        self.assertTrue(lines[-1].startswith("outcome error 2 draw"), lines)

    def test_a_target_that_cannot_honour_marks_is_unsupported(self):
        class Plain(MarkedTarget):
            honours_marks = False

        status, lines = self.run_text("create r0\ndraw r0 !host-oom\n", Plain())
        self.assertEqual(status, 1)
        self.assertEqual(lines[0], "start 2")
        self.assertTrue(lines[1].startswith("outcome unsupported 2 draw"), lines)

    def test_every_bad_mark_is_refused_with_its_place(self):
        for text, where, message in [
            ("create r0 !oops\n", ":1:11:", "unknown failure 'oops'"),
            ("create r0 !oom@0\n", ":1:11:", "call count in 1..64"),
            ("create r0 !oom@65\n", ":1:11:", "call count in 1..64"),
            ("create r0 !oom !oom\n", ":1:11:", "a second mark"),
            ("create !oom r0\n", ":1:8:", "a mark ends the line"),
            ("!oom\n", ":1:1:", "this line has no operation"),
            ("create r0\ndraw r0 !oom\n", ":2:9:", "draw cannot fail with oom"),
            ("ctx_create c0\nctx_destroy c0 !oom\n", ":2:16:", "no fails: for it"),
        ]:
            with self.subTest(text=text):
                with self.assertRaises(gpufuzz.SequenceError) as caught:
                    gpufuzz.parse_sequence(text, "m.seq")
                self.assertIn("m.seq" + where, str(caught.exception))
                self.assertIn(message, str(caught.exception))

    def test_fails_is_read_from_a_models_facts_and_checked(self):
        head = (gpufuzz.MODEL_FACTS_HEADER + "\nmodel t 0123456789abcdef\nresource pool p\n"
                "op make\nslot make pool new\nop drop\nslot drop pool end\n")
        model = gpufuzz.parse_model_facts(head + "fails make oom lost\nrelease pool drop\n",
                                          "t.facts")
        self.assertEqual(model.operation("make").fails, frozenset({"oom", "lost"}))
        self.assertEqual(model.operation("drop").fails, frozenset())
        for bad in ("fails make oops", "fails make", "fails gone oom"):
            with self.subTest(bad=bad):
                with self.assertRaises(gpufuzz.ModelError):
                    gpufuzz.parse_model_facts(f"{head}{bad}\nrelease pool drop\n", "t.facts")

if __name__ == "__main__":
    unittest.main()
