"""3. Load-time code and raw system calls: what runs before the tests start or after they
end (.init_array and its kin, IFUNC resolvers, thread_local constructors, the compiler's
C++ dynamic initialisation where it does more than the toolchain needs), and
instructions that enter the operating system directly."""

from __future__ import annotations

import re

from grader import rules
from grader.check.elf import Code, Object, Symbol
from grader.check.findings import Source, forbidden, listing, short
from grader.check.names import entity_of, matches, qualified_name, search_names, source_line, symbol_line
from grader.check.policy import (AT_EXIT, COMPILER_CONSTRUCTORS, CONSTRUCTOR_SECTIONS, FOREIGN_TABLES, IFUNC_TYPES,
                                 INIT_TYPES, INITIALISER_LIBRARY, INITIALISER_PARTS, INITIALISER_RUNTIME,
                                 LOAD_TIME_HINT, STD_FORBIDDEN, SYSCALL_INSN)


def constructor_findings(obj: Object, source: Source, own: set[str] | frozenset[str] = frozenset()
                         ) -> list[rules.Finding]:
    """Functions that run at load or unload time, other than the compiler's own; `own`: raw
    names the student's other files define."""
    findings = []
    by_index = {s.index: s for s in obj.symbols}
    functions = {}
    for symbol in obj.symbols:
        if symbol.type in ("FUNC", "GNU_IFUNC", "NOTYPE") and symbol.section.isdigit() and symbol.name:
            functions.setdefault((int(symbol.section), symbol.value), symbol)
    text = source.text
    for index, (name, kind, size, _, _) in sorted(obj.sections.items()):
        is_table = kind in INIT_TYPES or any(name == s or name.startswith(s + ".") for s in CONSTRUCTOR_SECTIONS)
        if name in (".init", ".fini") and size:
            findings.append(forbidden(source, "constructor", None,
                                      f"places code in the {name} section, which runs at load time: "
                                      "do the work inside the lab's functions", name))
            continue
        if not is_table:
            continue
        entries = obj.relocations.get(index, [])
        when = "unload" if any(t in name for t in ("fini", "dtors")) else "load"
        for _, _, symbol_index, addend in entries:
            symbol = by_index.get(symbol_index)
            target = None
            if symbol is not None and symbol.type == "SECTION" and symbol.section.isdigit():
                target = functions.get((int(symbol.section), addend))
            elif symbol is not None:
                target = symbol
            foreign = any(name == t or name.startswith(t + ".") for t in FOREIGN_TABLES) or kind == "PREINIT_ARRAY"
            if target is not None and matches(target.name, COMPILER_CONSTRUCTORS) and not foreign:
                if matches(target.name, INITIALISER_PARTS):
                    findings += initialiser_findings(obj, source, target, own)
                continue
            shown = short(target.demangled or target.name) if target is not None else None
            what = f"a {'destructor' if when == 'unload' else 'constructor'} function runs at {when} time"
            if shown and foreign:
                line = source_line(text, search_names(target.name, entity_of(target.demangled or target.name)))
                message = f"{what}: {shown}, from an entry of {name} (remove it; {LOAD_TIME_HINT})"
                if line is None and f'"{name}' in text:  # the section attribute that made the entry
                    line = text.count("\n", 0, text.index(f'"{name}')) + 1
            elif shown:
                line = source_line(text, search_names(target.name, entity_of(target.demangled or target.name)))
                message = (f"{what}: {shown} (remove __attribute__((constructor/destructor)); do the work inside "
                           "the lab's functions)")
            else:
                line = None
                message = f"{what}: an unnamed one (entry of {name}); do the work inside the lab's functions"
            findings.append(forbidden(source, "constructor", line, message, name))
        if size > 8 * len(entries):  # a slot without a relocation points to a fixed address
            findings.append(forbidden(source, "constructor", None,
                                      f"an entry of {name} points to a fixed address that runs at load time: "
                                      "do the work inside the lab's functions", name))
    return findings + _ifunc_findings(obj, source) + _tls_init_findings(obj, source)


