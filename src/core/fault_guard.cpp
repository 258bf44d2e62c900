// fault_guard.cpp — RunFaultGuarded: one process-wide handler of SIGSEGV, SIGBUS and SIGFPE, installed
// at the first guarded call, that jumps back to the guarded call of the faulting thread, or hands the
// signal on to the handler that was there before.
#include "cortado/fault_guard.hpp"

#include <setjmp.h>
#include <signal.h>

#include <cstdint>
#include <cstring>
#include <mutex>

namespace cortado {

namespace {

struct Guard {
  sigjmp_buf jump;
  char what[256];
};

thread_local Guard* t_guard = nullptr;
struct sigaction g_previous_segv {};
struct sigaction g_previous_bus {};
struct sigaction g_previous_fpe {};

// "<name> at address 0x<hex>" into out, with no library call (this runs in a signal handler).
void Describe(const char* name, const void* address, char* out, size_t size) {
  size_t n = 0;
  auto put = [&](char c) {
    if (n + 1 < size) out[n++] = c;
  };
  for (const char* p = name; *p; ++p) put(*p);
  for (const char* p = " at address 0x"; *p; ++p) put(*p);
  const auto value = reinterpret_cast<uintptr_t>(address);
  bool started = false;
  for (int shift = static_cast<int>(sizeof(value) * 8) - 4; shift >= 0; shift -= 4) {
    const unsigned digit = (value >> shift) & 0xf;
    if (digit == 0 && !started && shift > 0) continue;
    started = true;
    put("0123456789abcdef"[digit]);
  }
  out[n] = '\0';
}

void OnFault(int sig, siginfo_t* info, void* context) {
  Guard* guard = t_guard;
  if (guard != nullptr) {
    t_guard = nullptr;
    Describe(sig == SIGBUS ? "SIGBUS" : sig == SIGFPE ? "SIGFPE" : "SIGSEGV", info->si_addr, guard->what,
             sizeof guard->what);
    siglongjmp(guard->jump, 1);
  }
  // Not a guarded read: whoever handled the signal before us decides (a sanitizer's report, say).
  const struct sigaction& previous = sig == SIGBUS ? g_previous_bus : sig == SIGFPE ? g_previous_fpe : g_previous_segv;
  if ((previous.sa_flags & SA_SIGINFO) != 0 && previous.sa_sigaction != nullptr) {
    previous.sa_sigaction(sig, info, context);
    return;
  }
  if (previous.sa_handler != SIG_DFL && previous.sa_handler != SIG_IGN) {
    previous.sa_handler(sig);
    return;
  }
  // The default action: it takes effect when this handler returns (the signal is blocked until then).
  signal(sig, SIG_DFL);
  raise(sig);
}

void Install() {
  struct sigaction action {};
  action.sa_sigaction = OnFault;
  sigemptyset(&action.sa_mask);
  action.sa_flags = SA_SIGINFO | SA_ONSTACK;
  sigaction(SIGSEGV, &action, &g_previous_segv);
  sigaction(SIGBUS, &action, &g_previous_bus);
  sigaction(SIGFPE, &action, &g_previous_fpe);
}

}  // namespace

std::string RunFaultGuarded(void (*fn)(void*), void* arg) {
  static std::once_flag installed;
  std::call_once(installed, Install);
  Guard guard;
  guard.what[0] = '\0';
  Guard* const outer = t_guard;
  if (sigsetjmp(guard.jump, 1) != 0) {  // the signal mask is restored with the jump
    t_guard = outer;
    return guard.what;
  }
  t_guard = &guard;
  try {
    fn(arg);
  } catch (...) {
    t_guard = outer;
    throw;
  }
  t_guard = outer;
  return "";
}

void FaultGuardAbort(const char* message) {
  Guard* guard = t_guard;
  if (guard == nullptr) return;
  t_guard = nullptr;
  std::strncpy(guard->what, message, sizeof guard->what - 1);
  guard->what[sizeof guard->what - 1] = '\0';
  siglongjmp(guard->jump, 1);
}

}  // namespace cortado
