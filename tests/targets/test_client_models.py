"""The Python client library (clients/python/gpufuzz_target.py) in a lifecycle model's words
(docs/models.md): the model reader (what it takes, what it refuses and where), sequences read in a
model (names by slot, KIND* lists, arguments and their defaults, `@T`), which model a run uses
(GPUFUZZ_MODEL, `# model:`, the built-in), and, with model_probe_target.py run as the harness runs
a target: dispatch by name (a handler, a method, Target.run), `unsupported`, the release of
leftovers in the model's order (release handlers, the default through the ending operation,
owners, kinds left alone), threads (overlap, the order of names, the lowest failure), the fork
server; and that without a model everything reads as it always did.

    python3 tests/targets/test_client_models.py [-v]
"""

import os
import re
import socket
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ROOT = os.path.dirname(os.path.dirname(HERE))
PROBE = os.path.join(HERE, "model_probe_target.py")
PYTHON = sys.executable
sys.path.insert(0, os.path.join(ROOT, "clients/python"))
import gpufuzz_target as gpufuzz  # noqa: E402
# The harness-like start and the pipe reader of the older client tests, beside this file.
from test_client_python import harness_like_start, read_all  # noqa: E402

PROBE_MODEL = """\
# gpufuzz model
model probe
note The client library's tests: pools own buffers, streams, events, and kinds of every release.

resource pool    prefix p
resource stream  prefix s
resource buf     prefix b  owner pool
resource event   prefix e
resource thing   prefix t      # nothing ends it: a release handler, or left alone
resource mark    prefix m      # two operations end it: no default release

op pool_create    -> pool  flags=0 (0..7)                                 weight:2
op pool_destroy   pool!
op stream_create  -> stream  priority=normal {low|normal|high}
op stream_destroy stream!  drain=yes {yes|no}
op alloc          pool stream -> buf   bytes=256 (1..18446744073709551615)  weight:3
op free           buf! stream                                             # another slot: no default
op event_create   -> event
op event_destroy  event!
op record         event stream                                            +recorded(event)
op wait           stream event*  timeout=10 (0..100)
op launch         stream buf  grid=1 (1..65535)                           +pending(stream)
op thing_make     -> thing
op configure      thing                                                   # a name of Target's own
op mark_make      -> mark
op mark_drop      mark!
op mark_clear     mark!
op block          stream
op unblock        event

release buf event stream pool thing mark
"""


class Fixture(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="gpufuzz-client-models-")
        self.model = self.write("probe.model", PROBE_MODEL)
        self.saved = os.environ.get(gpufuzz.MODEL_VARIABLE)
        os.environ.pop(gpufuzz.MODEL_VARIABLE, None)

    def tearDown(self):
        if self.saved is None:
            os.environ.pop(gpufuzz.MODEL_VARIABLE, None)
        else:
            os.environ[gpufuzz.MODEL_VARIABLE] = self.saved
        self.dir.cleanup()

    def write(self, name, text):
        path = os.path.join(self.dir.name, name)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w") as f:
            f.write(text)
        return path

    def seq(self, body, directives="# policy: shipped\n"):
        name = f"s{len(os.listdir(self.dir.name))}.seq"
        return self.write(name, f"# gpufuzz sequence\n{directives}{body}")

    def run_target(self, path, env=None, model=True, timeout=60):
        """Runs the probe as the harness would, GPUFUZZ_MODEL set to the probe's model unless
        `model` is False (or a path): (status, events, output)."""
        r, w = os.pipe()
        environment = {k: v for k, v in os.environ.items()
                       if not k.startswith(("GPUFUZZ_", "PROBE_"))}
        environment.update(GPUFUZZ_EVENTS_FD=str(w), **(env or {}))
        if model:
            environment[gpufuzz.MODEL_VARIABLE] = self.model if model is True else model
        proc = subprocess.Popen([PYTHON, PROBE, path], stdin=subprocess.DEVNULL,
                                stdout=subprocess.PIPE, stderr=subprocess.STDOUT, env=environment,
                                pass_fds=(w,), preexec_fn=harness_like_start)
        os.close(w)
        events = read_all(r, timeout)
        out = proc.communicate(timeout=timeout)[0].decode()
        return proc.returncode, events.splitlines(), out

    @staticmethod
    def calls(out):
        return [line for line in out.splitlines()
                if line.split(" ", 1)[0] in ("method", "handle", "run", "release", "leak_check")]


