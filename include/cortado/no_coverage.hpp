// no_coverage.hpp — CORTADO_NO_COVERAGE: keeps a function out of a fuzzing build's coverage.
//
// A fixed number of fuzzing runs with a fixed seed covers the same edges each time only if every run
// of an input takes the same paths (scripts/fuzz.sh, fuzz/README.md). A function whose loop counts or
// compared values follow the process rather than the input (how the kernel splits a pipe's bytes
// into reads, how many lines /proc/self/maps has, where a file is mapped) would feed the fuzzer noise:
// such a function is marked with this and calls nothing instrumented that depends on that state
// (fuzz/README.md lists them).
// Outside clang it is nothing.
#pragma once

#if defined(__clang__)
#define CORTADO_NO_COVERAGE __attribute__((no_sanitize("coverage")))
#else
#define CORTADO_NO_COVERAGE
#endif
