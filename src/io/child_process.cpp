// child_process.cpp — RunInChildProcess: fork, run the body in the child, send its answer back through
// a pipe ('R' + the bytes, or 'E' + an error message), and tell the parent how the child ended.
#include "cortado/child_process.hpp"

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdio>
#include <cstring>
#include <exception>

#include "cortado/error.hpp"

// Set by AddressSanitizer and libFuzzer: what runs when a sanitizer report ends the process. A child
// must end quietly for its parent to report, not as the fuzzer's finding.
extern "C" __attribute__((weak)) void __sanitizer_set_death_callback(void (*callback)(void));

namespace cortado {

namespace {

bool g_in_child = false;

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n, size -= static_cast<size_t>(n);
  }
  return true;
}

[[noreturn]] void RunChild(int fd, const std::function<std::string()>& body) {
  g_in_child = true;
  // A crash here ends this process by its default action, for the parent to see; the handlers the
  // parent installed (a fuzzer's, a sanitizer's, the trainer's SIGINT) are not this process's business.
  for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGINT, SIGTERM, SIGHUP}) std::signal(sig, SIG_DFL);
  if (__sanitizer_set_death_callback != nullptr) __sanitizer_set_death_callback(nullptr);
  char tag = 'R';
  std::string answer;
  try {
    answer = body();
  } catch (const std::exception& e) {
    tag = 'E';
    answer = e.what();
  }
  const bool sent = WriteAll(fd, &tag, 1) && WriteAll(fd, answer.data(), answer.size());
  ::_exit(sent ? 0 : 3);  // no atexit handlers, no static destructors: they are the parent's
}

}  // namespace

bool InChildProcess() { return g_in_child; }

std::string RunInChildProcess(const std::function<std::string()>& body, const std::string& crash_message) {
  int fds[2];
  CORTADO_REQUIRE(::pipe2(fds, O_CLOEXEC) == 0, crash_message, ": cannot create a pipe: ", std::strerror(errno));
  std::fflush(nullptr);  // else the child's copy of buffered output would be written twice
  const pid_t pid = ::fork();
  if (pid < 0) {
    const int saved = errno;
    ::close(fds[0]), ::close(fds[1]);
    Fail(crash_message, ": cannot start a process: ", std::strerror(saved));
  }
  if (pid == 0) {
    ::close(fds[0]);
    RunChild(fds[1], body);
  }
  ::close(fds[1]);
  std::string received;
  char buffer[65536];
  for (;;) {
    const ssize_t n = ::read(fds[0], buffer, sizeof buffer);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    received.append(buffer, static_cast<size_t>(n));
  }
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0 && !received.empty()) {
    if (received[0] == 'E') throw Error(received.substr(1));
    return received.substr(1);
  }
  if (WIFSIGNALED(status)) {
    const char* name = sigabbrev_np(WTERMSIG(status));
    Fail(crash_message, " (SIG", name != nullptr ? name : std::to_string(WTERMSIG(status)).c_str(), ")");
  }
  Fail(crash_message, " (exit code ", WIFEXITED(status) ? WEXITSTATUS(status) : -1, ")");
}

}  // namespace cortado
