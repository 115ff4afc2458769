"""The compiled object as readelf, objdump and c++filt print it: pure parsers of their
output (tested on recorded text, grader/tests/fixtures), and lookups over the result."""

from __future__ import annotations

import bisect
import re
from collections.abc import Callable
from dataclasses import dataclass

from grader.check.policy import IFUNC_TYPES


@dataclass
class Symbol:
    """One entry of the object's symbol table."""
    index: int
    value: int
    size: int
    type: str  # FUNC, OBJECT, NOTYPE, SECTION, FILE, TLS, GNU_IFUNC, COMMON
    bind: str  # LOCAL, GLOBAL, WEAK, UNIQUE
    section: str  # section index as text, or UND, ABS, COM
    name: str
    demangled: str = ""

    @property
    def defined(self) -> bool:
        """Whether the object defines the symbol (else it only uses it)."""
        return self.section != "UND"

    @property
    def is_global(self) -> bool:
        """Whether the symbol is visible to the linker outside the object (global, weak or unique)."""
        return self.bind != "LOCAL"


@dataclass
class Object:
    """What readelf and objdump say about one object file."""

    symbols: list[Symbol]
    # index -> (name, type, size, section a RELA section relocates, flags)
    sections: dict[int, tuple[str, str, int, int, str]]
    relocations: dict[int, list[tuple[int, str, int, int]]]  # target section -> (offset, type, symbol index, addend)
    # (section, start) -> (symbol name, [(address, instruction)])
    functions: dict[tuple[str, int], tuple[str, list[tuple[int, str]]]]
    demangled: dict[str, str]  # raw name -> demangled name, of symbols and disassembled functions


def object_from_text(elf: str, disassembly: str, demangle: Callable[[list[str]], dict[str, str]]) -> Object:
    """An object as `readelf -W --section-headers --relocs --syms` and `objdump -d -w
    --no-show-raw-insn` print it; `demangle` maps raw names to demangled ones."""
    sections = parse_sections(elf)
    symbols = parse_symbols(elf)
    relocations = parse_relocations(elf, sections)
    functions = parse_disassembly(disassembly)
    names = demangle([s.name for s in symbols if s.name] + [f[0] for f in functions.values()])
    for symbol in symbols:
        symbol.demangled = names.get(symbol.name, symbol.name)
    return Object(symbols, sections, relocations, functions, names)


def parse_sections(text: str) -> dict[int, tuple[str, str, int, int, str]]:
    """The section headers of `readelf -S -W` output."""
    sections = {}
    for line in text.splitlines():
        match = re.match(r"^\s*\[\s*(\d+)\]\s+(\S+)\s+(\S+)\s+[0-9a-f]+\s+[0-9a-f]+\s+([0-9a-f]+)\s+[0-9a-f]+"
                         r"\s+([A-Za-z]*)\s+(\d+)\s+(\d+)\s+(\d+)\s*$", line)
        if match:
            index, name, kind, size, flags, _, info, _ = match.groups()
            sections[int(index)] = (name, kind, int(size, 16), int(info), flags)
    return sections


_SYMBOL = re.compile(r"^\s*(\d+):\s+([0-9a-fA-F]+)\s+(0x[0-9a-fA-F]+|\d+)\s+(\S+)\s+(\S+)\s+(\S+)"
                     r"(?:\s+\[[^\]]*\])*\s+(\S+)(?: (.*))?$")


def parse_symbols(text: str) -> list[Symbol]:
    """The .symtab entries of `readelf -s -W` output."""
    symbols = []
    in_symtab = False
    for line in text.splitlines():
        if line.startswith("Symbol table"):
            in_symtab = ".symtab" in line
            continue
        if line[:1].isalpha():  # the next table of readelf's output
            in_symtab = False
        match = _SYMBOL.match(line) if in_symtab else None
        if match:
            num, value, size, kind, bind, _, ndx, name = match.groups()
            size_value = int(size, 16) if size.startswith("0x") else int(size)
            symbols.append(Symbol(int(num), int(value, 16), size_value, kind, bind, ndx, name or ""))
    return symbols


_RELOCATION = re.compile(r"^([0-9a-f]+)\s+([0-9a-f]+)\s+(\S+)(?:\s+[0-9a-f]+\s+.*?)?(?:\s+([+-])\s*([0-9a-f]+))?\s*$")


def parse_relocations(text: str, sections: dict[int, tuple[str, str, int, int, str]]
                      ) -> dict[int, list[tuple[int, str, int, int]]]:
    """The relocations of `readelf -r -W` output, by the section they apply to."""
    by_name = {info[0]: index for index, info in sections.items()}
    relocations: dict[int, list[tuple[int, str, int, int]]] = {}
    target = None
    for line in text.splitlines():
        header = re.match(r"^Relocation section '([^']*)'", line)
        if header:
            rela = by_name.get(header.group(1))
            target = sections[rela][3] if rela is not None else None
            continue
        if line[:1].isalpha():  # the next table of readelf's output
            target = None
        match = _RELOCATION.match(line)
        if match and target is not None:
            offset, info, kind, sign, addend = match.groups()
            value = int(addend, 16) if addend else 0
            relocations.setdefault(target, []).append(
                (int(offset, 16), kind, int(info, 16) >> 32, -value if sign == "-" else value))
    return relocations


