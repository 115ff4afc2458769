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
   grader does not test it (grade.run_checks).
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
"""

from __future__ import annotations

import argparse
import bisect
import fnmatch
import functools
import json
import os
import re
import shutil
import sys
import tempfile
import time
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path

from grader import config, manifest, proc, rules

RULES = ("include", "symbol", "defines", "cub", "constructor", "syscall")
# Each compiler step may take this long; a template bomb that stays under the memory
# limit still ends here (the solutions compile in under 10 s on a loaded 2-core box).
STEP_TIMEOUT_S = 60.0
TOOL_TIMEOUT_S = 30.0  # readelf, objdump, c++filt, the host compiler's include list
# Per process: every solution compiles in 512 MiB and a CUB-heavy bench in 1 GiB; a
# template bomb reaches 2 GiB within about 15 s. The largest file a compiler step writes
# (.ii, PTX, cubin, object) stays below 3 MiB for every solution.
DEFAULT_LIMITS = proc.Limits(memory_bytes=2 << 30, file_bytes=256 << 20)
OUTPUT_CAP = 48 << 20  # bytes of readelf/objdump output read before giving up
MAX_SOURCE_BYTES = 16 << 20  # a student's file larger than this is not compiled
COMPILE_FLAGS = ["-x", "cu", "-std=c++17"]
OBJECT_FLAGS = ["-O3", "-Xcompiler=-fPIC"]
SOURCE_SUFFIXES = (".cu", ".cpp", ".cc", ".cxx")
# Device architectures preprocessed for the dependency list when nvcc cannot list its
# own (--list-gpu-arch); each must be known to the oldest supported nvcc (11.8).
FALLBACK_ARCHS = ("compute_75", "compute_80", "compute_86", "compute_89", "compute_90")

# ---------------------------------------------------------------------------------------
# What may be included

_WORK = "does the lab's work: write the kernels yourself"
_RUNTIME_CODE = "compiles or links code at run time, outside what the grader checks: write the kernels in your file"
# (first path component under an include root, exact name or prefix, library, why). A
# header of these is forbidden even inside the toolkit or the system folders.
HEADER_FAMILIES: tuple[tuple[str, bool, str, str], ...] = (
    ("cub", True, "CUB", f"CUB {_WORK}"),
    ("thrust", True, "Thrust", f"Thrust {_WORK}"),
    ("cublas", False, "cuBLAS", f"cuBLAS {_WORK}"),
    ("cusparse", False, "cuSPARSE", f"cuSPARSE {_WORK}"),
    ("cusolver", False, "cuSOLVER", f"cuSOLVER {_WORK}"),
    ("cufft", False, "cuFFT", f"cuFFT {_WORK}"),
    ("npp", False, "NPP", f"NPP {_WORK}"),
    ("nvblas", False, "NVBLAS", f"NVBLAS {_WORK}"),
    ("cudnn", False, "cuDNN", f"cuDNN {_WORK}"),
    ("nvrtc", False, "NVRTC", f"NVRTC {_RUNTIME_CODE}"),
    ("nvjitlink", False, "nvJitLink", f"nvJitLink {_RUNTIME_CODE}"),
    ("nvvm", False, "libNVVM", f"libNVVM {_RUNTIME_CODE}"),
    ("cupti", False, "CUPTI", "CUPTI hooks into the profiler and the timer: the bench does the timing"),
    ("nvperf", False, "NVPerf", "NVPerf hooks into the profiler and the timer: the bench does the timing"),
    ("nccl", False, "NCCL", "NCCL communicates between GPUs and processes: a lab runs on one GPU"),
    ("nvtx", False, "NVTX", "NVTX loads a profiler library named by the environment: remove the NVTX ranges "
                            "before you hand in"),
    ("nvtoolsext", False, "NVTX", "NVTX loads a profiler library named by the environment: remove the NVTX ranges "
                                  "before you hand in"),
    ("gtest", True, "GoogleTest", "the tests are provided: the implementation may not use or change GoogleTest"),
    ("gmock", True, "GoogleMock", "the tests are provided: the implementation may not use or change GoogleTest"),
)
OUTSIDE_WHY = ("a file outside your lab: include only your lab's header, the kit's headers under "
               "common/include and the standard library")

# ---------------------------------------------------------------------------------------
# What the object may use (undefined symbols), as fnmatch patterns on the raw name

# The CUDA runtime calls a lab needs. Async forms can name a stream; the spelling rules
# and the timer's checks catch other streams, the symbol table cannot tell.
CUDA_RUNTIME_ALLOWED = (
    "cudaMalloc", "cudaFree", "cudaMemcpy", "cudaMemcpyAsync", "cudaMemset", "cudaMemsetAsync",
    "cudaMallocAsync", "cudaFreeAsync", "cudaMallocPitch", "cudaMemcpy2D", "cudaMemcpy2DAsync",
    "cudaMemset2D", "cudaMemset2DAsync", "cudaMallocHost", "cudaFreeHost", "cudaMemGetInfo",
    "cudaPointerGetAttributes", "cudaGetLastError", "cudaPeekAtLastError", "cudaGetErrorString",
    "cudaGetErrorName", "cudaDeviceSynchronize", "cudaStreamSynchronize", "cudaGetDevice",
    "cudaGetDeviceCount", "cudaGetDeviceProperties*", "cudaDeviceGetAttribute", "cudaDriverGetVersion",
    "cudaRuntimeGetVersion", "cudaFuncSetAttribute", "cudaFuncGetAttributes", "cudaFuncSetCacheConfig",
    "cudaOccupancy*", "cudaLaunchKernel", "cudaLaunchCooperativeKernel", "cudaMemcpyToSymbol",
    "cudaMemcpyFromSymbol", "cudaMemcpyToSymbolAsync", "cudaMemcpyFromSymbolAsync", "cudaGetSymbolAddress",
    "cudaGetSymbolSize", "cudaEvent*",
)
# What nvcc 13 emits for kernels, __device__/__constant__/__managed__ variables and
# relocatable device code (found by compiling the skeletons, the solutions and probes).
NVCC_HELPERS = (
    "__cudaRegisterFatBinary", "__cudaRegisterFatBinaryEnd", "__cudaUnregisterFatBinary",
    "__cudaRegisterFunction", "__cudaRegisterVar", "__cudaRegisterManagedVar", "__cudaRegisterHostVar",
    "__cudaRegisterSurface", "__cudaRegisterTexture", "__cudaInitModule", "__cudaPushCallConfiguration",
    "__cudaPopCallConfiguration", "__cudaLaunchKernel", "__cudaGetKernel", "__cudaRegisterLinkedBinary_*",
)
# The helpers among them that register device code with the runtime. Only nvcc's own
# registration functions of the file (below) may refer to them: called from anywhere else,
# they register device code that was not compiled from the file (bytes pulled in with an
# assembler .incbin from a reference library, say) and make its kernels launchable.
REGISTRATION_HELPERS = (
    "__cudaRegisterFatBinary", "__cudaRegisterFatBinaryEnd", "__cudaUnregisterFatBinary",
    "__cudaRegisterFunction", "__cudaRegisterVar", "__cudaRegisterManagedVar", "__cudaRegisterHostVar",
    "__cudaRegisterSurface", "__cudaRegisterTexture", "__cudaInitModule", "__cudaRegisterLinkedBinary_*",
)
# nvcc's registration functions. Both are static and always emitted (one runs from
# .init_array, the other is handed to atexit), so a file cannot define a function of the
# same name beside them: the assembler refuses the second definition.
NVCC_REGISTRARS = ("_ZL24__sti____cudaRegisterAllv", "_ZL26__cudaUnregisterBinaryUtilv")
# The callback that registers the kernels and variables: inlined into the first at -O3, its
# name is then free for a file's own function. It counts as nvcc's only where nvcc's
# __sti____cudaRegisterAll refers to it (an unoptimised build).
NVCC_CALLBACK = "_ZL31__nv_cudaEntityRegisterCallbackPPv"
CXX_RUNTIME_ALLOWED = (
    "__cxa_*", "__gxx_personality_v0", "DW.ref.__gxx_personality_v0", "_Unwind_Resume", "_GLOBAL_OFFSET_TABLE_",
    "__dso_handle", "__tls_get_addr", "__once_proxy", "__libc_single_threaded", "atexit",
)
_MATH = ("sqrt cbrt exp exp2 exp10 expm1 log log2 log10 log1p pow sin cos tan sincos asin acos atan atan2 sinh "
         "cosh tanh asinh acosh atanh fabs floor ceil trunc round lround llround rint lrint llrint nearbyint fmod "
         "remainder remquo fmin fmax fdim fma frexp ldexp scalbn scalbln modf hypot erf erfc tgamma lgamma "
         "copysign nextafter ilogb logb").split()
C_ALLOWED = (
    # memory and strings
    "memcpy", "memmove", "memset", "memcmp", "memchr", "strlen", "strnlen", "strcmp", "strncmp", "strcpy",
    "strncpy", "strcat", "strncat", "strchr", "strrchr", "strstr", "strspn", "strcspn", "strtol", "strtoll",
    "strtoul", "strtoull", "strtof", "strtod", "strtold", "__isoc23_strto*", "atoi", "atol", "atoll", "atof",
    "__memcpy_chk", "__memmove_chk", "__memset_chk", "__strcpy_chk", "__strncpy_chk", "__strcat_chk",
    # printing to stdout and stderr
    "printf", "fprintf", "vprintf", "vfprintf", "sprintf", "snprintf", "vsprintf", "vsnprintf", "puts",
    "putchar", "fputs", "fputc", "putc", "fwrite", "fflush", "stdout", "stderr", "__printf_chk",
    "__fprintf_chk", "__sprintf_chk", "__snprintf_chk", "__vprintf_chk", "__vfprintf_chk", "__vsprintf_chk",
    "__vsnprintf_chk",
    # heap
    "malloc", "calloc", "realloc", "free", "aligned_alloc", "posix_memalign",
    # numbers
    "abs", "labs", "llabs", "div", "ldiv", "lldiv", "qsort", "bsearch",
    *(name + suffix for name in _MATH for suffix in ("", "f", "l")),
    "__*_finite", "__isnan*", "__isinf*", "__finite*", "__fpclassify*", "__signbit*",
    # the C runtime under the compiler's code: stack protector, assert, errno, thread-safe statics
    "__stack_chk_fail", "__stack_chk_guard", "__assert_fail", "__errno_location", "pthread_once",
    "__pthread_key_create", "pthread_mutex_lock", "pthread_mutex_unlock",
    # libgcc helpers the compiler calls by itself
    "__popcount?i2", "__clz?i2", "__ctz?i2", "__*ti3", "__mul?c3", "__div?c3", "__cpu_model", "__cpu_indicator_init",
)
# Demangled (after "vtable for " and the like are taken off): the C++ standard library,
# except the families that reach outside the process.
STD_ALLOWED = ("std::*", "__gnu_cxx::*", "__cxxabiv1::*", "operator new*", "operator delete*")
STD_FORBIDDEN = (
    ("threads", ("std::thread*", "std::jthread*", "std::__future_base*", "std::async*", "std::this_thread::yield*")),
    ("files", ("std::basic_filebuf*", "std::basic_ifstream*", "std::basic_ofstream*", "std::basic_fstream*",
               "std::__basic_file*", "std::filesystem*", "std::experimental::filesystem*",
               "std::__cxx11::filesystem*",
               "std::random_device*")),
)
# Why a symbol is forbidden, for the message: (patterns on the raw or demangled name, rule of
# grader.rules.BUILTIN_RULES whose reason is given, or a reason of its own).
_SYSCALL_WHY = ("system calls made directly reach outside the test process: the implementation only "
                "launches kernels and calls the CUDA runtime")
SYMBOL_FAMILIES: tuple[tuple[tuple[str, ...], str], ...] = (
    (("cudaStream*", "cudaGraph*", "cudaLaunchHostFunc", "cudaLaunchKernelEx*", "*_ptsz", "*_ptds",
      "cudaStreamAddCallback", "cudaCtxResetPersistingL2Cache"), "streams"),
    (("cudaDeviceReset", "cudaThreadExit"), "device_reset"),
    (("cudaDeviceSet*", "cudaSetDevice*", "cudaSetValidDevices", "cudaInitDevice", "cudaCtx*", "cudaThreadSet*",
      "cu[A-Z]*"), "device_limits"),
    (("exit", "_exit", "_Exit", "quick_exit", "abort", "at_quick_exit"), "exit"),
    (("fopen*", "freopen*", "fdopen", "fclose", "fseek*", "ftell*", "fileno", "readlink*", "realpath", "open",
      "open64", "openat*", "creat*", "mmap*", "munmap", "remove",
      "unlink*", "rename*", "read", "write", "pread*", "pwrite*", "close", "fread", "fgets", "fgetc", "getc",
      "getchar", "fscanf", "scanf", "__isoc99_*scanf", "__isoc23_*scanf", "stdin", "opendir", "readdir*",
      "*stat", "*stat64", "__*xstat*", "access", "mkdir*", "rmdir", "chdir", "getcwd", "truncate*",
      "ftruncate*", "symlink*", "link*", "chmod", "fchmod*", "chown", "dup", "dup2", "dup3", "pipe*",
      "socket", "connect", "bind", "listen", "accept*", "std::basic_filebuf*", "std::basic_ifstream*",
      "std::basic_ofstream*", "std::basic_fstream*", "std::__basic_file*", "std::filesystem*",
      "std::experimental::filesystem*", "std::__cxx11::filesystem*", "std::random_device*"), "files"),
    (("getenv", "secure_getenv", "setenv", "putenv", "unsetenv", "clearenv", "environ", "__environ",
      "_environ"), "environment"),
    (("system", "popen", "pclose", "fork", "vfork", "clone*", "exec*", "kill", "raise", "posix_spawn*",
      "signal", "sigaction", "ptrace", "prctl", "waitpid", "wait", "setsid", "daemon"), "processes"),
    (("dlopen", "dlmopen", "dlsym", "dlvsym", "dladdr*", "dlinfo", "dl_iterate_phdr"), "dynamic_loading"),
    (("pthread_create", "pthread_detach", "pthread_join", "thrd_create", "std::thread*", "std::jthread*",
      "std::__future_base*", "std::async*"), "threads"),
    (("syscall", "__syscall*", "mprotect", "pkey_mprotect", "sysconf", "ioctl"), _SYSCALL_WHY),
)
# Libraries that do the lab's work: any symbol of theirs is a "cub" finding. Patterns on the
# raw name (C APIs) or, for C++ namespaces, a regular expression on the demangled name.
LIBRARY_SYMBOLS: tuple[tuple[str, str], ...] = (
    ("cublas*", "cuBLAS"), ("cusparse*", "cuSPARSE"), ("cusolver*", "cuSOLVER"), ("cufft*", "cuFFT"),
    ("npp*", "NPP"), ("nvblas*", "NVBLAS"), ("cudnn*", "cuDNN"), ("nvrtc*", "NVRTC"), ("nvJitLink*", "nvJitLink"),
    ("nvvm*", "libNVVM"), ("cupti*", "CUPTI"), ("nccl*", "NCCL"), ("nvtx*", "NVTX"),
)
_NAMESPACE_LIBRARY = re.compile(r"(?<![\w:])(?:::)?(cub|thrust)::")
_LIBRARY_WHY = {label: why for _, _, label, why in HEADER_FAMILIES}
# CUB's headers define Thrust symbols and NVTX functions of their own: one finding names CUB.
_LIBRARY_GROUP = {"CUB": "CCCL", "Thrust": "CCCL", "NVTX": "CCCL"}
_LIBRARY_ORDER = ("CUB", "Thrust", "NVTX")

# ---------------------------------------------------------------------------------------
# What the object may define, and what may run at load time

# Global symbols nvcc generates by itself (found by compiling the skeletons, the solutions,
# and probes with -rdc=true, __managed__ and __constant__ variables).
NVCC_DEFINED = ("DW.ref.__gxx_personality_v0", "__fatbinwrap_*", "hostRef*Array*Linkage")
# Constructors of the compiler's own: C++ dynamic initialisation (also the kit's
# LAB_REGISTER_VARIANT registrations) and nvcc's registration of the fat binary.
COMPILER_CONSTRUCTORS = ("_GLOBAL__sub_I_*", "_GLOBAL__I_*", "_ZL24__sti____cudaRegisterAllv",
                         "__sti____cudaRegisterAll*", "_GLOBAL__sub_D_*", "_GLOBAL__D_*")
# Names the compiler generates: spelling one in your code forges the compiler's own code.
# Assembler directives that read a file of the grading machine into the object (.incbin,
# .include) or build directives from pieces (.macro and its kin can spell .incbin without
# writing it). No lab needs them; gcc and nvcc never emit them for the kit's code. Found in
# every string literal of the student's preprocessed code, adjacent literals joined and
# escapes decoded (".inc" "\x62in" is .incbin), since an asm statement takes only those.
ASSEMBLER_DIRECTIVES = re.compile(r"(?:^|[\s;:])\.(incbin|include|macro|irpc?|rept|altmacro|purgem)\b",
                                  re.IGNORECASE | re.MULTILINE)
# The pattern of such a finding: grade.run_checks does not test a lab that has one (a test
# message could carry the file's bytes into the student's report).
READS_FILES = "assembler-directive"
RESERVED_NAMES = re.compile(r"_GLOBAL__(?:sub_)?[ID]_|__sti__|__fatbinwrap|__cudaRegister|__device_stub_"
                            r"|__nv_cudaEntityRegisterCallback|__cudaUnregisterBinaryUtil|__fatDeviceText"
                            r"|__cudaFatCubinHandle|\bDW\.ref\.|hostRef\w*Array\w*Linkage")
# Your code adds to or replaces part of the kit: its namespace opened, or a specialisation of its templates.
KIT_NAMESPACE = re.compile(r"\bnamespace\s+lab\b(?!\s*=)|\btemplate\s*<\s*>[^;{}]*?\blab\s*::")
# A definition of a lab:: function outside the namespace (`void* lab::workspace_bytes(...) {`):
# a type before the qualified name, a parameter list, then the body.
KIT_DEFINITION = re.compile(r"(?:\b(?!(?:return|if|while|for|switch|case|throw|else|do|new|delete|sizeof)\b)"
                            r"[A-Za-z_]\w*\s+|[*&]\s*)(?:::\s*)?\blab\s*::\s*"
                            r"(?:[\w~]+\s*(?:<[^;{}()]*>)?\s*::\s*)*[\w~]+\s*"
                            r"\([^;{}()]*\)[^;{}()]*(?::[^;{}]*)?\{")
LIBC_DATA = frozenset("stdin stdout stderr environ __environ errno optarg optind opterr optopt timezone daylight "
                      "tzname signgam program_invocation_name program_invocation_short_name".split())
ENTITY_PREFIXES = ("typeinfo name for ", "typeinfo for ", "vtable for ", "VTT for ", "construction vtable for ",
                   "guard variable for ", "TLS init function for ", "TLS wrapper function for ",
                   "non-virtual thunk to ", "virtual thunk to ", "covariant return thunk to ",
                   "transaction clone for ")
CONSTRUCTOR_SECTIONS = (".init_array", ".fini_array", ".preinit_array", ".ctors", ".dtors")
INIT_TYPES = ("INIT_ARRAY", "FINI_ARRAY", "PREINIT_ARRAY")
# Tables of which no entry is the compiler's (g++ and nvcc fill .init_array only).
FOREIGN_TABLES = (".preinit_array", ".ctors", ".dtors")
# The compiler's own pieces of C++ dynamic initialisation: the .init_array entry and what
# it calls (inlined at -O3; `.cold` parts of them too). Their bodies are read: see below.
INITIALISER_PARTS = ("_GLOBAL__sub_I_*", "_GLOBAL__I_*", "_GLOBAL__sub_D_*", "_GLOBAL__D_*",
                     "*__static_initialization_and_destruction_*", "__cxx_global_var_init*")
# What the compiler's initialisation of a clean file calls or refers to (found with nvcc 13
# and g++ 12: <iostream>'s std::ios_base::Init, std::vector and std::string objects, the
# kit's LAB_REGISTER_VARIANT registrations): the C++ runtime's bookkeeping, memory, and the
# standard library's and the kit's code (demangled names), less the families that reach
# outside the process (STD_FORBIDDEN). Anything else runs the file's code at load time.
INITIALISER_RUNTIME = (
    "__cxa_atexit", "__cxa_thread_atexit", "__cxa_guard_*", "__cxa_throw", "__cxa_allocate_exception",
    "__cxa_free_exception", "__cxa_begin_catch", "__cxa_end_catch", "__cxa_rethrow", "__cxa_call_terminate",
    "_Unwind_Resume", "__stack_chk_fail", "__stack_chk_guard", "__tls_get_addr", "__dso_handle",
    "_GLOBAL_OFFSET_TABLE_", "__gxx_personality_v0", "DW.ref.__gxx_personality_v0", "__libc_single_threaded",
    "memcpy", "memmove", "memset", "memcmp", "strlen", "__memcpy_chk", "__memmove_chk", "__memset_chk",
    "malloc", "calloc", "realloc", "free",
)
INITIALISER_LIBRARY = ("std::*", "__gnu_cxx::*", "__cxxabiv1::*", "operator new*", "operator delete*", "lab::*")
# Calls that hand a function to run at exit (first argument) for an object (second).
AT_EXIT = ("__cxa_atexit", "__cxa_thread_atexit")
IFUNC_TYPES = ("IFUNC", "GNU_IFUNC")
_LOAD_TIME_HINT = "do the work inside the lab's functions"
# Instructions that enter the kernel: x86-64 and aarch64 spellings in objdump's output.
SYSCALL_INSN = re.compile(r"^(?:syscall|sysenter|int\s+\$0x80|svc\s|svc$)")
_KEYWORDS = frozenset("if for while switch return sizeof alignof decltype static_assert noexcept throw catch "
                      "operator defined __attribute__ __declspec alignas".split())


class CheckError(Exception):
    """The stage cannot run (nvcc or binutils missing, a file missing); the message says why."""


class _Exceeded(Exception):
    """A step ran past the check's time, memory or file-size limits."""


