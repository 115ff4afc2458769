"""Static checks (grader/check/): what a compiled student file includes, uses, defines
and runs at load time, whatever its spelling.

The tests that compile need nvcc and binutils and skip with a message without them. All
compiling jobs are started together on first use (two at a time on two cores) and shared
by the assertions. `LABKIT_CHECK_SOLUTIONS=1` checks every reference solution instead of a
sample (about three more minutes on two cores).
"""

from __future__ import annotations

import contextlib
import dataclasses
import io
import json
import os
import shutil
import tempfile
import textwrap
import threading
import time
import unittest
from concurrent.futures import Future, ThreadPoolExecutor
from pathlib import Path
from unittest import mock

from grader import check, cli, manifest, proc, rules
from grader.check import tools
from grader.check.findings import Source
from grader.check.includes import directive_line, header_family
from grader.check.loadtime import constructor_findings
from grader.check.names import qualified_name
from grader.check.session import shown_name
from grader.check.stubs import is_exit_stub_shape

KIT = Path(__file__).resolve().parents[2]
NVCC = check.find_nvcc()
TOOLS_MISSING = check.tools_missing()
SKIP_WHY = ("nvcc not found (looked on PATH, in $CUDA_HOME/bin and /usr/local/cuda/bin): the static checks "
            "compile the student's file with it" if NVCC is None else
            f"{', '.join(TOOLS_MISSING)} not found: the static checks read the object with binutils")
CAN_COMPILE = NVCC is not None and not TOOLS_MISSING
ALL_SOLUTIONS = os.environ.get("LABKIT_CHECK_SOLUTIONS", "") not in ("", "0")
# Reference solutions checked by default: two files that call each other and a __constant__
# array (electrostatics), __device__ helpers whose host bodies call exit(1) (sort's merge).
SAMPLE_SOLUTIONS = {"electrostatics": None, "sort": ["merge.cu", "sort_variants.cuh"]}

# Recorded readelf/objdump output of two files (their sources beside them, which the
# compiling tests check too): a clean file's C++ dynamic initialisation, and code run at
# load time by every route (grader/tests/fixtures/loadtime/README.md).
LOAD_TIME = KIT / "grader" / "tests" / "fixtures" / "loadtime"

