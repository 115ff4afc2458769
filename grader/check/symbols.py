"""2. Symbols: what the compiled object uses (undefined symbols against the allowlist) and
defines (what would replace the runtime, the kit or the C++ library at link time), and
device code registered by hand."""

from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

from grader import rules
from grader.check.elf import Object, Symbol, reference_origins
from grader.check.findings import Source, forbidden, listing, short
from grader.check.names import entity_of, library_code, library_of, matches, qualified_name, search_names, source_line
from grader.check.policy import (C_ALLOWED, CUDA_RUNTIME_ALLOWED, CXX_RUNTIME_ALLOWED, KIT_CODE_WHY, LIBC_DATA,
                                 LIBRARY_GROUP, LIBRARY_ORDER, LIBRARY_WHY, NVCC_CALLBACK, NVCC_DEFINED,
                                 NVCC_HELPERS, NVCC_REGISTRARS, REGISTRATION_HELPERS, STD_ALLOWED, STD_FORBIDDEN,
                                 SYMBOL_FAMILIES)
from grader.check.stubs import exit_stubs, only_from_stubs

_KEYWORDS = frozenset("if for while switch return sizeof alignof decltype static_assert noexcept throw catch "
                      "operator defined __attribute__ __declspec alignas".split())


def _why_forbidden(raw: str, entity: str) -> tuple[str, str]:
    """(family name, reason) for a symbol that is not allowed."""
    qualified = qualified_name(entity)
    for patterns, reason in SYMBOL_FAMILIES:
        if matches(raw, patterns) or matches(qualified, patterns):
            why = rules.BUILTIN_RULES[reason][1] if reason in rules.BUILTIN_RULES else reason
            return reason, why
    return raw, ("not among the calls a lab may make: use the CUDA runtime calls of the handout, the kit's lab:: "
                 "helpers and the C++ standard library")


def _kit_test_code(entity: str, ctx: "ObjectContext") -> str:
    """'kit-cpu' when an undefined symbol is one of the lab header's sequential versions
    (reduce_sum_cpu, matmul_cpu_with_magnitude: the tests' answer key), 'kit-helper' when it
    is another out-of-line function of the header that is not the interface
    (reduce_sum_error_bound, sobel_test_image: they live beside the sequential versions, so
    calling one links them all in, where a function pointer and a fixed offset reach
    them), else ''. The header's inline helpers (compact_keep, the tolerances) compile
    into the file and are never undefined symbols."""
    qualified = qualified_name(entity)
    if qualified not in ctx.kit_functions or qualified in ctx.interface:
        return ""
    return "kit-cpu" if re.search(r"_cpu(?:_|$)", qualified) else "kit-helper"


def _undefined_allowed(raw: str, entity: str, kit_functions: set[str], own: set[str]) -> bool:
    """Whether an undefined symbol is on the allowlist."""
    if raw in own or matches(raw, CUDA_RUNTIME_ALLOWED + NVCC_HELPERS + CXX_RUNTIME_ALLOWED + C_ALLOWED):
        return True
    qualified = qualified_name(entity)
    if qualified.startswith("lab::") or qualified in kit_functions:
        return True
    if matches(qualified, STD_ALLOWED):
        return not any(matches(qualified, patterns) for _, patterns in STD_FORBIDDEN)
    return False


def header_functions(header: Path) -> set[str]:
    """Names of the functions a lab header declares at its top level (e.g. vector_add, vector_add_cpu)."""
    try:
        text = rules.blank_comments(header.read_text(encoding="utf-8", errors="replace"))
    except OSError:
        return set()
    names = set()
    for line in text.splitlines():
        if line[:1].isalpha() or line[:1] == "_":
            match = re.search(r"\b([A-Za-z_]\w*)\s*\(", line)
            if match and match.group(1) not in _KEYWORDS:
                names.add(match.group(1))
    return names


def header_identifiers(paths: list[str]) -> set[str]:
    """Every identifier spelled in the kit headers the file included."""
    words: set[str] = set()
    for path in paths:
        try:
            words.update(re.findall(r"[A-Za-z_]\w*", Path(path).read_text(encoding="utf-8", errors="replace")))
        except OSError:
            continue
    return words


@dataclass
class ObjectContext:
    """What the symbol checks of one object need to know about the lab and the student's files."""

    source: Source
    lab: str
    kit_functions: set[str]  # functions the lab header declares
    interface: set[str]  # the lab's interface functions (the student defines them)
    own_defined: set[str]  # raw names defined by any of the student's objects
    kit_identifiers: set[str]  # identifiers of the kit headers the file included
    allowed: tuple[str, ...]
    forbidden: tuple[str, ...]
    section_flags: dict[int, str] = field(default_factory=dict)
    # Built-in rules the lab's manifest lifts ("rules": {"allow"}): symbols of their family pass.
    allowed_rules: tuple[str, ...] = ()


