// child_process.hpp — a library that may crash on a damaged file, run where its crash cannot end the
// run: in a child process.
//
// libhdf5 trusts the structure of the file it reads; a damaged one can make it free a wild pointer
// or read past its buffers (found by fuzz/caffemodel_h5_fuzzer). Reading in a forked child turns such
// a crash into an Error naming the file, and keeps whatever it corrupted out of the trainer.
#pragma once

#include <functional>
#include <string>

namespace cortado {

// Forks; the child runs body() and sends back the bytes it returns, or the message of the exception it
// throws. Returns those bytes, or throws Error with that message; when the child dies instead (a
// signal, an abort), throws Error "<crash_message> (<signal name>)". The child writes no log lines
// and takes no lock another thread of this process may hold.
std::string RunInChildProcess(const std::function<std::string()>& body, const std::string& crash_message);

// True in a child RunInChildProcess started.
bool InChildProcess();

}  // namespace cortado
