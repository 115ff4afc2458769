// Provided by the kit. The worker's sandbox: capabilities, Landlock and seccomp (sandbox.h).
#include "sandbox.h"

#include <errno.h>
#include <fcntl.h>
#include <link.h>
#include <linux/audit.h>
#include <linux/capability.h>
#include <linux/filter.h>
#include <linux/landlock.h>
#include <linux/seccomp.h>
#include <sched.h>
#include <signal.h>
#include <stddef.h>
#include <sys/mman.h>
#include <sys/prctl.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <set>
#include <string>
#include <vector>

namespace lab::judge {
namespace {

// ---- seccomp -----------------------------------------------------------------------

#if defined(__x86_64__)
constexpr unsigned kAuditArch = AUDIT_ARCH_X86_64;
#elif defined(__aarch64__)
constexpr unsigned kAuditArch = AUDIT_ARCH_AARCH64;
#else
#error "the worker's sandbox knows x86-64 and aarch64 only"
#endif

// A refused call: log its number (async-signal-safe) and make it return -EPERM.
void on_sigsys(int, siginfo_t* info, void* context) {
  char line[96];
  const int n = std::snprintf(line, sizeof line, "[labkit sandbox] refused system call %d\n", info->si_syscall);
  if (n > 0) (void)!write(2, line, static_cast<std::size_t>(n));
  auto* uc = static_cast<ucontext_t*>(context);
#if defined(__x86_64__)
  uc->uc_mcontext.gregs[REG_RAX] = -EPERM;
#elif defined(__aarch64__)
  uc->uc_mcontext.regs[0] = static_cast<unsigned long long>(-EPERM);
#endif
}

// A small assembler for classic BPF filters.
class Filter {
 public:
  Filter() {
    emit(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, arch));
    jump(BPF_JEQ, kAuditArch, 1, 0);
    ret(SECCOMP_RET_KILL_PROCESS);
    load_nr();
  }
  void load_nr() { emit(BPF_LD | BPF_W | BPF_ABS, offsetof(seccomp_data, nr)); }
  // The low 32 bits of argument i (little-endian: the first word of its 64), and the high ones.
  void load_arg(int i) { emit(BPF_LD | BPF_W | BPF_ABS, static_cast<unsigned>(offsetof(seccomp_data, args) + 8 * i)); }
  void load_arg_high(int i) {
    emit(BPF_LD | BPF_W | BPF_ABS, static_cast<unsigned>(offsetof(seccomp_data, args) + 8 * i + 4));
  }
  void ret(unsigned action) { emit(BPF_RET | BPF_K, action); }
  void jump(unsigned op, unsigned k, unsigned char jt, unsigned char jf) {
    m_code.push_back(sock_filter{static_cast<unsigned short>(BPF_JMP | op | BPF_K), jt, jf, k});
  }
  /// Refuses system call `nr` outright.
  void refuse(long nr) {
    jump(BPF_JEQ, static_cast<unsigned>(nr), 0, 1);
    ret(SECCOMP_RET_TRAP);
  }
  /// Refuses `nr` when (arg `i` & `mask`) != 0, else goes on with the next rule.
  void refuse_when_set(long nr, int i, unsigned mask) {
    jump(BPF_JEQ, static_cast<unsigned>(nr), 0, 3);
    load_arg(i);
    jump(BPF_JSET, mask, 0, 1);
    ret(SECCOMP_RET_TRAP);
    load_nr();
  }
  /// Refuses `nr` when arg `i`, a pointer, is not null (both of its 32-bit halves are
  /// read: an address whose low half is 0 is not null).
  void refuse_when_not_null(long nr, int i) {
    jump(BPF_JEQ, static_cast<unsigned>(nr), 0, 6);
    load_arg(i);
    jump(BPF_JEQ, 0, 1, 0);
    ret(SECCOMP_RET_TRAP);
    load_arg_high(i);
    jump(BPF_JEQ, 0, 1, 0);
    ret(SECCOMP_RET_TRAP);
    load_nr();
  }
  /// Refuses `nr` unless arg `i` == `value`.
  void refuse_unless_equal(long nr, int i, unsigned value) {
    jump(BPF_JEQ, static_cast<unsigned>(nr), 0, 3);
    load_arg(i);
    jump(BPF_JEQ, value, 1, 0);
    ret(SECCOMP_RET_TRAP);
    load_nr();
  }
  bool install() {
    ret(SECCOMP_RET_ALLOW);
    sock_fprog program{static_cast<unsigned short>(m_code.size()), m_code.data()};
    return syscall(SYS_seccomp, SECCOMP_SET_MODE_FILTER, 0, &program) == 0;
  }
  void emit(unsigned short code, unsigned k) { m_code.push_back(sock_filter{code, 0, 0, k}); }