class ModelReader(Fixture):
    def parse(self, text, path="m.model"):
        return gpufuzz.parse_model(text, path)

    def test_the_builtin_model_is_the_vocabulary_of_old(self):
        m = gpufuzz.builtin_model()
        self.assertEqual(m.name, "all")
        self.assertEqual(list(m.operations), list(gpufuzz.RENDERER_OPS + gpufuzz.DEVICE_OPS))
        self.assertEqual(m.release, ["renderer", "buffer", "context"])
        self.assertEqual(m.resources["buffer"].owner, "context")
        self.assertEqual(m.operations["draw"].weight, 30)
        self.assertEqual(m.operations["draw"].flags, [("+", "pending", "renderer")])
        create = m.operations["create"]
        self.assertEqual((create.slots, create.introduces), ([], ["renderer"]))
        self.assertEqual(create.defaults(), {"width": 64, "height": 64})
        self.assertEqual(m.operations["buf_create"].args["bytes"].high, 2**31)
        self.assertEqual([(k, m.release_operation(k).name) for k in m.release],
                         [("renderer", "destroy"), ("buffer", "buf_destroy"),
                          ("context", "ctx_destroy")])

    def test_the_builtin_model_is_the_same_text_in_both_libraries(self):
        with open(os.path.join(ROOT, "clients/cpp/gpufuzz/target.hpp")) as f:
            header = f.read()
        match = re.search(r'kBuiltinModel = R"gpufuzz\((.*?)\)gpufuzz"', header, re.S)
        self.assertIsNotNone(match, "no kBuiltinModel in target.hpp")
        self.assertEqual(match.group(1), gpufuzz.BUILTIN_MODEL)

    def test_a_model_of_every_kind_of_line(self):
        m = gpufuzz.load_model(self.model)
        self.assertEqual((m.name, m.path), ("probe", self.model))
        self.assertTrue(m.note.startswith("The client library's tests"))
        self.assertEqual([r.prefix for r in m.resources.values()], list("psbetm"))
        self.assertEqual(m.resources["buf"].owner, "pool")
        alloc = m.operations["alloc"]
        self.assertEqual([(s.kind, s.mode) for s in alloc.slots],
                         [("pool", "use"), ("stream", "use")])
        self.assertEqual((alloc.introduces, alloc.weight), (["buf"], 3))
        self.assertEqual(alloc.args["bytes"].high, 2**64 - 1)
        wait = m.operations["wait"]
        self.assertEqual([s.mode for s in wait.slots], ["use", "list"])
        self.assertEqual(wait.name_count(), (1, None))
        stream = m.operations["stream_create"].args["priority"]
        self.assertEqual((stream.default, stream.words), ("normal", ("low", "normal", "high")))
        self.assertEqual(m.operations["free"].slots[0].mode, "end")
        self.assertEqual(m.operations["launch"].flags, [("+", "pending", "stream")])
        self.assertEqual(m.release, ["buf", "event", "stream", "pool", "thing", "mark"])
        # The default release: the only ending operation, with no other slot.
        self.assertEqual(m.release_operation("stream").name, "stream_destroy")
        self.assertIsNone(m.release_operation("buf"))  # free also takes a stream
        self.assertIsNone(m.release_operation("thing"))  # nothing ends it
        self.assertIsNone(m.release_operation("mark"))  # two operations end it
        self.assertIs(gpufuzz.load_model(self.model), m)  # the same text is parsed once

    def test_a_tolerant_reader(self):
        m = self.parse("op use   thing  n=1(0..9)  w=a{a | b}   weight:4 +f(thing)\n"
                       "resource thing owner box prefix x\n"
                       "op make ->thing\n"
                       "resource box\n"
                       "\r\n   # only a comment\n"
                       "release thing\n")
        self.assertIsNone(m.name)
        self.assertEqual(m.operations["use"].args["n"].high, 9)
        self.assertEqual(m.operations["use"].args["w"].words, ("a", "b"))
        self.assertEqual(m.operations["make"].introduces, ["thing"])
        self.assertEqual((m.resources["thing"].prefix, m.resources["thing"].owner), ("x", "box"))
        self.assertEqual(m.release, ["thing"])  # box: left to the process's exit

    def test_what_it_cannot_understand_is_refused_with_its_place(self):
        cases = {
            "model a\nmodel b\n": "m.model:2:1: 'model' is given twice",
            "resource r\nfrobnicate r\n": "m.model:2:1: unknown declaration 'frobnicate'",
            "resource r\nop make -> r\nop make -> r\n": "m.model:3:4: operation 'make' is declared",
            "resource r\nresource r\n": "m.model:2:10: resource 'r' is declared twice",
            "resource r\nop use q\n": "m.model:2:8: 'q' is not a declared resource kind",
            "resource r\nop use r x=1\n": "m.model:2:10: argument 'x' has no bounds",
            "resource r\nop use r x=1 (1-2)\n": "m.model:2:14: x's bounds are (MIN..MAX)",
            "resource r\nop use r x=a (1..2)\n": "m.model:2:10: x: default 'a' is not an unsigned",
            "resource r\nop use r x=1 (1..18446744073709551616)\n": "m.model:2:14: x: bound",
            "resource r\nop use r x=3 (4..2)\n": "m.model:2:14: x: bounds 4..2 are empty",
            "resource r\nop use r x=1 (1..2\n": "m.model:2:14: '(' without its ')'",
            "resource r\nop use r x=a {a||b}\n": "m.model:2:14: '' is not a word of x's",
            "resource r\nop use r x=1 (0..2) x=1 (0..2)\n": "m.model:2:21: argument 'x' is decl",
            "resource r\nop use r weight:0\n": "m.model:2:10: 'weight:0': weight:N takes",
            "resource r\nop use r +busy\n": "m.model:2:10: flag '+busy' has no kind",
            "resource r\nop use r +busy(q)\n": "m.model:2:16: 'q' is not a declared resource",
            "resource r\nop use r* r*\n": "m.model:2:11: 'r*': an operation has at most one",
            "resource r\nop use r (1..2)\n": "m.model:2:10: '(1..2)' follows no argument",
            "resource r\nop make -> r!\n": "m.model:2:12: 'r!' is not a kind (a new name",
            "resource r colour red\n": "m.model:1:12: 'colour': a resource takes prefix P",
            "resource r owner\n": "m.model:1:12: 'owner': a resource takes prefix P",
            "resource r\nrelease r q\n": "m.model:2:11: 'q' is not a declared resource kind",
            "op\n": "m.model:1:1: 'op' takes a name",
        }
        for text, want in cases.items():
            with self.subTest(text=text):
                with self.assertRaises(gpufuzz.ModelError) as raised:
                    self.parse(text)
                self.assertIn(want, str(raised.exception))
        with self.assertRaises(gpufuzz.ModelError) as raised:
            gpufuzz.load_model(os.path.join(self.dir.name, "missing.model"))
        self.assertIn("missing.model: cannot read the model file", str(raised.exception))

    def test_a_note_is_free_text(self):
        m = self.parse("note Streams (CUDA) {and} -> more: a|b  # not this\n")
        self.assertEqual(m.note, "Streams (CUDA) {and} -> more: a|b")


