// The worker's sandbox (common/worker/sandbox.cpp) without a GPU: each test applies it in
// a child process of its own (a death test), as a worker does around loading the
// implementation, and reports with its exit status whether a system call was let through.
#include <errno.h>
#include <signal.h>
#include <sys/mman.h>
#include <sys/syscall.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include "sandbox.h"

namespace {

void on_alarm(int) {}

// 0 when sigaction could install a SIGALRM handler, 1 when it was refused with EPERM,
// 2 for any other failure.
int install_handler() {
  struct sigaction action {};
  action.sa_handler = on_alarm;
  sigemptyset(&action.sa_mask);
  if (sigaction(SIGALRM, &action, nullptr) == 0) return 0;
  return errno == EPERM ? 1 : 2;
}

// Both stages, as a worker applies them around dlopen.
void sandbox_worker() {
  lab::judge::SandboxPlan plan;
  (void)lab::judge::sandbox_before_load(plan);
  (void)lab::judge::sandbox_after_load();
}

// The worker's own handlers are set before the library is loaded: the first stage still
// lets a handler be installed.
TEST(SandboxDeathTest, HandlersMayBeSetBeforeTheLibraryIsLoaded) {
  EXPECT_EXIT(
      {
        lab::judge::SandboxPlan plan;
        (void)lab::judge::sandbox_before_load(plan);
        _exit(install_handler());
      },
      ::testing::ExitedWithCode(0), "");
}

// After the library is loaded, a new handler is refused (and logged): with a timer it would
// run the implementation's code between the judge's calls.
TEST(SandboxDeathTest, NoNewSignalHandlerOnceTheLibraryIsLoaded) {
  EXPECT_EXIT(
      {
        sandbox_worker();
        _exit(install_handler());
      },
      ::testing::ExitedWithCode(1), "refused system call [0-9]+");
}

// Asking for the current handler (a null new action) stays allowed.
TEST(SandboxDeathTest, ReadingTheCurrentHandlerIsAllowed) {
  EXPECT_EXIT(
      {
        sandbox_worker();
        struct sigaction old {};
        _exit(sigaction(SIGALRM, nullptr, &old) == 0 ? 0 : 1);
      },
      ::testing::ExitedWithCode(0), "");
}

// A new action at an address whose low 32 bits are 0 is not a null pointer: the filter
// reads both halves of the argument.
TEST(SandboxDeathTest, AnActionAtALowHalfZeroAddressIsRefusedToo) {
  void* const wanted = reinterpret_cast<void*>(0x7e0000000000ULL);
  void* const page = mmap(wanted, 1 << 16, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS | MAP_FIXED_NOREPLACE,
                          -1, 0);
  if (page != wanted) GTEST_SKIP() << "could not map a page at " << wanted;
  auto* action = static_cast<struct sigaction*>(page);
  action->sa_handler = on_alarm;
  EXPECT_EXIT(
      {
        sandbox_worker();
        // The raw call: the kernel's struct is what the filter sees; its layout does not matter here.
        const long rc = syscall(SYS_rt_sigaction, SIGALRM, page, nullptr, sizeof(unsigned long));
        _exit(rc == 0 ? 0 : (errno == EPERM ? 1 : 2));
      },
      ::testing::ExitedWithCode(1), "refused system call [0-9]+");
  munmap(page, 1 << 16);
}

}  // namespace
