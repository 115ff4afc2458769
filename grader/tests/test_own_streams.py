"""Streams of one's own: rule `own_streams`, lifted by vectorAdd's manifest alone.

The timers wait for every stream the implementation created and has not destroyed
(common/src/stream_fence.cpp), so creating a stream no longer hides work from them; a lab
whose exercise needs streams lifts the rule in its manifest ("rules": {"allow":
["own_streams"]}), vectorAdd for its streams part. Everywhere else creating a stream stays
a finding, and host callbacks, graphs and stream capture (rule `streams`) stay findings in
every lab, vectorAdd included: the spelling rules (where the static checks cannot run) and
the static checks' symbol families alike.
"""

from __future__ import annotations

import json
import tempfile
import types
import unittest
from pathlib import Path

from grader import config, manifest, rules
from grader.check.elf import Object, Symbol
from grader.check.findings import Source
from grader.check.symbols import ObjectContext, symbol_findings
from grader.stages import scoring

KIT = Path(__file__).resolve().parents[2]

OWN_STREAMS = ("cudaStream_t s;\n"
               "cudaStreamCreate(&s);\n"
               "cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking);\n"
               "cudaStreamCreateWithPriority(&s, 0, -1);\n"
               "cudaStreamWaitEvent(s, e, 0);\n"
               "cudaStreamDestroy(s);\n")
NO_TIMER_WAITS = ("cudaLaunchHostFunc(s, f, 0);\n"
                  "cudaStreamAddCallback(s, g, 0, 0);\n"
                  "cudaGraph_t graph;\n"
                  "cudaStreamBeginCapture(s, cudaStreamCaptureModeGlobal);\n")
# The per-thread and the legacy default streams synchronise with the timers' events.
DEFAULT_STREAMS = ("k<<<1, 1, 0, cudaStreamPerThread>>>(p);\n"
                   "k<<<1, 1, 0, (cudaStream_t)2>>>(p);\n"
                   "cudaMemsetAsync(p, 0, 4, cudaStreamLegacy);\n"
                   "cudaStreamSynchronize(0);\n")


def spelled(text: str, allow: set[str] = frozenset()) -> list[tuple[str, int]]:
    """The built-in rules' findings (rule, line) in `text`, rules in `allow` lifted."""
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "x.cu"
        path.write_text(text)
        builtin = {k: v for k, v in rules.BUILTIN_RULES.items() if k not in allow}
        return sorted((f.rule, f.line) for f in rules.check(Path(tmp), [path], [], [], builtin))


class SpellingRules(unittest.TestCase):
    def test_own_streams_and_streams_are_separate_rules(self):
        self.assertEqual(spelled(OWN_STREAMS), [("own_streams", 2), ("own_streams", 3), ("own_streams", 3),
                                                ("own_streams", 4), ("own_streams", 5), ("own_streams", 6)])
        # Line 4: cudaStreamBeginCapture and its mode, cudaStreamCaptureModeGlobal.
        self.assertEqual(spelled(NO_TIMER_WAITS),
                         [("streams", 1), ("streams", 2), ("streams", 3), ("streams", 4), ("streams", 4)])
        self.assertEqual(spelled(DEFAULT_STREAMS), [])

    def test_lifting_own_streams_leaves_callbacks_and_graphs(self):
        self.assertEqual(spelled(OWN_STREAMS + NO_TIMER_WAITS, {"own_streams"}),
                         [("streams", 7), ("streams", 8), ("streams", 9), ("streams", 10), ("streams", 10)])

    def test_messages_say_what_to_do(self):
        self.assertIn("default stream", rules.BUILTIN_RULES["own_streams"][1])
        self.assertIn("cannot wait for", rules.BUILTIN_RULES["streams"][1])


class Manifests(unittest.TestCase):
    def test_only_vectorAdd_allows_its_own_streams(self):
        labs = manifest.by_name(KIT)
        self.assertEqual(labs["vectorAdd"].allowed_rules, ("own_streams",))
        others = {name: lab.allowed_rules for name, lab in labs.items() if name != "vectorAdd"}
        self.assertTrue(others, "the kit has other labs")
        self.assertEqual({name: allowed for name, allowed in others.items() if allowed}, {})

    def test_an_unknown_rule_is_refused_with_the_file(self):
        data = json.loads((KIT / "labs/vectorAdd/lab.json").read_text())
        data["rules"]["allow"] = ["own_stream"]
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "vectorAdd" / "lab.json"
            path.parent.mkdir()
            path.write_text(json.dumps(data))
            with self.assertRaises(manifest.ManifestError) as caught:
                manifest.read(path)
        self.assertIn("'own_stream'", str(caught.exception))
        self.assertIn("own_streams", str(caught.exception))
        self.assertIn(str(path), str(caught.exception))


def options_for(root: Path, labs: dict[str, manifest.Lab], allow: list[str] | None = None) -> types.SimpleNamespace:
    """What scoring.apply_rules reads of the options: a student's run whose checks did not run."""
    table = {"labs": {name: {"allow": allow} for name in labs}} if allow is not None else {}
    return types.SimpleNamespace(config=config.from_dict(table, None, labs), work_dir=root, root=root,
                                 impl="student", plan=types.SimpleNamespace(solution=False))