# name -> (lab, code). {outside} is a header outside the kit, written by the tests.
SNIPPETS: dict[str, tuple[str, str]] = {
    "load_time_routes": ("vectorAdd", (LOAD_TIME / "loadtime.cu").read_text()),
    "load_time_clean": ("vectorAdd", (LOAD_TIME / "clean.cu").read_text()),
    # A function of the file named like the standard library's (an asm label), called to
    # initialise a global: its name is no proof, its body is read.
    "load_time_std_lookalike": ("vectorAdd", """\
        #include <cstdio>
        __attribute__((noinline)) static void pretend() asm("_ZNSt8ios_base4InitC2Ev");
        static void pretend() { std::puts("runs at load time"); }
        static int started = (pretend(), 0);
        int started_once() { return started; }
        """),
    # {macro_dir}/{macro_file}: a reference solution (another lab's header in a kit without solutions/).
    "includes": ("reduction", """\
        #include "lab/cuda_check.h"
        #include "reduction.h"
        #define STR(x) #x
        #define PATH(x) STR({macro_dir}/x)
        #include PATH({macro_file})
        %:include <cublas_v2.h>
        #include /* the vendor's
           library */ <cufft.h>
        #ifdef __CUDA_ARCH__
        #include "{outside}"
        #endif
        __global__ void fill(float* p) { p[0] = 1.0f; }
        """),
    "cub_alias": ("reduction", """\
        #include <cub/warp/warp_reduce.cuh>
        #include "reduction.h"
        namespace c = cub;
        template <class Reduce>
        __global__ void warp_sum(const float* in, float* out) {
          __shared__ typename Reduce::TempStorage temp;
          float v = Reduce(temp).Sum(in[threadIdx.x]);
          if (threadIdx.x == 0) *out = v;
        }
        void reduce_sum(const float* in, float* out, int n) { warp_sum<c::WarpReduce<float>><<<1, 32>>>(in, out); }
        """),
    "cublas_pointer": ("matmul", """\
        #include "matmul.h"
        extern "C" int cublasCreate_v2(void** handle);
        int (*volatile create)(void**) = &cublasCreate_v2;
        void matmul(const float* A, const float* B, float* C, int m, int k, int n) {
          void* handle = nullptr;
          create(&handle);
        }
        """),
    "calls": ("reduction", """\
        #include <cstdlib>
        #include <dlfcn.h>
        #include <thread>
        #include "reduction.h"
        void reduce_sum(const float* in, float* out, int n) {
          void* lib = dlopen("libreduction_solution.so", RTLD_NOW);
          (void)lib;
        }
        void reduce_max(const int* in, int* out, int n) {
          if (std::getenv("LABKIT_SEED") != nullptr) return;
          std::thread helper([] {});
          helper.join();
        }
        float on_the_host(const float* host, int n) { return reduce_sum_cpu(host, n); }
        double allowed(long long n, double abs_sum) { return reduce_sum_error_bound(n, abs_sum); }
        """),
    "definitions": ("vectorAdd", """\
        #include <cuda_runtime.h>
        #include "lab/buffer.h"
        #include "lab/cuda_check.h"
        #include "vectorAdd.h"
        extern "C" cudaError_t cudaEventElapsedTime(float* ms, cudaEvent_t start, cudaEvent_t stop) {
          *ms = 0.001f;
          return cudaSuccess;
        }
        namespace lab {
        void throw_cuda_error(cudaError_t, const char*, const char*, int) {}
        }
        void vector_add_cpu(const float* a, const float* b, float* c, int n) {}
        __attribute__((weak)) void* lab::workspace_bytes(std::size_t bytes, int slot) { return nullptr; }
        #define KIT(name) lab::name
        inline __attribute__((used)) bool KIT(sync_launches)() { return false; }
        """),
    "constructor_and_destructor": ("vectorAdd", """\
        #include <cstdio>
        __attribute__((constructor)) static void early() { std::puts("before main"); }
        __attribute__((destructor)) static void late() { std::puts("after main"); }
        """),
    "forged_constructor": ("vectorAdd", """\
        #include <cstdio>
        extern "C" {
        __attribute__((constructor)) static void _GLOBAL__sub_I_fake() { std::puts("before main"); }
        }
        """),
    # Registers device code that is not the file's (here a few bytes; in an attack, a
    # reference library's pulled in with .incbin) through nvcc's own helpers, named by asm
    # labels in split strings, from the lab's function and from a function named like
    # nvcc's callback, which -O3 inlines away.
    "foreign_device_code": ("vectorAdd", """\
        #include <cuda_runtime.h>
        #include "vectorAdd.h"
        extern "C" void** reg_binary(void*) asm("__cuda" "RegisterFatBinary");
        extern "C" void reg_function(void**, const char*, char*, const char*, int, uint3*, uint3*, dim3*, dim3*,
                                     int*) asm("__cuda" "RegisterFunction");
        static const unsigned char blob[16] = {0x50, 0xed, 0x55, 0xba};
        struct Wrapper { int magic; int version; const void* data; void* unused; };
        static Wrapper wrapper = {0x466243b1, 1, blob, nullptr};
        static void stub() {}
        static void** early(void**) asm("_ZL31__nv_cudaEntity" "RegisterCallbackPPv");
        __attribute__((noinline, used)) static void** early(void**) { return reg_binary(&wrapper); }
        void vector_add(const float* a, const float* b, float* c, int n) {
          void** handle = early(nullptr);
          reg_function(handle, (const char*)stub, (char*)"k", "k", -1, 0, 0, 0, 0, 0);
          void* args[] = {&a, &b, &c, &n};
          cudaLaunchKernel((const void*)stub, dim3(1), dim3(32), args, 0, nullptr);
        }
        """),
    # Assembler directives that read files or build directives, hidden from the eye:
    # split literals, an escape, a macro.
    "assembler_files": ("vectorAdd", """\
        #define PIECE(x) x
        const char* first() {
          const char* p;
          asm volatile(".pushsection .rodata\\n1:\\n.inc" "\\x62in \\"/etc/hostname\\"\\n.popsection\\n"
                       "lea 1b(%%rip), %0" : "=r"(p));
          return p;
        }
        asm(PIECE(".mac" "ro twice\\n.endm"));
        const char* harmless = "a string that mentions include and incbin, not as directives";
        """),
    # A #line directive that would make the lines after it look like a system header's.
    "line_directive": ("vectorAdd", """\
        int before = 1;
        #line 1 "/usr/include/stdio.h"
        const char* hidden = ".inc" "bin \\"/etc/hostname\\"";
        """),
    "syscall": ("vectorAdd", """\
        long raw(long number) {
          long result;
          asm volatile("syscall" : "=a"(result) : "a"(number) : "rcx", "r11", "memory");
          return result;
        }
        """),
    "exit": ("vectorAdd", """\
        #include <cstdlib>
        #include "vectorAdd.h"
        __device__ float twice(float x) { return 2 * x; }
        void vector_add(const float* a, const float* b, float* c, int n) {
          if (n == 0) std::exit(0);
        }
        """),
    "exit_lookalike": ("vectorAdd", """\
        #include <cstdlib>
        #include "vectorAdd.h"
        __attribute__((noinline)) static void die() { volatile int code = 1; std::exit(code); }
        void vector_add(const float* a, const float* b, float* c, int n) {
          if (n == 0) die();
        }
        """),
    "relative_kit_header": ("vectorAdd", """\
        #include "../../common/include/lab/cuda_check.h"
        #include "vectorAdd.h"
        __device__ float add(float x, float y) { return x + y; }
        __global__ void kernel(const float* a, const float* b, float* c, int n) {
          int i = blockIdx.x * blockDim.x + threadIdx.x;
          if (i < n) c[i] = add(a[i], b[i]);
        }
        void vector_add(const float* a, const float* b, float* c, int n) {
          if (n <= 0) return;
          kernel<<<(n + 255) / 256, 256>>>(a, b, c, n);
          LAB_CHECK_LAUNCH();
        }
        """),
    # What a careful student may well write: none of it is a finding.
    "allowed_features": ("reduction", """\
        #include <algorithm>
        #include <cassert>
        #include <cmath>
        #include <cstdio>
        #include <iostream>
        #include <map>
        #include <memory>
        #include <mutex>
        #include <stdexcept>
        #include <string>
        #include <vector>
        #include <cooperative_groups.h>
        #include <cooperative_groups/reduce.h>
        #include <cuda_fp16.h>
        #include "lab/buffer.h"
        #include "lab/cuda_check.h"
        #include "lab/variants.h"
        #include "reduction.h"
        namespace cg = cooperative_groups;
        __constant__ float weights[16];
        __device__ unsigned long long counter;
        static int calls = 0;
        thread_local int per_thread = 0;
        __host__ __device__ inline float square(float x) { return x * x; }
        template <class T> __device__ T identity();
        template <> __device__ float identity<float>() { return 0.0f; }
        __device__ float helper(float x) { return square(x) + 1.0f; }
        template <int Block>
        __global__ void reduce_kernel(const float* in, float* out, int n) {
          auto warp = cg::tiled_partition<32>(cg::this_thread_block());
          float v = threadIdx.x < n ? helper(in[threadIdx.x]) * weights[0] : identity<float>();
          v = cg::reduce(warp, v, cg::plus<float>());
          if (warp.thread_rank() == 0) atomicAdd(out, v);
          assert(n >= 0);
        }
        namespace {
        int blocks_for(int n) {
          static std::mutex mutex;
          static std::map<int, int> cache;
          std::lock_guard<std::mutex> lock(mutex);
          if (auto found = cache.find(n); found != cache.end()) return found->second;
          int device = 0, sms = 0, per_sm = 0, min_grid = 0, block = 0;
          LAB_CUDA_CHECK(cudaGetDevice(&device));
          LAB_CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, device));
          LAB_CUDA_CHECK(cudaOccupancyMaxActiveBlocksPerMultiprocessor(&per_sm, reduce_kernel<256>, 256, 0));
          LAB_CUDA_CHECK(cudaOccupancyMaxPotentialBlockSize(&min_grid, &block, reduce_kernel<256>));
          LAB_CUDA_CHECK(cudaFuncSetAttribute(reduce_kernel<256>, cudaFuncAttributeMaxDynamicSharedMemorySize, 0));
          cudaDeviceProp prop;
          LAB_CUDA_CHECK(cudaGetDeviceProperties(&prop, device));
          const int blocks = std::max(1, std::min(sms * per_sm, (n + 255) / 256));
          cache.emplace(n, blocks);
          return blocks;
        }
        }  // namespace
        void reduce_sum(const float* in, float* out, int n) {
          if (n < 0) throw std::invalid_argument("negative size " + std::to_string(n));
          std::vector<float> host(16, 1.0f);
          std::sort(host.begin(), host.end());
          LAB_CUDA_CHECK(cudaMemcpyToSymbol(weights, host.data(), sizeof(float) * 16));
          auto scratch = std::make_unique<float[]>(4);
          scratch[0] = std::sqrt(std::fabs(host[0])) + std::ceil(std::log2(2.0f));
          LAB_CUDA_CHECK(cudaMemsetAsync(out, 0, sizeof(float), 0));
          reduce_kernel<256><<<blocks_for(n), 256>>>(in, out, n);
          LAB_CHECK_LAUNCH();
          cudaEvent_t start, stop;
          cudaEventCreate(&start);
          cudaEventCreate(&stop);
          cudaEventRecord(start);
          cudaEventRecord(stop);
          cudaEventSynchronize(stop);
          float ms = 0;
          cudaEventElapsedTime(&ms, start, stop);
          if (ms < 0) std::fprintf(stderr, "odd time %f\\n", ms), std::cerr << "really" << std::endl;
          ++per_thread, ++calls;
          if (lab::sync_launches()) { LAB_CUDA_CHECK(cudaDeviceSynchronize()); }
        }
        void reduce_sum_twice(const float* in, float* out, int n) { reduce_sum(in, out, n); }
        LAB_REGISTER_VARIANT(reduce_sum, "twice", reduce_sum_twice, "the same, through a variant");
        void reduce_max(const int* in, int* out, int n) {
          int* temp = nullptr;
          LAB_CUDA_CHECK(cudaMalloc(&temp, sizeof(int)));
          LAB_CUDA_CHECK(cudaMemcpy(out, temp, sizeof(int), cudaMemcpyDeviceToDevice));
          LAB_CUDA_CHECK(cudaFree(temp));
          std::printf("%d\\n", n);
        }
        """),
}
# Checked with a manifest that forbids cudaMemset* and allows cublas*.
MANIFEST_SNIPPET = """\
    #include <cublas_v2.h>
    #include <cuda_runtime.h>
    #include "matmul.h"
    void matmul(const float* A, const float* B, float* C, int m, int k, int n) {
      cudaMemset(C, 0, sizeof(float) * m * n);
      cublasHandle_t handle;
      cublasCreate(&handle);
    }
    """
