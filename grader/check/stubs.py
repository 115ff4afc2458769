"""nvcc's host bodies of `__device__` functions (`{ int volatile ___ = 1; ::exit(___); }`):
the one place an object may call exit, read from their instructions."""

from __future__ import annotations

import bisect
import re

from grader.check.elf import Object

_STUB_SETUP = re.compile(r"^(?:endbr64|push\s+%rbp|mov\s+%rsp,%rbp|sub\s+\$0x[0-9a-f]+,%rsp|mov\s+%eax,%edi)$")
_STUB_STORE = re.compile(r"^movl\s+\$0x1,((?:-?0x[0-9a-f]+)?\(%r[sb]p\))$")
_STUB_LOAD = re.compile(r"^mov\s+((?:-?0x[0-9a-f]+)?\(%r[sb]p\)),%e(?:di|ax)$")
_STUB_SPILL = re.compile(r"^mov[a-z]*\s+%[a-z0-9]+,((?:-?0x[0-9a-f]+)?\(%r[sb]p\))$")  # -O0 saves the arguments
_PADDING = re.compile(r"^(?:nop|xchg\s+%ax,%ax|data16|cs nopw|int3|ud2|hlt|\(bad\))")


def is_exit_stub_shape(insns: list[str]) -> bool:
    """Whether a function is `{ int volatile ___ = 1; ::exit(___); }`: 1 stored, loaded from
    the same slot into the argument register, one call, nothing else."""
    body = _drop_push_pop_pairs([i for i in insns if not _PADDING.match(i)])
    if len(body) < 3 or not body[-1].startswith("call"):
        return False
    stores = [m.group(1) for m in map(_STUB_STORE.match, body) if m]
    loads = [m.group(1) for m in map(_STUB_LOAD.match, body) if m]
    spills = [m.group(1) for m in map(_STUB_SPILL.match, body) if m and not _STUB_LOAD.match(m.group(0))]
    others = [i for i in body[:-1]
              if not (_STUB_SETUP.match(i) or _STUB_STORE.match(i) or _STUB_LOAD.match(i) or _STUB_SPILL.match(i))]
    return len(stores) == 1 and loads == stores and not others and stores[0] not in spills


def _drop_push_pop_pairs(insns: list[str]) -> list[str]:
    """Without `push %reg` right followed by `pop %reg` of the same register: a no-op that
    some compilers emit at a function's start (GCC 13 on Ubuntu: `push %rax; pop %rax`)."""
    out: list[str] = []
    for insn in insns:
        pushed = re.match(r"^push\s+(%r[a-z0-9]+)$", out[-1]) if out else None
        if pushed and re.fullmatch(rf"pop\s+{re.escape(pushed.group(1))}", insn):
            out.pop()
            continue
        out.append(insn)
    return out


def exit_stubs(obj: Object) -> dict[str, list[tuple[int, int]]]:
    """Host bodies nvcc writes for __device__ functions: `{ int volatile ___ = 1; ::exit(___); }`.

    Returns {section name: [(start, end)]} of functions with exactly that shape that
    nothing in the object refers to. A look-alike of the student's own could only call
    exit(1), which the tests report as a crash, so this lets nothing through."""
    sizes = {(obj.sections.get(int(s.section), ("",))[0], s.value): s for s in obj.symbols
             if s.type == "FUNC" and s.section.isdigit()}
    referenced = _referenced(obj)
    stubs: dict[str, list[tuple[int, int]]] = {}
    for (section, start), (_, insns) in obj.functions.items():
        symbol = sizes.get((section, start))
        if symbol is None or not is_exit_stub_shape([text for _, text in insns]):
            continue
        end = start + max(symbol.size, 1)
        own = referenced.get(f"{section}@{start:x}", set())
        others = [a for a in referenced.get(section, ()) if a not in own or not start <= a < end]
        if any(start <= address < end for address in others) or symbol.index in referenced["#"]:
            continue
        stubs.setdefault(section, []).append((start, end))
    return stubs


def _referenced(obj: Object) -> dict[str, set[int]]:
    """Addresses code or data refer to, by section name; "#" holds symbol indexes referred to."""
    names = {index: info[0] for index, info in obj.sections.items()}
    by_index = {s.index: s for s in obj.symbols}
    refs: dict[str, set[int]] = {"#": set()}
    for target, entries in obj.relocations.items():
        if names.get(target, "").startswith((".eh_frame", ".debug", ".nv_fatbin", ".gcc_except_table")):
            continue
        for _, kind, index, addend in entries:
            symbol = by_index.get(index)
            if symbol is None:
                continue
            if symbol.type == "SECTION" and symbol.section.isdigit():
                pc = 4 if ("PC" in kind or "PLT" in kind) else 0
                refs.setdefault(names.get(int(symbol.section), ""), set()).add(symbol.value + addend + pc)
            else:
                refs["#"].add(index)
    relocated = {names.get(target, ""): sorted(e[0] for e in entries) for target, entries in obj.relocations.items()}
    for (section, start), (_, insns) in obj.functions.items():
        offsets = relocated.get(section, [])
        for n, (address, insn) in enumerate(insns):
            # A direct branch within the section has no relocation; one with a relocation goes
            # elsewhere (objdump shows the next address as its target), so it does not count.
            match = re.match(r"^(?:call|jmp|j[a-z]+)\s+([0-9a-f]+)\s+<", insn)
            end = insns[n + 1][0] if n + 1 < len(insns) else address + 16
            if match and not _any_between(offsets, address, end):
                refs.setdefault(section, set()).add(int(match.group(1), 16))
                refs.setdefault(f"{section}@{start:x}", set()).add(int(match.group(1), 16))
    return refs


def _any_between(sorted_values: list[int], low: int, high: int) -> bool:
    """Whether a value of the sorted list lies in [low, high)."""
    i = bisect.bisect_left(sorted_values, low)
    return i < len(sorted_values) and sorted_values[i] < high


def only_from_stubs(obj: Object, index: int, stubs: dict[str, list[tuple[int, int]]]) -> bool:
    """Whether every reference to symbol `index` lies inside one of nvcc's exit stubs."""
    names = {i: info[0] for i, info in obj.sections.items()}
    found = False
    for target, entries in obj.relocations.items():
        section = names.get(target, "")
        for offset, _, symbol_index, _ in entries:
            if symbol_index != index:
                continue
            found = True
            if section.startswith((".eh_frame", ".debug")):
                continue
            if not any(start <= offset < end for start, end in stubs.get(section, ())):
                return False
    return found