def symbol_findings(obj: Object, ctx: ObjectContext) -> list[rules.Finding]:
    """Findings from the symbol table: what the object uses and what it defines."""
    check = _SymbolCheck(obj, ctx)
    for symbol in obj.symbols:
        if symbol.name and symbol.type not in ("SECTION", "FILE"):
            check.file(symbol)
    return check.report()


class _SymbolCheck:
    """The symbol check of one object: the findings so far, and the symbols gathered to be
    reported once per forbidden family and once per library."""

    def __init__(self, obj: Object, ctx: ObjectContext) -> None:
        self.obj = obj
        self.ctx = ctx
        self.text = ctx.source.text
        self.findings: list[rules.Finding] = []
        self.seen: set[tuple[str, str]] = set()
        self.stubs = exit_stubs(obj)
        self.origins = reference_origins(obj)
        self.uses_library = any(library_of(s.name, s.demangled) for s in obj.symbols
                                if s.name and s.type != "SECTION")
        self.libraries: dict[str, list[tuple[str, Symbol]]] = {}
        self.families: dict[str, tuple[str, list[Symbol]]] = {}  # forbidden family -> (why, its symbols)

    def add(self, rule: str, key: str, raw: str, entity: str, message: str) -> None:
        """Adds one finding per rule and key, at the first source line that names the symbol."""
        if (rule, key) in self.seen:
            return
        self.seen.add((rule, key))
        names = search_names(raw, entity)
        if rule == "cub":  # the library's own names first: cub::WarpReduce -> WarpReduce
            names = re.findall(r"(?:cub|thrust)::(?:(?:CUB|THRUST)_\w+::)?(?:detail::)?(\w+)", entity) + names
        line = source_line(self.text, names)
        self.findings.append(forbidden(self.ctx.source, rule, line, message, raw))

    def file(self, symbol: Symbol) -> None:
        """Files one entry of the symbol table: a finding now, a symbol of a family or a library
        for later, or nothing."""
        ctx = self.ctx
        raw, entity = symbol.name, entity_of(symbol.demangled)
        if matches(raw, ctx.forbidden) or matches(symbol.demangled, ctx.forbidden):
            self.add("symbol", f"manifest:{raw}", raw, entity,
                     f"uses `{short(symbol.demangled)}`, which this lab forbids (labs/{ctx.lab}/lab.json, \"symbols\")")
            return
        if matches(raw, ctx.allowed) or matches(symbol.demangled, ctx.allowed):
            return
        library = library_of(raw, symbol.demangled)  # local symbols too: a CUB kernel may be static
        if library is not None:
            self.libraries.setdefault(LIBRARY_GROUP.get(library, library), []).append((library, symbol))
            return
        if symbol.defined and not symbol.is_global:
            return  # local symbols do not interpose
        if symbol.defined:
            problem = _defines_problem(symbol, entity, ctx)
            if problem:
                self.add("defines", raw, raw, entity, problem)
            return
        self.file_undefined(symbol, raw, entity)

    def file_undefined(self, symbol: Symbol, raw: str, entity: str) -> None:
        """Files a symbol the object uses and does not define."""
        if raw == "exit" and only_from_stubs(self.obj, symbol.index, self.stubs):
            return  # nvcc's host bodies of __device__ functions call exit(1); nothing calls them
        callers = self.origins.get(symbol.index)
        if self.uses_library and callers and all(c is not None and library_code(c) for c in callers):
            return  # used only inside CUB, Thrust or NVTX code (and libcu++ under them): a finding of its own
        kit_code = _kit_test_code(entity, self.ctx)
        if kit_code and raw not in self.ctx.own_defined:
            self.families.setdefault(kit_code, (KIT_CODE_WHY[kit_code], []))[1].append(symbol)
            return
        if _undefined_allowed(raw, entity, self.ctx.kit_functions, self.ctx.own_defined):
            return
        family, why = _why_forbidden(raw, entity)
        if family in self.ctx.allowed_rules:
            return  # a family the lab's design allows (vectorAdd's streams part: "own_streams")
        self.families.setdefault(family, (why, []))[1].append(symbol)

    def report(self) -> list[rules.Finding]:
        """The findings filed, then one per forbidden family (`fopen` and `open`: one) and one per
        library (CUB pulls in Thrust and NVTX: one)."""
        for why, symbols in self.families.values():
            lines = [source_line(self.text, search_names(s.name, entity_of(s.demangled))) for s in symbols]
            first = min(range(len(symbols)), key=lambda i: (lines[i] is None, lines[i] or 0))
            names = [short(symbols[first].demangled)] + [short(s.demangled) for s in symbols if s is not symbols[first]]
            self.findings.append(forbidden(self.ctx.source, "symbol", lines[first], f"uses {listing(names)} ({why})",
                                           symbols[first].name))
        for group, hits in self.libraries.items():
            library, symbol = min(hits, key=lambda hit: LIBRARY_ORDER.index(hit[0]) if hit[0] in LIBRARY_ORDER else 99)
            self.add("cub", group, symbol.name, entity_of(symbol.demangled),
                     f"uses {library} (`{short(symbol.demangled)}`): {LIBRARY_WHY[library]}")
        return self.findings