HUGE_ARRAY = """\
    __device__ char big[1 << 30] = {1};
    __global__ void kernel(char* out) { out[0] = big[threadIdx.x]; }
    """
TEMPLATE_BOMB = """\
    template <int N, int M> struct B { static constexpr long v = B<N - 1, 2 * M>::v + B<N - 1, 2 * M + 1>::v; };
    template <int M> struct B<0, M> { static constexpr long v = 1; };
    long x = B<28, 0>::v;
    """


@dataclasses.dataclass
class Run:
    """One finished check_lab call."""

    result: check.CheckResult
    seconds: float
    left_behind: list[str]


class _Jobs:
    """Every compiling job of this file, started together on first use, two at a time."""

    lock = threading.Lock()
    futures: dict[str, Future] = {}
    tmp: tempfile.TemporaryDirectory | None = None

    @classmethod
    def ensure(cls) -> None:
        """Starts every job (once)."""
        with cls.lock:
            if not cls.futures:
                cls._start()

    @classmethod
    def get(cls, name: str) -> Run:
        """The finished run of job `name`."""
        cls.ensure()
        return cls.futures[name].result()

    @classmethod
    def names(cls, prefix: str) -> list[str]:
        """The jobs whose names start with `prefix`."""
        cls.ensure()
        return [name for name in cls.futures if name.startswith(prefix)]

    @classmethod
    def wait_all(cls) -> None:
        """Waits until every job has finished."""
        for name in cls.names(""):
            cls.futures[name].exception()

    @classmethod
    def _start(cls) -> None:
        """Writes the snippets and submits every job to a pool (two workers on two cores)."""
        cls.tmp = tempfile.TemporaryDirectory(prefix="labkit-test-check-")
        base = Path(cls.tmp.name)
        outside = base / "outside" / "helper.h"
        outside.parent.mkdir(parents=True)
        outside.write_text("#pragma once\n__device__ inline int helper() { return 1; }\n")
        labs = manifest.by_name(KIT)
        jobs: dict[str, tuple] = {}
        solution = KIT / "solutions" / "reduction" / "reduction.cu"
        macro = ("../../solutions/reduction", "reduction.cu") if solution.is_file() else \
            ("../vectorAdd", "vectorAdd.h")
        for name, (lab, code) in SNIPPETS.items():
            path = base / "snippets" / name / "labs" / lab / f"{lab}.cu"
            path.parent.mkdir(parents=True)
            path.write_text(textwrap.dedent(code).replace("{outside}", str(outside)).replace(
                "{macro_dir}", macro[0]).replace("{macro_file}", macro[1]))
            jobs[f"snippet:{name}"] = (labs[lab], [path], {})
        path = base / "manifest" / "labs" / "matmul" / "matmul.cu"
        path.parent.mkdir(parents=True)
        path.write_text(textwrap.dedent(MANIFEST_SNIPPET))
        jobs["manifest"] = (dataclasses.replace(labs["matmul"], forbidden_symbols=("cudaMemset*",),
                                                allowed_symbols=("cublas*",)), [path], {})
        for name, lab in labs.items():
            jobs[f"skeleton:{name}"] = (lab, [KIT / "labs" / name / f"{name}.cu"], {})
        for case in sorted((KIT / "grader" / "tests" / "corpus").glob("correct*/labs/*/*.cu")):
            jobs[f"corpus:{case.parts[-4]}:{case.parts[-2]}"] = (labs[case.parts[-2]], [case], {})
        for name, lab in labs.items():
            folder = KIT / "solutions" / name
            if not folder.is_dir() or (not ALL_SOLUTIONS and name not in SAMPLE_SOLUTIONS):
                continue
            wanted = None if ALL_SOLUTIONS else SAMPLE_SOLUTIONS[name]
            files = sorted(p for p in folder.iterdir() if p.suffix in (".cu", ".cuh")
                           and (wanted is None or p.name in wanted))
            jobs[f"solution:{name}"] = (lab, files, {})
        huge = base / "huge" / "labs" / "vectorAdd" / "vectorAdd.cu"
        huge.parent.mkdir(parents=True)
        huge.write_text(textwrap.dedent(HUGE_ARRAY))
        jobs["bomb:huge_array"] = (labs["vectorAdd"], [huge], {})
        pool = ThreadPoolExecutor(max_workers=max(2, min(4, os.cpu_count() or 2)))
        # The heavy jobs first, so that the two workers finish together.
        order = sorted(jobs, key=lambda j: (not j.startswith(("bomb", "solution", "snippet:cub")), j))
        for name in order:
            lab, files, options = jobs[name]
            cls.futures[name] = pool.submit(cls._run, lab, files, base / "work" / name.replace(":", "_"), options)
        pool.shutdown(wait=False)

    @staticmethod
    def _run(lab: manifest.Lab, files: list[Path], work: Path, options: dict) -> Run:
        """One check_lab call, timed, and what it left in its work folder."""
        start = time.monotonic()
        result = check.check_lab(KIT, lab, files, work_dir=work, **options)
        left = sorted(p.name for p in work.iterdir()) if work.is_dir() else []
        return Run(result, time.monotonic() - start, left)


