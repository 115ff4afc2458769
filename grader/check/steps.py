"""Steps are distinct work: which kernels each registered variant launches, read from the
compiled object (grader/CONTRACT.md, "Steps are distinct work").

A lab's lecture steps (variants.py) each earn a point; a file that registers one kernel
under every step's name must not earn them all. This module reads, from the object the
grader compiled of the student's file:

1. the registrations: LAB_REGISTER_VARIANT leaves a record in the section
   ".labkit_variants" (lab/variants.h): the interface function's name, the variant's name,
   and a relocation to the registered host function;
2. the kernels each registered function launches: its host code is followed (calls,
   addresses taken, and the data its code refers to, such as a table of kernels) through
   the file's own functions to nvcc's host stubs of `__global__` functions;
3. each kernel's work: the machine code (SASS) of the device ELF embedded in the object
   (`.nv_fatbin`), hashed with every relocated instruction blanked out and the code of the
   device functions it calls folded in. Two kernels with the same code are the same work,
   whatever their names: a renamed copy, a template instantiated twice with a parameter
   that changes nothing, two wrapper kernels around one inlined body.

variants.grade then gives a step its point only when it launches a kernel that no earlier
step launches (the steps in the manifest's order), and notes kernels that are near copies
of an earlier step's (most instructions the same) for the instructor.

Everything here reads bytes and recorded text; nothing runs the student's code.
"""

from __future__ import annotations

import difflib
import hashlib
import re
import struct
from dataclasses import dataclass, field
from typing import Any

SECTION = ".labkit_variants"
FATBIN_SECTION = ".nv_fatbin"
FATBIN_MAGIC = 0xBA55ED50
FATBIN_ELF = 2  # an entry of machine code (a cubin); 1 is PTX
FATBIN_COMPRESSED = 0x2000  # the entry's flags: its payload is compressed
STO_CUDA_ENTRY = 0x10  # st_other of a `__global__` function in a cubin
INSTRUCTION = 16  # bytes per SASS instruction (sm_70 and newer)
# Kernels whose instructions are at least this similar (difflib's ratio over the
# instructions' opcode-and-operand half, scheduling bits left out) are noted as near
# copies for the instructor; only identical code costs a point. The solutions' steps are
# at most 0.53 alike; a copy of vectorAdd's kernel with one dummy branch added is 0.72.
NEAR = 0.7
MAX_COMPARED = 1024  # instructions per kernel compared for near copies (the ratio is quadratic)
MAX_PAIRS = 400  # kernel pairs compared for near copies, at most (a file of many variants)


class StepsError(Exception):
    """The object cannot be read for steps; the message says why."""


# ---------------------------------------------------------------------------------------
# ELF, just what is needed: sections, symbols, relocations (64-bit little-endian: x86-64
# host objects and CUDA cubins alike)


@dataclass
class ElfSymbol:
    index: int
    name: str
    value: int
    size: int
    type: int  # 0 NOTYPE, 1 OBJECT, 2 FUNC, 3 SECTION
    other: int
    section: int


@dataclass
class ElfSection:
    index: int
    name: str
    type: int
    offset: int
    size: int
    link: int
    info: int


@dataclass
class Elf:
    data: bytes
    sections: list[ElfSection]
    symbols: list[ElfSymbol]
    # section index -> [(offset, symbol index, addend)] that apply to it
    relocations: dict[int, list[tuple[int, int, int]]]

    def section(self, name: str) -> ElfSection | None:
        return next((s for s in self.sections if s.name == name), None)

    def bytes_of(self, section: ElfSection) -> bytes:
        return self.data[section.offset:section.offset + section.size] if section.type != 8 else b""


