// child_process_test.cpp — RunInChildProcess: the child's bytes come back whole (also past a pipe's
// buffer), its Error's message is rethrown, and a child that crashes or aborts is an Error naming the
// signal, while this process goes on.
#include <csignal>
#include <cstdlib>
#include <string>

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

}  // namespace cortado::test