@unittest.skipUnless(CAN_COMPILE, SKIP_WHY)
class Routes(unittest.TestCase):
    """Each way around the spelling rules is found by what the compiler saw."""

    def check(self, name: str, rule: str, line: int | None, *, only: set[str] | None = None,
              text: str = "") -> list:
        """Asserts a finding of `rule` at `line` (with `text`) in snippet `name`, and only rules `only`."""
        run = _Jobs.get(f"snippet:{name}")
        self.assertTrue(run.result.ok, f"{name}: {run.result.message}")
        findings = run.result.findings
        self.assertEqual({f.rule for f in findings}, only or {rule}, [f.message for f in findings])
        match = [f for f in findings if f.rule == rule and f.line == line and text in f.message]
        self.assertTrue(match, f"{name}: no {rule} finding at line {line}: {[f.message for f in findings]}")
        self.assertTrue(match[0].message.startswith(f"{match[0].file}:{line}: " if line else match[0].file))
        self.assertEqual(match[0].kind, "forbidden")
        self.assertEqual(run.left_behind, [], "the check left files in work_dir")
        return findings

    def test_include_of_a_solution_through_a_macro(self):
        findings = self.check("includes", "include", 5)
        self.assertEqual(findings[0].file, "labs/reduction/reduction.cu")
        self.assertIn("includes solutions/reduction/reduction.cu (a file outside your lab"
                      if (KIT / "solutions").is_dir() else "includes labs/vectorAdd/vectorAdd.h", findings[0].message)

    def test_digraph_include(self):
        self.check("includes", "include", 6, text="includes cublas_v2.h (cuBLAS does the lab's work")

    def test_comment_inside_the_directive(self):
        self.check("includes", "include", 7, text="includes cufft.h (cuFFT does the lab's work")

    def test_include_that_only_the_device_pass_sees(self):
        self.check("includes", "include", 10, text="helper.h")

    def test_cub_behind_a_namespace_alias(self):
        self.check("cub_alias", "cub", 10, only={"cub", "include"}, text="uses CUB")
        self.check("cub_alias", "include", 1, only={"cub", "include"}, text="cub/warp/warp_reduce.cuh")

    def test_cublas_through_a_function_pointer(self):
        # The line is the first that names the function (here its declaration).
        self.check("cublas_pointer", "cub", 2, text="cublasCreate_v2")

    def test_dlopen(self):
        self.check("calls", "symbol", 6, text="`dlopen`")

    def test_getenv(self):
        self.check("calls", "symbol", 10, text="`getenv`")

    def test_std_thread(self):
        self.check("calls", "symbol", 11, text="std::thread")

    def test_calling_the_cpu_version_the_tests_compare_with(self):
        self.check("calls", "symbol", 14, text="`reduce_sum_cpu(float const*, int)` (the kit's sequential versions")

    def test_calling_a_test_helper_that_links_the_cpu_versions_in(self):
        # reduce_sum_error_bound lives beside reduce_sum_cpu: calling it would link the
        # sequential versions into the library, where a function pointer plus an offset
        # reaches them. (The header's inline helpers, compact_keep say, stay allowed: the
        # solutions use them and check clean.)
        self.check("calls", "symbol", 15, text="`reduce_sum_error_bound(long long, double)` (the kit's code for its tests")

    def test_defining_the_event_timer(self):
        self.check("definitions", "defines", 5, text="cudaEventElapsedTime")

    def test_defining_a_kit_function(self):
        self.check("definitions", "defines", 9, text="namespace lab")
        self.check("definitions", "defines", 10, text="lab::throw_cuda_error")

    def test_weak_or_inline_definition_of_a_kit_function(self):
        self.check("definitions", "defines", 13, text="lab::workspace_bytes")
        self.check("definitions", "defines", 15, text="lab::sync_launches")

    def test_defining_the_cpu_version_the_tests_compare_with(self):
        self.check("definitions", "defines", 12, text="vector_add_cpu")

    def test_constructor(self):
        self.check("constructor_and_destructor", "constructor", 2, text="runs at load time: early()")

    def test_destructor(self):
        self.check("constructor_and_destructor", "constructor", 3, text="runs at unload time: late()")

    def test_constructor_named_like_the_compilers_own(self):
        # Named like the compiler's, its body is read like the compiler's: it calls puts.
        self.check("forged_constructor", "defines", 3, text="_GLOBAL__sub_I_", only={"defines", "constructor"})
        self.check("forged_constructor", "constructor", 3, text="initialisation uses `puts`",
                   only={"defines", "constructor"})

    def test_code_run_at_load_time_by_every_route(self):
        only = {"constructor", "symbol", "defines"}
        expected = [(11, "hands `Spy::~Spy()` to __cxa_atexit"),
                    (8, "initialisation uses `fopen`"),
                    (12, "calls `compute()`"), (16, "static object `heavy` calls `Heavy::Heavy()`"),
                    (18, "thread_local object `tobj` has a constructor"),
                    (21, "`chosen` is an IFUNC (its resolver `resolve`)"),
                    (22, "early(), from an entry of .preinit_array"), (25, "from an entry of .ctors")]
        for line, text in expected:
            findings = self.check("load_time_routes", "constructor", line, only=only, text=text)
        self.assertEqual(len([f for f in findings if f.rule == "constructor"]), 8, [f.message for f in findings])

    def test_a_function_of_the_file_named_like_the_standard_librarys(self):
        self.check("load_time_std_lookalike", "constructor", 3, text="initialisation uses `puts`")

    def test_the_compilers_own_initialisation_of_a_clean_file_passes(self):
        # <iostream>'s std::ios_base::Init, a std::vector and a std::string object, a constexpr
        # table, __constant__ data, a trivial thread_local and LAB_REGISTER_VARIANT.
        run = _Jobs.get("snippet:load_time_clean")
        self.assertTrue(run.result.ok, run.result.message)
        self.assertEqual([f.message for f in run.result.findings], [])

    def test_registering_device_code_the_file_did_not_compile(self):
        self.check("foreign_device_code", "symbol", 12, text="calls __cudaRegisterFunction in vector_add(")
        # The function is known by its asm label only, which no line of the file spells.
        self.check("foreign_device_code", "symbol", None,
                   text="calls __cudaRegisterFatBinary in __nv_cudaEntityRegisterCallback(void**)")

    def test_assembler_directives_that_read_files(self):
        findings = self.check("assembler_files", "include", 4, text="an assembler .incbin directive")
        self.check("assembler_files", "include", 8, text="an assembler .macro directive")
        self.assertEqual(len(findings), 2, [f.message for f in findings])  # the harmless string is not one
        self.assertEqual({f.pattern for f in findings}, {check.READS_FILES})

    def test_line_directive_does_not_hide_the_students_code(self):
        self.check("line_directive", "defines", 2, only={"defines", "include"},
                   text="a #line directive names another file (/usr/include/stdio.h)")
        self.check("line_directive", "include", 3, only={"defines", "include"}, text="assembler .incbin")

    def test_raw_syscall(self):
        self.check("syscall", "syscall", 3, text="raw(long)")

    def test_exit_is_found_next_to_nvccs_exit_stubs(self):
        self.check("exit", "symbol", 5, text="`exit`")

    def test_a_careful_students_file_passes(self):
        run = _Jobs.get("snippet:allowed_features")
        self.assertTrue(run.result.ok, run.result.message)
        self.assertEqual([f.message for f in run.result.findings], [])

    def test_exit_in_a_function_shaped_like_nvccs_stubs_that_is_called(self):
        self.check("exit_lookalike", "symbol", 3, text="`exit`")

    def test_relative_include_of_the_kits_header_passes(self):
        run = _Jobs.get("snippet:relative_kit_header")
        self.assertTrue(run.result.ok, run.result.message)
        self.assertEqual(run.result.findings, [])
        self.assertTrue(any(" -M " in c for c in run.result.commands))
        self.assertTrue(any(" -c " in c for c in run.result.commands))