class SequencesOfAModel(Fixture):
    def setUp(self):
        super().setUp()
        self.m = gpufuzz.load_model(self.model)

    def parse(self, body, model=True):
        return gpufuzz.parse_sequence("# gpufuzz sequence\n" + body, "t.seq",
                                      self.m if model else None)

    def test_names_by_slot_lists_and_new_names_last(self):
        s = self.parse("pool_create p0\nstream_create s0\nevent_create e0\nevent_create e1\n"
                       "alloc p0 s0 b0 bytes=18446744073709551615\nwait s0\nwait s0 e1 e0 "
                       "timeout=3\n")
        alloc, empty, listed = s.operations[4:]
        self.assertEqual((alloc.names, alloc.positional), (["p0", "s0", "b0"], ["p0", "s0", "b0"]))
        self.assertEqual(alloc.args, {"bytes": 2**64 - 1})
        self.assertEqual((empty.positional, empty.args), (["s0", []], {"timeout": 10}))
        self.assertEqual((listed.positional, listed.args), (["s0", ["e1", "e0"]], {"timeout": 3}))
        self.assertEqual([o.at for o in s.operations], list(range(1, 8)))
        self.assertTrue(s.model_given)

    def test_arguments_take_the_models_defaults_and_words(self):
        s = self.parse("pool_create p0\nstream_create s0 priority=high\nstream_create s1\n"
                       "stream_destroy s1 drain=no\n")
        self.assertEqual([o.args for o in s.operations],
                         [{"flags": 0}, {"priority": "high"}, {"priority": "normal"},
                          {"drain": "no"}])

    def test_liveness_follows_the_model(self):
        s = self.parse("pool_create p0\nstream_create s0\nalloc p0 s0 b0\npool_destroy p0\n"
                       "launch s0 b0\nfree b0 s0\nthing_make t0\nmark_make m0\n")
        # Ending an owner leaves what it owns alive; ending a name by a slot KIND!.
        self.assertEqual(s.leftovers(), [("stream", "s0"), ("thing", "t0"), ("mark", "m0")])

    def test_threads(self):
        s = self.parse("stream_create s0\n@2 event_create e0\n@1 record e0 s0\n")
        self.assertEqual([o.thread for o in s.operations], [0, 2, 1])
        self.assertEqual(s.threads, 3)
        s = self.parse("# threads: 4\nstream_create s0\n")
        self.assertEqual(s.threads, 4)
        self.assertEqual(repr(self.parse("@1 stream_create s0\n").operations[0]),
                         "@1 stream_create s0 priority=normal")

    def test_what_the_model_does_not_allow_is_refused_with_its_place(self):
        cases = {
            "frob p0\n": "t.seq:2:1: unknown operation 'frob' (known: pool_create, pool_destroy",
            "alloc p0\n": "t.seq:2:1: 'alloc' takes 3 name(s), not 1",
            "pool_create p0 p1\n": "t.seq:2:1: 'pool_create' takes 1 name(s), not 2",
            "wait\n": "t.seq:2:1: 'wait' takes at least 1 name(s), not 0",
            "pool_create p0\nalloc p0 p0 b0\n": "t.seq:3:7: 'p0' is named twice",
            "pool_create p0\nstream_create s0\nalloc s0 p0 b0\n": "t.seq:4:7: 's0' is not a live "
                                                                 "pool here",
            "pool_create p0\npool_destroy p0\npool_destroy p0\n": "t.seq:4:14: 'p0' is not a live",
            "pool_create p0\npool_destroy p0\npool_create p0\n": "t.seq:4:13: 'p0' is introduced",
            "pool_create p0 flags=8\n": "t.seq:2:16: flags=8: expected an integer in 0..7",
            "pool_create p0 flags=01\n": "t.seq:2:16: flags=01: expected an integer in 0..7",
            "stream_create s0 priority=max\n": "t.seq:2:18: priority=max: expected one of low, "
                                               "normal, high",
            "pool_create p0 flags=1 flags=2\n": "t.seq:2:24: argument 'flags' given twice",
            "pool_create p0 colour=3\n": "t.seq:2:16: unknown argument 'colour=3' for "
                                         "'pool_create' (keys: flags)",
            "pool_create P0\n": "t.seq:2:13: 'P0' is not a name",
            "@8 pool_create p0\n": "t.seq:2:1: '@8' is not a thread (@0..@7)",
            "@x pool_create p0\n": "t.seq:2:1: '@x' is not a thread",
            "@1\n": "t.seq:2:1: a thread without an operation",
            "# threads: 9\npool_create p0\n": "t.seq:2:12: threads: 9: expected 1..8",
        }
        for body, want in cases.items():
            with self.subTest(body=body):
                with self.assertRaises(gpufuzz.SequenceError) as raised:
                    self.parse(body)
                self.assertIn(want, str(raised.exception))

    def test_which_model_a_sequence_is_read_in(self):
        folder = os.path.join(self.dir.name, "finding")
        self.write("finding/probe.model", PROBE_MODEL.replace("model probe", "model copy"))
        path = self.write("finding/minimal.seq", "# model: ./probe.model\npool_create p0\n")
        # The directive: a path relative to the sequence file.
        s = gpufuzz.load_sequence(path)
        self.assertEqual((s.model.name, s.model_given), ("copy", True))
        # GPUFUZZ_MODEL overrides it, as --model overrides the directive.
        os.environ[gpufuzz.MODEL_VARIABLE] = self.model
        self.assertEqual(gpufuzz.load_sequence(path).model.name, "probe")
        del os.environ[gpufuzz.MODEL_VARIABLE]
        # An absolute path; a built-in name; none at all.
        self.write("other.seq", f"# model: {os.path.join(folder, 'probe.model')}\npool_create "
                                "p0\n")
        self.assertEqual(gpufuzz.load_sequence(os.path.join(self.dir.name, "other.seq"))
                         .model.name, "copy")
        for directive, given in (("# model: renderer\n", True), ("# model: all\n", True),
                                 ("", False)):
            s = gpufuzz.parse_sequence(directive + "create r0\n", "t.seq")
            self.assertEqual((s.model.name, s.model_given), ("all", given))
        with self.assertRaises(gpufuzz.SequenceError) as raised:
            gpufuzz.parse_sequence("# policy: shipped\n# model: cuda\ncreate r0\n", "t.seq")
        self.assertIn("t.seq:2:1: the built-in model 'cuda' is not one this library holds",
                      str(raised.exception))
        with self.assertRaises(gpufuzz.ModelError) as raised:
            gpufuzz.parse_sequence("# model: ./gone.model\ncreate r0\n", path)
        self.assertIn("gone.model: cannot read the model file", str(raised.exception))