def read_elf(data: bytes) -> Elf:
    """The sections, .symtab and relocations of a 64-bit little-endian ELF; StepsError if it is not one."""
    if len(data) < 64 or data[:4] != b"\x7fELF" or data[4] != 2 or data[5] != 1:
        raise StepsError("not a 64-bit little-endian ELF file")
    shoff, = struct.unpack_from("<Q", data, 0x28)
    shentsize, shnum, shstrndx = struct.unpack_from("<HHH", data, 0x3A)
    if shentsize < 64 or shoff + shnum * shentsize > len(data) or shstrndx >= max(shnum, 1):
        raise StepsError("its section headers lie outside the file")
    raw = []
    for i in range(shnum):
        name, kind, _, _, offset, size, link, info, _, entsize = struct.unpack_from(
            "<IIQQQQIIQQ", data, shoff + i * shentsize)
        if kind != 8 and offset + size > len(data):
            raise StepsError(f"section {i} lies outside the file")
        raw.append((name, kind, offset, size, link, info, entsize))
    names = raw[shstrndx]
    strings = data[names[2]:names[2] + names[3]]
    sections = [ElfSection(i, _cstring(strings, r[0]), r[1], r[2], r[3], r[4], r[5]) for i, r in enumerate(raw)]
    symbols: list[ElfSymbol] = []
    symtab = next((s for s in sections if s.type == 2), None)  # SHT_SYMTAB
    if symtab is not None and symtab.link < len(sections):
        table = data[sections[symtab.link].offset:sections[symtab.link].offset + sections[symtab.link].size]
        for n in range(symtab.size // 24):
            name, info, other, shndx, value, size = struct.unpack_from("<IBBHQQ", data, symtab.offset + 24 * n)
            symbols.append(ElfSymbol(n, _cstring(table, name), value, size, info & 0xF, other, shndx))
    relocations: dict[int, list[tuple[int, int, int]]] = {}
    for s in sections:
        if s.type not in (4, 9):  # SHT_RELA, SHT_REL
            continue
        width = 24 if s.type == 4 else 16
        for n in range(s.size // width):
            offset, info = struct.unpack_from("<QQ", data, s.offset + width * n)
            addend = struct.unpack_from("<q", data, s.offset + width * n + 16)[0] if s.type == 4 else 0
            relocations.setdefault(s.info, []).append((offset, info >> 32, addend))
    return Elf(data, sections, symbols, relocations)


def _cstring(table: bytes, offset: int) -> str:
    end = table.find(b"\0", offset)
    return table[offset:end if end >= 0 else len(table)].decode("utf-8", "replace")


# ---------------------------------------------------------------------------------------
# Device code


@dataclass
class DeviceFunction:
    name: str
    entry: bool  # a kernel (__global__), else a device function
    words: list[bytes]  # its instructions, relocated ones blanked
    callees: list[str]  # functions its relocations refer to
    fingerprint: str = ""


def cubins(host: Elf) -> list[tuple[str, bytes]]:
    """(sm_XY, cubin) of every uncompressed machine-code entry of the object's fat binary."""
    section = host.section(FATBIN_SECTION)
    if section is None:
        return []
    data, out, at = host.bytes_of(section), [], 0
    while at + 16 <= len(data):
        magic, _, header, size = struct.unpack_from("<IHHQ", data, at)
        if magic != FATBIN_MAGIC:
            at += 8  # fat binaries are 8-byte aligned in the section
            continue
        entry, end = at + header, min(len(data), at + header + size)
        while entry + 0x40 <= end:
            kind, _, entry_header, payload = struct.unpack_from("<HHIQ", data, entry)
            arch, = struct.unpack_from("<I", data, entry + 0x1C)
            flags, = struct.unpack_from("<Q", data, entry + 0x28)
            if entry_header < 0x40 or payload <= 0:
                break
            body = data[entry + entry_header:entry + entry_header + payload]
            if kind == FATBIN_ELF and not flags & FATBIN_COMPRESSED and body[:4] == b"\x7fELF":
                out.append((f"sm_{arch}", body))
            entry += entry_header + payload
        at = max(end, at + 16)
        at += -at % 8
    return out


def device_functions(cubin: bytes) -> dict[str, DeviceFunction]:
    """The functions of a cubin by name, each with its fingerprint: a hash of its
    instructions (relocated ones blanked: they name other symbols) and of its callees'
    fingerprints, so that the name is no part of it."""
    elf = read_elf(cubin)
    found: dict[str, DeviceFunction] = {}
    by_index = {s.index: s for s in elf.symbols}
    for symbol in elf.symbols:
        if symbol.type != 2 or not symbol.name or symbol.section >= len(elf.sections):
            continue
        section = elf.sections[symbol.section]
        code = bytearray(elf.bytes_of(section)[symbol.value:symbol.value + (symbol.size or section.size)])
        callees = []
        for offset, index, _ in sorted(elf.relocations.get(section.index, [])):
            at = offset - symbol.value
            if 0 <= at < len(code):
                start = at - at % INSTRUCTION
                code[start:start + INSTRUCTION] = bytes(min(INSTRUCTION, len(code) - start))
                target = by_index.get(index)
                if target is not None and target.type == 2 and target.name != symbol.name:
                    callees.append(target.name)
        words = [bytes(code[i:i + INSTRUCTION]) for i in range(0, len(code), INSTRUCTION)]
        found[symbol.name] = DeviceFunction(symbol.name, bool(symbol.other & STO_CUDA_ENTRY), words, callees)
    for function in found.values():
        function.fingerprint = _fingerprint(function.name, found, set())
    return found


def _fingerprint(name: str, functions: dict[str, DeviceFunction], seen: set[str]) -> str:
    function = functions[name]
    if function.fingerprint:
        return function.fingerprint
    digest = hashlib.sha256(b"".join(function.words))
    seen = seen | {name}
    for callee in function.callees:
        # A recursive call (or a callee outside this cubin) adds only that there is one.
        digest.update(b"->" + (_fingerprint(callee, functions, seen).encode()
                               if callee in functions and callee not in seen else b"?"))
    return digest.hexdigest()[:16]


def similarity(a: DeviceFunction, b: DeviceFunction) -> float:
    """How much of two functions' code is the same instructions in the same order (0..1):
    each instruction's first 8 bytes (opcode and operands; the other 8 hold scheduling
    bits, which change with the neighbours)."""
    return difflib.SequenceMatcher(None, [w[:8] for w in a.words[:MAX_COMPARED]],
                                   [w[:8] for w in b.words[:MAX_COMPARED]], autojunk=False).ratio()


# ---------------------------------------------------------------------------------------
# Host code: registrations and what each registered function launches


@dataclass
class Registration:
    """One LAB_REGISTER_VARIANT of the file and the kernels its function launches."""

    function: str  # the interface function, e.g. "reduce_sum"
    name: str  # the variant, e.g. "interleaved"
    symbol: str  # the registered host function (raw name)
    shown: str = ""  # the same, demangled
    kernels: list[str] = field(default_factory=list)  # raw names of the kernels it launches
    # arch -> fingerprints of those kernels' code
    work: dict[str, list[str]] = field(default_factory=dict)


@dataclass
class Analysis:
    """The steps read from one object; `ok` False (with `message`) when they could not be."""

    ok: bool = True
    message: str = ""
    registrations: list[Registration] = field(default_factory=list)
    kernels: dict[str, str] = field(default_factory=dict)  # raw kernel name -> demangled
    # (variant, earlier variant) of one function -> (similarity, kernel, earlier kernel)
    near: list[dict[str, Any]] = field(default_factory=list)

    def as_dict(self) -> dict[str, Any]:
        return {"ok": self.ok, "message": self.message,
                "variants": [{"function": r.function, "name": r.name, "symbol": r.shown or r.symbol,
                              "kernels": [self.kernels.get(k, k) for k in r.kernels], "work": r.work}
                             for r in self.registrations],
                "near": self.near}


def records(host: Elf) -> list[tuple[str, str, int, int]]:
    """(function, variant, symbol index, addend) of each record of LAB_REGISTER_VARIANT in
    the object: a record is the two names, NUL-terminated, then the relocated address."""
    section = host.section(SECTION)
    if section is None:
        return []
    data = host.bytes_of(section)
    out, start = [], 0
    for offset, index, addend in sorted(host.relocations.get(section.index, [])):
        names = [n for n in data[start:offset].split(b"\0") if n]
        start = offset + 8
        if len(names) == 2:
            out.append((names[0].decode("utf-8", "replace"), names[1].decode("utf-8", "replace"), index, addend))
    return out


def analyse(host_bytes: bytes, code: Any) -> Analysis:
    """The registrations of the object `host_bytes` and the kernels each one launches.

    `code` is elf.Code over the same object (its symbols, disassembly and relocations,
    to follow the host code). Never raises on a malformed object: `ok` False says why."""
    try:
        return _analyse(host_bytes, code)
    except (StepsError, struct.error, IndexError, ValueError, RecursionError) as exc:
        return Analysis(False, f"the compiled object cannot be read for its steps: {exc}")


def _analyse(host_bytes: bytes, code: Any) -> Analysis:
    try:
        host = read_elf(host_bytes)
    except StepsError as exc:
        return Analysis(False, f"the compiled object cannot be read: {exc}")
    found = records(host)
    if not found:
        return Analysis(True, "no LAB_REGISTER_VARIANT in the file")
    devices: dict[str, dict[str, DeviceFunction]] = {}
    for arch, cubin in cubins(host):
        try:
            devices[arch] = device_functions(cubin)
        except StepsError:
            continue
    if not devices:
        return Analysis(False, "the object holds no machine code the grader can read (PTX only, or compressed)")
    kernel_names = {name for functions in devices.values() for name, f in functions.items() if f.entry}
    by_stub = {stub_name(k): k for k in kernel_names}
    result = Analysis(kernels={k: k for k in kernel_names})
    for symbol in code.by_index.values():  # the device names, as the host stubs' demangle
        kernel = by_stub.get(stub_name(symbol.name))
        if kernel is not None and symbol.demangled and symbol.demangled != symbol.name:
            result.kernels[kernel] = short_name(symbol.demangled)
    for function, name, index, addend in found:
        target = code.target("R_X86_64_64", index, addend)
        if target is None:
            continue
        launched = launched_kernels(code, target, by_stub)
        work = {arch: sorted({functions[k].fingerprint for k in launched if k in functions})
                for arch, functions in devices.items()}
        result.registrations.append(Registration(function, name, target.name,
                                                 short_name(target.demangled or target.name), launched, work))
    result.near = near_copies(result.registrations, devices, result.kernels)
    return result


def short_name(demangled: str) -> str:
    """A function's name for a report: no `(anonymous namespace)::`, no parameter list."""
    name = demangled.replace("(anonymous namespace)::", "")
    depth = 0
    for i in range(len(name) - 1, -1, -1):  # the parameter list is the last (...) group
        depth += {")": 1, "(": -1}.get(name[i], 0)
        if depth == 0 and name[i] == "(":
            return name[:i] if i > 0 else name
    return name


def stub_name(name: str) -> str:
    """A kernel's name as its host stub and its device code can both be matched by: the
    host compiler marks an internal-linkage name with `L` (`...L18interleaved_kernel...`),
    the device compiler does not."""
    return re.sub(r"(?<=[A-Za-z0-9_])L(?=[1-9])", "", name.split(".", 1)[0])


def launched_kernels(code: Any, start: Any, kernels: dict[str, str]) -> list[str]:
    """The kernels (device names, by the stub_name of nvcc's host stubs) that host function `start` reaches:
    through calls, jumps and addresses its code takes, and the data it refers to, across
    every function and data object the object defines; a kernel's stub ends the path."""
    seen, todo, found = {start.index}, [start], []
    while todo:
        symbol = todo.pop()
        for target in _references(code, symbol):
            if target is None or target.index in seen:
                continue
            seen.add(target.index)
            kernel = kernels.get(stub_name(target.name))
            if kernel is not None:
                if kernel not in found:
                    found.append(kernel)
            elif target.defined and target.type in ("FUNC", "OBJECT"):
                todo.append(target)
    return found


def _references(code: Any, symbol: Any) -> list[Any]:
    """What the code or data of `symbol` refers to: relocated symbols, and direct branches
    and RIP-relative addresses inside its own section (objdump shows them as `<name>`)."""
    if not symbol.section.isdigit():
        return []
    section = int(symbol.section)
    out = []
    if symbol.type == "OBJECT":
        end = symbol.value + max(symbol.size, 1)
        for offset, kind, index, addend in code.relocations.get(section, []):
            if symbol.value <= offset < end:
                out.append(code.target(kind, index, addend))
        return out
    for address, insn, relocations in code.body(symbol):
        for _, kind, index, addend in relocations:
            out.append(code.target(kind, index, addend))
        if not relocations:
            direct = _direct_address(insn)
            if direct is not None:
                out.append(code.at(section, direct))
    return out


def _direct_address(insn: str) -> int | None:
    """The address a branch or a RIP-relative operand names when the assembler resolved it
    (no relocation): `call 6f0 <name>`, `lea -0x12(%rip),%rdi  # 6f0 <name>`."""
    head = insn.split(None, 1)
    if len(head) == 2 and head[0].startswith(("call", "jmp", "j")) and "<" in head[1]:
        value = head[1].split("<", 1)[0].strip().split()[-1:]
        try:
            return int(value[0], 16) if value else None
        except ValueError:
            return None
    if "(%rip)" in insn and "#" in insn:
        value = insn.rsplit("#", 1)[1].strip().split(" ", 1)[0]
        try:
            return int(value, 16)
        except ValueError:
            return None
    return None


def near_copies(registrations: list[Registration], devices: dict[str, dict[str, DeviceFunction]],
                shown: dict[str, str]) -> list[dict[str, Any]]:
    """Pairs of registrations of one interface function whose kernels differ but are near
    copies (at least NEAR of the instructions the same), each pair once: for the
    instructor to look at."""
    out, compared = [], 0
    arch = max(devices, key=lambda a: int(a[3:]) if a[3:].isdigit() else 0)
    functions = devices[arch]
    for i, later in enumerate(registrations):
        for earlier in registrations[:i]:
            if earlier.function != later.function:
                continue
            best = None
            for k in later.kernels:
                for e in earlier.kernels:
                    a, b = functions.get(k), functions.get(e)
                    if a is None or b is None or a.fingerprint == b.fingerprint or compared >= MAX_PAIRS:
                        continue
                    compared += 1
                    ratio = similarity(a, b)
                    if ratio >= NEAR and (best is None or ratio > best[0]):
                        best = (ratio, k, e)
            if best is not None:
                out.append({"function": later.function, "variant": later.name, "other": earlier.name,
                            "similarity": round(best[0], 3), "kernel": shown.get(best[1], best[1]),
                            "other_kernel": shown.get(best[2], best[2])})
    return out