@unittest.skipUnless(CAN_COMPILE, SKIP_WHY)
class Manifest(unittest.TestCase):
    """The lab's "symbols" table: forbid wins over the allowlist, allow lets a library in."""

    def test_forbid_pattern_and_allow_pattern(self):
        # cudaMemset is on the allowlist but the lab forbids it; cuBLAS is forbidden but the
        # lab allows it, and with its symbols its headers.
        result = _Jobs.get("manifest").result
        self.assertTrue(result.ok, result.message)
        self.assertEqual([(f.rule, f.line) for f in result.findings], [("symbol", 5)])
        self.assertIn("`cudaMemset`, which this lab forbids (labs/matmul/lab.json", result.findings[0].message)


@unittest.skipUnless(CAN_COMPILE, SKIP_WHY)
class CleanFiles(unittest.TestCase):
    """The kit's own files: no finding."""

    def assert_clean(self, prefix: str) -> None:
        """Asserts that every job named `prefix`... ran and found nothing."""
        names = _Jobs.names(prefix)
        self.assertTrue(names, f"no {prefix} job")
        for name in names:
            run = _Jobs.get(name)
            with self.subTest(name):
                self.assertTrue(run.result.ok, run.result.message)
                self.assertEqual([f.message for f in run.result.findings], [])
                self.assertEqual(run.left_behind, [])

    def test_every_skeleton(self):
        self.assert_clean("skeleton:")
        self.assertEqual(len(_Jobs.names("skeleton:")), len(manifest.labs(KIT)))

    def test_correct_corpus_cases(self):
        self.assert_clean("corpus:correct")

    @unittest.skipUnless((KIT / "solutions").is_dir(), "no solutions/ in this copy of the kit")
    def test_reference_solutions(self):
        # No solution needs an exception: CUB and cuBLAS appear only in the benches, which
        # are not checked. Set LABKIT_CHECK_SOLUTIONS=1 to check every solution file.
        self.assert_clean("solution:")


@unittest.skipUnless(CAN_COMPILE, SKIP_WHY)
class Bounds(unittest.TestCase):
    """A file that needs unbounded resources to compile ends as 'exceeded', leaving nothing."""

    def test_huge_initialised_device_array(self):
        run = _Jobs.get("bomb:huge_array")
        self.assertFalse(run.result.ok)
        self.assertTrue(run.result.exceeded, run.result.message)
        self.assertIn("could not compile within the check's limits", run.result.message)
        self.assertLess(run.seconds, 90)
        self.assertEqual(run.left_behind, [])

    def test_template_bomb_under_a_small_memory_limit(self):
        _Jobs.wait_all()  # the smaller limit below must not reach the other jobs
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "labs" / "vectorAdd" / "vectorAdd.cu"
            path.parent.mkdir(parents=True)
            path.write_text(textwrap.dedent(TEMPLATE_BOMB))
            small = proc.Limits(memory_bytes=768 << 20, file_bytes=64 << 20)
            with mock.patch.object(tools, "DEFAULT_LIMITS", small):
                result = check.check_lab(KIT, manifest.by_name(KIT)["vectorAdd"], [path], work_dir=Path(tmp) / "w")
            self.assertTrue(result.exceeded, result.message)
            self.assertEqual(list((Path(tmp) / "w").iterdir()), [])

    def test_object_file_given(self):
        with tempfile.TemporaryDirectory() as tmp:
            path = Path(tmp) / "labs" / "vectorAdd" / "vectorAdd.cu"
            path.parent.mkdir(parents=True)
            path.write_text(textwrap.dedent(SNIPPETS["syscall"][1]))
            obj = Path(tmp) / "given.o"
            done = proc.run([NVCC, "-c", "-x", "cu", "-std=c++17", "-O3", str(path), "-o", str(obj)], timeout=120)
            self.assertEqual(done.returncode, 0, done.stderr)
            result = check.check_lab(KIT, manifest.by_name(KIT)["vectorAdd"], [path], work_dir=Path(tmp) / "w",
                                     object_file=obj)
            self.assertEqual([(f.rule, f.line) for f in result.findings], [("syscall", 3)])
            self.assertFalse(any(" -c " in c for c in result.commands), result.commands)
            self.assertTrue(obj.is_file())

    def test_nvcc_behind_a_wrapper_script(self):
        # Some machines put a script on PATH that runs the real nvcc elsewhere; the
        # toolkit's headers must still count as the toolkit's, not as "outside your lab".
        with tempfile.TemporaryDirectory() as tmp:
            wrapper = Path(tmp) / "bin" / "nvcc"
            wrapper.parent.mkdir()
            wrapper.write_text(f'#!/bin/sh\nexec "{NVCC}" "$@"\n')
            wrapper.chmod(0o755)
            tools = check.toolchain(str(wrapper))
            real = check.toolchain(NVCC)
            self.assertEqual(tools.toolkit_includes, real.toolkit_includes)
            self.assertTrue(any(Path(d, "cuda_runtime.h").is_file() for d in tools.toolkit_includes),
                            tools.toolkit_includes)
            result = check.check_lab(KIT, manifest.by_name(KIT)["reduction"], [KIT / "labs/reduction/reduction.cu"],
                                     work_dir=Path(tmp) / "w", nvcc=str(wrapper))
            self.assertEqual([f.message for f in result.findings], [])

    def test_nvcc_missing(self):
        with tempfile.TemporaryDirectory() as tmp:
            result = check.check_lab(KIT, manifest.by_name(KIT)["vectorAdd"], [KIT / "labs/vectorAdd/vectorAdd.cu"],
                                     work_dir=Path(tmp), nvcc=str(Path(tmp) / "no-nvcc"))
        self.assertFalse(result.ok)
        self.assertIn("nvcc not found", result.message)