class _CompileFailed(Exception):
    """The student's file does not compile (the build reports it)."""


@dataclass
class CheckResult:
    """What the static checks found in one lab's files."""

    findings: list[rules.Finding] = field(default_factory=list)
    ok: bool = True  # False: the stage could not run; `message` says why
    message: str = ""
    commands: list[str] = field(default_factory=list)  # what was run, for reproduce lines
    exceeded: bool = False  # a file needs more than the check's limits to compile: grade as a build error
    # The main file's registered variants and the kernels each launches (steps.Analysis.as_dict);
    # None when the object could not be read that far
    steps: dict[str, object] | None = None

    def as_dict(self) -> dict[str, object]:
        """The result as JSON data (the command's --json report)."""
        return {"ok": self.ok, "message": self.message, "exceeded": self.exceeded,
                "findings": [f.as_dict() for f in self.findings], "commands": self.commands}


# ---------------------------------------------------------------------------------------
# Tools


@dataclass(frozen=True)
class Toolchain:
    """nvcc and the folders its headers come from."""

    nvcc: str
    toolkit_includes: tuple[str, ...]  # real paths of the CUDA toolkit's include folders
    system_includes: tuple[str, ...]  # real paths of the host compiler's folders
    archs: tuple[str, ...]  # virtual architectures preprocessed for the dependency list


def find_nvcc(nvcc: str | None = None) -> str | None:
    """The nvcc to use: `nvcc` (a path or a name), else PATH, $CUDA_HOME/bin, /usr/local/cuda/bin."""
    if nvcc:
        found = shutil.which(nvcc)
        return str(Path(found).resolve()) if found else None
    candidates = [shutil.which("nvcc")]
    for env in ("CUDA_HOME", "CUDA_PATH"):
        if os.environ.get(env):
            candidates.append(str(Path(os.environ[env]) / "bin" / "nvcc"))
    candidates.append("/usr/local/cuda/bin/nvcc")
    for candidate in candidates:
        if candidate and proc.is_executable(Path(candidate)):
            return str(Path(candidate).resolve())
    return None


@functools.lru_cache(maxsize=8)
def toolchain(nvcc: str) -> Toolchain:
    """Include folders and architectures of the nvcc at `nvcc` (a resolved path)."""
    # `nvcc` may be a wrapper script (`exec /opt/cuda-X/bin/nvcc "$@"`), so the toolkit's
    # folders are what nvcc itself reports, with the folders beside `nvcc` as a fallback.
    tops = _toolkit_tops(nvcc) or [Path(nvcc).parent.parent]
    toolkit = {os.path.realpath(p) for top in tops for p in [top / "include", *top.glob("targets/*/include")]
               if p.is_dir()}
    return Toolchain(nvcc, tuple(sorted(toolkit)), _system_includes(), _archs(nvcc))


def _toolkit_tops(nvcc: str) -> list[Path]:
    """The toolkit folders named by `nvcc --dryrun` (its TOP and _HERE_/.. lines)."""
    try:
        done = proc.run([nvcc, "--dryrun", "-x", "cu", "-c", os.devnull, "-o", os.devnull],
                        timeout=TOOL_TIMEOUT_S, limits=DEFAULT_LIMITS)
    except proc.LaunchError:
        return []
    tops = [Path(m) for m in re.findall(r"^#\$ TOP=(.+?)\s*$", done.stderr, re.MULTILINE)]
    tops += [Path(m).parent for m in re.findall(r"^#\$ _HERE_=(.+?)\s*$", done.stderr, re.MULTILINE)]
    return [Path(os.path.realpath(t)) for t in tops]


