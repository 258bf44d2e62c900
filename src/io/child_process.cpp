// child_process.cpp — RunInChildProcess: fork, run the body in the child under its memory limit, send
// its answer back through a pipe (in a fuzzing build first 'C' + its coverage, then 'R' + the bytes,
// or 'E' + an error message), and tell the parent how the child ended.
#include "cortado/child_process.hpp"

#include <fcntl.h>
#include <sys/resource.h>
#include <sys/wait.h>
#include <unistd.h>

#include <cerrno>
#include <csignal>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <exception>
#include <new>
#include <vector>

#include "cortado/error.hpp"
#include "cortado/no_coverage.hpp"

// Set by AddressSanitizer and libFuzzer: what runs when a sanitizer report ends the process. A child
// must end quietly for its parent to report, not as the fuzzer's finding.
extern "C" __attribute__((weak)) void __sanitizer_set_death_callback(void (*callback)(void));

// The 8-bit edge counters of a build with clang's -fsanitize=fuzzer-no-link (inline-8bit-counters),
// which the linker gathers into one section; both are null in other builds.
extern "C" __attribute__((weak)) uint8_t __start___sancov_cntrs[];
extern "C" __attribute__((weak)) uint8_t __stop___sancov_cntrs[];

namespace cortado {

namespace {

bool g_in_child = false;
bool g_memory_limited = false;  // in a child: RLIMIT_AS was set

// ---- coverage, in a fuzzing build ---------------------------------------------------------------

size_t CounterCount() {
  const uint8_t* begin = __start___sancov_cntrs;
  const uint8_t* end = __stop___sancov_cntrs;
  return begin != nullptr && end > begin ? static_cast<size_t>(end - begin) : 0;
}

// What the child added to each counter since `at_fork`: 'C', the block's size (8 bytes), then per
// changed counter its index (4 bytes) and the increase (1 byte). Empty in other builds.
std::string CoverageSince(const std::vector<uint8_t>& at_fork) {
  std::string block;
  for (size_t i = 0; i < at_fork.size(); ++i) {
    const uint8_t added = static_cast<uint8_t>(__start___sancov_cntrs[i] - at_fork[i]);
    if (added == 0) continue;
    const uint32_t index = static_cast<uint32_t>(i);
    block.append(reinterpret_cast<const char*>(&index), sizeof index);
    block.push_back(static_cast<char>(added));
  }
  if (at_fork.empty()) return block;
  const uint64_t size = block.size();
  return 'C' + std::string(reinterpret_cast<const char*>(&size), sizeof size) + block;
}

// Adds the child's coverage block at the front of `received` (if any) to this process's counters and
// returns where the answer starts.
size_t AddChildCoverage(const std::string& received) {
  uint64_t size = 0;
  if (received.size() < 1 + sizeof size || received[0] != 'C') return 0;
  std::memcpy(&size, received.data() + 1, sizeof size);
  const size_t begin = 1 + sizeof size;
  if (size > received.size() - begin) return received.size();  // cut short: no answer either
  const size_t counters = CounterCount();
  for (size_t at = begin; at + 5 <= begin + size; at += 5) {
    uint32_t index = 0;
    std::memcpy(&index, received.data() + at, sizeof index);
    if (index >= counters) continue;
    const unsigned sum = __start___sancov_cntrs[index] + static_cast<uint8_t>(received[at + 4]);
    __start___sancov_cntrs[index] = static_cast<uint8_t>(sum > 255 ? 255 : sum);
  }
  return begin + size;
}

// ---- the child's memory limit --------------------------------------------------------------------

// The bytes of address space this process has mapped (/proc/self/statm's first field); 0 if unknown.
size_t MappedBytes() {
  std::FILE* statm = std::fopen("/proc/self/statm", "r");
  if (statm == nullptr) return 0;
  unsigned long long pages = 0;
  const bool read = std::fscanf(statm, "%llu", &pages) == 1;
  std::fclose(statm);
  return read ? static_cast<size_t>(pages) * static_cast<size_t>(::sysconf(_SC_PAGESIZE)) : 0;
}

// Sets the soft RLIMIT_AS to `bytes` (at most the hard limit; never above a lower limit already set).
void SetAddressSpaceLimit(rlim_t bytes) {
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0) return;
  if (limit.rlim_max != RLIM_INFINITY && bytes > limit.rlim_max) bytes = limit.rlim_max;
  limit.rlim_cur = bytes;
  g_memory_limited = ::setrlimit(RLIMIT_AS, &limit) == 0;
}

// The address space already mapped (the parent's copy, a sanitizer's reserved shadow) plus the budget:
// only what the child maps beyond that counts.
void LimitChildMemory(size_t budget_bytes) {
  const size_t mapped = MappedBytes();
  if (budget_bytes == 0 || mapped == 0) return;
  SetAddressSpaceLimit(static_cast<rlim_t>(mapped) + budget_bytes);
}

bool WriteAll(int fd, const char* data, size_t size) {
  while (size > 0) {
    const ssize_t n = ::write(fd, data, size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) return false;
    data += n, size -= static_cast<size_t>(n);
  }
  return true;
}

// How many reads the child's answer takes depends on how the kernel hands it over, which varies from
// one run to the next: the loop stays out of a fuzzing build's coverage and calls only libc.
CORTADO_NO_COVERAGE size_t ReadToEndInto(int fd, char** data) {
  size_t size = 0, capacity = 65536;
  *data = static_cast<char*>(std::malloc(capacity));
  while (*data != nullptr) {
    if (size == capacity) {
      char* grown = static_cast<char*>(std::realloc(*data, capacity * 2));
      if (grown == nullptr) break;
      *data = grown, capacity *= 2;
    }
    const ssize_t n = ::read(fd, *data + size, capacity - size);
    if (n < 0 && errno == EINTR) continue;
    if (n <= 0) break;
    size += static_cast<size_t>(n);
  }
  return size;
}

std::string ReadToEnd(int fd) {
  char* data = nullptr;
  const size_t size = ReadToEndInto(fd, &data);
  std::string received(data != nullptr ? data : "", size);
  std::free(data);
  return received;
}

[[noreturn]] void RunChild(int fd, const std::function<std::string()>& body, const std::string& crash_message,
                           const ChildMemory& memory) {
  g_in_child = true;
  // A crash here ends this process by its default action, for the parent to see; the handlers the
  // parent installed (a fuzzer's, a sanitizer's, the trainer's SIGINT) are not this process's business.
  for (int sig : {SIGSEGV, SIGBUS, SIGABRT, SIGFPE, SIGILL, SIGINT, SIGTERM, SIGHUP}) std::signal(sig, SIG_DFL);
  if (__sanitizer_set_death_callback != nullptr) __sanitizer_set_death_callback(nullptr);
  const std::vector<uint8_t> counters_at_fork(__start___sancov_cntrs, __start___sancov_cntrs + CounterCount());
  LimitChildMemory(memory.budget_bytes);
  char tag = 'R';
  std::string answer;
  try {
    answer = body();
  } catch (const std::bad_alloc&) {
    tag = 'E';
    answer = memory.exceeded_message.empty() ? crash_message + " (out of memory)" : memory.exceeded_message;
  } catch (const std::exception& e) {
    tag = 'E';
    answer = e.what();
  }
  const std::string coverage = CoverageSince(counters_at_fork);
  const bool sent = WriteAll(fd, coverage.data(), coverage.size()) && WriteAll(fd, &tag, 1) &&
                    WriteAll(fd, answer.data(), answer.size());
  ::_exit(sent ? 0 : 3);  // no atexit handlers, no static destructors: they are the parent's
}

}  // namespace