 private:
  std::vector<sock_filter> m_code;
};

// System calls a worker never needs once it runs: new programs and processes, other
// processes, sockets, kernel facilities that bypass seccomp or could harm the machine,
// and every change to the file system.
const long kRefused[] = {
    SYS_execve, SYS_execveat, SYS_ptrace, SYS_process_vm_readv, SYS_process_vm_writev,
    SYS_socket, SYS_socketpair, SYS_connect, SYS_bind, SYS_listen, SYS_accept, SYS_accept4,
    SYS_setsid, SYS_setpgid, SYS_unshare, SYS_setns, SYS_mount, SYS_umount2, SYS_pivot_root, SYS_chroot,
    SYS_io_uring_setup, SYS_io_uring_enter, SYS_io_uring_register, SYS_bpf, SYS_perf_event_open,
    SYS_userfaultfd, SYS_kexec_load, SYS_init_module, SYS_finit_module, SYS_delete_module, SYS_keyctl,
    SYS_add_key, SYS_request_key, SYS_pidfd_open, SYS_pidfd_send_signal, SYS_pidfd_getfd, SYS_tkill,
    SYS_unlinkat, SYS_renameat, SYS_renameat2, SYS_mkdirat, SYS_linkat, SYS_symlinkat, SYS_fchmodat,
    SYS_fchownat, SYS_mknodat, SYS_name_to_handle_at, SYS_open_by_handle_at, SYS_utimensat, SYS_fchmod,
    SYS_fchown, SYS_truncate, SYS_acct, SYS_swapon, SYS_swapoff, SYS_reboot, SYS_sethostname,
    SYS_setdomainname, SYS_quotactl, SYS_openat2, SYS_setuid, SYS_setgid, SYS_setreuid, SYS_setregid,
    SYS_setresuid, SYS_setresgid, SYS_setgroups, SYS_personality, SYS_process_madvise,
#if defined(__x86_64__)
    SYS_fork, SYS_vfork, SYS_creat, SYS_unlink, SYS_rename, SYS_mkdir, SYS_rmdir, SYS_link, SYS_symlink,
    SYS_chmod, SYS_chown, SYS_lchown, SYS_mknod, SYS_utime, SYS_utimes, SYS_futimesat, SYS_iopl, SYS_ioperm,
    SYS_uselib,
#endif
};

constexpr unsigned kWriteFlags = O_WRONLY | O_RDWR | O_CREAT | O_TRUNC | O_APPEND;

bool install_stage_one() {
  struct sigaction action {};
  action.sa_sigaction = on_sigsys;
  action.sa_flags = SA_SIGINFO;
  sigaction(SIGSYS, &action, nullptr);
  Filter f;
  for (long nr : kRefused) f.refuse(nr);
  // clone3 cannot be filtered by its flags (they are in memory): ENOSYS makes the C
  // library fall back to clone, whose flags can be.
  f.jump(BPF_JEQ, SYS_clone3, 0, 1);
  f.ret(SECCOMP_RET_ERRNO | ENOSYS);
  // Threads only: a clone without CLONE_THREAD makes a process.
  f.jump(BPF_JEQ, SYS_clone, 0, 4);
  f.load_arg(0);
  f.jump(BPF_JSET, CLONE_THREAD, 1, 0);
  f.ret(SECCOMP_RET_TRAP);
  f.load_nr();
  // Files: read-only.
  f.refuse_when_set(SYS_openat, 2, kWriteFlags);
#if defined(__x86_64__)
  f.refuse_when_set(SYS_open, 1, kWriteFlags);
#endif
  // No memory made executable after the fact; executable mappings only of files (the
  // library and what it needs), never writable at the same time, never anonymous.
  f.refuse_when_set(SYS_mprotect, 2, PROT_EXEC);
  f.refuse_when_set(SYS_pkey_mprotect, 2, PROT_EXEC);
  f.jump(BPF_JEQ, SYS_mmap, 0, 7);
  f.load_arg(2);
  f.jump(BPF_JSET, PROT_EXEC, 0, 5);
  f.jump(BPF_JSET, PROT_WRITE, 3, 0);
  f.load_arg(3);
  f.jump(BPF_JSET, MAP_ANONYMOUS, 1, 0);
  f.jump(BPF_JA, 1, 0, 0);
  f.ret(SECCOMP_RET_TRAP);
  f.load_nr();
  // Signals to this process only.
  const unsigned self = static_cast<unsigned>(getpid());
  f.refuse_unless_equal(SYS_kill, 0, self);
  f.refuse_unless_equal(SYS_tgkill, 0, self);
  f.refuse_unless_equal(SYS_rt_sigqueueinfo, 0, self);
  f.refuse_unless_equal(SYS_rt_tgsigqueueinfo, 0, self);
  return f.install();
}

bool install_stage_two() {
  Filter f;
  f.refuse(SYS_clone);
  f.jump(BPF_JEQ, SYS_clone3, 0, 1);
  f.ret(SECCOMP_RET_ERRNO | ENOSYS);
  f.refuse_when_set(SYS_mmap, 2, PROT_EXEC);
  // No new signal handlers (asking for the current one, a null new action, is fine). A
  // handler is code that runs when the signal comes, not when the judge calls: armed with a
  // timer, it would run between calls, while the worker waits for the next request or the
  // other worker's call is timed, as a thread would (refused above). The worker's own
  // handlers are set before the library is loaded.
  f.refuse_when_not_null(SYS_rt_sigaction, 1);
  return f.install();
}

// ---- capabilities ------------------------------------------------------------------

bool drop_capabilities() {
  for (int cap = 0; cap <= 63; ++cap) prctl(PR_CAPBSET_DROP, cap, 0, 0, 0);  // fails harmlessly past the last
  prctl(PR_CAP_AMBIENT, PR_CAP_AMBIENT_CLEAR_ALL, 0, 0, 0);
  __user_cap_header_struct header{_LINUX_CAPABILITY_VERSION_3, 0};
  __user_cap_data_struct data[2]{};
  return syscall(SYS_capset, &header, data) == 0;
}

// ---- Landlock ----------------------------------------------------------------------

int landlock_abi() {
  const long abi = syscall(SYS_landlock_create_ruleset, nullptr, 0, LANDLOCK_CREATE_RULESET_VERSION);
  return abi < 0 ? 0 : static_cast<int>(abi);
}

// The file-system rights that exist in Landlock ABI `abi`.
unsigned long long fs_rights(int abi) {
  unsigned long long rights = LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE |
                              LANDLOCK_ACCESS_FS_READ_DIR | LANDLOCK_ACCESS_FS_REMOVE_DIR |
                              LANDLOCK_ACCESS_FS_REMOVE_FILE | LANDLOCK_ACCESS_FS_MAKE_CHAR |
                              LANDLOCK_ACCESS_FS_MAKE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG |
                              LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO |
                              LANDLOCK_ACCESS_FS_MAKE_BLOCK | LANDLOCK_ACCESS_FS_MAKE_SYM;
#ifdef LANDLOCK_ACCESS_FS_REFER
  if (abi >= 2) rights |= LANDLOCK_ACCESS_FS_REFER;
#endif
#ifdef LANDLOCK_ACCESS_FS_TRUNCATE
  if (abi >= 3) rights |= LANDLOCK_ACCESS_FS_TRUNCATE;
#endif
#ifdef LANDLOCK_ACCESS_FS_IOCTL_DEV
  if (abi >= 5) rights |= LANDLOCK_ACCESS_FS_IOCTL_DEV;
#endif
  return rights;
}

bool allow(int ruleset, const std::string& path, unsigned long long rights) {
  const int fd = open(path.c_str(), O_PATH | O_CLOEXEC);
  if (fd < 0) return false;  // a folder this machine does not have
  landlock_path_beneath_attr rule{};
  rule.allowed_access = rights;
  rule.parent_fd = fd;
  struct stat st {};
  if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode)) {
    // Rules on a file may only grant file rights.
    rule.allowed_access &= LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE
#ifdef LANDLOCK_ACCESS_FS_TRUNCATE
                           | LANDLOCK_ACCESS_FS_TRUNCATE
#endif
#ifdef LANDLOCK_ACCESS_FS_IOCTL_DEV
                           | LANDLOCK_ACCESS_FS_IOCTL_DEV
#endif
        ;
  }
  const bool ok = syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &rule, 0) == 0;
  close(fd);
  return ok;
}

