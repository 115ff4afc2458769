"""The CUDA compiler as `python3 -m grader package` runs it: without line information.

The kit compiles every CUDA file with -lineinfo (cmake/LabKit.cmake), so that
compute-sanitizer can name the source line of an error. In a reference library that
ships to grading machines, line information carries the kernels' PTX (the
`.nv_debug_ptx_txt` section of each cubin: `ld.global.f32 ...`, readable) and the
absolute source paths. The package build names this script as the CUDA compiler
launcher (-DCMAKE_CUDA_COMPILER_LAUNCHER, a cache variable on CMake's command line, so
the kit's CMake files stay as they are); it drops the line-information and
device-debug flags and runs the compiler with the rest:

    python3 nvcc_shipping.py <nvcc> <argument>...

The compiler replaces this process (exec), so the build tool waits on it directly and
the build's own timeout (proc.run around `cmake --build`) bounds it.
"""

from __future__ import annotations

import os
import sys

# Flags that put source lines, PTX or debug information into the device code.
DROPPED = frozenset({"-lineinfo", "--generate-line-info", "-G", "--device-debug"})


def command(argv: list[str]) -> list[str]:
    """The compiler's command line without DROPPED."""
    return [arg for arg in argv if arg not in DROPPED]


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else list(argv)
    if not argv:
        print("usage: python3 nvcc_shipping.py <nvcc> <argument>... (the package build's CUDA compiler "
              "launcher; see python3 -m grader package --help)", file=sys.stderr)
        return 2
    args = command(argv)
    try:
        os.execvp(args[0], args)
    except OSError as exc:
        print(f"nvcc_shipping: cannot run {args[0]}: {exc.strerror or exc}: is the CUDA toolkit installed?",
              file=sys.stderr)
        return 127
    return 0  # not reached: exec replaced this process


if __name__ == "__main__":
    sys.exit(main())
