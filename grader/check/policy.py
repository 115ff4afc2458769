"""What a student's file may include, use, define and run at load time: the check's tables, as data.

The other modules of the check read these; a course that changes what is allowed changes
them here (a lab's own `allow`/`forbid` symbols come from its manifest, grader/manifest.py).
"""

from __future__ import annotations

import re

# The rules a finding of the check can carry (grader.rules.BUILTIN_RULES), in report order.
RULES = ("include", "symbol", "defines", "cub", "constructor", "syscall")

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
_STREAM_CALLS_WHY = ("the timers follow the default stream (and the streams your code creates, where the lab "
                     "allows them), not what this call does: launch with <<<...>>> on the default stream")
_SYSCALL_WHY = ("system calls made directly reach outside the test process: the implementation only "
                "launches kernels and calls the CUDA runtime")
SYMBOL_FAMILIES: tuple[tuple[tuple[str, ...], str], ...] = (
    # Streams of one's own, before the other stream calls: a lab's manifest can allow them
    # ("rules": {"allow": ["own_streams"]}), the timers wait for every one (grader/CONTRACT.md).
    (("cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority", "cudaStreamDestroy",
      "cudaStreamWaitEvent"), "own_streams"),
    (("cudaGraph*", "cudaLaunchHostFunc", "cudaStreamAddCallback", "cudaStream*Capture*"), "streams"),
    (("cudaStream*", "cudaLaunchKernelEx*", "*_ptsz", "*_ptds", "cudaCtxResetPersistingL2Cache"), _STREAM_CALLS_WHY),
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
NAMESPACE_LIBRARY = re.compile(r"(?<![\w:])(?:::)?(cub|thrust)::")
LIBRARY_WHY = {label: why for _, _, label, why in HEADER_FAMILIES}
# CUB's headers define Thrust symbols and NVTX functions of their own: one finding names CUB.
LIBRARY_GROUP = {"CUB": "CCCL", "Thrust": "CCCL", "NVTX": "CCCL"}
LIBRARY_ORDER = ("CUB", "Thrust", "NVTX")

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
# The pattern of such a finding: stages.checking.run_checks does not test a lab that has one (a test
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
LOAD_TIME_HINT = "do the work inside the lab's functions"
# Instructions that enter the kernel: x86-64 and aarch64 spellings in objdump's output.
SYSCALL_INSN = re.compile(r"^(?:syscall|sysenter|int\s+\$0x80|svc\s|svc$)")
# Why the lab header's own out-of-line functions (other than the interface) may not be called
# (symbols.kit_test_code tells which kind a call is).
KIT_CODE_WHY = {
    "kit-cpu": "the kit's sequential versions, which the tests compare your results with: compute the result on "
               "the GPU with code of your own",
    "kit-helper": "the kit's code for its tests, which links the sequential versions the tests compare your results "
                  "with into your library: your implementation needs none of it",
}