class ScoringEveryLab(unittest.TestCase):
    """apply_rules over every lab of the kit (the spelling rules, as when the static checks
    could not run): own_streams fires in every lab but vectorAdd, streams in all of them."""

    def rules_found(self, lab: manifest.Lab, labs: dict[str, manifest.Lab], allow: list[str] | None = None) -> set[str]:
        with tempfile.TemporaryDirectory() as tmp:
            root = Path(tmp)
            options = options_for(root, labs, allow)
            settings = options.config.lab(lab.name)
            files = rules.editable_paths(root, lab.name, settings.editable)
            for path in files:
                path.parent.mkdir(parents=True, exist_ok=True)
                path.write_text(OWN_STREAMS + NO_TIMER_WAITS)
            result = types.SimpleNamespace(lab=lab.name, checked=False, rules=[])
            scoring.apply_rules(options, result, None, lab)
            return {r["rule"] for r in result.rules if r["rule"]}  # "": a lab's required pattern (sobel's __shared__)

    def test_every_lab(self):
        labs = manifest.by_name(KIT)
        for name, lab in labs.items():
            expected = {"streams"} if name == "vectorAdd" else {"streams", "own_streams"}
            self.assertEqual(self.rules_found(lab, labs), expected, name)

    def test_the_course_config_adds_to_the_manifest(self):
        labs = manifest.by_name(KIT)
        # A course that allows another rule in vectorAdd keeps the lab's own streams allowed.
        self.assertEqual(self.rules_found(labs["vectorAdd"], labs, ["threads"]), {"streams"})
        # And a course may allow own_streams in another lab.
        self.assertEqual(self.rules_found(labs["reduction"], labs, ["own_streams"]), {"streams"})

    def test_findings_of_the_checks_are_lifted_too(self):
        # A finding recorded by an earlier stage under the rule's name goes where the rule is allowed.
        labs = manifest.by_name(KIT)
        with tempfile.TemporaryDirectory() as tmp:
            options = options_for(Path(tmp), labs)
            for name, kept in (("vectorAdd", []), ("reduction", ["own_streams"])):
                result = types.SimpleNamespace(lab=name, checked=True, rules=[{"rule": "own_streams"}])
                scoring.apply_rules(options, result, None, labs[name])
                self.assertEqual([r["rule"] for r in result.rules], kept, name)


UNDEFINED = ("cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority", "cudaStreamDestroy",
             "cudaStreamWaitEvent", "cudaLaunchHostFunc", "cudaStreamAddCallback", "cudaGraphLaunch",
             "cudaStreamBeginCapture", "cudaStreamQuery", "cudaLaunchKernel_ptsz")


def object_using(names: tuple[str, ...]) -> Object:
    """An object whose symbol table lists `names` as undefined (used, not defined)."""
    symbols = [Symbol(index, 0, 0, "NOTYPE", "GLOBAL", "UND", name, name) for index, name in enumerate(names, 1)]
    return Object(symbols, {}, {}, {}, {name: name for name in names})


class SymbolFamilies(unittest.TestCase):
    """The static checks' symbol table: the own_streams family lifted where the lab's manifest
    allows the rule; callbacks, graphs and capture (and the other stream calls) findings everywhere."""

    def findings(self, lab: manifest.Lab, names: tuple[str, ...] = UNDEFINED) -> list[rules.Finding]:
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / f"{lab.name}.cu"
            path.write_text("".join(f"void use_{n}() {{ {n}(); }}\n" for n in names))
            ctx = ObjectContext(Source(f"labs/{lab.name}/{lab.name}.cu", path, path), lab.name, set(),
                                set(lab.functions), set(), set(), tuple(lab.allowed_symbols),
                                tuple(lab.forbidden_symbols), {}, tuple(lab.allowed_rules))
            return symbol_findings(object_using(names), ctx)

    def test_vectorAdd_may_create_streams_not_callbacks_or_graphs(self):
        labs = manifest.by_name(KIT)
        found = {f.pattern: f.message for f in self.findings(labs["vectorAdd"])}
        # One finding per family, named after its first symbol: callbacks and graphs, and the
        # other stream calls; none for the streams of one's own.
        self.assertEqual(sorted(found), ["cudaLaunchHostFunc", "cudaStreamQuery"], found)
        self.assertIn(rules.BUILTIN_RULES["streams"][1], found["cudaLaunchHostFunc"])
        self.assertIn("and 2 more", found["cudaLaunchHostFunc"])  # the callback, the graph, the capture
        self.assertIn("cudaLaunchKernel_ptsz", found["cudaStreamQuery"])
        self.assertEqual(self.findings(labs["vectorAdd"], UNDEFINED[:5]), [])
        for name in UNDEFINED[5:9]:
            self.assertEqual([f.pattern for f in self.findings(labs["vectorAdd"], (name,))], [name])

    def test_every_other_lab_finds_its_own_streams(self):
        labs = manifest.by_name(KIT)
        for name, lab in labs.items():
            if name == "vectorAdd":
                continue
            found = {f.pattern: f for f in self.findings(lab)}
            self.assertEqual(sorted(found), ["cudaLaunchHostFunc", "cudaStreamCreate", "cudaStreamQuery"], name)
            own = found["cudaStreamCreate"]
            self.assertEqual((own.rule, own.line), ("symbol", 1))
            self.assertIn(rules.BUILTIN_RULES["own_streams"][1], own.message)
            self.assertIn("and 3 more", own.message)
            for stream_call in UNDEFINED[:5]:
                self.assertEqual([f.pattern for f in self.findings(lab, (stream_call,))], [stream_call], name)


if __name__ == "__main__":
    unittest.main()