class Runs(Fixture):
    BODY = ("pool_create p0 flags=3\nstream_create s0\nalloc p0 s0 b0\nevent_create e0\n"
            "event_create e1\nrecord e0 s0\nwait s0 e0 e1\nlaunch s0 b0 grid=7\n")

    def test_each_operation_goes_to_its_handler_by_name(self):
        status, events, out = self.run_target(self.seq(self.BODY + "pool_destroy p0\nfree b0 s0\n"
                                                       "stream_destroy s0\n"),
                                              {"PROBE_HANDLE": "wait,event_create"})
        self.assertEqual(status, 0, out)
        self.assertEqual(events[:3], ["start 11", "begin 1 pool_create", "done 1"])
        self.assertIn("begin 7 wait", events)
        self.assertEqual(self.calls(out)[:11], [
            "method pool_create p0 flags=3",
            "run stream_create s0 priority=normal at=2 thread=0",
            "method alloc p0 s0 b0 bytes=256",
            "handle event_create e0",
            "handle event_create e1",
            "run record e0 s0 at=6 thread=0",
            "handle wait s0 [e0,e1] timeout=10",
            "run launch s0 b0 grid=7 at=8 thread=0",
            "run pool_destroy p0 at=9 thread=0",
            "run free b0 s0 at=10 thread=0",
            "run stream_destroy s0 drain=yes at=11 thread=0",
        ])
        self.assertIn("setup probe threads=1", out)

    def test_a_handler_goes_before_a_method_and_targets_own_names_are_no_operations(self):
        status, _, out = self.run_target(self.seq("pool_create p0\nthing_make t0\nconfigure t0\n"),
                                         {"PROBE_HANDLE": "pool_create"})
        self.assertEqual(status, 0, out)
        self.assertEqual(self.calls(out)[:3], ["handle pool_create p0 flags=0",
                                               "run thing_make t0 at=2 thread=0",
                                               "run configure t0 at=3 thread=0"])

    def test_an_operation_nothing_handles_is_unsupported(self):
        status, events, out = self.run_target(self.seq("pool_create p0\nstream_create s0\n"),
                                              {"PROBE_PLAIN": "1"})
        self.assertEqual(status, 1, out)
        self.assertEqual(events, ["start 2", "begin 1 pool_create", "done 1",
                                  "begin 2 stream_create",
                                  "outcome unsupported 2 stream_create unsupported operation"])
        # A handler may say so itself, with its own detail.
        status, events, _ = self.run_target(self.seq("pool_create p0\nstream_create s0\n"),
                                            {"PROBE_UNSUPPORTED": "stream_create"})
        self.assertEqual(events[-1],
                         "outcome unsupported 2 stream_create the probe lacks stream_create")
        # At the release: the default release's operation has no handler.
        status, events, _ = self.run_target(self.seq("pool_create p0\n"), {"PROBE_PLAIN": "1"})
        self.assertEqual(events[-2:], ["begin end end", "outcome unsupported end end pool_destroy "
                                                        "p0: unsupported operation"])

    def test_without_a_model_named_unsupported_reads_as_it_always_did(self):
        path = self.seq("create r0\n")
        env = {"PROBE_PLAIN": "1"}
        _, events, _ = self.run_target(path, env, model=False)
        self.assertEqual(events[-1], "outcome error 1 create unsupported operation")
        builtin = self.write("all.model", gpufuzz.BUILTIN_MODEL)
        _, events, _ = self.run_target(path, env, model=builtin)
        self.assertEqual(events[-1], "outcome unsupported 1 create unsupported operation")
        _, events, _ = self.run_target(self.seq("create r0\n", "# model: all\n"), env, model=False)
        self.assertEqual(events[-1], "outcome unsupported 1 create unsupported operation")

    def test_leftovers_are_released_in_the_models_order(self):
        body = ("pool_create p0\nstream_create s0\nalloc p0 s0 b0\nstream_create s1\n"
                "alloc p0 s1 b1\nevent_create e0\npool_create p1\nthing_make t0\nmark_make m0\n"
                "pool_destroy p0\nevent_create e1\nstream_destroy s1 drain=no\n")
        status, events, out = self.run_target(self.seq(body), {"PROBE_RELEASE": "buf,thing"})
        self.assertEqual(status, 0, out)
        calls = self.calls(out)
        released = calls[calls.index("run stream_destroy s1 drain=no at=12 thread=0") + 1:]
        self.assertEqual(released, [
            "release buf b0", "release buf b1",  # the handler of the kind; their pool ended
            "run event_destroy e0 at=end thread=0", "run event_destroy e1 at=end thread=0",
            "run stream_destroy s0 drain=yes at=end thread=0",  # with its default arguments
            "run pool_destroy p1 at=end thread=0",
            "release thing t0",
            # mark: two operations end it, and no handler: left to the process's exit
            "leak_check"])
        self.assertEqual(events[-4:], ["done 12", "begin end end", "done end",
                                       "outcome pass - - "])

    def test_a_kind_without_a_release_is_left_alone(self):
        status, events, out = self.run_target(self.seq(
            "pool_create p0\nstream_create s0\nalloc p0 s0 b0\nthing_make t0\n"))
        self.assertEqual(status, 0, out)
        calls = self.calls(out)
        self.assertEqual(calls[4:], ["run stream_destroy s0 drain=yes at=end thread=0",
                                     "run pool_destroy p0 at=end thread=0", "leak_check"])

    def test_a_failed_release_is_at_end_and_names_what_it_released(self):
        status, events, out = self.run_target(self.seq("stream_create s0\nstream_create s1\n"),
                                              {"PROBE_FAIL": "stream_destroy"})
        self.assertEqual(status, 1)
        self.assertEqual(events[-2:], ["begin end end", "outcome error end end stream_destroy s0: "
                                                        "stream_destroy failed as asked"])
        self.assertNotIn("s1", self.calls(out)[-1])

    def test_a_failure_at_an_operation_stops_the_run(self):
        status, events, out = self.run_target(self.seq(self.BODY), {"PROBE_FAIL": "record"})
        self.assertEqual(status, 1)
        self.assertEqual(events[-2:], ["begin 6 record", "outcome error 6 record record failed "
                                                         "as asked"])
        self.assertNotIn("wait", out)

    def test_a_file_the_model_refuses_is_exit_2_before_anything_runs(self):
        path = self.seq("pool_create p0\nalloc p0 b0\n")
        status, events, out = self.run_target(path)
        self.assertEqual((status, events), (2, []))
        self.assertIn(path + ":4:1: 'alloc' takes 3 name(s), not 2", out)
        broken = self.write("broken.model", "resource r\nop x q\n")
        status, events, out = self.run_target(path, model=broken)
        self.assertEqual((status, events), (2, []))
        self.assertIn(broken + ":2:6: 'q' is not a declared resource kind", out)


