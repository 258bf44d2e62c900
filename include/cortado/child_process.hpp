// child_process.hpp — a library that may crash on a damaged file, run where its crash cannot end the
// run: in a child process, under a memory limit.
//
// libhdf5 trusts the structure of the file it reads; a damaged one can make it free a wild pointer
// or read past its buffers (found by fuzz/caffemodel_h5_fuzzer), or allocate whatever size a damaged
// header claims (4 GiB for a local heap, found by fuzz/solverstate_h5_fuzzer). Reading in a forked
// child turns such a crash into an Error naming the file and keeps whatever it corrupted out of the
// trainer; the child's memory limit (RLIMIT_AS, set from what the file can hold) makes a wild
// allocation fail inside the child instead of taking the machine's memory.
//
// In a fuzzing build (clang's -fsanitize=fuzzer-no-link) the child sends back how far it advanced each
// coverage counter and the parent adds that to its own, so the fuzzer sees the code the child ran as
// if the parent had run it (fuzz/README.md).
#pragma once

#include <cstddef>
#include <functional>
#include <string>

namespace cortado {

// The memory a child may take beyond what it shares with its parent at the fork (address space:
// the limit counts what is mapped, not only what is touched), and what to say when it runs out.
struct ChildMemory {
  size_t budget_bytes = 0;        // 0: no limit
  std::string exceeded_message;  // the Error's message when the child runs out (std::bad_alloc)
};

// Forks; the child runs body() and sends back the bytes it returns, or the message of the exception it
// throws. Returns those bytes, or throws Error with that message (memory.exceeded_message when the
// child ran out of its memory); when the child dies instead (a signal, an abort), throws Error
// "<crash_message> (<signal name>)". The child writes no log lines and takes no lock another thread
// of this process may hold.
std::string RunInChildProcess(const std::function<std::string()>& body, const std::string& crash_message,
                              const ChildMemory& memory = {});

// True in a child RunInChildProcess started.
bool InChildProcess();

// In a child with a memory limit: raises it by `bytes` (what a file has shown it holds, such as a
// dataset whose values it stores, and which the child will copy). Elsewhere it does nothing.
void GrowChildMemoryLimit(size_t bytes);

}  // namespace cortado
