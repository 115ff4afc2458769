"""The check's readers of readelf, objdump and c++filt output (grader/check/elf.py), on the
text recorded from a compiled file (fixtures/loadtime: clean.cu, see its README). No
compiler or binutils needed."""

from __future__ import annotations

import json
import unittest

from grader.check import elf
from grader.tests.helpers import FIXTURES

LOAD_TIME = FIXTURES / "loadtime"
ELF = (LOAD_TIME / "clean.readelf.txt").read_text()
DISASSEMBLY = (LOAD_TIME / "clean.objdump.txt").read_text()
NAMES = json.loads((LOAD_TIME / "clean.names.json").read_text())
STARTUP = "_GLOBAL__sub_I_tmpxft_00007452_00000000_6_clean.cudafe1.cpp"


def clean_object() -> elf.Object:
    return elf.object_from_text(ELF, DISASSEMBLY, lambda wanted: {n: NAMES[n] for n in wanted if n in NAMES})


class Sections(unittest.TestCase):
    def test_every_header(self):
        sections = elf.parse_sections(ELF)
        self.assertEqual(sorted(sections), list(range(1, 33)))  # "33 section headers"; the null one has no name
        self.assertEqual(sections[16], (".init_array", "INIT_ARRAY", 0x10, 0, "WA"))
        self.assertEqual(sections[17], (".rela.init_array", "RELA", 0x30, 16, "I"))  # relocates section 16
        self.assertEqual(sections[8], (".text._ZNSt6vectorIfSaIfEED2Ev", "PROGBITS", 0x21, 0, "AXG"))  # a COMDAT group
        self.assertEqual(sections[24][0], ".data.rel.local.DW.ref.__gxx_personality_v0")  # a name wider than its column

    def test_other_text_is_not_a_section(self):
        self.assertEqual(elf.parse_sections("Key to Flags:\n  W (write), A (alloc)\n  [Nr] Name  Type\n"), {})


class Symbols(unittest.TestCase):
    def test_the_symbol_table(self):
        symbols = elf.parse_symbols(ELF)
        self.assertEqual([s.index for s in symbols], list(range(77)))  # "contains 77 entries", in order
        again = symbols[62]
        self.assertEqual((again.value, again.size, again.type, again.bind, again.section, again.name),
                         (0x380, 5, "FUNC", "GLOBAL", "3", "_Z16vector_add_againPKfS0_Pfi"))
        self.assertTrue(again.defined and again.is_global)
        atexit = symbols[71]
        self.assertEqual((atexit.name, atexit.section), ("__cxa_atexit", "UND"))
        self.assertFalse(atexit.defined)
        self.assertEqual(symbols[0].name, "")  # the null symbol has no name
        self.assertFalse(symbols[6].is_global)  # _ZL26__cudaUnregisterBinaryUtilv is LOCAL

    def test_only_symtab_is_read(self):
        dynamic = ELF.replace("Symbol table '.symtab'", "Symbol table '.dynsym'")
        self.assertEqual(elf.parse_symbols(dynamic), [])


class Relocations(unittest.TestCase):
    def test_by_the_section_they_apply_to(self):
        relocations = elf.parse_relocations(ELF, elf.parse_sections(ELF))
        # .rela.init_array: two entries of .text.startup (section symbol 0x15), at 0 and 0x90
        self.assertEqual(relocations[16], [(0, "R_X86_64_64", 0x15, 0), (8, "R_X86_64_64", 0x15, 0x90)])
        startup = relocations[14]  # .rela.text.startup
        self.assertEqual(len(startup), 49)
        self.assertIn((0xd6, "R_X86_64_PLT32", 0x47, -4), startup)  # call __cxa_atexit - 4
        self.assertIn((0xe6, "R_X86_64_PC32", 3, 0x68), startup)  # .bss + 68
        self.assertEqual(len(relocations[28]), 18)  # .rela.eh_frame
        self.assertEqual(relocations[8], [(0x13, "R_X86_64_PLT32", 0x28, -4)])  # the COMDAT vector destructor's
        self.assertIn((3, "R_X86_64_PC32", 3, 0x14), relocations[3])

    def test_a_relocation_section_not_in_the_headers_is_skipped(self):
        self.assertEqual(elf.parse_relocations(ELF, {}), {})


