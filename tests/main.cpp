// main.cpp — the test binary's entry: glog to stderr only at warning level, then GoogleTest.
#include <glog/logging.h>
#include <gtest/gtest.h>

int main(int argc, char** argv) {
  testing::InitGoogleTest(&argc, argv);
  google::InitGoogleLogging(argv[0]);
  FLAGS_logtostderr = true;
  FLAGS_minloglevel = google::WARNING;
  return RUN_ALL_TESTS();
}