def _archs(nvcc: str) -> tuple[str, ...]:
    """Every virtual architecture this nvcc compiles for (`--list-gpu-arch`, CUDA 11.x and newer)."""
    try:
        done = proc.run([nvcc, "--list-gpu-arch"], timeout=TOOL_TIMEOUT_S, limits=DEFAULT_LIMITS)
    except proc.LaunchError:
        return FALLBACK_ARCHS
    found = tuple(dict.fromkeys(re.findall(r"\bcompute_\d+[a-z]?\b", done.stdout)))
    return found if done.returncode == 0 and found else FALLBACK_ARCHS


def _system_includes() -> tuple[str, ...]:
    """The host compiler's own header folders (what `g++ -E -v` lists) and the usual ones."""
    folders = ["/usr/include", "/usr/local/include", "/usr/lib/gcc"]
    host = os.environ.get("NVCC_CCBIN") or os.environ.get("CUDAHOSTCXX") or shutil.which("g++") or shutil.which("c++")
    if host:
        try:
            done = proc.run([host, "-E", "-v", "-x", "c++", "-std=c++17", os.devnull],
                            timeout=TOOL_TIMEOUT_S, limits=DEFAULT_LIMITS)
            listing = re.search(r"#include <\.\.\.> search starts here:\n(.*?)End of search list",
                                done.stderr, re.DOTALL)
            if listing:
                folders += [line.strip().split(" (")[0] for line in listing.group(1).splitlines() if line.strip()]
        except proc.LaunchError:
            pass
    return tuple(sorted({os.path.realpath(f) for f in folders if os.path.isdir(f)}))


def _tools_missing() -> list[str]:
    """The binutils programs the check needs that are not on PATH."""
    return [tool for tool in ("readelf", "objdump", "c++filt") if shutil.which(tool) is None]


# ---------------------------------------------------------------------------------------
# Running steps


class _Session:
    """One check_lab call: its folders, deadline, limits and the commands it ran."""

    def __init__(self, kit: Path, lab: manifest.Lab, tools: Toolchain, root: Path, timeout: float) -> None:
        self.kit = kit
        self.lab = lab
        self.tools = tools
        self.root = root  # private folder, removed at the end
        self.tmp = root / "tmp"
        self.tmp.mkdir(parents=True)
        self.deadline = time.monotonic() + timeout
        self.commands: list[str] = []

    def run(self, cmd: list[str], *, step: float = STEP_TIMEOUT_S, cap: int = proc.CAP_BYTES,
            cwd: Path | None = None, shown: list[str] | None = None) -> proc.ProcResult:
        """Run one bounded step; _Exceeded when it runs out of time or memory.

        `shown` is the command as a student can rerun it (their file, outputs in the current
        folder); it goes into the CheckResult's commands. Tool runs pass none."""
        left = self.deadline - time.monotonic()
        if left <= 1:
            raise _Exceeded("the static checks ran out of time")
        env = {"TMPDIR": str(self.tmp), "LC_ALL": "C"}  # nvcc's temporary files stay in our folder
        try:
            done = proc.run(cmd, timeout=min(step, left), env=env, cwd=cwd, cap=cap, limits=DEFAULT_LIMITS)
        except proc.LaunchError as exc:
            raise CheckError(str(exc)) from None
        if shown is not None:
            self.commands.append(proc.command_string(shown))
        if done.timed_out:
            raise _Exceeded(f"`{Path(cmd[0]).name}` took longer than {min(step, left):.0f} s")
        if done.returncode != 0 and _out_of_limits(done):
            limits = DEFAULT_LIMITS
            raise _Exceeded(f"`{Path(cmd[0]).name}` needed more memory or disk than the check allows "
                            f"({limits.memory_bytes >> 20} MiB, files up to {limits.file_bytes >> 20} MiB)")
        return done

    def include_flags(self) -> list[str]:
        """-I flags of the build: the lab's folder, then the kit's common headers."""
        return [f"-I{self.kit / 'labs' / self.lab.name}", f"-I{self.kit / 'common' / 'include'}"]


def _out_of_limits(done: proc.ProcResult) -> bool:
    """Whether a failed step hit the memory or file-size limit rather than an error in the code."""
    text = (done.stdout + done.stderr).lower()
    markers = ("out of memory", "memory exhausted", "bad_alloc", "cannot allocate memory",
               "file size limit exceeded", "file too large")
    return done.signal_name in ("SIGXFSZ", "SIGKILL") or any(m in text for m in markers)


def _tail(done: proc.ProcResult, lines: int = 12) -> str:
    """The last lines a step printed (its error message)."""
    return "\n".join((done.stderr or done.stdout).strip().splitlines()[-lines:])


# ---------------------------------------------------------------------------------------
# 1. Includes


@dataclass
class _Source:
    """One of the student's files, copied into the clean folder."""

    shown: str  # how reports name it: relative to the kit, e.g. labs/reduction/reduction.cu
    original: Path
    clean: Path  # the copy that is compiled

    @property
    def text(self) -> str:
        """The file's text."""
        return self.clean.read_text(encoding="utf-8", errors="replace")


def _shown_name(kit: Path, lab: manifest.Lab, path: Path, work_dir: Path) -> str:
    """How a student's file is named in findings: relative to the kit (labs/<lab>/<lab>.cu)."""
    resolved = Path(os.path.abspath(path))
    for pattern in lab.editable:  # a copy anywhere: the editable path its end matches
        rel = pattern.replace("{lab}", lab.name)
        parts = rel.split("/")
        tail = "/".join(resolved.parts[-len(parts):])
        if fnmatch.fnmatchcase(tail, rel):
            return tail
    for base in (kit, work_dir):
        try:
            return resolved.relative_to(Path(os.path.abspath(base))).as_posix()
        except ValueError:
            pass
    return f"labs/{lab.name}/{path.name}"


class _IncludePolicy:
    """Which headers a student's file may include."""

    def __init__(self, session: _Session, sources: list[_Source], allow_families: set[str]) -> None:
        kit = session.kit
        self.kit = os.path.realpath(kit)
        self.lab_header = os.path.realpath(kit / "labs" / session.lab.name / f"{session.lab.name}.h")
        self.common = os.path.realpath(kit / "common" / "include")
        self.students = {os.path.realpath(s.clean): s for s in sources}
        self.roots = [(root, "toolkit") for root in session.tools.toolkit_includes]
        self.roots += [(root, "system") for root in session.tools.system_includes]
        self.allow_families = allow_families

    def verdict(self, real: str) -> tuple[str, str] | None:
        """None when `real` may be included, else (how to name it, why not)."""
        if real in self.students or real == self.lab_header or _under(real, self.common):
            return None
        if _under(real, self.kit):  # solutions/, another lab, the build folder
            return os.path.relpath(real, self.kit), OUTSIDE_WHY
        for root, _ in self.roots:
            if _under(real, root):
                rel = os.path.relpath(real, root)
                shown = rel[len("cccl/"):] if rel.startswith("cccl/") else rel
                family = _header_family(shown)
                if family is None or family[0] in self.allow_families:
                    return None
                return shown, family[2]
        return real, OUTSIDE_WHY


def _under(path: str, folder: str) -> bool:
    """Whether `path` is `folder` or inside it (both real paths)."""
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def _header_family(rel: str) -> tuple[str, str, str] | None:
    """(family, library, why) of a header path relative to an include root, if it is forbidden."""
    first = rel.split("/", 1)[0].lower()
    for name, exact, label, why in HEADER_FAMILIES:
        if (exact and first == name and "/" in rel) or (not exact and first.startswith(name)):
            return name, label, why
    return None


def _allowed_families(lab: manifest.Lab) -> set[str]:
    """Header families a lab's manifest lets in: those whose symbols its "allow" patterns match."""
    allowed = set()
    for name, _, _, _ in HEADER_FAMILIES:
        sample = f"{name}::x" if name in ("cub", "thrust") else f"{name}x"
        samples = {sample, sample.replace("nvjitlink", "nvJitLink")}
        if any(fnmatch.fnmatchcase(s, p) for s in samples for p in lab.allowed_symbols):
            allowed.add(name)
    return allowed


def parse_depfile(text: str) -> list[str]:
    """The prerequisites of a Makefile rule as written by `nvcc -M` (target left out)."""
    text = text.replace("\\\n", " ")
    tokens = [re.sub(r"\\(.)", r"\1", t).replace("$$", "$") for t in re.findall(r"(?:\\.|[^\s\\])+", text)]
    for i, token in enumerate(tokens):
        if token.endswith(":"):
            return tokens[i + 1:]
        if i + 1 < len(tokens) and tokens[i + 1] == ":":
            return tokens[i + 2:]
    return tokens


def _dependencies(session: _Session, source: _Source, out: Path) -> tuple[list[str], list[Path], bool]:
    """Every file the compiler reads for `source` (host and every device pass) and the preprocessed passes.

    Found with nvcc 13 (`--dryrun`): `nvcc -M` preprocesses the host pass and one device
    pass per architecture it is given (`-D__CUDA_ARCH__=<arch>`), and merges their
    dependencies; so a header included only under `#ifdef __CUDA_ARCH__` is listed, and
    one included only under `#if __CUDA_ARCH__ == 900` is listed when compute_90 is among
    the architectures: we give it all of `nvcc --list-gpu-arch`. Arch-specific feature
    macros (sm_90a's __CUDA_ARCH_FEAT_SM90_ALL) are not covered. `--keep` leaves the
    preprocessed passes (<name>.compute_XX.cpp1.ii, <name>.cpp4.ii), whose line markers
    tell which #include line of the student's file led to a header. Should an older nvcc
    keep no device pass, each architecture is preprocessed on its own (`-E -arch`).
    """
    keep = out / "keep"
    keep.mkdir(parents=True)
    depfile = out / "deps.d"
    gencode = [f"-gencode=arch={arch},code={arch}" for arch in session.tools.archs]
    language = ["-x", "cu"] if source.clean.suffix == ".cu" else ["-x", "c++"]
    flags = [session.tools.nvcc, "-M", *language, *COMPILE_FLAGS[2:], *session.include_flags(), *gencode]
    shown = [*flags, str(source.original), "-o", f"{source.clean.stem}.d"]
    done = session.run([*flags, str(source.clean), "-o", str(depfile), "--keep", f"--keep-dir={keep}"],
                       cwd=out, shown=shown)
    if done.returncode != 0:
        raise _CompileFailed(f"{source.shown} does not compile (the build reports the error):\n"
                             f"{_tail(done).replace(str(source.clean), source.shown)}")
    deps = parse_depfile(depfile.read_text(encoding="utf-8", errors="replace"))
    passes = sorted(keep.glob("*.ii"))
    complete = any(p.name.endswith(".cpp1.ii") for p in passes)  # -M read the device passes too
    if not complete:  # an nvcc that keeps no device pass
        for arch in session.tools.archs:
            target = keep / f"device.{arch}.cpp1.ii"
            flags = [session.tools.nvcc, "-E", *language, *COMPILE_FLAGS[2:], *session.include_flags(),
                     f"-arch={arch}"]
            done = session.run([*flags, str(source.clean), "-o", str(target)], cwd=out,
                               shown=[*flags, str(source.original), "-o", target.name])
            if done.returncode == 0:
                passes.append(target)
    return [os.path.realpath(os.path.join(out, d)) for d in deps], passes, complete


_MARKER = re.compile(r'^# (\d+) "((?:\\.|[^"\\])*)"((?: \d+)*)\s*$')


def _unescape(name: str) -> str:
    """A file name from a line marker, with GCC's escapes undone."""
    return re.sub(r"\\([0-7]{1,3}|.)", lambda m: chr(int(m.group(1), 8)) if m.group(1).isdigit() else m.group(1),
                  name)


@functools.lru_cache(maxsize=65536)
def _real(cwd: str, name: str) -> str:
    """The real path of a file named in a line marker (`<built-in>` and the like stay)."""
    return name if name.startswith("<") else os.path.realpath(os.path.join(cwd, name))


@dataclass
class _Frame:
    """One open file of the include stack while a preprocessed pass is read."""

    file: str
    line: int
    chain: dict | None = None  # the include chain that began at a student's #include
    # A student's file renamed by its own #line directive: the name the markers now use,
    # and real line minus the markers' line. The lines stay the student's.
    alias: str | None = None
    offset: int = 0


@dataclass
class Scan:
    """What the line markers of one preprocessed pass say."""

    located: dict[str, tuple[str, int]]  # outermost header of `bad` -> (student file, line its #include ends)
    nested: set[str]  # headers of `bad` seen only inside another one
    own: list[tuple[str, int, str]]  # the student's own lines (file, line, text), if asked
    seen: set[str]  # every file the pass read
    # #line directives in a student's file that name another file: (file, line, the name)
    renamed: list[tuple[str, int, str]] = field(default_factory=list)