// The folders of every library loaded so far (the CUDA runtime, the C++ library, a
// sanitizer's injected libraries), which the implementation library may need again.
std::set<std::string> loaded_library_folders() {
  std::set<std::string> folders;
  dl_iterate_phdr(
      [](dl_phdr_info* info, size_t, void* data) {
        const std::string path = info->dlpi_name != nullptr ? info->dlpi_name : "";
        const auto slash = path.rfind('/');
        if (slash != std::string::npos && slash > 0) static_cast<std::set<std::string>*>(data)->insert(path.substr(0, slash));
        return 0;
      },
      &folders);
  return folders;
}

std::string apply_landlock(const SandboxPlan& plan) {
  const int abi = landlock_abi();
  if (abi < 1) return "landlock: not available in this kernel (files are still read-only through seccomp)";
  landlock_ruleset_attr attr{};
  attr.handled_access_fs = fs_rights(abi);
  std::size_t attr_size = sizeof attr.handled_access_fs;
  std::string extras;
#ifdef LANDLOCK_ACCESS_NET_CONNECT_TCP
  if (abi >= 4) {
    attr.handled_access_net = LANDLOCK_ACCESS_NET_BIND_TCP | LANDLOCK_ACCESS_NET_CONNECT_TCP;
    attr_size = offsetof(landlock_ruleset_attr, handled_access_net) + sizeof attr.handled_access_net;
    extras += ", no TCP";
  }
#endif
#ifdef LANDLOCK_SCOPE_SIGNAL
  if (abi >= 6) {
    attr.scoped = LANDLOCK_SCOPE_SIGNAL | LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET;
    attr_size = sizeof attr;
    extras += ", no signals or abstract sockets outside the sandbox";
  }
#endif
  const int ruleset = static_cast<int>(syscall(SYS_landlock_create_ruleset, &attr, attr_size, 0));
  if (ruleset < 0) return "landlock: could not create a ruleset (" + std::string(std::strerror(errno)) + ")";
  const unsigned long long read_only =
      LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR;
  std::vector<std::string> readable = {"/usr", "/lib", "/lib32", "/lib64", "/libx32", "/etc", "/sys", "/proc", "/opt",
                                       "/run/nvidia-persistenced"};
  for (const std::string& folder : loaded_library_folders()) readable.push_back(folder);
  if (const char* paths = std::getenv("LD_LIBRARY_PATH")) {
    std::string all = paths;
    for (std::size_t start = 0; start <= all.size();) {
      const std::size_t end = all.find(':', start);
      const std::string folder = all.substr(start, end == std::string::npos ? std::string::npos : end - start);
      if (!folder.empty() && folder[0] == '/') readable.push_back(folder);
      if (end == std::string::npos) break;
      start = end + 1;
    }
  }
  for (const std::string& folder : plan.readable) readable.push_back(folder);
  for (const std::string& folder : readable) allow(ruleset, folder, read_only);
  // Device files (the GPU's) are opened for reading and writing.
  allow(ruleset, "/dev", fs_rights(abi));
  const bool ok = syscall(SYS_landlock_restrict_self, ruleset, 0) == 0;
  close(ruleset);
  if (!ok) return "landlock: could not be applied (" + std::string(std::strerror(errno)) + ")";
  return "landlock ABI " + std::to_string(abi) + ": on (reads only in system and library folders, writes only to devices" +
         extras + ")";
}

}  // namespace