class Threads(Fixture):
    def test_operations_of_different_threads_overlap(self):
        status, events, out = self.run_target(self.seq(
            "# threads: 2\nstream_create s0\nevent_create e0\n@1 block s0\nunblock e0\n"))
        self.assertEqual(status, 0, out)
        self.assertIn("setup probe threads=2", out)
        self.assertIn("begin 3 block", events)
        # block waited for unblock: it cannot be done before unblock began. (Their `done` lines
        # may come either way: unblock sets the event before it writes its own.)
        self.assertLess(events.index("begin 4 unblock"), events.index("done 3"))
        self.assertEqual(events[-3:], ["begin end end", "done end", "outcome pass - - "])
        self.assertIn("run block s0 at=3 thread=1", out)

    def test_an_operation_begins_after_its_names_previous_operation(self):
        status, events, out = self.run_target(self.seq(
            "pool_create p0\nstream_create s0\n@1 stream_create s1\nalloc p0 s0 b0\n"
            "@1 launch s0 b0\n@1 wait s1\n"), {"PROBE_SLOW": "alloc:0.4"})
        self.assertEqual(status, 0, out)
        self.assertLess(events.index("done 4"), events.index("begin 5 launch"))
        self.assertLess(events.index("done 5"), events.index("begin 6 wait"))  # its thread's
        self.assertLess(events.index("done 2"), events.index("begin 4 alloc"))
        for at in range(1, 7):
            self.assertEqual(sum(e.startswith(f"begin {at} ") for e in events), 1)
        self.assertLess(events.index("begin 3 stream_create"), events.index("done 4"))

    def test_after_a_failure_nothing_new_begins(self):
        status, events, out = self.run_target(self.seq(
            "stream_create s0\nstream_create s1\n@1 wait s1\nwait s0\n"),
            {"PROBE_FAIL": "stream_create:0"})
        self.assertEqual(status, 1, out)
        self.assertEqual(events, ["start 4", "begin 1 stream_create",
                                  "outcome error 1 stream_create stream_create failed as asked"])

    def test_two_failures_in_flight_report_the_lower_ordinal(self):
        status, events, out = self.run_target(self.seq(
            "stream_create s0\nstream_create s1\nevent_create e0\n@1 wait s1\nwait s0\n"
            "stream_create s2\n"), {"PROBE_FAIL": "wait:0.6"})
        self.assertEqual(status, 1, out)
        # Both waits begin (4 on thread 1, 5 on thread 0) and both fail; the outcome is at 4, and
        # after the failures nothing new begins (stream_create s2 at 6).
        self.assertEqual(events.count("begin 4 wait"), 1)
        self.assertEqual(events.count("begin 5 wait"), 1)
        self.assertEqual(events[-1], "outcome error 4 wait wait failed as asked")
        self.assertNotIn("begin 6 stream_create", events)