class Disassembly(unittest.TestCase):
    def test_functions_by_section_and_address(self):
        functions = elf.parse_disassembly(DISASSEMBLY)
        self.assertEqual(functions[(".text", 0x380)],
                         ("_Z16vector_add_againPKfS0_Pfi", [(0x380, "jmp    385 <_Z16vector_add_againPKfS0_Pfi+0x5>")]))
        name, insns = functions[(".text._ZNSt6vectorIfSaIfEED2Ev", 0)]
        self.assertEqual(name, "_ZNSt6vectorIfSaIfEED1Ev")
        self.assertEqual([address for address, _ in insns], [0, 3, 6, 8, 0xc, 0xf, 0x12, 0x17, 0x20])
        self.assertEqual(insns[-1], (0x20, "ret"))
        self.assertEqual(functions[(".text.startup", 0x90)][0], STARTUP)

    def test_instructions_before_any_function_are_dropped(self):
        self.assertEqual(elf.parse_disassembly("   0:\tret\n"), {})


class Demangling(unittest.TestCase):
    def test_batches(self):
        self.assertEqual(elf.demangle_batches(["_Z1fv", "exit", "_Z1fv", "_Z1g\nv", "_Z1hv"]), [["_Z1fv", "_Z1hv"]])
        many = [f"_Z{n}" for n in range(4500)]
        self.assertEqual([len(b) for b in elf.demangle_batches(many)], [2000, 2000, 500])
        long = ["_Z" + "a" * 60_000, "_Z" + "b" * 60_000, "_Z" + "c" * 200_000, "_Z1fv"]
        self.assertEqual(elf.demangle_batches(long), [[long[0]], [long[1]], [long[2]], [long[3]]])
        self.assertEqual(elf.demangle_batches([]), [])

    def test_output(self):
        self.assertEqual(elf.parse_demangled(["_Z1fv", "_Z1gi"], "f()\ng(int)\n"), {"_Z1fv": "f()", "_Z1gi": "g(int)"})
        self.assertEqual(elf.parse_demangled(["_Z1fv", "_Z1gi"], "f()"), {})  # c++filt cut short: nothing

    def test_object_names(self):
        asked: list[str] = []

        def demangle(names: list[str]) -> dict[str, str]:
            asked.extend(names)
            return {n: NAMES[n] for n in names if n in NAMES}

        obj = elf.object_from_text(ELF, DISASSEMBLY, demangle)
        by_name = {s.name: s for s in obj.symbols}
        self.assertEqual(by_name["_Z16vector_add_againPKfS0_Pfi"].demangled,
                         "vector_add_again(float const*, float const*, float*, int)")
        self.assertEqual(by_name["__cxa_atexit"].demangled, "__cxa_atexit")  # not mangled: as it is
        self.assertIn("_ZNSt6vectorIfSaIfEED1Ev", asked)  # a name only the disassembly has
        self.assertEqual(obj.demangled["_ZNSt6vectorIfSaIfEED1Ev"], NAMES["_ZNSt6vectorIfSaIfEED1Ev"])


class Lookups(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.obj = clean_object()
        cls.code = elf.Code.of(cls.obj)

    def test_relocation_targets(self):
        self.assertEqual(self.code.target("R_X86_64_PLT32", 0x47, -4).name, "__cxa_atexit")
        # a section symbol plus an addend: the function there (the .init_array entry)
        self.assertEqual(self.code.target("R_X86_64_64", 0x15, 0x90).name, STARTUP)
        self.assertIsNone(self.code.target("R_X86_64_64", 999, 0))

    def test_what_covers_an_address(self):
        self.assertEqual(self.code.at(3, 0x382).name, "_Z16vector_add_againPKfS0_Pfi")
        self.assertIsNone(self.code.at(3, 0x385))  # past its 5 bytes

    def test_a_functions_body_with_its_relocations(self):
        again = self.code.by_index[62]
        # a tail call of vector_add (symbol 53): objdump shows the next address, the relocation says where
        self.assertEqual(self.code.body(again), [(0x380, "jmp    385 <_Z16vector_add_againPKfS0_Pfi+0x5>",
                                                  [(0x381, "R_X86_64_PLT32", 53, -4)])])
        self.assertEqual(self.code.target("R_X86_64_PLT32", 53, -4).name, "_Z10vector_addPKfS0_Pfi")
        startup = self.code.target("R_X86_64_64", 0x15, 0x90)
        calls = [(address, relocations) for address, insn, relocations in self.code.body(startup)
                 if any(r[2] == 0x47 for r in relocations)]
        self.assertEqual([address for address, _ in calls], [0xd5, 0x158, 0x1d2])  # `call __cxa_atexit` (+1: the
        # relocated operand)

    def test_who_refers_to_a_symbol(self):
        origins = elf.reference_origins(self.obj)
        self.assertEqual({holder.name for holder in origins[0x47]}, {STARTUP})  # only the initialiser
        self.assertEqual(len(origins[0x47]), 3)


if __name__ == "__main__":
    unittest.main()