def scan_preprocessed(path: Path, cwd: Path, students: set[str], bad: set[str],
                      keep_student_lines: bool = False) -> Scan:
    """Reads the line markers of one preprocessed pass (GCC's `# <line> "<file>" <flags>`)."""
    located: dict[str, tuple[str, int]] = {}
    nested: set[str] = set()
    seen: set[str] = set()
    own: list[tuple[str, int, str]] = []
    renamed: list[tuple[str, int, str]] = []
    stack: list[_Frame] = []
    base = str(cwd)
    started = False  # past the preamble (<built-in>, <command-line>): the main file's own markers
    with open(path, encoding="utf-8", errors="replace") as stream:
        for raw in stream:
            if raw.startswith("# "):
                marker = _MARKER.match(raw)
                if marker:
                    file = _real(base, _unescape(marker.group(2)))
                    flags = marker.group(3).split()
                    top = stack[-1] if stack else None
                    if (started and not flags and top is not None and top.file in students
                            and file != top.file and top.alias != file):
                        # Only a #line directive of the student's makes a flagless marker name
                        # another file inside theirs: the code that follows is still theirs.
                        renamed.append((top.file, top.line, marker.group(2)))
                        top.alias, top.offset = file, top.line + 1 - int(marker.group(1))
                        top.line += 1
                        continue
                    seen.add(file)
                    _marker(stack, int(marker.group(1)), file, flags, students, bad, located, nested)
                    if not flags and len(stack) == 1 and stack[0].file in students and int(marker.group(1)) >= 1:
                        started = True
                    continue
            if stack:
                top = stack[-1]
                if keep_student_lines and top.file in students and raw.strip():
                    own.append((top.file, top.line, raw.rstrip("\n")))
                top.line += 1
    return Scan(located, nested, own, {f for f in seen if not f.startswith("<")}, renamed)


def _marker(stack: list[_Frame], line: int, file: str, flags: list[str], students: set[str], bad: set[str],
            located: dict[str, tuple[str, int]], nested: set[str]) -> None:
    """Follows one line marker: entering a header (flag 1), returning (flag 2), or a new line number."""
    if "1" in flags:
        parent = stack[-1] if stack else None
        if parent is not None and parent.file in students:
            chain = {"file": parent.file, "bad": []}  # a chain begins at the student's #include
        else:
            chain = parent.chain if parent is not None else None
        inside_bad = any(frame.file in bad for frame in stack)
        stack.append(_Frame(file, line, chain))
        if file in bad and inside_bad:
            nested.add(file)
        elif file in bad and chain is not None and file not in located:
            chain["bad"].append(file)
        return
    if "2" in flags:
        while len(stack) > 1 and stack[-1].file != file:
            popped = stack.pop()
            # Back in the student's file: the line before the marker ends the #include.
            if stack[-1].file == file and file in students and popped.chain and popped.chain["file"] == file:
                for header in popped.chain["bad"]:
                    located.setdefault(header, (file, line - 1))
        if stack:
            stack[-1].line = line
        return
    for depth in range(len(stack) - 1, -1, -1):  # a new line number, maybe of a file further out
        if stack[depth].file == file or (stack[depth].alias is not None and stack[depth].alias == file):
            del stack[depth + 1:]
            frame = stack[-1]
            frame.line = line + (frame.offset if frame.file != file else 0)
            return
    if stack:
        stack[-1] = _Frame(file, line, stack[-1].chain)
    else:
        stack.append(_Frame(file, line))


def _directive_line(text: str, line: int) -> int:
    """The first line of the #include directive that ends at `line` (directives can span lines)."""
    lines = text.splitlines()
    for candidate in range(min(line, len(lines)), max(0, line - 10), -1):
        stripped = lines[candidate - 1].lstrip()
        if stripped.startswith(("#", "%:", "??=")):
            return candidate
    return line


def _include_findings(source: _Source, policy: _IncludePolicy, deps: list[str],
                      passes: list[Path], cwd: Path, complete: bool
                      ) -> tuple[list[rules.Finding], list[tuple[str, int, str]]]:
    """Findings for the headers `source` may not include, and the student's own preprocessed lines.

    `complete`: the dependency list covers every pass (else every pass is read for its files)."""
    students = set(policy.students)
    if not complete:  # an nvcc whose -M saw the host pass only: the line markers name the rest
        for path in passes:
            deps = deps + sorted(scan_preprocessed(path, cwd, students, set()).seen)
    verdicts = {dep: policy.verdict(dep) for dep in dict.fromkeys(deps)}
    bad = {dep for dep, verdict in verdicts.items() if verdict is not None}
    located: dict[str, tuple[str, int]] = {}
    nested: set[str] = set()
    own: list[tuple[str, int, str]] = []
    renamed: list[tuple[str, int, str]] = []
    host = [p for p in passes if not p.name.endswith(".cpp1.ii")]
    for path in host + [p for p in passes if p not in host]:
        is_host = path in host
        if not is_host and bad <= set(located) | nested:
            break  # every forbidden header placed: the device passes need not be read
        scan = scan_preprocessed(path, cwd, students, bad, keep_student_lines=is_host)
        for header, where in scan.located.items():
            located.setdefault(header, where)
        nested |= scan.nested
        own += scan.own
        renamed = renamed or scan.renamed
    findings = []
    for file, line, named in renamed:
        student = policy.students.get(file, source)
        findings.append(_finding(student, "defines", line, f"a #line directive names another file ({named}): "
                                 "it would hide where your code comes from; remove it", "#line"))
    reported_lines: set[tuple[str, int | None, str]] = set()
    for header in sorted(bad, key=lambda h: (located.get(h, ("", 1 << 30))[1], h)):
        if header not in located and header in nested:
            continue  # pulled in by a forbidden header that is reported
        shown, why = verdicts[header]
        file_real, line = located.get(header, (os.path.realpath(source.clean), None))
        student = policy.students.get(file_real, source)
        if line is not None:
            line = _directive_line(student.text, line)
        key = (student.shown, line, why)
        if header not in located and key in reported_lines:
            continue
        reported_lines.add(key)
        where = f"{student.shown}:{line}" if line else student.shown
        findings.append(rules.Finding("forbidden", "#include", student.shown, line,
                                      f"{where}: includes {shown} ({why})", rule="include"))
    return findings, own


# ---------------------------------------------------------------------------------------
# 2. and 3. The object


@dataclass
class _Symbol:
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
class _Object:
    """What readelf and objdump say about one object file."""

    symbols: list[_Symbol]
    # index -> (name, type, size, section a RELA section relocates, flags)
    sections: dict[int, tuple[str, str, int, int, str]]
    relocations: dict[int, list[tuple[int, str, int, int]]]  # target section -> (offset, type, symbol index, addend)
    # (section, start) -> (symbol name, [(address, instruction)])
    functions: dict[tuple[str, int], tuple[str, list[tuple[int, str]]]]
    demangled: dict[str, str]  # raw name -> demangled name, of symbols and disassembled functions


def _read_object(session: _Session, obj: Path) -> _Object:
    """Symbols, sections, relocations and disassembly of `obj`."""
    def tool(cmd: list[str]) -> str:
        """The output of one binutils run over the object."""
        done = session.run(cmd, step=TOOL_TIMEOUT_S, cap=OUTPUT_CAP)
        if done.stdout_cut:
            raise _Exceeded(f"the compiled object is too large to inspect ({' '.join(cmd[:2])} printed more "
                            f"than {OUTPUT_CAP >> 20} MiB)")
        if done.returncode != 0:
            raise CheckError(f"cannot read the compiled object {obj.name}: {_tail(done, 3)}")
        return done.stdout

    elf = tool(["readelf", "-W", "--section-headers", "--relocs", "--syms", str(obj)])
    disassembly = tool(["objdump", "-d", "-w", "--no-show-raw-insn", str(obj)])
    return object_from_text(elf, disassembly, lambda names: _demangle(session, names))


def object_from_text(elf: str, disassembly: str, demangle: Callable[[list[str]], dict[str, str]]) -> _Object:
    """An object as `readelf -W --section-headers --relocs --syms` and `objdump -d -w
    --no-show-raw-insn` print it; `demangle` maps raw names to demangled ones."""
    sections = _parse_sections(elf)
    symbols = _parse_symbols(elf)
    relocations = _parse_relocations(elf, sections)
    functions = _parse_disassembly(disassembly)
    names = demangle([s.name for s in symbols if s.name] + [f[0] for f in functions.values()])
    for symbol in symbols:
        symbol.demangled = names.get(symbol.name, symbol.name)
    return _Object(symbols, sections, relocations, functions, names)


def _parse_sections(text: str) -> dict[int, tuple[str, str, int, int, str]]:
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


def _parse_symbols(text: str) -> list[_Symbol]:
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
            symbols.append(_Symbol(int(num), int(value, 16), size_value, kind, bind, ndx, name or ""))
    return symbols


_RELOCATION = re.compile(r"^([0-9a-f]+)\s+([0-9a-f]+)\s+(\S+)(?:\s+[0-9a-f]+\s+.*?)?(?:\s+([+-])\s*([0-9a-f]+))?\s*$")


