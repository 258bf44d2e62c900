// child_process_test.cpp — RunInChildProcess: the child's bytes come back whole (also past a pipe's
// buffer), its Error's message is rethrown, a child that crashes or aborts is an Error naming the
// signal, while this process goes on, and a child runs under the memory limit it is given.
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <string>
#include <vector>

#include "cortado/child_process.hpp"
#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

TEST(ChildProcess, ReturnsTheChildsBytes) {
  std::string big(3 << 20, '\0');  // larger than a pipe holds: the parent reads while the child writes
  for (size_t i = 0; i < big.size(); ++i) big[i] = static_cast<char>(i * 31);
  EXPECT_EQ(RunInChildProcess([&] { return big; }, "reading x crashed"), big);
  EXPECT_EQ(RunInChildProcess([] { return std::string(); }, "reading x crashed"), "");
  EXPECT_FALSE(InChildProcess());
  EXPECT_EQ(RunInChildProcess([] { return std::string(InChildProcess() ? "child" : "parent"); }, "x"), "child");
}

TEST(ChildProcess, RethrowsTheChildsError) {
  EXPECT_EQ(ErrorOf([] { RunInChildProcess([]() -> std::string { Fail("'x.h5': no /data group"); }, "crashed"); }),
            "'x.h5': no /data group");
}

TEST(ChildProcess, ACrashOrAbortInTheChildIsAnErrorHere) {
  EXPECT_EQ(ErrorOf([] {
              RunInChildProcess([]() -> std::string { std::raise(SIGSEGV); return "unreachable"; },
                                "cannot read 'x.h5': libhdf5 crashed reading it");
            }),
            "cannot read 'x.h5': libhdf5 crashed reading it (SIGSEGV)");
  EXPECT_EQ(ErrorOf([] { RunInChildProcess([]() -> std::string { std::abort(); }, "reading crashed"); }),
            "reading crashed (SIGABRT)");
}

// Under AddressSanitizer a failed `new` ends the process (a sanitizer report) instead of throwing
// std::bad_alloc; malloc returns null there as elsewhere (scripts/fuzz.sh sets allocator_may_return_null).
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kFailedNewThrows = false;
#elif defined(__has_feature)
#if __has_feature(address_sanitizer)
constexpr bool kFailedNewThrows = false;
#else
constexpr bool kFailedNewThrows = true;
#endif
#else
constexpr bool kFailedNewThrows = true;
#endif

TEST(ChildProcess, AChildRunsUnderItsMemoryLimit) {
  constexpr size_t kMiB = size_t{1} << 20;
  const ChildMemory memory{64 * kMiB, "cannot read 'x.h5': reading it took more than the 64 MiB it can need"};
  // malloc, as libhdf5 allocates: null beyond the limit, and the library says so
  EXPECT_EQ(RunInChildProcess(
                [] {
                  void* volatile block = std::malloc(1024 * kMiB);  // volatile: not optimised away
                  std::free(block);
                  return std::string(block == nullptr ? "refused" : "allocated");
                },
                "crashed", memory),
            "refused");
  // new: std::bad_alloc, which the child answers with the message given
  if (kFailedNewThrows) {
    EXPECT_EQ(ErrorOf([&] {
                RunInChildProcess([]() -> std::string { return std::string(1024 * kMiB, 'x').substr(0, 1); },
                                  "crashed", memory);
              }),
              memory.exceeded_message);
  }
  // what the child has grown its limit by, it may take and use
  EXPECT_EQ(RunInChildProcess(
                [] {
                  GrowChildMemoryLimit(512 * kMiB);
                  std::vector<char> block(256 * kMiB, 'x');
                  return std::string(1, block.back());
                },
                "crashed", memory),
            "x");
  // without a budget, no limit; and this process never had one
  EXPECT_EQ(RunInChildProcess([] { return std::string(512 * kMiB, 'y').substr(0, 1); }, "crashed"), "y");
  std::vector<char> here(512 * kMiB, 'z');
  EXPECT_EQ(here.back(), 'z');
  GrowChildMemoryLimit(1);  // nothing to grow outside a child
}

}  // namespace cortado::test