def _ifunc_findings(obj: Object, source: Source) -> list[rules.Finding]:
    """IFUNC symbols and IRELATIVE relocations: the resolver runs while the program is loaded."""
    findings = []
    functions = {(s.section, s.value): s for s in obj.symbols
                 if s.type == "FUNC" and s.section.isdigit() and s.name}
    for symbol in obj.symbols:
        if symbol.type not in IFUNC_TYPES or not symbol.defined or not symbol.name:
            continue
        resolver = functions.get((symbol.section, symbol.value))
        shown = short(symbol.demangled or symbol.name)
        by = f" (its resolver `{short(resolver.demangled or resolver.name)}`)" if resolver is not None else ""
        line = symbol_line(source, symbol) or (symbol_line(source, resolver) if resolver is not None else None)
        findings.append(forbidden(source, "constructor", line,
                                  f"`{shown}` is an IFUNC{by}: the resolver runs at load time, while the program's "
                                  f"symbols are bound (remove __attribute__((ifunc)); {LOAD_TIME_HINT})",
                                  symbol.name))
    by_index = {s.index: s for s in obj.symbols}
    for entries in obj.relocations.values():
        for _, kind, index, _ in entries:
            if "IRELATIVE" not in kind:
                continue
            symbol = by_index.get(index)
            line = symbol_line(source, symbol) if symbol is not None and symbol.name else None
            findings.append(forbidden(source, "constructor", line,
                                      f"an {kind} relocation calls a resolver at load time: {LOAD_TIME_HINT}", kind))
            break
    return findings


def _tls_init_findings(obj: Object, source: Source) -> list[rules.Finding]:
    """TLS init functions (`_ZTH*`, `__tls_init`): a thread_local object with a constructor,
    which runs on a thread's first use of it, wherever that is."""
    findings = []
    defined = [s for s in obj.symbols if s.defined and s.type in ("FUNC", "NOTYPE") and s.name]
    wrappers = [s for s in defined if s.name.startswith("_ZTH")]
    init = next((s for s in defined if s.name == "__tls_init"), None)
    objects = [s for s in obj.symbols if s.type == "TLS" and s.defined and s.name and s.name != "__tls_guard"]
    named = []
    for wrapper in wrappers:
        variable = next((o for o in objects if o.name == "_Z" + wrapper.name[4:] or o.name == wrapper.name[4:]
                         or o.name == re.sub(r"^_ZTH(\d)", r"", wrapper.name)), None)
        named.append(variable or wrapper)
    if not named and init is not None:  # a static thread_local only: the objects its init function touches
        touched = {index for offset, _, index, _ in _relocations_in(obj, init)}
        named = [o for o in objects if o.index in touched] or [init]
    for symbol in named:
        shown = short(entity_of(symbol.demangled or symbol.name))
        findings.append(forbidden(source, "constructor", symbol_line(source, symbol),
                                  f"the thread_local object `{shown}` has a constructor, which runs outside the lab's "
                                  "functions (on a thread's first use of it): make it a plain value, or a local "
                                  "variable of the lab's function", symbol.name))
    return findings


def _relocations_in(obj: Object, function: Symbol) -> list[tuple[int, str, int, int]]:
    """The relocations that apply inside `function`'s code."""
    if not function.section.isdigit():
        return []
    end = function.value + max(function.size, 1)
    return [e for e in obj.relocations.get(int(function.section), []) if function.value <= e[0] < end]


_BRANCH = re.compile(r"^(?:(?:bnd|notrack)\s+)*(call|jmp|j[a-z]+)[a-z]*\s+(\*?)(\S*)")
_WRITES_REG = re.compile(r"^(?:mov|lea)[a-z]*\s+(.*),%(\w+)$")
_CALLEE_SAVED = ("rbx", "rbp", "r12", "r13", "r14", "r15")  # kept across a call (System V x86-64)
_REG64 = {"edi": "rdi", "esi": "rsi", "edx": "rdx", "ecx": "rcx", "eax": "rax", "ebx": "rbx", "ebp": "rbp"}


def _is_initialiser_part(symbol: Symbol) -> bool:
    """Whether a function is the compiler's own initialisation code (or a `.cold` part of it)."""
    base = re.sub(r"\.(?:cold|part|constprop|isra)(?:\.\d+)?$", "", symbol.name)
    return matches(base, INITIALISER_PARTS) or matches(symbol.demangled.split("(")[0], INITIALISER_PARTS)


