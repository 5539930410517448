"""The Python client library (clients/python/gpufuzz_target.py) in a lifecycle model's words
(docs/models.md): the reader of a model's normalized facts (what it takes, what it skips, what it
refuses and where), sequences read in a model (names by slot, KIND* lists, arguments and their
defaults, `@T`), which model a run uses (GPUFUZZ_MODEL_FACTS, the facts beside GPUFUZZ_MODEL's
file or `# model:`'s, the built-in), and, with model_probe_target.py run as the harness runs a
target: dispatch by name (a handler, a method, Target.run), `unsupported`, the release of
leftovers in the model's order (release handlers, the default through the ending operation,
owners, kinds left alone), threads (overlap, the order of names, the lowest failure), the fork
server; the facts the harness hands a target; and that without a model everything reads as it
always did. gpufuzz writes the facts of the test's models (`gpufuzz model normalize`).

    python3 tests/targets/test_client_models.py [BIN_DIR] [-v]   (BIN_DIR: where gpufuzz is;
                                                                  default build/bin)
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
BIN_DIR = os.path.join(ROOT, "build/bin")
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


def gpufuzz_program(*args):
    """What `gpufuzz ARGS...` prints; a failure fails the test."""
    done = subprocess.run([os.path.join(BIN_DIR, "gpufuzz"), *args], capture_output=True,
                          text=True, timeout=120)
    if done.returncode != 0:
        raise AssertionError(f"gpufuzz {' '.join(args)}: exit {done.returncode}\n{done.stderr}")
    return done.stdout


_FACTS = {}  # a model file's text -> its facts, as gpufuzz writes them


def facts_of(path):
    """The facts gpufuzz writes of the model file at `path`."""
    with open(path) as f:
        text = f.read()
    if text not in _FACTS:
        _FACTS[text] = gpufuzz_program("model", "normalize", path)
    return _FACTS[text]


MODEL_VARIABLES = (gpufuzz.MODEL_VARIABLE, gpufuzz.MODEL_FACTS_VARIABLE)


class Fixture(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory(prefix="gpufuzz-client-models-")
        self.model = self.write_model("probe.model", PROBE_MODEL)
        self.saved = {name: os.environ.pop(name, None) for name in MODEL_VARIABLES}

    def tearDown(self):
        for name, value in self.saved.items():
            if value is None:
                os.environ.pop(name, None)
            else:
                os.environ[name] = value
        self.dir.cleanup()

    def write_model(self, name, text):
        """Writes a model file and its facts beside it, as gpufuzz writes them."""
        path = self.write(name, text)
        with open(gpufuzz.model_facts_path(path), "w") as f:
            f.write(facts_of(path))
        return path

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
        `model` is False (or a path), GPUFUZZ_MODEL_FACTS to the facts beside it: (status,
        events, output)."""
        r, w = os.pipe()
        environment = {k: v for k, v in os.environ.items()
                       if not k.startswith(("GPUFUZZ_", "PROBE_"))}
        environment.update(GPUFUZZ_EVENTS_FD=str(w), **(env or {}))
        if model:
            environment[gpufuzz.MODEL_VARIABLE] = self.model if model is True else model
            environment[gpufuzz.MODEL_FACTS_VARIABLE] = gpufuzz.model_facts_path(
                environment[gpufuzz.MODEL_VARIABLE])
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


HEADER = gpufuzz.MODEL_FACTS_HEADER + "\n"