def _parse_relocations(text: str, sections: dict[int, tuple[str, str, int, int, str]]
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


def _parse_disassembly(text: str) -> dict[tuple[str, int], tuple[str, list[tuple[int, str]]]]:
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


def _demangle(session: _Session, names: list[str]) -> dict[str, str]:
    """Demangled forms of `names` (c++filt; `--` so that no name is read as an option)."""
    wanted = [n for n in dict.fromkeys(names) if n.startswith("_Z") and "\n" not in n]
    result: dict[str, str] = {}
    batch: list[str] = []
    size = 0
    for name in wanted + [None]:
        if name is not None and size + len(name) < 100_000 and len(batch) < 2000:
            batch.append(name)
            size += len(name) + 1
            continue
        if batch:
            done = session.run(["c++filt", "--", *batch], step=TOOL_TIMEOUT_S, cap=OUTPUT_CAP)
            out = done.stdout.split("\n")
            if done.returncode == 0 and len(out) >= len(batch):
                result.update(zip(batch, out))
        if name is not None:
            batch, size = [name], len(name) + 1
    return result


def _entity(demangled: str) -> str:
    """The entity a demangled name is about: `vtable for lab::X` -> `lab::X`."""
    for prefix in ENTITY_PREFIXES:
        if demangled.startswith(prefix):
            return _entity(demangled[len(prefix):])
    return demangled


_OPERATOR = re.compile(r"operator\s*(?:\(\)|\[\]|new\[\]|delete\[\]|new|delete|<=>|<<=|>>=|<<|>>|->\*|->|&&"
                       r"|\|\||\+\+|--|[-+*/%^&|~!=<>,]=?|\"\"\s*\w+|[^(<]+?(?=\())")


def _qualified(entity: str) -> str:
    """`R ns::f<T>(int) const [clone .cold]` -> `ns::f`: the name without return type, template
    arguments and parameters (`std::operator<<`, `operator new` keep their operator)."""
    text = re.sub(r"\s*\[clone [^\]]*\]", "", entity).replace("(anonymous namespace)::", "")
    out: list[str] = []
    depth, i = 0, 0
    while i < len(text):
        char = text[i]
        word_start = i == 0 or not (text[i - 1].isalnum() or text[i - 1] == "_")
        if depth == 0 and word_start and text.startswith("operator", i):
            match = _OPERATOR.match(text, i)
            if match and not (text[i + 8:i + 9].isalnum() or text[i + 8:i + 9] == "_") or \
                    (match and match.group(0)[8:9] == " "):
                out.append(match.group(0).rstrip())
                i = match.end()
                continue
        if char == "<":
            depth += 1
        elif char == ">" and depth:
            depth -= 1
        elif char == "(" and depth == 0:
            break
        elif depth == 0:
            out.append(char)
        i += 1
    name = "".join(out).strip()
    tokens = name.split(" ")
    first = next((n for n, token in enumerate(tokens) if "operator" in token), len(tokens) - 1)
    return " ".join(tokens[first:])


def _library_of(raw: str, demangled: str) -> str | None:
    """The work-doing library a symbol belongs to (CUB, Thrust, cuBLAS...), if any."""
    match = _NAMESPACE_LIBRARY.search(demangled)
    if match:
        return "CUB" if match.group(1) == "cub" else "Thrust"
    stub = re.search(r"__device_stub__(Z\w+)", demangled)
    if stub and re.search(r"N?\d*(?:3cub|6thrust)", stub.group(1)[:40]):
        return "CUB" if "3cub" in stub.group(1)[:40] else "Thrust"
    for pattern, label in LIBRARY_SYMBOLS:
        if fnmatch.fnmatchcase(raw, pattern):
            return label
    return None


def _library_code(function: _Symbol) -> bool:
    """Whether a function is code of CUB, Thrust, NVTX, or of libcu++ (cuda::), which CUB calls."""
    return bool(_library_of(function.name, function.demangled)) or _qualified(function.demangled).startswith("cuda::")


def _matches(name: str, patterns: tuple[str, ...] | list[str]) -> bool:
    """Whether `name` matches one of the fnmatch `patterns` (case matters)."""
    return any(fnmatch.fnmatchcase(name, p) for p in patterns)


def _why_forbidden(raw: str, entity: str) -> tuple[str, str]:
    """(family name, reason) for a symbol that is not allowed."""
    qualified = _qualified(entity)
    for patterns, reason in SYMBOL_FAMILIES:
        if _matches(raw, patterns) or _matches(qualified, patterns):
            why = rules.BUILTIN_RULES[reason][1] if reason in rules.BUILTIN_RULES else reason
            return reason, why
    return raw, ("not among the calls a lab may make: use the CUDA runtime calls of the handout, the kit's lab:: "
                 "helpers and the C++ standard library")


KIT_CODE_WHY = {
    "kit-cpu": "the kit's sequential versions, which the tests compare your results with: compute the result on "
               "the GPU with code of your own",
    "kit-helper": "the kit's code for its tests, which links the sequential versions the tests compare your results "
                  "with into your library: your implementation needs none of it",
}


def _kit_test_code(entity: str, ctx: "_ObjectContext") -> str:
    """'kit-cpu' when an undefined symbol is one of the lab header's sequential versions
    (reduce_sum_cpu, matmul_cpu_with_magnitude: the tests' answer key), 'kit-helper' when it
    is another out-of-line function of the header that is not the interface
    (reduce_sum_error_bound, sobel_test_image: they live beside the sequential versions, so
    calling one links them all in, where a function pointer and a fixed offset reach
    them), else ''. The header's inline helpers (compact_keep, the tolerances) compile
    into the file and are never undefined symbols."""
    qualified = _qualified(entity)
    if qualified not in ctx.kit_functions or qualified in ctx.interface:
        return ""
    return "kit-cpu" if re.search(r"_cpu(?:_|$)", qualified) else "kit-helper"


def _undefined_allowed(raw: str, entity: str, kit_functions: set[str], own: set[str]) -> bool:
    """Whether an undefined symbol is on the allowlist."""
    if raw in own or _matches(raw, CUDA_RUNTIME_ALLOWED + NVCC_HELPERS + CXX_RUNTIME_ALLOWED + C_ALLOWED):
        return True
    qualified = _qualified(entity)
    if qualified.startswith("lab::") or qualified in kit_functions:
        return True
    if _matches(qualified, STD_ALLOWED):
        return not any(_matches(qualified, patterns) for _, patterns in STD_FORBIDDEN)
    return False


def _header_functions(header: Path) -> set[str]:
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


def _header_identifiers(paths: list[str]) -> set[str]:
    """Every identifier spelled in the kit headers the file included."""
    words: set[str] = set()
    for path in paths:
        try:
            words.update(re.findall(r"[A-Za-z_]\w*", Path(path).read_text(encoding="utf-8", errors="replace")))
        except OSError:
            continue
    return words


def _source_line(text: str, names: list[str]) -> int | None:
    """The first line of `text` (comments and directives blanked) that spells one of `names` as a word."""
    code = re.sub(r"(?m)^[ \t]*(?:#|%:).*$", "", rules.blank_comments(text))
    for name in names:
        if not name or not re.match(r"^[\w$]+$", name):
            continue
        match = re.search(rf"(?<![\w$]){re.escape(name)}(?![\w$])", code)
        if match:
            return code.count("\n", 0, match.start()) + 1
    return None


def _search_names(raw: str, entity: str) -> list[str]:
    """Words to look for in the source for a symbol: `cublasCreate_v2` -> cublasCreate_v2, cublasCreate."""
    if not raw.startswith("_Z"):
        return [raw, re.sub(r"_v\d+$", "", raw)]
    parts = [p for p in re.split(r"::|~", _qualified(entity))
             if p and p not in ("std", "lab", "__cxx11", "detail") and not re.match(r"^(?:CUB|THRUST)_\d", p)]
    return list(reversed(parts))


def _short(name: str, limit: int = 90) -> str:
    """`name`, cut to `limit` characters for a message."""
    return name if len(name) <= limit else name[:limit - 3] + "..."


@dataclass
class _ObjectContext:
    """What the symbol checks of one object need to know about the lab and the student's files."""

    source: _Source
    lab: str
    kit_functions: set[str]  # functions the lab header declares
    interface: set[str]  # the lab's interface functions (the student defines them)
    own_defined: set[str]  # raw names defined by any of the student's objects
    kit_identifiers: set[str]  # identifiers of the kit headers the file included
    allowed: tuple[str, ...]
    forbidden: tuple[str, ...]
    section_flags: dict[int, str] = field(default_factory=dict)


def _finding(source: _Source, rule: str, line: int | None, message: str, pattern: str) -> rules.Finding:
    """A forbidden-rule finding in `source`, its message led by `file:line:`."""
    where = f"{source.shown}:{line}" if line else source.shown
    return rules.Finding("forbidden", pattern, source.shown, line, f"{where}: {message}", rule=rule)


def _symbol_findings(obj: _Object, ctx: _ObjectContext) -> list[rules.Finding]:
    """Findings from the symbol table: what the object uses and what it defines."""
    findings: list[rules.Finding] = []
    seen: set[tuple[str, str]] = set()
    text = ctx.source.text
    stubs = _exit_stubs(obj)
    origins = _reference_origins(obj)
    uses_library = any(_library_of(s.name, s.demangled) for s in obj.symbols if s.name and s.type != "SECTION")
    libraries: dict[str, list[tuple[str, _Symbol]]] = {}
    families: dict[str, tuple[str, list[_Symbol]]] = {}  # forbidden family -> (why, its symbols)

    def add(rule: str, key: str, raw: str, entity: str, message: str) -> None:
        """Adds one finding per rule and key, at the first source line that names the symbol."""
        if (rule, key) in seen:
            return
        seen.add((rule, key))
        names = _search_names(raw, entity)
        if rule == "cub":  # the library's own names first: cub::WarpReduce -> WarpReduce
            names = re.findall(r"(?:cub|thrust)::(?:(?:CUB|THRUST)_\w+::)?(?:detail::)?(\w+)", entity) + names
        line = _source_line(text, names)
        findings.append(_finding(ctx.source, rule, line, message, raw))

    for symbol in obj.symbols:
        if not symbol.name or symbol.type in ("SECTION", "FILE"):
            continue
        raw, entity = symbol.name, _entity(symbol.demangled)
        shown = _short(symbol.demangled)
        if _matches(raw, ctx.forbidden) or _matches(symbol.demangled, ctx.forbidden):
            add("symbol", f"manifest:{raw}", raw, entity,
                f"uses `{shown}`, which this lab forbids (labs/{ctx.lab}/lab.json, \"symbols\")")
            continue
        if _matches(raw, ctx.allowed) or _matches(symbol.demangled, ctx.allowed):
            continue
        library = _library_of(raw, symbol.demangled)  # local symbols too: a CUB kernel may be static
        if library is not None:
            libraries.setdefault(_LIBRARY_GROUP.get(library, library), []).append((library, symbol))
            continue
        if symbol.defined and not symbol.is_global:
            continue  # local symbols do not interpose
        if symbol.defined:
            problem = _defines_problem(symbol, entity, ctx)
            if problem:
                add("defines", raw, raw, entity, problem)
            continue
        if raw == "exit" and _only_from_stubs(obj, symbol.index, stubs):
            continue  # nvcc's host bodies of __device__ functions call exit(1); nothing calls them
        callers = origins.get(symbol.index)
        if uses_library and callers and all(c is not None and _library_code(c) for c in callers):
            continue  # used only inside CUB, Thrust or NVTX code (and libcu++ under them): a finding of its own
        kit_code = _kit_test_code(entity, ctx)
        if kit_code and raw not in ctx.own_defined:
            families.setdefault(kit_code, (KIT_CODE_WHY[kit_code], []))[1].append(symbol)
            continue
        if _undefined_allowed(raw, entity, ctx.kit_functions, ctx.own_defined):
            continue
        family, why = _why_forbidden(raw, entity)
        families.setdefault(family, (why, []))[1].append(symbol)
    for family, (why, symbols) in families.items():  # one finding per family: `fopen` and `open`
        lines = [_source_line(text, _search_names(s.name, _entity(s.demangled))) for s in symbols]
        first = min(range(len(symbols)), key=lambda i: (lines[i] is None, lines[i] or 0))
        names = [_short(symbols[first].demangled)] + [_short(s.demangled) for s in symbols if s is not symbols[first]]
        findings.append(_finding(ctx.source, "symbol", lines[first], f"uses {_listing(names)} ({why})",
                                 symbols[first].name))
    for group, hits in libraries.items():  # one finding per library (CUB pulls in Thrust and NVTX: one)
        library, symbol = min(hits, key=lambda hit: _LIBRARY_ORDER.index(hit[0]) if hit[0] in _LIBRARY_ORDER else 99)
        add("cub", group, symbol.name, _entity(symbol.demangled),
            f"uses {library} (`{_short(symbol.demangled)}`): {_LIBRARY_WHY[library]}")
    return findings


def _listing(names: list[str]) -> str:
    """`a`; `a` and `b`; `a`, `b` and `c`; `a`, `b` and 3 more."""
    quoted = [f"`{n}`" for n in names]
    if len(quoted) <= 1:
        return "".join(quoted)
    if len(quoted) <= 3:
        return ", ".join(quoted[:-1]) + " and " + quoted[-1]
    return f"{quoted[0]}, {quoted[1]} and {len(quoted) - 2} more"


def _defines_problem(symbol: _Symbol, entity: str, ctx: _ObjectContext) -> str | None:
    """Why defining `symbol` is not allowed (it would replace something at link time), or None."""
    raw = symbol.name
    weak = symbol.bind in ("WEAK", "UNIQUE")
    if _matches(raw, NVCC_DEFINED):
        return None
    if symbol.type == "NOTYPE":
        return f"defines `{_short(raw)}` in assembly: write functions in C++ and CUDA"
    if not raw.startswith("_Z"):  # C linkage, or a variable of the global namespace
        runtime_name = (raw in LIBC_DATA or raw.startswith("_") or re.match(r"^cu(?:da)?[A-Z_]", raw)
                        or _matches(raw, CUDA_RUNTIME_ALLOWED + C_ALLOWED + CXX_RUNTIME_ALLOWED))
        if symbol.type in ("FUNC", "GNU_IFUNC") or runtime_name:
            what = "a CUDA runtime function" if re.match(r"^_*cu", raw) else "a C function or variable"
            return (f"defines `{raw}`, {what} with C linkage that would replace the real one at link time: "
                    "rename it, and give your helpers internal linkage (static or an anonymous namespace)")
        return None
    qualified = _qualified(entity)
    if qualified.startswith("lab::"):
        # Allowed: an inline function or template instantiation of a kit header the file
        # included (weak, in a COMDAT group); not __attribute__((weak)) in a plain section.
        parts = [p.lstrip("~") for p in qualified.split("::")[1:] if p]
        comdat = symbol.section.isdigit() and "G" in ctx.section_flags.get(int(symbol.section), "")
        if not weak or not comdat or not parts or not all(p in ctx.kit_identifiers for p in parts):
            return (f"defines `{_short(symbol.demangled)}` in the kit's namespace lab, which would replace the kit's "
                    "own code: use the kit's helpers as they are and put your code outside namespace lab")
        return None
    if qualified.startswith(("operator new", "operator delete")):
        return (f"defines `{_short(symbol.demangled)}`, which replaces the C++ runtime's for the whole program: "
                "allocate device memory with cudaMalloc and host memory with std::vector")
    if not weak and re.match(r"^(?:std|__gnu_cxx|__cxxabiv1)::", qualified):
        return (f"defines `{_short(symbol.demangled)}` of the C++ standard library, which would replace the real "
                "one at link time: rename it and keep it out of namespace std")
    if qualified in ctx.kit_functions and qualified not in ctx.interface and symbol.type in ("FUNC", "GNU_IFUNC"):
        return (f"defines `{_short(symbol.demangled)}`, a function the kit provides (the tests use it): write only "
                f"{', '.join(sorted(ctx.interface))} and helpers of your own with other names")
    return None


_STUB_SETUP = re.compile(r"^(?:endbr64|push\s+%rbp|mov\s+%rsp,%rbp|sub\s+\$0x[0-9a-f]+,%rsp|mov\s+%eax,%edi)$")
_STUB_STORE = re.compile(r"^movl\s+\$0x1,((?:-?0x[0-9a-f]+)?\(%r[sb]p\))$")
_STUB_LOAD = re.compile(r"^mov\s+((?:-?0x[0-9a-f]+)?\(%r[sb]p\)),%e(?:di|ax)$")
_STUB_SPILL = re.compile(r"^mov[a-z]*\s+%[a-z0-9]+,((?:-?0x[0-9a-f]+)?\(%r[sb]p\))$")  # -O0 saves the arguments
_PADDING = re.compile(r"^(?:nop|xchg\s+%ax,%ax|data16|cs nopw|int3|ud2|hlt|\(bad\))")


def _is_exit_stub_shape(insns: list[str]) -> bool:
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


def _exit_stubs(obj: _Object) -> dict[str, list[tuple[int, int]]]:
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
        if symbol is None or not _is_exit_stub_shape([text for _, text in insns]):
            continue
        end = start + max(symbol.size, 1)
        own = referenced.get(f"{section}@{start:x}", set())
        others = [a for a in referenced.get(section, ()) if a not in own or not start <= a < end]
        if any(start <= address < end for address in others) or symbol.index in referenced["#"]:
            continue
        stubs.setdefault(section, []).append((start, end))
    return stubs


def _referenced(obj: _Object) -> dict[str, set[int]]:
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


def _reference_origins(obj: _Object) -> dict[int, list[_Symbol | None]]:
    """For each symbol index, the functions whose code refers to it (None: data refers to it)."""
    ranges: dict[int, list[_Symbol]] = {}
    for symbol in obj.symbols:
        if symbol.type in ("FUNC", "GNU_IFUNC") and symbol.section.isdigit() and symbol.size:
            ranges.setdefault(int(symbol.section), []).append(symbol)
    names = {i: info[0] for i, info in obj.sections.items()}
    origins: dict[int, list[_Symbol | None]] = {}
    for target, entries in obj.relocations.items():
        if names.get(target, "").startswith((".eh_frame", ".debug")):
            continue
        functions = ranges.get(target, [])
        for offset, _, index, _ in entries:
            holder = next((f for f in functions if f.value <= offset < f.value + f.size), None)
            origins.setdefault(index, []).append(holder)
    return origins


def _only_from_stubs(obj: _Object, index: int, stubs: dict[str, list[tuple[int, int]]]) -> bool:
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


def _constructor_findings(obj: _Object, source: _Source, own: set[str] | frozenset[str] = frozenset()
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
            findings.append(_finding(source, "constructor", None,
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
            if target is not None and _matches(target.name, COMPILER_CONSTRUCTORS) and not foreign:
                if _matches(target.name, INITIALISER_PARTS):
                    findings += _initialiser_findings(obj, source, target, own)
                continue
            shown = _short(target.demangled or target.name) if target is not None else None
            what = f"a {'destructor' if when == 'unload' else 'constructor'} function runs at {when} time"
            if shown and foreign:
                line = _source_line(text, _search_names(target.name, _entity(target.demangled or target.name)))
                message = f"{what}: {shown}, from an entry of {name} (remove it; {_LOAD_TIME_HINT})"
                if line is None and f'"{name}' in text:  # the section attribute that made the entry
                    line = text.count("\n", 0, text.index(f'"{name}')) + 1
            elif shown:
                line = _source_line(text, _search_names(target.name, _entity(target.demangled or target.name)))
                message = (f"{what}: {shown} (remove __attribute__((constructor/destructor)); do the work inside "
                           "the lab's functions)")
            else:
                line = None
                message = f"{what}: an unnamed one (entry of {name}); do the work inside the lab's functions"
            findings.append(_finding(source, "constructor", line, message, name))
        if size > 8 * len(entries):  # a slot without a relocation points to a fixed address
            findings.append(_finding(source, "constructor", None,
                                     f"an entry of {name} points to a fixed address that runs at load time: "
                                     "do the work inside the lab's functions", name))
    return findings + _ifunc_findings(obj, source) + _tls_init_findings(obj, source)


def _symbol_line(source: _Source, symbol: _Symbol) -> int | None:
    """The first line of the student's file that names `symbol`."""
    return _source_line(source.text, _search_names(symbol.name, _entity(symbol.demangled or symbol.name)))


def _ifunc_findings(obj: _Object, source: _Source) -> list[rules.Finding]:
    """IFUNC symbols and IRELATIVE relocations: the resolver runs while the program is loaded."""
    findings = []
    functions = {(s.section, s.value): s for s in obj.symbols
                 if s.type == "FUNC" and s.section.isdigit() and s.name}
    for symbol in obj.symbols:
        if symbol.type not in IFUNC_TYPES or not symbol.defined or not symbol.name:
            continue
        resolver = functions.get((symbol.section, symbol.value))
        shown = _short(symbol.demangled or symbol.name)
        by = f" (its resolver `{_short(resolver.demangled or resolver.name)}`)" if resolver is not None else ""
        line = _symbol_line(source, symbol) or (_symbol_line(source, resolver) if resolver is not None else None)
        findings.append(_finding(source, "constructor", line,
                                 f"`{shown}` is an IFUNC{by}: the resolver runs at load time, while the program's "
                                 f"symbols are bound (remove __attribute__((ifunc)); {_LOAD_TIME_HINT})",
                                 symbol.name))
    by_index = {s.index: s for s in obj.symbols}
    for entries in obj.relocations.values():
        for _, kind, index, _ in entries:
            if "IRELATIVE" not in kind:
                continue
            symbol = by_index.get(index)
            line = _symbol_line(source, symbol) if symbol is not None and symbol.name else None
            findings.append(_finding(source, "constructor", line,
                                     f"an {kind} relocation calls a resolver at load time: {_LOAD_TIME_HINT}", kind))
            break
    return findings


def _tls_init_findings(obj: _Object, source: _Source) -> list[rules.Finding]:
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
        shown = _short(_entity(symbol.demangled or symbol.name))
        findings.append(_finding(source, "constructor", _symbol_line(source, symbol),
                                 f"the thread_local object `{shown}` has a constructor, which runs outside the lab's "
                                 "functions (on a thread's first use of it): make it a plain value, or a local "
                                 "variable of the lab's function", symbol.name))
    return findings


def _relocations_in(obj: _Object, function: _Symbol) -> list[tuple[int, str, int, int]]:
    """The relocations that apply inside `function`'s code."""
    if not function.section.isdigit():
        return []
    end = function.value + max(function.size, 1)
    return [e for e in obj.relocations.get(int(function.section), []) if function.value <= e[0] < end]


@dataclass
class _Code:
    """Lookups over an object's code for following what an initialiser calls."""

    obj: _Object
    by_index: dict[int, _Symbol]
    section_index: dict[str, int]
    # section index -> sorted [(start, symbol)] of functions and objects defined there
    defined: dict[int, list[tuple[int, _Symbol]]]
    relocations: dict[int, list[tuple[int, str, int, int]]]  # section index -> sorted by offset

    @classmethod
    def of(cls, obj: _Object) -> "_Code":
        """The lookups of `obj`."""
        defined: dict[int, list[tuple[int, _Symbol]]] = {}
        for symbol in obj.symbols:
            if symbol.type in ("FUNC", "OBJECT", "TLS", *IFUNC_TYPES) and symbol.section.isdigit() and symbol.name:
                defined.setdefault(int(symbol.section), []).append((symbol.value, symbol))
        for entries in defined.values():
            entries.sort(key=lambda e: (e[0], e[1].bind == "LOCAL"))
        return cls(obj, {s.index: s for s in obj.symbols}, {i[0]: n for n, i in obj.sections.items()}, defined,
                   {n: sorted(e) for n, e in obj.relocations.items()})

    def at(self, section: int, address: int) -> _Symbol | None:
        """The function or object of `section` that covers `address`."""
        best = None
        for start, symbol in self.defined.get(section, []):
            if start <= address < start + max(symbol.size, 1):
                if best is None or (best.bind == "LOCAL" and symbol.bind != "LOCAL"):
                    best = symbol
        return best

    def target(self, kind: str, index: int, addend: int) -> _Symbol | None:
        """What one relocation refers to: its symbol, or the function or object of a section symbol."""
        symbol = self.by_index.get(index)
        if symbol is None or symbol.type != "SECTION":
            return symbol
        if not symbol.section.isdigit():
            return None
        pc = 4 if ("PC" in kind or "PLT" in kind or "GOTPCREL" in kind) else 0
        return self.at(int(symbol.section), symbol.value + addend + pc)

    def body(self, function: _Symbol) -> list[tuple[int, str, list[tuple[int, str, int, int]]]]:
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


_BRANCH = re.compile(r"^(?:(?:bnd|notrack)\s+)*(call|jmp|j[a-z]+)[a-z]*\s+(\*?)(\S*)")
_WRITES_REG = re.compile(r"^(?:mov|lea)[a-z]*\s+(.*),%(\w+)$")
_CALLEE_SAVED = ("rbx", "rbp", "r12", "r13", "r14", "r15")  # kept across a call (System V x86-64)
_REG64 = {"edi": "rdi", "esi": "rsi", "edx": "rdx", "ecx": "rcx", "eax": "rax", "ebx": "rbx", "ebp": "rbp"}


def _is_initialiser_part(symbol: _Symbol) -> bool:
    """Whether a function is the compiler's own initialisation code (or a `.cold` part of it)."""
    base = re.sub(r"\.(?:cold|part|constprop|isra)(?:\.\d+)?$", "", symbol.name)
    return _matches(base, INITIALISER_PARTS) or _matches(symbol.demangled.split("(")[0], INITIALISER_PARTS)


def _library(symbol: _Symbol) -> bool:
    """Whether `symbol` is the C++ runtime's, the standard library's (less the families that
    reach outside the process) or the kit's."""
    entity = _entity(symbol.demangled or symbol.name)
    if _matches(symbol.name, INITIALISER_RUNTIME):
        return True
    if any(_matches(entity, patterns) for _, patterns in STD_FORBIDDEN):
        return False
    return _matches(entity, INITIALISER_LIBRARY) or _matches(_qualified(entity), INITIALISER_LIBRARY)


def _register_source(code: _Code, body: list, n: int, register: str) -> tuple[_Symbol | None, bool]:
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


def _initialiser_findings(obj: _Object, source: _Source, entry: _Symbol,
                          own: set[str] | frozenset[str] = frozenset()) -> list[rules.Finding]:
    """What the compiler's dynamic initialisation `entry` does beyond what the toolchain
    needs: calls to the file's own functions (a static object's constructor), to anything
    but the runtime, memory, the standard library and the kit, calls through a pointer,
    references to outside data, and destructors of the file's own handed to __cxa_atexit.
    Functions of the standard library or the kit defined in the object (template
    instantiations) are followed, and so are the destructors handed to __cxa_atexit."""
    code = _Code.of(obj)
    problems: dict[str, tuple[str, _Symbol | None, _Symbol | None]] = {}  # key -> (message, object, named)
    outside: dict[str, _Symbol] = {}  # what it calls or refers to outside the file, in order
    todo, seen = [entry], set()

    def flag(key: str, message: str, what: _Symbol | None, named: _Symbol | None) -> None:
        problems.setdefault(key, (message, what, named))

    while todo:
        function = todo.pop()
        if function.index in seen:
            continue
        seen.add(function.index)
        body = code.body(function)
        end = function.value + max(function.size, 1)
        for n, (address, insn, relocations) in enumerate(body):
            insn = insn.split("#")[0].strip()  # objdump's comment: `# 1f <f+0x1f>`
            branch = _BRANCH.match(insn)
            if branch and branch.group(2) and not relocations:
                flag(f"indirect:{function.name}", "calls a function through a pointer", None, None)
                continue
            targets = [code.target(kind, index, addend) for _, kind, index, addend in relocations]
            if branch and not relocations:
                local = re.match(r"^([0-9a-f]+)", branch.group(3))
                if local and not function.value <= int(local.group(1), 16) < end:
                    targets = [code.at(int(function.section), int(local.group(1), 16))]
            for target in targets:
                if target is None or target.index == function.index:
                    continue  # a string, a constant, a jump within the function
                shown = _short(target.demangled or target.name)
                if branch and target.name in AT_EXIT:
                    destructor, found = _register_source(code, body, n, "rdi")
                    owner, _ = _register_source(code, body, n, "rsi")
                    owner = owner if owner is not None and owner.type in ("OBJECT", "TLS") else None
                    if destructor is None or destructor.type not in ("FUNC", "NOTYPE", *IFUNC_TYPES):
                        flag(f"atexit:{address}", f"hands a function that the check cannot name to {target.name}, "
                             "to run at exit", owner, None)
                    elif not (_library(destructor) or _is_initialiser_part(destructor)):
                        flag(f"atexit:{destructor.name}", f"hands `{_short(destructor.demangled or destructor.name)}` "
                             f"to {target.name}, to run at exit", owner, destructor)
                    elif destructor.defined:
                        todo.append(destructor)
                    continue
                if target.defined and target.type in ("OBJECT", "TLS", "NOTYPE") and not branch:
                    continue  # the file's own objects: constructing them is what an initialiser does
                if target.defined and (_is_initialiser_part(target) or _library(target)):
                    if branch:  # followed, whatever its type: a name is no proof (a local asm label)
                        todo.append(target)
                    continue
                mine = target.defined or target.name in own  # the student's other files count as this one
                if mine and not branch:
                    continue  # a function's address taken (the kit's LAB_REGISTER_VARIANT), not called
                if mine:
                    this, _ = _register_source(code, body, n, "rdi")
                    this = this if this is not None and this.type in ("OBJECT", "TLS") else None
                    flag(f"call:{target.name}", f"calls `{shown}`", this, target)
                elif not _library(target) and target.name not in outside:
                    outside[target.name] = target
    if outside:
        named = list(outside.values())
        lines = [_symbol_line(source, n) for n in named]
        first = min(range(len(named)), key=lambda i: (lines[i] is None, lines[i] or 0))
        listing = _listing([_short(named[first].demangled or named[first].name)]
                           + [_short(n.demangled or n.name) for n in named if n is not named[first]])
        problems["outside"] = (f"uses {listing}", None, named[first])  # calls, or refers to
    findings = []
    for message, what, named in problems.values():
        line = None
        if what is not None:
            line = _symbol_line(source, what)
            shown = _short(_entity(what.demangled or what.name))
            message = f"the initialisation of the static object `{shown}` {message}"
        else:
            message = f"a static object's initialisation {message}"
        if line is None and named is not None:
            line = _symbol_line(source, named)
        findings.append(_finding(source, "constructor", line,
                                 f"{message}: code of your file runs at load time, before the tests start (construct "
                                 "the object inside the lab's functions, or make it constexpr)",
                                 named.name if named is not None else entry.name))
    return findings


def _registration_findings(obj: _Object, source: _Source) -> list[rules.Finding]:
    """References to the runtime's registration helpers from anywhere but nvcc's own
    registration functions: the file registers device code it did not compile."""
    origins = _reference_origins(obj)
    registrars = set(NVCC_REGISTRARS)
    sti = next((insns for name, insns in obj.functions.values() if name == NVCC_REGISTRARS[0]), [])
    if any(f"<{NVCC_CALLBACK}>" in insn for _, insn in sti):
        registrars.add(NVCC_CALLBACK)
    findings = []
    for symbol in obj.symbols:
        if symbol.defined or not _matches(symbol.name, REGISTRATION_HELPERS):
            continue
        for holder in origins.get(symbol.index, []):
            if holder is not None and holder.bind == "LOCAL" and holder.type == "FUNC" and holder.name in registrars:
                continue
            where = f"in {_short(holder.demangled or holder.name)}" if holder is not None else "from data"
            line = (_source_line(source.text, _search_names(holder.name, _entity(holder.demangled or holder.name)))
                    if holder is not None else None)
            findings.append(_finding(source, "symbol", line,
                                     f"calls {symbol.name} {where}: it registers device code with the CUDA "
                                     "runtime, which only the compiler's own registration of your file may do "
                                     "(code not compiled from your file, e.g. a reference's, would run as "
                                     "yours): launch only the kernels your file defines", symbol.name))
    return findings


def _syscall_findings(obj: _Object, source: _Source, names: dict[str, str]) -> list[rules.Finding]:
    """Instructions in the host code that enter the operating system's kernel directly."""
    findings = []
    text = source.text
    for (_, _), (name, insns) in sorted(obj.functions.items()):
        hits = [insn.split()[0] for _, insn in insns if SYSCALL_INSN.match(insn)]
        if not hits:
            continue
        shown = _short(names.get(name, name))
        code = re.sub(r"//[^\n]*|/\*.*?\*/", lambda m: re.sub(r"[^\n]", " ", m.group(0)), text, flags=re.DOTALL)
        word = {"int": "0x80"}.get(hits[0], hits[0])  # comments blanked, strings kept: asm("syscall")
        match = re.search(rf"\b{re.escape(word)}\b", code)
        line = code.count("\n", 0, match.start()) + 1 if match else None
        if line is None:
            line = _source_line(text, _search_names(name, _entity(names.get(name, name))))
        findings.append(_finding(source, "syscall", line,
                                 f"`{hits[0]}` in {shown} enters the operating system directly: the implementation "
                                 "only launches kernels and calls the CUDA runtime", hits[0]))
    return findings


_LITERAL = re.compile(
    r"""(?P<raw>(?:u8|u|U|L)?R"(?P<delim>[^()\\\s]{0,16})\((?P<rawbody>.*?)\)(?P=delim)")"""
    r"""|(?P<str>(?:u8|u|U|L)?"(?P<body>(?:\\.|[^"\\\n])*)")"""
    r"""|(?P<chr>(?:u8|u|U|L)?'(?:\\.|[^'\\\n])+')""",
    re.DOTALL)
_ESCAPE = re.compile(r"\\(?:x([0-9a-fA-F]+)|([0-7]{1,3})|u([0-9a-fA-F]{4})|U([0-9a-fA-F]{8})|(.))", re.DOTALL)
_SIMPLE_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "v": "\v", "f": "\f", "a": "\a", "b": "\b", "e": "\x1b"}


def _unescape_c(body: str) -> str:
    """The characters a C string literal's body stands for (hex, octal and named escapes)."""
    def one(match: re.Match[str]) -> str:
        hex_, octal, small, big, other = match.groups()
        number = hex_ or small or big
        if number is not None:
            return chr(min(int(number, 16), 0x10FFFF))
        if octal is not None:
            return chr(int(octal, 8))
        return _SIMPLE_ESCAPES.get(other, other)
    return _ESCAPE.sub(one, body)


def string_literals(text: str) -> list[tuple[int, str]]:
    """(offset, characters) of each string in preprocessed C++ `text`, adjacent literals
    joined as the compiler joins them (character literals are skipped)."""
    out: list[tuple[int, str]] = []
    end = -1
    for match in _LITERAL.finditer(text):
        if match.group("chr") is not None:
            end = -1
            continue
        value = match.group("rawbody") if match.group("raw") is not None else _unescape_c(match.group("body"))
        if out and end >= 0 and not text[end:match.start()].strip():
            out[-1] = (out[-1][0], out[-1][1] + value)
        else:
            out.append((match.start(), value))
        end = match.end()
    return out


def _joined(lines: list[tuple[int, str]]) -> tuple[str, Callable[[int], int]]:
    """The student's lines (line number, text) as one text, and the line number of an
    offset in it."""
    starts = [0]
    for _, text in lines[:-1]:
        starts.append(starts[-1] + len(text) + 1)

    def line_at(offset: int) -> int:
        return lines[bisect.bisect_right(starts, offset) - 1][0]

    return "\n".join(text for _, text in lines), line_at


def _assembler_findings(source: _Source, joined: str, line_at: Callable[[int], int]) -> list[rules.Finding]:
    """Strings of the student's code that hold assembler directives reading files (.incbin)."""
    findings = []
    for offset, value in string_literals(joined):
        found = ASSEMBLER_DIRECTIVES.search(value)
        if found is None:
            continue
        directive = "." + found.group(1).lower()
        findings.append(_finding(source, "include", line_at(offset),
                                 f"an assembler {directive} directive: it reads a file of the grading machine into "
                                 "your program (or builds one that does) at compile time, so the lab is not "
                                 "tested; write your code in C++ and CUDA", READS_FILES))
    return findings


def _source_text_findings(own: list[tuple[str, int, str]], policy: _IncludePolicy) -> list[rules.Finding]:
    """The student's preprocessed code: names only the compiler generates, the kit's namespace opened."""
    findings = []
    seen = set()
    by_file: dict[str, list[tuple[int, str]]] = {}
    for file, line, text in own:
        by_file.setdefault(file, []).append((line, text))
    for file, lines in by_file.items():
        source = policy.students.get(file)
        if source is None:
            continue
        joined, line_at = _joined(lines)
        findings += _assembler_findings(source, joined, line_at)
        for pattern, message in ((RESERVED_NAMES, "uses `{}`, a name reserved for code the compiler generates: "
                                  "rename it"),
                                 (KIT_DEFINITION, "defines a function of the kit's namespace lab (`{}`), which "
                                  "would replace the kit's own code: use the kit's helpers as they are"),
                                 (KIT_NAMESPACE, "adds to the kit's namespace lab (`{}`), which would replace the "
                                  "kit's own code: use the kit's helpers as they are and keep your code outside it")):
            for match in pattern.finditer(joined):
                line = line_at(match.start())
                if (source.shown, line, pattern.pattern) in seen:
                    continue
                seen.add((source.shown, line, pattern.pattern))
                spelled = _short(" ".join(match.group(0).split()), 40)
                findings.append(_finding(source, "defines", line, message.format(spelled), match.group(0)))
    return findings


# ---------------------------------------------------------------------------------------
# The stage


def check_lab(kit: Path, lab: manifest.Lab, files: list[Path], *, work_dir: Path, object_file: Path | None = None,
              nvcc: str | None = None, timeout: float = 120.0) -> CheckResult:
    """Static checks of the student's editable `files` of `lab` against the kit at `kit`.

    `object_file` is an already compiled object of the main file (labs/<lab>/<lab>.cu);
    without it the check compiles one into a private folder under `work_dir`. Everything
    the check writes is removed before it returns."""
    result = CheckResult()
    found = find_nvcc(nvcc)
    if found is None:
        where = nvcc or "looked on PATH, in $CUDA_HOME/bin and /usr/local/cuda/bin"
        return CheckResult(ok=False, message=f"nvcc not found ({where}): install the CUDA toolkit or pass its nvcc")
    missing_tools = _tools_missing()
    if missing_tools:
        return CheckResult(ok=False, message=f"{', '.join(missing_tools)} not found: install binutils")
    kit = kit.resolve()
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    root = work_dir / f"check-{lab.name}-{uuid.uuid4().hex[:8]}"
    session = None
    try:
        session = _Session(kit, lab, toolchain(found), root, timeout)
        _check_files(session, files, work_dir, object_file, result.findings, result)
    except _Exceeded as exc:
        result.ok, result.exceeded = False, True
        result.message = (f"{lab.name}: could not compile within the check's limits: {exc}. Simplify the code "
                          "(no huge arrays with initial values, no runaway templates)")
    except _CompileFailed as exc:  # the findings so far (its includes) stay: they are true of the file
        result.ok, result.message = False, str(exc)
    except CheckError as exc:
        result.ok, result.message = False, str(exc)
    finally:
        if session is not None:
            result.commands = session.commands
        shutil.rmtree(root, ignore_errors=True)
    result.findings[:] = _unique(result.findings)
    return result


def foreign_reads(kit: Path, lab: manifest.Lab, files: list[Path], *, work_dir: Path, nvcc: str | None = None,
                  timeout: float = 120.0) -> list[str] | None:
    """The files outside the kit's headers, the toolkit, the system and the student's own
    files that compiling `files` reads (nvcc -M, every pass), by the names the student
    would see; None when that cannot be told (no nvcc, or the preprocessor failed).

    A compiler's messages quote the lines they are about: when a file that does not
    compile includes such a file, its messages must not reach the student's report."""
    found = find_nvcc(nvcc)
    if found is None:
        return None
    kit = kit.resolve()
    work_dir = Path(work_dir)
    work_dir.mkdir(parents=True, exist_ok=True)
    root = work_dir / f"reads-{lab.name}-{uuid.uuid4().hex[:8]}"
    try:
        session = _Session(kit, lab, toolchain(found), root, timeout)
        sources = _clean_sources(session, files, work_dir)
        policy = _IncludePolicy(session, sources, _allowed_families(lab))
        deps: list[str] = []
        for number, source in enumerate(s for s in sources if s.clean.suffix in SOURCE_SUFFIXES):
            out = root / f"step{number}"
            out.mkdir()
            deps += _dependencies(session, source, out)[0]
        return _outside(policy, deps)
    except (CheckError, _CompileFailed, _Exceeded, OSError):
        return None
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _clean_sources(session: _Session, files: list[Path], work_dir: Path) -> list[_Source]:
    """The student's `files`, each copied alone into a clean folder (no header next to it
    shadows the kit's); CheckError or _Exceeded when one is missing or too large."""
    lab = session.lab
    if not any(Path(p).suffix in SOURCE_SUFFIXES for p in files):
        raise CheckError(f"{lab.name}: no source file to check (the editable files are {', '.join(lab.editable)})")
    sources = []
    for path in files:
        if not Path(path).is_file():
            raise CheckError(f"{path} not found: the lab's editable file is missing")
        if Path(path).stat().st_size > MAX_SOURCE_BYTES:
            raise _Exceeded(f"{Path(path).name} is larger than {MAX_SOURCE_BYTES >> 20} MiB")
        shown = _shown_name(session.kit, lab, Path(path), work_dir)
        clean = session.root / "src" / shown
        clean.parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, clean)
        sources.append(_Source(shown, Path(path), clean))
    return sources


def _outside(policy: _IncludePolicy, deps: list[str]) -> list[str]:
    """The files of `deps` outside the kit's headers, the toolkit, the system and the
    student's own files, as the student would name them."""
    return list(dict.fromkeys(v[0] for d in deps if (v := policy.verdict(d)) is not None and v[1] == OUTSIDE_WHY))


def _check_files(session: _Session, files: list[Path], work_dir: Path, object_file: Path | None,
                 findings: list[rules.Finding], result: CheckResult | None = None) -> None:
    """Adds every finding in the student's files (copied into a clean folder first) to
    `findings`, and the main file's steps (grader/steps.py) to `result`."""
    lab, kit = session.lab, session.kit
    sources = _clean_sources(session, files, work_dir)
    compiled = [s for s in sources if s.clean.suffix in SOURCE_SUFFIXES]
    main = next((s for s in compiled if s.clean.name == f"{lab.name}.cu"), compiled[0] if compiled else None)
    policy = _IncludePolicy(session, sources, _allowed_families(lab))
    objects: list[tuple[_Source, _Object, list[str]]] = []
    for number, source in enumerate(compiled):
        out = session.root / f"step{number}"
        out.mkdir()
        deps, passes, complete = _dependencies(session, source, out)
        found, own = _include_findings(source, policy, deps, passes, out, complete)
        findings += found + _source_text_findings(own, policy)
        shutil.rmtree(out / "keep", ignore_errors=True)  # the preprocessed passes are large
        outside = _outside(policy, deps)
        try:
            obj = (Path(object_file) if (object_file is not None and source is main)
                   else _compile(session, source, out))
        except _CompileFailed:
            if not outside:
                raise
            # Its messages would quote the file outside the lab: name it, show none of them.
            raise _CompileFailed(f"{source.shown} does not compile, and it includes {outside[0]}, a file outside "
                                 "your lab: the compiler's messages are not shown") from None
        kit_headers = [d for d in deps if _under(d, policy.common) or d == policy.lab_header]
        objects.append((source, _read_object(session, obj), kit_headers))
        if result is not None and source is main:
            result.steps = _read_steps(obj, objects[-1][1])
    own_defined = {s.name for _, obj, _ in objects for s in obj.symbols if s.defined and s.is_global}
    kit_functions = _header_functions(kit / "labs" / lab.name / f"{lab.name}.h")
    for source, obj, kit_headers in objects:
        ctx = _ObjectContext(source, lab.name, kit_functions, set(lab.functions), own_defined,
                             _header_identifiers(kit_headers), tuple(lab.allowed_symbols),
                             tuple(lab.forbidden_symbols), {index: info[4] for index, info in obj.sections.items()})
        findings += (_symbol_findings(obj, ctx) + _constructor_findings(obj, source, own_defined)
                     + _registration_findings(obj, source) + _syscall_findings(obj, source, obj.demangled))
    _lines_from_includes(findings)


def _read_steps(path: Path, obj: _Object) -> dict[str, object]:
    """The registered variants of the object at `path` and the kernels each launches (steps.py)."""
    from grader import steps
    try:
        data = path.read_bytes()
    except OSError as exc:
        return {"ok": False, "message": f"cannot read {path.name}: {exc.strerror}", "variants": [], "near": []}
    return steps.analyse(data, _Code.of(obj)).as_dict()


def _lines_from_includes(findings: list[rules.Finding]) -> None:
    """A library finding with no line gets the line of the #include that brought the library in."""
    for finding in findings:
        if finding.rule != "cub" or finding.line is not None:
            continue
        why = finding.message.rsplit("): ", 1)[-1]
        include = next((f for f in findings if f.rule == "include" and f.file == finding.file
                        and f.line is not None and f.message.endswith(f"({why})")), None)
        if include is not None:
            finding.line = include.line
            finding.message = finding.message.replace(f"{finding.file}: ", f"{finding.file}:{include.line}: ", 1)


def _compile(session: _Session, source: _Source, out: Path) -> Path:
    """Compiles `source` into an object the way the build does."""
    obj = out / (source.clean.stem + ".o")
    language = ["-x", "cu"] if source.clean.suffix == ".cu" else ["-x", "c++"]
    flags = [session.tools.nvcc, "-c", *language, *COMPILE_FLAGS[2:], *OBJECT_FLAGS, *session.include_flags()]
    done = session.run([*flags, str(source.clean), "-o", str(obj)], cwd=out,
                       shown=[*flags, str(source.original), "-o", obj.name])
    if done.returncode != 0 or not obj.is_file():
        raise _CompileFailed(f"{source.shown} does not compile (the build reports the error):\n"
                             f"{_tail(done).replace(str(source.clean), source.shown)}")
    return obj


def _unique(findings: list[rules.Finding]) -> list[rules.Finding]:
    """`findings` without repeats, by file, line and rule."""
    seen, out = set(), []
    for finding in findings:
        key = (finding.rule, finding.file, finding.line, finding.message)
        if key not in seen:
            seen.add(key)
            out.append(finding)
    return sorted(out, key=lambda f: (f.file, f.line or 0, RULES.index(f.rule) if f.rule in RULES else 99))


# ---------------------------------------------------------------------------------------
# Command line

EXIT_CLEAN, EXIT_FOUND, EXIT_USAGE, EXIT_INTERRUPTED = 0, 1, 2, 130


class _UsageError(Exception):
    """Bad command line; the message says what to do."""


class _Parser(argparse.ArgumentParser):
    """argparse that raises _UsageError instead of exiting."""
    def error(self, message: str):  # one line instead of usage + exit inside argparse
        raise _UsageError(f"{message} (see --help)")


def build_parser() -> argparse.ArgumentParser:
    """The command line of `python3 -m grader check`."""
    parser = _Parser(prog="python3 -m grader check",
                     description="Static checks on what each lab's student file does (its includes, the functions "
                                 "its compiled object uses and defines, code that runs at load time, raw system "
                                 "calls), not on how it is spelled. Needs nvcc and binutils; no GPU.",
                     epilog="Exit status: 0 clean, 1 findings or a file that could not be checked, 2 bad usage.")
    parser.add_argument("labs", nargs="*", metavar="lab", help="labs to check (default: every lab of the kit)")
    parser.add_argument("--root", type=Path, metavar="KIT",
                        help="the kit's top directory (default: the directory holding grader/)")
    parser.add_argument("--submission", type=Path, metavar="DIR",
                        help="check a student's repository DIR: its editable files are copied into a clean "
                             "temporary folder and compiled against the kit's headers (default: the kit's own files)")
    parser.add_argument("--json", type=Path, metavar="FILE", help="also write the findings as JSON to FILE")
    parser.add_argument("--config", type=Path, metavar="FILE",
                        help="the course's grading config (default: <root>/grader.toml if present): a lab's "
                             "`allow` list lifts those rules' findings, as in grading")
    parser.add_argument("--nvcc", metavar="PATH",
                        help="the nvcc to use (default: PATH, $CUDA_HOME/bin, /usr/local/cuda/bin)")
    parser.add_argument("--timeout", type=float, default=120.0, metavar="S",
                        help="seconds allowed per lab (default: 120)")
    parser.add_argument("--quiet", action="store_true", help="print only the findings and the summary lines")
    return parser


def main(argv: list[str] | None = None) -> int:
    """`python3 -m grader check`; returns the exit status."""
    try:
        args = build_parser().parse_args(sys.argv[1:] if argv is None else argv)
        root, source, labs = _resolve(args)
        settings = config.load_course(root, args.config)
    except SystemExit as exc:  # --help
        return int(exc.code or 0)
    except (_UsageError, manifest.ManifestError, config.ConfigError) as exc:
        print(f"grader check: error: {exc}", file=sys.stderr)
        return EXIT_USAGE
    report: dict[str, object] = {"schema": "labkit-check", "version": 1, "root": str(root),
                                 "submission": str(source) if args.submission else None, "labs": {}}
    status = EXIT_CLEAN
    interrupted = False
    with tempfile.TemporaryDirectory(prefix="labkit-check-") as tmp:
        try:
            status = _check_labs(root, source, labs, Path(tmp), args, report, settings)
        except KeyboardInterrupt:  # Ctrl-C: what was checked so far, and no traceback
            interrupted = True
            print(f"\ngrader check: interrupted: {len(report['labs'])} of {len(labs)} labs checked",  # type: ignore[arg-type]
                  file=sys.stderr)
            report["interrupted"] = True
    if status == EXIT_USAGE:
        return status
    if args.json:
        try:
            args.json.parent.mkdir(parents=True, exist_ok=True)
            args.json.write_text(json.dumps(report, indent=2) + "\n", encoding="utf-8")
        except OSError as exc:
            print(f"grader check: error: cannot write {args.json}: {exc.strerror or exc}", file=sys.stderr)
            return EXIT_USAGE
    return EXIT_INTERRUPTED if interrupted else status


def _check_labs(root: Path, source: Path, labs: list[manifest.Lab], tmp: Path, args: argparse.Namespace,
                report: dict[str, object], settings: config.Config) -> int:
    """Checks each lab in turn, printing its findings and filling report["labs"]; the exit status.
    A finding of a rule the course's config allows for the lab is left out, and said once."""
    status = EXIT_CLEAN
    for lab in labs:
        if not args.quiet:
            print(f"[{lab.name}] checking ...", flush=True)
        result = _check_one(root, source, lab, tmp, args)
        allowed = set(settings.lab(lab.name).allow)
        lifted = sorted({f.rule for f in result.findings if f.rule in allowed})
        if lifted:
            result.findings = [f for f in result.findings if f.rule not in allowed]
            print(f"{lab.name}: note: the course's config allows {', '.join(lifted)}: those findings are left out")
        for finding in result.findings:
            print(finding.message)
        if not result.ok:
            print(f"{lab.name}: NOT CHECKED: {result.message}")
            status = EXIT_FOUND
        elif result.findings:
            print(f"{lab.name}: {len(result.findings)} finding(s)")
            status = EXIT_FOUND
        else:
            print(f"{lab.name}: clean")
        report["labs"][lab.name] = result.as_dict()  # type: ignore[index]
        if result.ok is False and result.message.startswith("nvcc not found"):
            print(f"grader check: error: {result.message}", file=sys.stderr)
            return EXIT_USAGE
    return status


def _resolve(args: argparse.Namespace) -> tuple[Path, Path, list[manifest.Lab]]:
    """The kit, where the files come from, and the labs to check; _UsageError for bad input."""
    root = (args.root or Path(__file__).resolve().parent.parent).resolve()
    if not (root / "labs").is_dir():
        raise _UsageError(f"--root {root} has no labs/ folder: pass the kit's top directory")
    source = root
    if args.submission is not None:
        source = args.submission.resolve()
        if not source.is_dir():
            raise _UsageError(f"--submission {args.submission} is not a directory: pass the student's repository")
    known = manifest.labs(root)
    if not known:
        raise _UsageError(f"no lab found under {root}/labs (each lab needs labs/<lab>/lab.json)")
    by_name = {lab.name: lab for lab in known}
    try:
        wanted = manifest.resolve_names(args.labs, list(by_name)) if args.labs else list(by_name)
    except ValueError as exc:
        raise _UsageError(str(exc)) from None
    if find_nvcc(args.nvcc) is None:
        where = args.nvcc or "looked on PATH, in $CUDA_HOME/bin and /usr/local/cuda/bin"
        raise _UsageError(f"nvcc not found ({where}): install the CUDA toolkit or pass --nvcc")
    if _tools_missing():
        raise _UsageError(f"{', '.join(_tools_missing())} not found: install binutils")
    return root, source, [by_name[name] for name in wanted]


def _check_one(root: Path, source: Path, lab: manifest.Lab, tmp: Path, args: argparse.Namespace) -> CheckResult:
    """Checks one lab's editable files from `source` (the kit or a submission)."""
    files = rules.editable_paths(source, lab.name, list(lab.editable))
    missing = [p for p in files if not p.is_file() or p.is_symlink()]
    if missing or not files:
        rel = ", ".join(_display(source, p) for p in missing) or "its editable files"
        return CheckResult(ok=False, message=f"{rel} not found (or not a regular file): nothing to check")
    work = tmp / lab.name
    if source != root:  # a submission: only its editable files, in a clean folder, against the kit
        copies = []
        for path in files:
            target = work / "submission" / path.relative_to(source)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copyfile(path, target)
            copies.append(target)
        files = copies
    return check_lab(root, lab, files, work_dir=work / "submission" if source != root else work,
                     nvcc=args.nvcc, timeout=args.timeout)


def _display(base: Path, path: Path) -> str:
    """`path` relative to `base` where it can be, for a message."""
    try:
        return path.relative_to(base).as_posix()
    except ValueError:
        return str(path)


if __name__ == "__main__":
    sys.exit(main())