def _library(symbol: Symbol) -> bool:
    """Whether `symbol` is the C++ runtime's, the standard library's (less the families that
    reach outside the process) or the kit's."""
    entity = entity_of(symbol.demangled or symbol.name)
    if matches(symbol.name, INITIALISER_RUNTIME):
        return True
    if any(matches(entity, patterns) for _, patterns in STD_FORBIDDEN):
        return False
    return matches(entity, INITIALISER_LIBRARY) or matches(qualified_name(entity), INITIALISER_LIBRARY)


def _register_source(code: Code, body: list, n: int, register: str) -> tuple[Symbol | None, bool]:
    """What instruction `n` of `body` finds in `register` (an argument): the symbol last
    loaded into it since the previous call, following register-to-register moves; and
    whether the load was found at all."""
    wanted = register
    for address, insn, relocations in reversed(body[:n]):
        if insn.startswith("call") and wanted not in _CALLEE_SAVED:
            break
        match = _WRITES_REG.match(insn.split("#")[0].strip())
        if not match or _REG64.get(match.group(2), match.group(2)) != wanted:
            continue
        moved = re.fullmatch(r"%(\w+)", match.group(1))
        if moved:
            wanted = _REG64.get(moved.group(1), moved.group(1))
            continue
        for _, kind, index, addend in relocations:
            return code.target(kind, index, addend), True
        return None, False
    return None, False


def initialiser_findings(obj: Object, source: Source, entry: Symbol,
                         own: set[str] | frozenset[str] = frozenset()) -> list[rules.Finding]:
    """What the compiler's dynamic initialisation `entry` does beyond what the toolchain
    needs: calls to the file's own functions (a static object's constructor), to anything
    but the runtime, memory, the standard library and the kit, calls through a pointer,
    references to outside data, and destructors of the file's own handed to __cxa_atexit.
    Functions of the standard library or the kit defined in the object (template
    instantiations) are followed, and so are the destructors handed to __cxa_atexit."""
    walk = _InitialiserWalk(Code.of(obj), entry, own)
    walk.run()
    problems = walk.problems
    if walk.outside:
        problems["outside"] = _outside_problem(source, list(walk.outside.values()))
    return [_initialiser_finding(source, entry, message, what, named) for message, what, named in problems.values()]


class _InitialiserWalk:
    """Follows the compiler's dynamic initialisation from its entry through what it calls,
    noting what it does beyond what the toolchain needs."""

    def __init__(self, code: Code, entry: Symbol, own: set[str] | frozenset[str]) -> None:
        self.code = code
        self.own = own  # raw names the student's other files define: they count as this file's
        self.problems: dict[str, tuple[str, Symbol | None, Symbol | None]] = {}  # key -> (message, object, named)
        self.outside: dict[str, Symbol] = {}  # what it calls or refers to outside the file, in order
        self.todo = [entry]
        self.seen: set[int] = set()

    def flag(self, key: str, message: str, what: Symbol | None, named: Symbol | None) -> None:
        """Notes a problem once per key: its message, the static object it is about, what it names."""
        self.problems.setdefault(key, (message, what, named))

    def run(self) -> None:
        """Follows every function reached, each once."""
        while self.todo:
            function = self.todo.pop()
            if function.index not in self.seen:
                self.seen.add(function.index)
                self.follow(function)

    def follow(self, function: Symbol) -> None:
        """Reads one function's instructions: what each calls or refers to."""
        body = self.code.body(function)
        end = function.value + max(function.size, 1)
        for n, (address, insn, relocations) in enumerate(body):
            insn = insn.split("#")[0].strip()  # objdump's comment: `# 1f <f+0x1f>`
            branch = _BRANCH.match(insn)
            if branch and branch.group(2) and not relocations:
                self.flag(f"indirect:{function.name}", "calls a function through a pointer", None, None)
                continue
            targets = [self.code.target(kind, index, addend) for _, kind, index, addend in relocations]
            if branch and not relocations:
                local = re.match(r"^([0-9a-f]+)", branch.group(3))
                if local and not function.value <= int(local.group(1), 16) < end:
                    targets = [self.code.at(int(function.section), int(local.group(1), 16))]
            for target in targets:
                if target is not None and target.index != function.index:  # else a string, a constant, a jump
                    self.reach(target, branch is not None, body, n, address)

    def reach(self, target: Symbol, branch: bool, body: list, n: int, address: int) -> None:
        """One thing instruction `n` of `body` calls (`branch`) or refers to."""
        if branch and target.name in AT_EXIT:
            self.at_exit(target, body, n, address)
            return
        if target.defined and target.type in ("OBJECT", "TLS", "NOTYPE") and not branch:
            return  # the file's own objects: constructing them is what an initialiser does
        if target.defined and (_is_initialiser_part(target) or _library(target)):
            if branch:  # followed, whatever its type: a name is no proof (a local asm label)
                self.todo.append(target)
            return
        mine = target.defined or target.name in self.own  # the student's other files count as this one
        if mine and not branch:
            return  # a function's address taken (the kit's LAB_REGISTER_VARIANT), not called
        if mine:
            this, _ = _register_source(self.code, body, n, "rdi")
            this = this if this is not None and this.type in ("OBJECT", "TLS") else None
            self.flag(f"call:{target.name}", f"calls `{short(target.demangled or target.name)}`", this, target)
        elif not _library(target) and target.name not in self.outside:
            self.outside[target.name] = target

    def at_exit(self, target: Symbol, body: list, n: int, address: int) -> None:
        """A call of __cxa_atexit (`target`) at instruction `n`: the destructor it is handed, and
        for which object."""
        destructor, _ = _register_source(self.code, body, n, "rdi")
        owner, _ = _register_source(self.code, body, n, "rsi")
        owner = owner if owner is not None and owner.type in ("OBJECT", "TLS") else None
        if destructor is None or destructor.type not in ("FUNC", "NOTYPE", *IFUNC_TYPES):
            self.flag(f"atexit:{address}", f"hands a function that the check cannot name to {target.name}, "
                      "to run at exit", owner, None)
        elif not (_library(destructor) or _is_initialiser_part(destructor)):
            self.flag(f"atexit:{destructor.name}", f"hands `{short(destructor.demangled or destructor.name)}` "
                      f"to {target.name}, to run at exit", owner, destructor)
        elif destructor.defined:
            self.todo.append(destructor)