class FactsReader(Fixture):
    def parse(self, text, path="m.facts"):
        return gpufuzz.parse_model_facts(text, path)

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

    def test_the_builtin_model_is_gpufuzzs_facts_and_the_same_text_in_both_libraries(self):
        self.assertEqual(gpufuzz.BUILTIN_MODEL, gpufuzz_program("model", "normalize", "all"))
        with open(os.path.join(ROOT, "clients/cpp/gpufuzz/target.hpp")) as f:
            header = f.read()
        match = re.search(r'kBuiltinModel = R"gpufuzz\((.*?)\)gpufuzz"', header, re.S)
        self.assertIsNotNone(match, "no kBuiltinModel in target.hpp")
        self.assertEqual(match.group(1), gpufuzz.BUILTIN_MODEL)

    def test_the_facts_of_a_model_of_every_kind_of_line(self):
        m = gpufuzz.load_model(self.model)
        facts = gpufuzz.model_facts_path(self.model)
        self.assertEqual((m.name, m.path), ("probe", facts))
        with open(self.model, "rb") as f:
            self.assertEqual(m.hash, gpufuzz.model_hash(f.read()))
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
        self.assertIs(gpufuzz.load_model(self.model), m)  # the same text is read once
        self.assertIs(gpufuzz.load_model_facts(facts), m)

    def test_a_later_versions_fact_is_skipped_and_a_note_is_free_text(self):
        m = self.parse(HEADER + "model m 0123456789abcdef\r\n\nnote  Streams (CUDA) {and} -> "
                       "more: a|b \nresource thing x\nresource box b\nowner thing box\n"
                       "colour thing red\nop make\nslot make thing new\nop use\n"
                       "slot use thing use\narg use n int 1 0 9\narg use w word a a b\n"
                       "weight use 4\neffect use set f thing\nfails use lost oom\n"
                       "release thing\nrelease box\n")
        self.assertEqual((m.name, m.hash), ("m", "0123456789abcdef"))
        self.assertEqual(m.note, "Streams (CUDA) {and} -> more: a|b")
        use = m.operations["use"]
        self.assertEqual((use.args["n"].high, use.args["w"].words), (9, ("a", "b")))
        self.assertEqual((use.weight, use.fails), (4, frozenset({"lost", "oom"})))
        self.assertEqual(m.operations["make"].introduces, ["thing"])
        self.assertEqual((m.resources["thing"].prefix, m.resources["thing"].owner), ("x", "box"))
        self.assertEqual(m.release, ["thing", "box"])
        self.assertIsNone(m.release_operation("thing"))

    def test_what_it_cannot_read_is_refused_with_its_place(self):
        head = HEADER + "model m 0123456789abcdef\nresource r r\n"
        cases = {
            "": "m.facts:1:1: not a model's facts",
            "# gpufuzz model\nmodel m\n": "m.facts:1:1: not a model's facts",
            "gpufuzz-model-facts 2\nmodel m 0\n": "m.facts:1:1: 'gpufuzz-model-facts 2' is a "
                                                   "version",
            HEADER + "resource r r\n": "m.facts:3:1: the facts have no 'model NAME HASH'",
            head + "model n 0\n": "m.facts:4:1: a second model fact",
            head + "resource r s\n": "m.facts:4:10: kind 'r' is declared twice",
            head + "resource q\n": "m.facts:4:1: 'resource' is resource KIND PREFIX",
            head + "owner r q\n": "m.facts:4:9: 'q' is not a kind of an earlier resource fact",
            head + "op a\nop a\n": "m.facts:5:4: operation 'a' is declared twice",
            head + "slot a r use\n": "m.facts:4:6: 'a' is not an operation of an earlier op fact",
            head + "op a\nslot a r keep\n": "m.facts:5:10: 'keep' is not a slot's use",
            head + "op a\nslot a r new\nslot a r use\n": "m.facts:6:10: a used slot after a new",
            head + "op a\nslot a r list\nslot a r list\n": "m.facts:6:10: a second list slot",
            head + "op a\nweight a 0\n": "m.facts:5:10: a weight is at least 1",
            head + "op a\nweight a 01\n": "m.facts:5:10: '01' is not an unsigned decimal",
            head + "op a\narg a n int 1 0 18446744073709551616\n": "m.facts:5:17: '18446744",
            head + "op a\narg a n int 5 0 4\n": "m.facts:5:13: the default is not within",
            head + "op a\narg a n int 1 0\n": "m.facts:5:1: 'arg' is arg OP KEY int",
            head + "op a\narg a n word c a b\n": "m.facts:5:14: the default is not one of the",
            head + "op a\narg a n text 1 0 2\n": "m.facts:5:9: 'text' is not an argument's type",
            head + "op a\narg a n int 1 0 2\narg a n int 1 0 2\n": "m.facts:6:7: argument 'n' is",
            head + "op a\nfails a oops\n": "m.facts:5:9: unknown failure 'oops'",
            head + "op a\neffect a flip f r\n": "m.facts:5:10: 'flip' is not an effect",
            head + "release r\nrelease r\n": "m.facts:5:9: kind 'r' is released twice",
            head + "release r gone\n": "m.facts:4:11: 'gone' is not an operation",
        }
        for text, want in cases.items():
            with self.subTest(text=text):
                with self.assertRaises(gpufuzz.ModelError) as raised:
                    self.parse(text)
                self.assertIn(want, str(raised.exception))
        with self.assertRaises(gpufuzz.ModelError) as raised:
            gpufuzz.load_model_facts(os.path.join(self.dir.name, "missing.facts"))
        self.assertIn("missing.facts: cannot read the model facts", str(raised.exception))

    def test_a_model_file_without_its_facts_or_with_stale_ones_is_refused(self):
        bare = self.write("bare.model", PROBE_MODEL)
        with self.assertRaises(gpufuzz.ModelError) as raised:
            gpufuzz.load_model(bare)
        self.assertIn(f"{bare}: no facts beside the model file ({gpufuzz.model_facts_path(bare)}):"
                      f" write them with `gpufuzz model normalize {bare}", str(raised.exception))
        # The model file edited after its facts were written: the hashes differ.
        self.write("probe.model", PROBE_MODEL + "# edited\n")
        with self.assertRaises(gpufuzz.ModelError) as raised:
            gpufuzz.load_model(self.model)
        self.assertIn(f"{gpufuzz.model_facts_path(self.model)}: the facts are of another text of "
                      f"{self.model}", str(raised.exception))

    def test_the_hash_is_gpufuzzs(self):
        # `gpufuzz model check` prints the hash it takes of the file's text.
        shown = gpufuzz_program("model", "check", self.model)
        with open(self.model, "rb") as f:
            self.assertIn(f"hash {gpufuzz.model_hash(f.read())})", shown)


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
        self.write_model("finding/probe.model", PROBE_MODEL.replace("model probe", "model copy"))
        path = self.write("finding/minimal.seq", "# model: ./probe.model\npool_create p0\n")
        # The directive: a path relative to the sequence file.
        s = gpufuzz.load_sequence(path)
        self.assertEqual((s.model.name, s.model_given), ("copy", True))
        # GPUFUZZ_MODEL overrides it, as --model overrides the directive.
        os.environ[gpufuzz.MODEL_VARIABLE] = self.model
        self.assertEqual(gpufuzz.load_sequence(path).model.name, "probe")
        # GPUFUZZ_MODEL_FACTS overrides both: the harness sets it to the facts of GPUFUZZ_MODEL.
        os.environ[gpufuzz.MODEL_FACTS_VARIABLE] = os.path.join(folder, "probe.facts")
        s = gpufuzz.load_sequence(path)
        self.assertEqual((s.model.name, s.model_given), ("copy", True))
        del os.environ[gpufuzz.MODEL_FACTS_VARIABLE]
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
        # As the harness writes a built-in model: its text, and its facts beside it.
        builtin = self.write("all.model", gpufuzz_program("model", "show", "all"))
        self.write("all.facts", gpufuzz_program("model", "normalize", "all"))
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
        broken = self.write("broken.model", "model broken\n")
        facts = self.write("broken.facts", HEADER + "model broken 0\nop x\nslot x q use\n")
        status, events, out = self.run_target(path, model=broken)
        self.assertEqual((status, events), (2, []))
        self.assertIn(facts + ":4:8: 'q' is not a kind of an earlier resource fact", out)


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
            facts = gpufuzz.model_facts_path(self.model)
            for entries in ([f"GPUFUZZ_MODEL={self.model}", f"GPUFUZZ_MODEL_FACTS={facts}"], []):
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


