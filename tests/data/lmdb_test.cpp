// lmdb_test.cpp — LmdbWriter and LmdbCursor: round trip in key order, wrap-around, map growth, errors.
#include <cstdio>
#include <string>

#include "cortado/data.hpp"
#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

std::string Key(int i) {
  char key[16];
  std::snprintf(key, sizeof(key), "%08d", i);
  return key;
}

}  // namespace

TEST(Lmdb, RoundTripInKeyOrderAndWraps) {
  const std::string path = TempDir() + "/db";
  {
    LmdbWriter writer(path, "test");
    for (int i : {3, 0, 4, 1, 2}) writer.Put(Key(i), "value" + std::to_string(i));  // out of order
    writer.Finish();
  }
  LmdbCursor cursor(path, "layer d (Data)");
  EXPECT_EQ(cursor.num_records(), 5u);
  for (int step = 0; step < 12; ++step) {  // two full passes and a bit
    const int i = step % 5;
    EXPECT_EQ(cursor.key(), Key(i)) << "step " << step;
    EXPECT_EQ(cursor.value(), "value" + std::to_string(i)) << "step " << step;
    cursor.Next();
  }
}

TEST(Lmdb, CommitsInBatchesAndGrowsTheMapWhenFull) {
  const std::string path = TempDir() + "/db";
  const size_t initial = 64 << 10;
  const int n = 2500;  // three transactions; ~2.5 MB of values in a 64 KiB map
  const std::string payload(1000, 'x');
  size_t final_map = 0;
  {
    LmdbWriter writer(path, "test", initial);
    for (int i = 0; i < n; ++i) writer.Put(Key(i), payload + std::to_string(i));
    writer.Finish();
    final_map = writer.map_bytes();
  }
  EXPECT_GT(final_map, initial);
  LmdbCursor cursor(path, "test");
  ASSERT_EQ(cursor.num_records(), static_cast<uint64_t>(n));
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(cursor.key(), Key(i));
    ASSERT_EQ(cursor.value(), payload + std::to_string(i));
    cursor.Next();
  }
  EXPECT_EQ(cursor.key(), Key(0));
}

TEST(Lmdb, UncommittedPutsAreDropped) {
  const std::string path = TempDir() + "/db";
  {
    LmdbWriter writer(path, "test");
    writer.Put(Key(0), "a");
    writer.Commit();
    writer.Put(Key(1), "b");  // no Finish
  }
  LmdbCursor cursor(path, "test");
  EXPECT_EQ(cursor.num_records(), 1u);
}

TEST(Lmdb, MissingSourceNamesTheLayerAndPath) {
  const std::string path = TempDir() + "/nowhere";
  const std::string message = ErrorOf([&] { LmdbCursor cursor(path, "layer mnist (Data)"); });
  EXPECT_EQ(message, "layer mnist (Data): cannot open LMDB '" + path + "': No such file or directory");
}

TEST(Lmdb, EmptyDatabaseIsAnError) {
  const std::string path = TempDir() + "/db";
  LmdbWriter(path, "test").Finish();
  EXPECT_NE(ErrorOf([&] { LmdbCursor cursor(path, "d"); }).find("holds no records"), std::string::npos);
}

TEST(Lmdb, WriterNeverOverwrites) {
  const std::string path = TempDir() + "/db";
  LmdbWriter(path, "test").Finish();
  const std::string message = ErrorOf([&] { LmdbWriter writer(path, "tool"); });
  EXPECT_EQ(message, "tool: '" + path + "' already exists; remove it or choose another name");
}

}  // namespace cortado::test