def _outside_problem(source: Source, named: list[Symbol]) -> tuple[str, Symbol | None, Symbol | None]:
    """One problem for everything outside the file the initialisation calls or refers to,
    named from the one the student's file spells first."""
    lines = [symbol_line(source, n) for n in named]
    first = min(range(len(named)), key=lambda i: (lines[i] is None, lines[i] or 0))
    names = listing([short(named[first].demangled or named[first].name)]
                    + [short(n.demangled or n.name) for n in named if n is not named[first]])
    return f"uses {names}", None, named[first]  # calls, or refers to


def _initialiser_finding(source: Source, entry: Symbol, message: str, what: Symbol | None,
                         named: Symbol | None) -> rules.Finding:
    """The finding of one problem of the initialisation `entry`: about the static object
    `what` where known, at the first line that names it (else what the problem names)."""
    line = None
    if what is not None:
        line = symbol_line(source, what)
        shown = short(entity_of(what.demangled or what.name))
        message = f"the initialisation of the static object `{shown}` {message}"
    else:
        message = f"a static object's initialisation {message}"
    if line is None and named is not None:
        line = symbol_line(source, named)
    return forbidden(source, "constructor", line,
                     f"{message}: code of your file runs at load time, before the tests start (construct "
                     "the object inside the lab's functions, or make it constexpr)",
                     named.name if named is not None else entry.name)


def syscall_findings(obj: Object, source: Source, names: dict[str, str]) -> list[rules.Finding]:
    """Instructions in the host code that enter the operating system's kernel directly."""
    findings = []
    text = source.text
    for (_, _), (name, insns) in sorted(obj.functions.items()):
        hits = [insn.split()[0] for _, insn in insns if SYSCALL_INSN.match(insn)]
        if not hits:
            continue
        shown = short(names.get(name, name))
        code = re.sub(r"//[^\n]*|/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.DOTALL)
        word = {"int": "0x80"}.get(hits[0], hits[0])  # comments blanked, strings kept: asm("syscall")
        match = re.search(rf"\b{re.escape(word)}\b", code)
        line = code.count("\n", 0, match.start()) + 1 if match else None
        if line is None:
            line = source_line(text, search_names(name, entity_of(names.get(name, name))))
        findings.append(forbidden(source, "syscall", line,
                                  f"`{hits[0]}` in {shown} enters the operating system directly: the implementation "
                                  "only launches kernels and calls the CUDA runtime", hits[0]))
    return findings
