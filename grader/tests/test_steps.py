"""Steps are distinct work (grader/check/steps.py, variants.distinct): the kernels each registered
variant launches, read from a recorded object (no compiler needed), and the points a
step keeps when its work is another step's."""

from __future__ import annotations

import base64
import gzip
import json
import struct
import unittest

from grader import variants
from grader.check import elf, steps
from grader.tests.helpers import KIT

FIXTURE = KIT / "grader" / "tests" / "fixtures" / "steps"


def recorded() -> tuple[bytes, object]:
    """The fixture's object bytes and elf.Code over its recorded readelf/objdump text."""
    names = json.loads((FIXTURE / "steps.names.json").read_text())
    obj = elf.object_from_text((FIXTURE / "steps.readelf.txt").read_text(),
                               (FIXTURE / "steps.objdump.txt").read_text(),
                               lambda wanted: {n: names[n] for n in wanted if n in names})
    data = gzip.decompress(base64.b64decode((FIXTURE / "steps.o.gz.b64").read_text()))
    return data, elf.Code.of(obj)


def passing(*names: str) -> list[dict]:
    return [{"name": f"Registered/VectorAddVariantsGpu.MatchesCpu/{n}", "status": "passed", "weight": 1.0,
             "message": ""} for n in names]


def required(*names: str) -> tuple[variants.RequiredVariant, ...]:
    return variants.parse([{"name": n, "points": 1} for n in names], "lab.json")


class AnalysisTest(unittest.TestCase):
    """What steps.analyse reads of the recorded object (steps.cu: one kernel in disguises)."""

    @classmethod
    def setUpClass(cls):
        data, code = recorded()
        cls.data, cls.code = data, code
        cls.analysis = steps.analyse(data, code).as_dict()
        cls.rows = {r["name"]: r for r in cls.analysis["variants"]}

    def test_every_registration_is_read_with_its_function(self):
        self.assertTrue(self.analysis["ok"], self.analysis["message"])
        self.assertEqual(set(self.rows), {"one_per_thread", "renamed", "wrapped", "template_1", "template_2",
                                          "wrapper_a", "wrapper_b", "dummy", "grid_stride", "table"})
        self.assertEqual({r["function"] for r in self.rows.values()}, {"vector_add"})
        self.assertEqual(self.rows["renamed"]["symbol"], "launch_renamed")
        self.assertEqual(self.rows["wrapped"]["symbol"], "launch_wrapped")

    def test_the_kernels_each_launches(self):
        kernels = {name: row["kernels"] for name, row in self.rows.items()}
        self.assertEqual(kernels["one_per_thread"], ["add_kernel"])
        self.assertEqual(kernels["wrapped"], ["add_kernel"])  # through another host function
        self.assertEqual(kernels["renamed"], ["renamed_kernel"])
        self.assertEqual(kernels["grid_stride"], ["grid_stride_kernel"])
        self.assertEqual(kernels["template_1"], ["void template_kernel<1>"])
        self.assertEqual(kernels["template_2"], ["void template_kernel<2>"])

    def test_the_same_code_under_other_names_is_the_same_work(self):
        work = {name: row["work"]["sm_90"] for name, row in self.rows.items()}
        same = work["one_per_thread"]
        self.assertEqual(len(same), 1)
        for name in ("renamed", "wrapped", "template_1", "template_2", "wrapper_a", "wrapper_b", "table"):
            with self.subTest(name=name):
                self.assertEqual(work[name], same)
        self.assertNotEqual(work["grid_stride"], same)
        self.assertNotEqual(work["dummy"], same)

    def test_a_dummy_instruction_makes_a_near_copy(self):
        pairs = {(p["variant"], p["other"]) for p in self.analysis["near"]} | {
            (p["other"], p["variant"]) for p in self.analysis["near"]}
        self.assertIn(("dummy", "one_per_thread"), pairs)
        self.assertNotIn(("grid_stride", "one_per_thread"), pairs)
        near = next(p for p in self.analysis["near"] if {p["variant"], p["other"]} == {"dummy", "one_per_thread"})
        self.assertGreaterEqual(near["similarity"], steps.NEAR)
        self.assertLess(near["similarity"], 1.0)

    def test_the_kernel_fingerprint_ignores_names(self):
        cubins = steps.cubins(steps.read_elf(self.data))
        self.assertEqual([arch for arch, _ in cubins], ["sm_90"])
        functions = steps.device_functions(cubins[0][1])
        kernels = {f.name: f for f in functions.values() if f.entry}
        self.assertEqual(len(kernels), 8)  # add, renamed, 2 templates, 2 wrappers, dummy, grid stride
        prints = {f.fingerprint for f in kernels.values()}
        self.assertEqual(len(prints), 3)  # the one body, the dummy copy, the grid-stride loop

    def test_a_damaged_object_is_not_read_but_never_raises(self):
        for data in (b"", b"not an object", self.data[:200], self.data[:64] + b"\xff" * 64):
            with self.subTest(size=len(data)):
                found = steps.analyse(data, self.code)
                self.assertFalse(found.ok)
                self.assertTrue(found.message)

    def test_a_compressed_fat_binary_is_not_read(self):
        host = steps.read_elf(self.data)
        section = host.section(steps.FATBIN_SECTION)
        data = bytearray(self.data)
        entry = section.offset + 16  # the first entry of the first fat binary
        flags, = struct.unpack_from("<Q", data, entry + 0x28)
        struct.pack_into("<Q", data, entry + 0x28, flags | steps.FATBIN_COMPRESSED)
        found = steps.analyse(bytes(data), self.code)
        self.assertFalse(found.ok)
        self.assertIn("no machine code", found.message)

    def test_no_record_no_registrations(self):
        data = bytearray(self.data)
        section = steps.read_elf(self.data).section(steps.SECTION)
        name_at = steps.read_elf(self.data).sections  # rename the section: the records are gone
        header = struct.unpack_from("<Q", data, 0x28)[0] + section.index * 64
        strings = name_at[struct.unpack_from("<H", data, 0x3E)[0]]
        offset = strings.offset + struct.unpack_from("<I", data, header)[0]
        data[offset:offset + 2] = b".x"
        found = steps.analyse(bytes(data), self.code)
        self.assertTrue(found.ok)
        self.assertEqual(found.registrations, [])