class ForkServer(Fixture):
    def test_a_forked_run_reads_its_model_from_the_request(self):
        sock, theirs = socket.socketpair(socket.AF_UNIX, socket.SOCK_SEQPACKET)
        env = {k: v for k, v in os.environ.items() if not k.startswith(("GPUFUZZ_", "PROBE_"))}
        env["GPUFUZZ_FORK_SERVER_FD"] = str(theirs.fileno())
        server = subprocess.Popen([PYTHON, PROBE], stdin=subprocess.DEVNULL, env=env,
                                  pass_fds=(theirs.fileno(),), preexec_fn=harness_like_start)
        theirs.close()
        try:
            self.assertEqual(sock.recv(65536), b"hello 1")
            path = self.seq("pool_create p0\nthing_make t0\n")
            results = []
            for entries in ([f"GPUFUZZ_MODEL={self.model}"], []):
                out_r, out_w = os.pipe()
                ev_r, ev_w = os.pipe()
                fields = [b"run", str(len(entries) + 1).encode(), b"GPUFUZZ_EVENTS_FD=3",
                          *(e.encode() for e in entries), path.encode()]
                socket.send_fds(sock, [b"".join(f + b"\0" for f in fields)], [out_w, ev_w])
                os.close(out_w)
                os.close(ev_w)
                self.assertRegex(sock.recv(65536), rb"^pid [0-9]+$")
                self.assertRegex(sock.recv(65536), rb"^exit [0-9]+$")
                results.append((read_all(ev_r, 60.0).splitlines(), read_all(out_r, 60.0)))
                sock.send(b"reap")
            (events, out), (plain_events, plain_out) = results
            self.assertEqual(events[-1], "outcome pass - - ", out)
            self.assertIn("run pool_destroy p0 at=end thread=0", out)
            # The next run's request names no model: the built-in, as a fresh start reads it.
            self.assertIn("unknown operation 'pool_create'", plain_out)
            self.assertEqual(plain_events, [])
        finally:
            sock.close()
            server.wait(timeout=30)


if __name__ == "__main__":
    unittest.main()
