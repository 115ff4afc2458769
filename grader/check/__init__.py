"""Static checks on what a student's file does, not on how it is spelled.

    python3 -m grader check [--root KIT] [--submission DIR] [--json FILE] [--quiet] [lab ...]

The spelling rules (grader/rules.py) read the source text, which a student can disguise:
an `#include` through a macro or a digraph, CUB behind a namespace alias, a forbidden
call through a function pointer. This stage asks the compiler instead:

1. includes: nvcc's own dependency list (`nvcc -M`, every device architecture and the
   host pass), each path resolved; the line of the student's `#include` comes from the
   line markers of the preprocessed passes (kept with `--keep`).
2. symbols: the compiled object's symbol table. Undefined symbols (calls, and addresses
   taken, so function pointers too) against an allowlist, which leaves out the lab
   header's sequential versions (`*_cpu`, the tests' answer key) and the out-of-line
   helpers that live beside them; defined symbols that would
   replace the CUDA runtime, the kit, the C or C++ runtime at link time; anything of
   CUB, Thrust or the vendor libraries.
3. load-time code and raw system calls: `.init_array`/`.fini_array` entries other than
   the compiler's own, any `.preinit_array`/`.ctors`/`.dtors` entry, IFUNC symbols and
   IRELATIVE relocations (a resolver runs while the program is loaded), `thread_local`
   objects with constructors (TLS init functions), and the compiler's own C++ dynamic
   initialisation where it does more than the toolchain needs: its body (and what it
   calls, followed) may call the C++ runtime, memory functions, the standard library and
   the kit, and hand only those destructors to `__cxa_atexit`; a call to the file's own
   function or type, through a pointer, or to anything else is a finding. Then
   `syscall`/`sysenter`/`int $0x80`/`svc` in the host code.
4. assembler directives that read files (`.incbin`, `.include`) or build directives
   (`.macro`, `.irp`, `.rept` ...) in any string of the student's preprocessed code,
   adjacent literals joined and escapes decoded: such a file carries bytes of the grading
   machine (a classmate's submission, the reference's source) into its program, and the
   grader does not test it (stages.checking.run_checks).
5. device code registered by hand: the runtime's registration helpers
   (`__cudaRegisterFatBinary`, `__cudaRegisterFunction`, ...) referred to from anywhere
   but nvcc's own registration functions, whatever they are called in the source (an
   asm label): that would make device code not compiled from the file, such as a
   reference's cubin pulled in with `.incbin`, launchable as the file's.

Every finding is a grader.rules.Finding (kind "forbidden", rule "include", "symbol",
"defines", "cub", "constructor" or "syscall"), so it plugs into the rules penalty.
A file that does not compile is the build's problem: CheckResult.ok is False with the
reason. A file that needs more than the check's time, memory or file-size limits to
compile (a template bomb, a 1 GiB initialised __device__ array) gives ok False and
exceeded True: grade it like a build error, never as clean (grader/CONTRACT.md).

Exit status of the command: 0 clean, 1 findings (or a file that could not be checked),
2 bad usage (one line on stderr).

Where each part lives (each module imports only those above it):

    policy       the tables: what may be included, used, defined, run at load time
    findings     CheckResult, the errors that stop a check, the wording of a finding
    tools        nvcc, its include folders and architectures, binutils
    elf          pure parsers of readelf, objdump and c++filt output; lookups over them
    names        what a demangled name is about, whose library, where the file spells it
    session      one check's folder, deadline and limits: every process it runs
    includes     1. includes (nvcc -M and the preprocessed passes' line markers)
    source_text  4. the student's own preprocessed text
    stubs        nvcc's exit(1) host bodies of __device__ functions
    symbols      2. and 5. the symbol table, and device code registered by hand
    loadtime     3. load-time code and raw system calls
    steps        which kernels each registered variant launches (variants.py)
    stage        check_lab and foreign_reads: the above, over one lab's files
    cli          `python3 -m grader check`
"""

from grader.check.cli import build_parser, main
from grader.check.elf import object_from_text
from grader.check.findings import CheckError, CheckResult
from grader.check.includes import parse_depfile, scan_preprocessed
from grader.check.policy import READS_FILES, RULES
from grader.check.source_text import string_literals
from grader.check.stage import check_lab, foreign_reads
from grader.check.tools import Toolchain, find_nvcc, toolchain, tools_missing

__all__ = [
    "CheckError", "CheckResult", "READS_FILES", "RULES", "Toolchain", "build_parser", "check_lab", "find_nvcc",
    "foreign_reads", "main", "object_from_text", "parse_depfile", "scan_preprocessed", "string_literals",
    "toolchain", "tools_missing",
]