def _defines_problem(symbol: Symbol, entity: str, ctx: ObjectContext) -> str | None:
    """Why defining `symbol` is not allowed (it would replace something at link time), or None."""
    raw = symbol.name
    weak = symbol.bind in ("WEAK", "UNIQUE")
    if matches(raw, NVCC_DEFINED):
        return None
    if symbol.type == "NOTYPE":
        return f"defines `{short(raw)}` in assembly: write functions in C++ and CUDA"
    if not raw.startswith("_Z"):  # C linkage, or a variable of the global namespace
        runtime_name = (raw in LIBC_DATA or raw.startswith("_") or re.match(r"^cu(?:da)?[A-Z_]", raw)
                        or matches(raw, CUDA_RUNTIME_ALLOWED + C_ALLOWED + CXX_RUNTIME_ALLOWED))
        if symbol.type in ("FUNC", "GNU_IFUNC") or runtime_name:
            what = "a CUDA runtime function" if re.match(r"^_*cu", raw) else "a C function or variable"
            return (f"defines `{raw}`, {what} with C linkage that would replace the real one at link time: "
                    "rename it, and give your helpers internal linkage (static or an anonymous namespace)")
        return None
    qualified = qualified_name(entity)
    if qualified.startswith("lab::"):
        # Allowed: an inline function or template instantiation of a kit header the file
        # included (weak, in a COMDAT group); not __attribute__((weak)) in a plain section.
        parts = [p.lstrip("~") for p in qualified.split("::")[1:] if p]
        comdat = symbol.section.isdigit() and "G" in ctx.section_flags.get(int(symbol.section), "")
        if not weak or not comdat or not parts or not all(p in ctx.kit_identifiers for p in parts):
            return (f"defines `{short(symbol.demangled)}` in the kit's namespace lab, which would replace the kit's "
                    "own code: use the kit's helpers as they are and put your code outside namespace lab")
        return None
    if qualified.startswith(("operator new", "operator delete")):
        return (f"defines `{short(symbol.demangled)}`, which replaces the C++ runtime's for the whole program: "
                "allocate device memory with cudaMalloc and host memory with std::vector")
    if not weak and re.match(r"^(?:std|__gnu_cxx|__cxxabiv1)::", qualified):
        return (f"defines `{short(symbol.demangled)}` of the C++ standard library, which would replace the real "
                "one at link time: rename it and keep it out of namespace std")
    if qualified in ctx.kit_functions and qualified not in ctx.interface and symbol.type in ("FUNC", "GNU_IFUNC"):
        return (f"defines `{short(symbol.demangled)}`, a function the kit provides (the tests use it): write only "
                f"{', '.join(sorted(ctx.interface))} and helpers of your own with other names")
    return None


def registration_findings(obj: Object, source: Source) -> list[rules.Finding]:
    """References to the runtime's registration helpers from anywhere but nvcc's own
    registration functions: the file registers device code it did not compile."""
    origins = reference_origins(obj)
    registrars = set(NVCC_REGISTRARS)
    sti = next((insns for name, insns in obj.functions.values() if name == NVCC_REGISTRARS[0]), [])
    if any(f"<{NVCC_CALLBACK}>" in insn for _, insn in sti):
        registrars.add(NVCC_CALLBACK)
    findings = []
    for symbol in obj.symbols:
        if symbol.defined or not matches(symbol.name, REGISTRATION_HELPERS):
            continue
        for holder in origins.get(symbol.index, []):
            if holder is not None and holder.bind == "LOCAL" and holder.type == "FUNC" and holder.name in registrars:
                continue
            where = f"in {short(holder.demangled or holder.name)}" if holder is not None else "from data"
            line = (source_line(source.text, search_names(holder.name, entity_of(holder.demangled or holder.name)))
                    if holder is not None else None)
            findings.append(forbidden(source, "symbol", line,
                                      f"calls {symbol.name} {where}: it registers device code with the CUDA "
                                      "runtime, which only the compiler's own registration of your file may do "
                                      "(code not compiled from your file, e.g. a reference's, would run as "
                                      "yours): launch only the kernels your file defines", symbol.name))
    return findings