void limit_process() {
  const rlimit no_core{0, 0};
  setrlimit(RLIMIT_CORE, &no_core);
  // The log (stdout and stderr) is a file: 8 MiB of it is plenty. Past that, writes fail.
  const rlimit log_size{8u << 20, 8u << 20};
  setrlimit(RLIMIT_FSIZE, &log_size);
  signal(SIGXFSZ, SIG_IGN);
  prctl(PR_SET_DUMPABLE, 0, 0, 0, 0);
}

std::string sandbox_before_load(const SandboxPlan& plan) {
  std::string report;
  report += drop_capabilities() ? "capabilities: none\n" : "capabilities: could not be dropped\n";
  const bool no_new_privs = prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) == 0;
  report += no_new_privs ? "no-new-privileges: on\n" : "no-new-privileges: could not be set\n";
  report += apply_landlock(plan) + "\n";
  if (!no_new_privs) return report + "seccomp: off (needs no-new-privileges)\n";
  report += install_stage_one()
                ? "seccomp: on (threads only, no exec, no sockets, no other processes, read-only files, no writable "
                  "or anonymous executable memory)\n"
                : "seccomp: could not be installed (" + std::string(std::strerror(errno)) + ")\n";
  return report;
}

std::string sandbox_after_load() {
  return install_stage_two()
             ? "seccomp stage two: on (no new threads, no new executable memory, no new signal handlers)\n"
             : "seccomp stage two: could not be installed\n";
}

}  // namespace lab::judge