bool InChildProcess() { return g_in_child; }

void GrowChildMemoryLimit(size_t bytes) {
  if (!g_in_child || !g_memory_limited) return;
  rlimit limit{};
  if (::getrlimit(RLIMIT_AS, &limit) != 0 || limit.rlim_cur == RLIM_INFINITY) return;
  const rlim_t grown = limit.rlim_cur + bytes;
  SetAddressSpaceLimit(grown < limit.rlim_cur ? RLIM_INFINITY : grown);
}

std::string RunInChildProcess(const std::function<std::string()>& body, const std::string& crash_message,
                              const ChildMemory& memory) {
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
    RunChild(fds[1], body, crash_message, memory);
  }
  ::close(fds[1]);
  std::string received = ReadToEnd(fds[0]);
  ::close(fds[0]);
  int status = 0;
  while (::waitpid(pid, &status, 0) < 0 && errno == EINTR) {
  }
  if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
    const size_t answer = AddChildCoverage(received);
    if (answer < received.size()) {
      if (received[answer] == 'E') throw Error(received.substr(answer + 1));
      return received.substr(answer + 1);
    }
  }
  if (WIFSIGNALED(status)) {
    const char* name = sigabbrev_np(WTERMSIG(status));
    Fail(crash_message, " (SIG", name != nullptr ? name : std::to_string(WTERMSIG(status)).c_str(), ")");
  }
  Fail(crash_message, " (exit code ", WIFEXITED(status) ? WEXITSTATUS(status) : -1, ")");
}

}  // namespace cortado