def parse_disassembly(text: str) -> dict[tuple[str, int], tuple[str, list[tuple[int, str]]]]:
    """The functions of `objdump -d -w` output, each with its instructions."""
    functions: dict[tuple[str, int], tuple[str, list[tuple[int, str]]]] = {}
    section = ""
    current: list[tuple[int, str]] | None = None
    for line in text.splitlines():
        if line.startswith("Disassembly of section "):
            section = line[len("Disassembly of section "):].rstrip(":")
            continue
        head = re.match(r"^([0-9a-f]+) <(.*)>:$", line)
        if head:
            current = []
            functions[(section, int(head.group(1), 16))] = (head.group(2), current)
            continue
        insn = re.match(r"^\s*([0-9a-f]+):\s+(.*)$", line)
        if insn and current is not None:
            current.append((int(insn.group(1), 16), insn.group(2).strip()))
    return functions


def demangle_batches(names: list[str]) -> list[list[str]]:
    """The mangled names among `names`, once each, in batches that fit one c++filt command
    line (under 100,000 characters and 2,000 names; a longer name alone)."""
    wanted = [n for n in dict.fromkeys(names) if n.startswith("_Z") and "\n" not in n]
    batches: list[list[str]] = []
    batch: list[str] = []
    size = 0
    for name in wanted:
        if batch and (size + len(name) >= 100_000 or len(batch) >= 2000):
            batches.append(batch)
            batch, size = [], 0
        batch.append(name)
        size += len(name) + 1
    if batch:
        batches.append(batch)
    return batches


def parse_demangled(batch: list[str], text: str) -> dict[str, str]:
    """Raw name -> demangled name, from what `c++filt -- <batch>` printed (one line each);
    nothing when it printed fewer lines than it was given names."""
    lines = text.split("\n")
    return dict(zip(batch, lines)) if len(lines) >= len(batch) else {}


@dataclass
class Code:
    """Lookups over an object's code: what covers an address, what a relocation refers to, a
    function's instructions with their relocations (loadtime follows the compiler's
    initialisation with them, steps the kernels each registered variant launches)."""

    obj: Object
    by_index: dict[int, Symbol]
    section_index: dict[str, int]
    # section index -> sorted [(start, symbol)] of functions and objects defined there
    defined: dict[int, list[tuple[int, Symbol]]]
    relocations: dict[int, list[tuple[int, str, int, int]]]  # section index -> sorted by offset

    @classmethod
    def of(cls, obj: Object) -> "Code":
        """The lookups of `obj`."""
        defined: dict[int, list[tuple[int, Symbol]]] = {}
        for symbol in obj.symbols:
            if symbol.type in ("FUNC", "OBJECT", "TLS", *IFUNC_TYPES) and symbol.section.isdigit() and symbol.name:
                defined.setdefault(int(symbol.section), []).append((symbol.value, symbol))
        for entries in defined.values():
            entries.sort(key=lambda e: (e[0], e[1].bind == "LOCAL"))
        return cls(obj, {s.index: s for s in obj.symbols}, {i[0]: n for n, i in obj.sections.items()}, defined,
                   {n: sorted(e) for n, e in obj.relocations.items()})

    def at(self, section: int, address: int) -> Symbol | None:
        """The function or object of `section` that covers `address`."""
        best = None
        for start, symbol in self.defined.get(section, []):
            if start <= address < start + max(symbol.size, 1):
                if best is None or (best.bind == "LOCAL" and symbol.bind != "LOCAL"):
                    best = symbol
        return best

    def target(self, kind: str, index: int, addend: int) -> Symbol | None:
        """What one relocation refers to: its symbol, or the function or object of a section symbol."""
        symbol = self.by_index.get(index)
        if symbol is None or symbol.type != "SECTION":
            return symbol
        if not symbol.section.isdigit():
            return None
        pc = 4 if ("PC" in kind or "PLT" in kind or "GOTPCREL" in kind) else 0
        return self.at(int(symbol.section), symbol.value + addend + pc)

    def body(self, function: Symbol) -> list[tuple[int, str, list[tuple[int, str, int, int]]]]:
        """`function`'s instructions, each with the relocations that apply inside it."""
        if not function.section.isdigit():
            return []
        section = int(function.section)
        name = self.obj.sections.get(section, ("",))[0]
        insns = self.obj.functions.get((name, function.value), ("", []))[1]
        relocations = self.relocations.get(section, [])
        offsets = [r[0] for r in relocations]
        out = []
        for n, (address, insn) in enumerate(insns):
            end = insns[n + 1][0] if n + 1 < len(insns) else address + 16
            low, high = bisect.bisect_left(offsets, address), bisect.bisect_left(offsets, end)
            out.append((address, insn, relocations[low:high]))
        return out


def reference_origins(obj: Object) -> dict[int, list[Symbol | None]]:
    """For each symbol index, the functions whose code refers to it (None: data refers to it)."""
    ranges: dict[int, list[Symbol]] = {}
    for symbol in obj.symbols:
        if symbol.type in ("FUNC", "GNU_IFUNC") and symbol.section.isdigit() and symbol.size:
            ranges.setdefault(int(symbol.section), []).append(symbol)
    names = {i: info[0] for i, info in obj.sections.items()}
    origins: dict[int, list[Symbol | None]] = {}
    for target, entries in obj.relocations.items():
        if names.get(target, "").startswith((".eh_frame", ".debug")):
            continue
        functions = ranges.get(target, [])
        for offset, _, index, _ in entries:
            holder = next((f for f in functions if f.value <= offset < f.value + f.size), None)
            origins.setdefault(index, []).append(holder)
    return origins