@unittest.skipUnless(CAN_COMPILE, SKIP_WHY)
class ForeignReads(unittest.TestCase):
    """check.foreign_reads: the files outside the kit, the toolkit and the system a compile reads."""

    def test_an_outside_file_is_named_and_the_kits_are_not(self):
        with tempfile.TemporaryDirectory() as tmp:
            outside = Path(tmp) / "elsewhere" / "notes.txt"
            outside.parent.mkdir()
            outside.write_text("not C++ at all\n")
            path = Path(tmp) / "labs" / "vectorAdd" / "vectorAdd.cu"
            path.parent.mkdir(parents=True)
            path.write_text(f'#include <cstdio>\n#include "vectorAdd.h"\n#include "{outside}"\n')
            lab = manifest.by_name(KIT)["vectorAdd"]
            self.assertEqual(check.foreign_reads(KIT, lab, [path], work_dir=Path(tmp) / "w"), [str(outside)])
            path.write_text('#include <cstdio>\n#include "vectorAdd.h"\n#include "lab/buffer.h"\n')
            self.assertEqual(check.foreign_reads(KIT, lab, [path], work_dir=Path(tmp) / "w"), [])
            path.write_text('#include "vectorAd.cuh"\n')  # the preprocessor fails: it cannot tell
            self.assertIsNone(check.foreign_reads(KIT, lab, [path], work_dir=Path(tmp) / "w"))
            self.assertEqual(list((Path(tmp) / "w").iterdir()), [])


class CommandLine(unittest.TestCase):
    """python3 -m grader check: exit status, output, --submission, --json."""

    def main(self, *argv: str) -> tuple[int, str, str]:
        """Runs `python3 -m grader check ARGV`: exit status, stdout, stderr."""
        out, err = io.StringIO(), io.StringIO()
        with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
            code = cli.main(["check", *argv])
        return code, out.getvalue(), err.getvalue()

    def test_unknown_lab_is_usage(self):
        code, _, err = self.main("--root", str(KIT), "nosuchlab")
        self.assertEqual(code, 2)
        self.assertIn("unknown lab 'nosuchlab'", err)
        self.assertEqual(len(err.strip().splitlines()), 1)

    def test_missing_folders_are_usage(self):
        with tempfile.TemporaryDirectory() as tmp:
            self.assertEqual(self.main("--root", tmp)[0], 2)
            self.assertEqual(self.main("--submission", str(Path(tmp) / "absent"), "vectorAdd")[0], 2)

    def test_nvcc_not_found_is_usage(self):
        code, _, err = self.main("--nvcc", "/nonexistent/nvcc", "vectorAdd")
        self.assertEqual(code, 2)
        self.assertIn("nvcc not found", err)
        self.assertNotIn("Traceback", err)

    # Ctrl-C: a line saying how far it got, the JSON of the labs checked, exit 130, no traceback.
    def test_interrupt(self):
        seen = []

        def second_interrupts(root, source, lab, tmp, args):
            seen.append(lab.name)
            if len(seen) == 2:
                raise KeyboardInterrupt
            return check.CheckResult()  # clean: no compiler needed for this test

        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch("grader.check.cli._check_one", side_effect=second_interrupts):
            code, out, err = self.main("--root", str(KIT), "--json", str(Path(tmp) / "c.json"), "vectorAdd", "reduction")
            self.assertEqual(code, 130, out + err)
            self.assertIn("interrupted: 1 of 2 labs checked", err)
            self.assertNotIn("Traceback", out + err)
            saved = json.loads((Path(tmp) / "c.json").read_text())
            self.assertEqual((list(saved["labs"]), saved["interrupted"]), (["vectorAdd"], True))

    # The course's grader.toml counts as in grading: a lab's `allow` lifts that rule's
    # findings (said once); a broken file is a usage error naming it, before any check.
    def test_course_config(self):
        found = rules.Finding("forbidden", "exit", "labs/vectorAdd/vectorAdd.cu", 14, "calls exit()", rule="exit")
        with tempfile.TemporaryDirectory() as tmp, \
                mock.patch("grader.check.cli._check_one", side_effect=lambda *a: check.CheckResult(findings=[found])):
            course = Path(tmp) / "course.toml"
            code, out, _ = self.main("--root", str(KIT), "vectorAdd")
            self.assertEqual(code, 1)
            self.assertIn("calls exit()", out)
            course.write_text('[labs.vectorAdd]\nallow = ["exit"]\n')
            code, out, _ = self.main("--root", str(KIT), "--config", str(course), "vectorAdd", "reduction")
            self.assertEqual(code, 1, out)  # reduction's finding stays: the allow is vectorAdd's
            self.assertIn("vectorAdd: note: the course's config allows exit", out)
            self.assertIn("vectorAdd: clean", out)
            self.assertIn("reduction: 1 finding(s)", out)
            code, out, _ = self.main("--root", str(KIT), "--config", str(course), "vectorAdd")
            self.assertEqual(code, 0, out)
            course.write_text("[labs.vectorAdd\nallow = 3\n")
            code, out, err = self.main("--root", str(KIT), "--config", str(course), "vectorAdd")
            self.assertEqual(code, 2)
            self.assertIn(f"{course}: invalid TOML", err)
            self.assertEqual(out, "")

    def test_help(self):
        code, out, _ = self.main("--help")
        self.assertEqual(code, 0)
        for option in ("--root", "--submission", "--json", "--quiet"):
            self.assertIn(option, out)

    @unittest.skipUnless(CAN_COMPILE, SKIP_WHY)
    def test_submission_with_findings_and_a_header_that_must_not_shadow(self):
        with tempfile.TemporaryDirectory() as tmp:
            repo = Path(tmp) / "repo"
            folder = repo / "labs" / "vectorAdd"
            folder.mkdir(parents=True)
            (folder / "vectorAdd.cu").write_text(textwrap.dedent(SNIPPETS["relative_kit_header"][1]).replace(
                "if (n <= 0) return;", "if (n <= 0) return;\n  if (getenv(\"X\")) return;").replace(
                '#include "vectorAdd.h"', '#include <cstdlib>\n#include "vectorAdd.h"'))
            (folder / "vectorAdd.h").write_text('#error "the submission\'s own header was used"\n')
            report = Path(tmp) / "out" / "check.json"
            code, out, err = self.main("--submission", str(repo), "--json", str(report), "--quiet", "vectoradd")
            self.assertEqual(code, 1, out + err)
            self.assertIn("labs/vectorAdd/vectorAdd.cu:11: uses `getenv`", out)
            self.assertIn("vectorAdd: 1 finding(s)", out)
            data = json.loads(report.read_text())
            self.assertEqual(data["labs"]["vectorAdd"]["findings"][0]["rule"], "symbol")
            self.assertEqual(data["labs"]["vectorAdd"]["findings"][0]["line"], 11)

    @unittest.skipUnless(CAN_COMPILE, SKIP_WHY)
    def test_clean_kit_lab(self):
        code, out, err = self.main("--root", str(KIT), "--quiet", "vectorAdd")
        self.assertEqual(code, 0, out + err)
        self.assertEqual(out.strip(), "vectorAdd: clean")


