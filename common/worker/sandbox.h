// Provided by the kit. The worker's sandbox (Linux): what a worker process may still do
// once it has loaded an implementation library it does not trust.
//
// Before the library is loaded (its constructors run inside the sandbox already):
//  - no capabilities, no new privileges;
//  - Landlock, where the kernel has it: files readable only in the system's folders,
//    the folders of the libraries already loaded and the implementation's own folder;
//    writable nowhere but /dev; no TCP; no signals to processes outside the sandbox;
//  - seccomp: no new processes (threads only), no exec, no sockets, no ptrace or other
//    processes' memory, no io_uring, bpf or perf, no files opened for writing, no file
//    system changes, no executable memory that is not a library file, signals to itself only.
// After the library is loaded: no new threads, no new executable memory at all, and no
// new signal handlers (with a timer, a handler would run the implementation's code between
// the judge's calls, as a thread would).
// A refused system call fails with EPERM and is logged to the worker's log.
#pragma once

#include <string>
#include <vector>

namespace lab::judge {

/// What the sandbox lets the worker read.
struct SandboxPlan {
  std::vector<std::string> readable;  ///< folders readable besides the system's (the library's own)
};

/// Applies the first stage; returns one line per protection, saying whether it is in force.
std::string sandbox_before_load(const SandboxPlan& plan);

/// Applies the second stage (after the library is loaded and its kernels registered).
std::string sandbox_after_load();

/// Process limits that need no kernel feature: no core files, a small log.
void limit_process();

}  // namespace lab::judge
