// fault_guard.hpp — a memory fault inside a read of untrusted, memory-mapped data turned into an
// answer instead of the end of the process.
//
// LMDB reads its database through a memory map and trusts every byte of it: a page cut short raises
// SIGBUS when touched, a damaged page pointer can raise SIGSEGV, a page size of 0 SIGFPE, and LMDB's
// own assertions abort. RunFaultGuarded runs a function with those turned into a return value, for
// this thread only; a fault in any other thread, or outside a guarded call, reaches whatever handled
// it before (the default action, AddressSanitizer's or libFuzzer's report).
//
// The guarded function is left by siglongjmp when it faults, so neither it nor anything it calls may
// hold objects with destructors or locks at the point of a possible fault: guard C calls (LMDB's) and
// plain loops around them, nothing more.
#pragma once

#include <string>

namespace cortado {

// Runs fn(arg). Returns "" when fn returned; when fn raised SIGSEGV, SIGBUS or SIGFPE in this thread,
// or called FaultGuardAbort, returns what happened ("SIGBUS at address 0x7f..." or the abort's message).
// An exception thrown by fn passes through unchanged. Guards nest.
std::string RunFaultGuarded(void (*fn)(void*), void* arg);

// Ends the innermost guarded call of this thread as a fault described by `message` (for a library's
// assertion callback, such as LMDB's mdb_env_set_assert). Returns at once when no call is guarded.
void FaultGuardAbort(const char* message);

}  // namespace cortado