class Parsing(unittest.TestCase):
    """The parsers, on recorded text (no compiler needed)."""

    def test_string_literals_as_the_compiler_joins_them(self):
        text = r"""asm(".inc" "bin"); char q = '"'; f("a\"b" "c"); g(R"d(x")y)d"); h(".\x69\156c" u8"lude");"""
        self.assertEqual([v for _, v in check.string_literals(text)], [".incbin", 'a"bc', 'x")y', ".include"])

    def test_dependency_file(self):
        text = "x.o: /k/labs/a/a.cu \\\n /usr/include/stdio.h /tmp/with\\ space.h \\\n /k/solutions/a/a.cu\n"
        self.assertEqual(check.parse_depfile(text),
                         ["/k/labs/a/a.cu", "/usr/include/stdio.h", "/tmp/with space.h", "/k/solutions/a/a.cu"])

    def test_line_markers_give_the_students_include_line(self):
        with tempfile.TemporaryDirectory() as tmp:
            base = Path(os.path.realpath(tmp))
            student, good, bad, inner = (str(base / n) for n in ("s.cu", "good.h", "bad.h", "inner.h"))
            ii = base / "s.cpp4.ii"
            ii.write_text("\n".join([
                f'# 0 "{student}"', '# 0 "<built-in>"', '# 0 "<command-line>"', f'# 1 "{student}"',
                f'# 1 "{good}" 1', "int g;", f'# 1 "{bad}" 1', f'# 1 "{inner}" 1', "int i;",
                f'# 2 "{bad}" 2', f'# 2 "{good}" 2', f'# 3 "{student}" 2', "int s;", f'# 7 "{student}"',
                f'# 1 "{inner}" 1', f'# 8 "{student}" 2', "int t;"]) + "\n")
            scan = check.scan_preprocessed(ii, base, {student}, {bad, inner}, keep_student_lines=True)
        self.assertEqual(scan.located[bad], (student, 2))  # through good.h, from the #include ending on line 2
        self.assertEqual(scan.located[inner], (student, 7))  # the second time, directly
        self.assertEqual(scan.nested, {inner})
        self.assertEqual([(line, text) for _, line, text in scan.own], [(3, "int s;"), (8, "int t;")])
        self.assertEqual(scan.seen, {student, good, bad, inner})

    def test_directive_spanning_lines(self):
        text = '#include "a.h"\n#include /* x\n */ "b.h"\nint x;\n'
        self.assertEqual(directive_line(text, 3), 2)
        self.assertEqual(directive_line(text, 1), 1)

    def test_header_families(self):
        self.assertEqual(header_family("cub/cub.cuh")[1], "CUB")
        self.assertEqual(header_family("cublas_v2.h")[1], "cuBLAS")
        self.assertEqual(header_family("nppi_filtering_functions.h")[1], "NPP")
        self.assertIsNone(header_family("cuda_runtime.h"))
        self.assertIsNone(header_family("cuda/std/atomic"))
        self.assertIsNone(header_family("cooperative_groups.h"))

    def test_qualified_names(self):
        self.assertEqual(qualified_name("void std::vector<int>::_M_realloc_insert<int>(int&&)"),
                         "std::vector::_M_realloc_insert")
        self.assertEqual(qualified_name("operator delete(void*, unsigned long)"), "operator delete")
        self.assertEqual(qualified_name("(anonymous namespace)::rewrite(int, char**)"), "rewrite")
        self.assertEqual(qualified_name("std::ostream& std::operator<< <std::char_traits<char> >(std::ostream&)"),
                         "std::operator<<")

    def test_exit_stub_shape(self):
        stub = ["sub    $0x18,%rsp", "movl   $0x1,0xc(%rsp)", "mov    0xc(%rsp),%edi", "call   15 <f+0x15>",
                "data16 cs nopw 0x0(%rax,%rax,1)"]
        self.assertTrue(is_exit_stub_shape(stub))
        unoptimised = ["endbr64", "push   %rbp", "mov    %rsp,%rbp", "sub    $0x20,%rsp", "mov    %edi,-0x14(%rbp)",
                       "movss  %xmm0,-0x18(%rbp)", "movl   $0x1,-0x4(%rbp)", "mov    -0x4(%rbp),%eax",
                       "mov    %eax,%edi", "call   2a <f+0x2a>"]
        self.assertTrue(is_exit_stub_shape(unoptimised))
        other_slot = stub[:2] + ["mov    0x8(%rsp),%edi"] + stub[3:]
        self.assertFalse(is_exit_stub_shape(other_slot))  # exit(<whatever lies there>)
        overwritten = unoptimised[:7] + ["mov    %edi,-0x4(%rbp)"] + unoptimised[7:]
        self.assertFalse(is_exit_stub_shape(overwritten))  # exit(<the caller's argument>)
        self.assertFalse(is_exit_stub_shape(["xor    %edi,%edi", "call   5 <g+0x5>"]))  # exit(0)
        # GCC 13 (Ubuntu 24.04) starts the stub with a push/pop pair of one register.
        ubuntu = ["endbr64", "push   %rax", "pop    %rax"] + stub
        self.assertTrue(is_exit_stub_shape(ubuntu))
        loaded = stub[:3] + ["push   %rax", "pop    %rdi"] + stub[3:]  # exit(<whatever rax holds>)
        self.assertFalse(is_exit_stub_shape(loaded))
        self.assertFalse(is_exit_stub_shape(["push   %rax", "pop    %rax"] + stub[:3] + ["pop    %rdi"] + stub[3:]))

    def test_shown_name_of_a_copy(self):
        lab = manifest.by_name(KIT)["vectorAdd"]
        shown = shown_name(KIT, lab, Path("/tmp/x/labs/vectorAdd/vectorAdd.cu"), Path("/tmp/y"))
        self.assertEqual(shown, "labs/vectorAdd/vectorAdd.cu")
        self.assertEqual(shown_name(KIT, lab, KIT / "solutions/vectorAdd/vectorAdd.cu", Path("/tmp/y")),
                         "solutions/vectorAdd/vectorAdd.cu")