class Harness(Fixture):
    def test_a_target_gets_the_facts_of_its_sequences_model_beside_the_model_file(self):
        seen = os.path.join(self.dir.name, "seen")
        os.makedirs(seen)
        path = self.seq("pool_create p0\nthing_make t0\n", "# model: ./probe.model\n")
        environment = dict(os.environ, PROBE_MODEL_FILES=seen)
        done = subprocess.run([os.path.join(BIN_DIR, "gpufuzz"), "replay", path, "--target",
                               f"{PYTHON} {PROBE}"],
                              capture_output=True, text=True, env=environment, timeout=120)
        self.assertEqual(done.returncode, 0, done.stdout + done.stderr)
        with open(os.path.join(seen, "paths")) as f:
            model, facts = f.read().split("\n")[:2]
        self.assertTrue(os.path.isabs(model) and model.endswith(".model"), model)
        self.assertEqual(facts, gpufuzz.model_facts_path(model))
        with open(os.path.join(seen, "model")) as f:
            self.assertEqual(f.read(), PROBE_MODEL)
        with open(os.path.join(seen, "facts")) as f:
            self.assertEqual(f.read(), facts_of(self.model))


if __name__ == "__main__":
    if len(sys.argv) > 1 and not sys.argv[1].startswith("-"):
        BIN_DIR = sys.argv.pop(1)
    if not os.access(os.path.join(BIN_DIR, "gpufuzz"), os.X_OK):
        sys.exit(f"no gpufuzz in {BIN_DIR}: give the folder of the built programs")
    unittest.main()
