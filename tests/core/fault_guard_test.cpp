// fault_guard_test.cpp — RunFaultGuarded: SIGBUS (a read past the end of a mapped file) and SIGSEGV
// inside the guarded call become its answer; FaultGuardAbort ends it with a message; exceptions pass
// through; guards nest; and outside a guard a fault still ends the process as it would without one.
#include <fcntl.h>
#include <sys/mman.h>
#include <unistd.h>

#include <stdexcept>
#include <string>

#include "cortado/fault_guard.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

// A file of one page mapped as two: the second page lies past the end of the file.
struct ShortMapping {
  ShortMapping() {
    const std::string path = TempDir() + "/one_page";
    WriteFile(path, std::string(static_cast<size_t>(page), 'x'));
    const int fd = ::open(path.c_str(), O_RDONLY);
    base = static_cast<const volatile char*>(::mmap(nullptr, 2 * page, PROT_READ, MAP_PRIVATE, fd, 0));
    ::close(fd);
  }
  ~ShortMapping() { ::munmap(const_cast<char*>(base), 2 * page); }
  const long page = ::sysconf(_SC_PAGESIZE);
  const volatile char* base = nullptr;
};

struct Read {
  const volatile char* at;
  char value = 0;
  static void Run(void* self) {
    auto* read = static_cast<Read*>(self);
    read->value = *read->at;
  }
};

}  // namespace

TEST(FaultGuard, AReadPastTheEndOfAMappedFileIsSigbus) {
  ShortMapping mapping;
  Read inside{mapping.base + 10};
  EXPECT_EQ(RunFaultGuarded(&Read::Run, &inside), "");
  EXPECT_EQ(inside.value, 'x');
  Read past{mapping.base + mapping.page + 10};
  const std::string what = RunFaultGuarded(&Read::Run, &past);
  EXPECT_EQ(what.rfind("SIGBUS at address 0x", 0), 0u) << what;
  // The guard is gone with the call; the next one works as before.
  EXPECT_EQ(RunFaultGuarded(&Read::Run, &inside), "");
}

TEST(FaultGuard, AnUnmappedAddressIsSigsegvAndGuardsNest) {
  struct Outer {
    std::string inner_what;
    static void Run(void* self) {
      Read unmapped{reinterpret_cast<const volatile char*>(uintptr_t{16})};
      static_cast<Outer*>(self)->inner_what = RunFaultGuarded(&Read::Run, &unmapped);
    }
  } outer;
  EXPECT_EQ(RunFaultGuarded(&Outer::Run, &outer), "");
  EXPECT_EQ(outer.inner_what, "SIGSEGV at address 0x10");
}

TEST(FaultGuard, AbortEndsTheCallWithItsMessageAndExceptionsPassThrough) {
  EXPECT_EQ(RunFaultGuarded([](void*) { FaultGuardAbort("mdb_cursor_next: Assertion failed"); }, nullptr),
            "mdb_cursor_next: Assertion failed");
  FaultGuardAbort("outside any guard: returns");
  EXPECT_THROW(RunFaultGuarded([](void*) { throw std::runtime_error("thrown"); }, nullptr), std::runtime_error);
  ShortMapping mapping;
  Read inside{mapping.base};
  EXPECT_EQ(RunFaultGuarded(&Read::Run, &inside), "");  // the throw left no guard behind
}

TEST(FaultGuardDeathTest, AFaultOutsideAGuardStillEndsTheProcess) {
  RunFaultGuarded([](void*) {}, nullptr);  // the handler is installed
  ShortMapping mapping;
  EXPECT_DEATH(
      {
        Read past{mapping.base + mapping.page};
        Read::Run(&past);
      },
      "");
}

}  // namespace cortado::test