class DistinctTest(unittest.TestCase):
    """variants.distinct and grade: a step keeps its point only with a kernel of its own."""

    @classmethod
    def setUpClass(cls):
        data, code = recorded()
        cls.analysis = steps.analyse(data, code).as_dict()

    def grade(self, *names: str, analysis: dict | None = None) -> dict[str, dict]:
        result = variants.grade(required(*names), passing(*names), None, None,
                                self.analysis if analysis is None else analysis)
        return {row["name"]: row for row in result.rows}

    def test_a_renamed_copy_earns_nothing_and_names_both(self):
        rows = self.grade("one_per_thread", "renamed", "grid_stride")
        self.assertEqual((rows["one_per_thread"]["points"], rows["grid_stride"]["points"]), (1.0, 1.0))
        renamed = rows["renamed"]
        self.assertEqual((renamed["points"], renamed["status"], renamed["flag"], renamed["reuse_of"]),
                         (0.0, variants.REUSED, "reuse", ["one_per_thread"]))
        self.assertIn('vector_add\'s "renamed" (launch_renamed) launches renamed_kernel', renamed["why"])
        self.assertIn('the same kernel code as "one_per_thread" (launch_add: add_kernel)', renamed["why"])

    def test_every_disguise_is_a_reuse(self):
        disguises = ("renamed", "wrapped", "template_1", "template_2", "wrapper_a", "wrapper_b", "table")
        rows = self.grade("one_per_thread", *disguises)
        self.assertEqual(rows["one_per_thread"]["points"], 1.0)
        for name in disguises:
            with self.subTest(name=name):
                self.assertEqual((rows[name]["points"], rows[name]["status"]), (0.0, variants.REUSED))

    def test_the_order_of_the_manifest_decides_which_is_the_copy(self):
        rows = self.grade("renamed", "one_per_thread")
        self.assertEqual((rows["renamed"]["points"], rows["one_per_thread"]["points"]), (1.0, 0.0))
        self.assertEqual(rows["one_per_thread"]["reuse_of"], ["renamed"])

    def test_a_near_copy_keeps_its_point_with_a_note(self):
        rows = self.grade("one_per_thread", "dummy")
        self.assertEqual((rows["dummy"]["points"], rows["dummy"]["status"]), (1.0, variants.PASSED))
        self.assertIn("its kernel dummy_kernel is a near copy of one_per_thread's add_kernel", rows["dummy"]["note"])
        self.assertNotIn("note", rows["one_per_thread"])

    def test_a_step_without_a_record_earns_nothing(self):
        rows = self.grade("one_per_thread", "not_in_the_file")
        self.assertEqual((rows["not_in_the_file"]["points"], rows["not_in_the_file"]["status"]),
                         (0.0, variants.REUSED))
        self.assertIn('no LAB_REGISTER_VARIANT(<function>, "not_in_the_file", ...) found', rows["not_in_the_file"]["why"])

    def test_a_step_launching_no_kernel_earns_nothing(self):
        analysis = json.loads(json.dumps(self.analysis))
        for row in analysis["variants"]:
            if row["name"] == "grid_stride":
                row["work"], row["kernels"] = {"sm_90": []}, []
        rows = self.grade("one_per_thread", "grid_stride", analysis=analysis)
        self.assertEqual(rows["grid_stride"]["points"], 0.0)
        self.assertIn("launches no kernel of your file", rows["grid_stride"]["why"])

    # A second record of the same step (one the file wrote itself, pointing at another
    # function): the macro leaves one per registration, so the step earns nothing.
    def test_two_records_of_one_step_earn_nothing(self):
        analysis = json.loads(json.dumps(self.analysis))
        grid = next(row for row in analysis["variants"] if row["name"] == "grid_stride")
        forged = dict(json.loads(json.dumps(grid)), symbol="forged_host")
        analysis["variants"].append(forged)
        rows = self.grade("one_per_thread", "grid_stride", analysis=analysis)
        self.assertEqual((rows["one_per_thread"]["points"], rows["grid_stride"]["points"]), (1.0, 0.0))
        self.assertEqual(rows["grid_stride"]["status"], variants.REUSED)
        self.assertIn('two records of step "grid_stride" of vector_add', rows["grid_stride"]["why"])
        self.assertIn("forged_host", rows["grid_stride"]["why"])

    def test_reuse_on_any_architecture_is_a_reuse(self):
        analysis = json.loads(json.dumps(self.analysis))
        for row in analysis["variants"]:  # distinct on sm_90, the same code on sm_80
            row["work"]["sm_80"] = ["same"]
        rows = self.grade("one_per_thread", "grid_stride", analysis=analysis)
        self.assertEqual(rows["grid_stride"]["status"], variants.REUSED)

    def test_kernels_of_one_function_only(self):
        analysis = json.loads(json.dumps(self.analysis))
        for row in analysis["variants"]:
            if row["name"] == "renamed":
                row["function"] = "vector_add_host"  # another interface function: not compared
        rows = self.grade("one_per_thread", "renamed", analysis=analysis)
        self.assertEqual(rows["renamed"]["points"], 1.0)

    def test_unread_objects_keep_the_points_and_say_so(self):
        rows = self.grade("one_per_thread", "renamed", analysis={"ok": False, "message": "no machine code"})
        self.assertEqual((rows["one_per_thread"]["points"], rows["renamed"]["points"]), (1.0, 1.0))
        self.assertEqual(rows["renamed"]["distinct"], "not checked (no machine code)")
        none = variants.grade(required("one_per_thread", "renamed"), passing("one_per_thread", "renamed"))
        self.assertEqual(none.points, 2.0)

    def test_a_failing_step_is_reported_as_failing_not_reused(self):
        tests = passing("one_per_thread") + [{"name": "Registered/V.M/renamed", "status": "failed", "weight": 1.0,
                                              "message": ""}]
        rows = {r["name"]: r for r in variants.grade(required("one_per_thread", "renamed"), tests, None, None,
                                                     self.analysis).rows}
        self.assertEqual(rows["renamed"]["status"], variants.FAILED)
        self.assertEqual(rows["renamed"]["kernels"], ["renamed_kernel"])

    def test_fix_and_part_entries_are_not_steps(self):
        manifest = variants.parse([{"name": "one_per_thread", "points": 1},
                                   {"name": "renamed", "points": 1, "kind": "part"}], "lab.json")
        rows = {r["name"]: r for r in variants.grade(manifest, passing("one_per_thread", "renamed"), None, None,
                                                     self.analysis).rows}
        self.assertEqual(rows["renamed"]["points"], 1.0)

    def test_the_reference_steps_are_distinct(self):
        # The kit's reduction and vectorAdd steps in a reference-like file: each its own kernel.
        analysis = {"ok": True, "message": "", "near": [], "variants": [
            {"function": "reduce_sum", "name": n, "symbol": n, "kernels": [n + "_kernel"], "work": {"sm_90": [n]}}
            for n in ("interleaved", "contiguous", "first_add", "warp_finish")]}
        rows = self.grade("interleaved", "contiguous", "first_add", "warp_finish", analysis=analysis)
        self.assertEqual({r["points"] for r in rows.values()}, {1.0})


if __name__ == "__main__":
    unittest.main()