class LoadTime(unittest.TestCase):
    """Load-time code found in recorded readelf/objdump output (no compiler needed)."""

    @staticmethod
    def findings(name: str, elf_edit=None, disassembly_edit=None) -> list:
        """The constructor findings of fixture `name`, its recorded text edited first if asked."""
        names = json.loads((LOAD_TIME / f"{name}.names.json").read_text())
        elf = (LOAD_TIME / f"{name}.readelf.txt").read_text()
        disassembly = (LOAD_TIME / f"{name}.objdump.txt").read_text()
        obj = check.object_from_text(elf_edit(elf) if elf_edit else elf,
                                     disassembly_edit(disassembly) if disassembly_edit else disassembly,
                                     lambda wanted: {n: names[n] for n in wanted if n in names})
        source = Source("labs/vectorAdd/vectorAdd.cu", LOAD_TIME / f"{name}.cu", LOAD_TIME / f"{name}.cu")
        return constructor_findings(obj, source)

    def test_clean_file(self):
        self.assertEqual([f.message for f in self.findings("clean")], [])

    def test_every_route(self):
        found = {(f.line, f.pattern) for f in self.findings("loadtime")}
        self.assertEqual(found, {(11, "_ZN3SpyD1Ev"), (12, "_Z7computev"), (16, "_ZN5HeavyC1Ev"), (8, "fopen"),
                                 (25, ".ctors"), (22, ".preinit_array"), (21, "chosen"), (18, "_ZTH4tobj")})
        self.assertTrue(all(f.rule == "constructor" and f.kind == "forbidden" for f in self.findings("loadtime")))

    def test_parsed_symbol_types(self):
        names = json.loads((LOAD_TIME / "loadtime.names.json").read_text())
        obj = check.object_from_text((LOAD_TIME / "loadtime.readelf.txt").read_text(), "", lambda n: names)
        by_name = {s.name: s for s in obj.symbols}
        self.assertEqual(by_name["chosen"].type, "IFUNC")
        self.assertEqual(by_name["tobj"].type, "TLS")
        self.assertEqual(by_name["_ZTH4tobj"].demangled, "TLS init function for tobj")
        kinds = {obj.sections[i][0]: obj.sections[i][1] for i in obj.sections}
        self.assertEqual(kinds[".preinit_array"], "PREINIT_ARRAY")

    def test_the_clean_files_initialiser_calling_the_files_own_function(self):
        # The recorded call of std::ios_base::Init::Init() (symbol 69 = 0x45) turned into a call
        # of the file's own vector_add_again (symbol 62 = 0x3e): a finding, where the clean file has none.
        recorded = "0000004500000004 R_X86_64_PLT32         0000000000000000 _ZNSt8ios_base4InitC1Ev"
        edited = "0000003e00000004 R_X86_64_PLT32         0000000000000380 _Z16vector_add_againPKfS0_Pfi"
        edit = lambda text: text.replace(recorded, edited, 1)
        findings = self.findings("clean", elf_edit=edit)
        self.assertEqual(len(findings), 1, [f.message for f in findings])
        self.assertIn("calls `vector_add_again(float const*, float const*, float*, int)`", findings[0].message)
        self.assertEqual(findings[0].line, 21)

    def test_a_destructor_that_cannot_be_named(self):
        # __cxa_atexit handed a function whose load the check does not see (a register
        # filled some other way): the handler is unknown, so it is a finding.
        # Recorded: `c4: mov 0x0(%rip),%rdi` (std::ios_base::Init::~Init()), then `d5: call
        # __cxa_atexit`, in the initialiser of .text.startup.
        lines = (LOAD_TIME / "clean.objdump.txt").read_text().splitlines()
        first = next(n for n, line in enumerate(lines) if line.endswith("_clean.cudafe1.cpp>:"))
        load = next(n for n in range(first, len(lines)) if lines[n].startswith("  c4:\tmov    0x0(%rip),%rdi"))
        lines[load] = "  c4:\tmov    %rax,%rdi"
        edit = lambda text: "\n".join(lines) + "\n"
        messages = [f.message for f in self.findings("clean", disassembly_edit=edit)]
        self.assertEqual(len(messages), 1, messages)
        self.assertIn("hands a function that the check cannot name to __cxa_atexit", messages[0])

    def test_irelative_relocation(self):
        # As a linked object carries it: a slot relocated by calling its resolver.
        edit = lambda text: text.replace("0000000200000001 R_X86_64_64      ",
                                         "0000000200000025 R_X86_64_IRELATIVE", 1)
        messages = [f.message for f in self.findings("loadtime", elf_edit=edit)]
        self.assertTrue(any("an R_X86_64_IRELATIVE relocation calls a resolver at load time" in m for m in messages),
                        messages)

    def test_the_compilers_constructor_in_preinit_array(self):
        # An entry of .preinit_array is never the compiler's, even named like it.
        edit = lambda text: text.replace(".text + 10", ".text.startup + 0", 1)
        messages = [f.message for f in self.findings("loadtime", elf_edit=edit)]
        self.assertTrue(any("from an entry of .preinit_array" in m for m in messages), messages)


def tearDownModule() -> None:
    """Waits for the jobs still running and removes their folder."""
    if _Jobs.tmp is not None:
        for future in _Jobs.futures.values():
            future.cancel()
        for future in _Jobs.futures.values():
            if not future.cancelled():
                with contextlib.suppress(Exception):
                    future.result()
        _Jobs.tmp.cleanup()
        shutil.rmtree(_Jobs.tmp.name, ignore_errors=True)


if __name__ == "__main__":
    unittest.main()
