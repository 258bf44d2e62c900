// lmdb_test.cpp — LmdbWriter and LmdbRecords: round trip in key order, map growth, errors, and damaged
// databases (cut short, flipped bytes) refused with one Error instead of a crash.
#include <cstdio>
#include <filesystem>
#include <string>

#include "cortado/data/lmdb.hpp"
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

TEST(Lmdb, RoundTripInKeyOrder) {
  const std::string path = TempDir() + "/db";
  {
    LmdbWriter writer(path, "test");
    for (int i : {3, 0, 4, 1, 2}) writer.Put(Key(i), "value" + std::to_string(i));  // out of order
    writer.Finish();
  }
  LmdbRecords records(path, "layer d (Data)");
  ASSERT_EQ(records.size(), 5u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(records.key(i), Key(i));
    EXPECT_EQ(records.value(i), "value" + std::to_string(i));
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
  LmdbRecords records(path, "test");
  ASSERT_EQ(records.size(), static_cast<uint64_t>(n));
  for (int i = 0; i < n; ++i) {
    ASSERT_EQ(records.key(i), Key(i));
    ASSERT_EQ(records.value(i), payload + std::to_string(i));
  }
}

// A conversion that fails destroys its writer before Finish: no partial database is left behind.
TEST(Lmdb, AnUnfinishedDatabaseIsRemoved) {
  const std::string path = TempDir() + "/db";
  {
    LmdbWriter writer(path, "test");
    writer.Put(Key(0), "a");
    writer.Commit();
    writer.Put(Key(1), "b");  // no Finish
  }
  EXPECT_FALSE(std::filesystem::exists(path));
}

TEST(Lmdb, MissingSourceNamesTheLayerAndPath) {
  const std::string path = TempDir() + "/nowhere";
  const std::string message = ErrorOf([&] { LmdbRecords records(path, "layer mnist (Data)"); });
  EXPECT_EQ(message, "layer mnist (Data): cannot open LMDB '" + path + "': No such file or directory");
}

TEST(Lmdb, EmptyDatabaseIsAnError) {
  const std::string path = TempDir() + "/db";
  LmdbWriter(path, "test").Finish();
  EXPECT_NE(ErrorOf([&] { LmdbRecords records(path, "d"); }).find("holds no records"), std::string::npos);
}

TEST(Lmdb, WriterNeverOverwrites) {
  const std::string path = TempDir() + "/db";
  LmdbWriter(path, "test").Finish();
  const std::string message = ErrorOf([&] { LmdbWriter writer(path, "tool"); });
  EXPECT_EQ(message, "tool: '" + path + "' already exists; remove it or choose another name");
}

// ---- damaged databases ---------------------------------------------------------------------------

namespace {

// An LMDB of `count` records over several leaf pages, some values on overflow pages (larger than half
// a page). Returns the bytes of its data.mdb.
std::string WriteSeveralPages(const std::string& path, int count) {
  LmdbWriter writer(path, "test");
  for (int i = 0; i < count; ++i)
    writer.Put(Key(i), std::string(i % 7 == 0 ? 3000 : 100, static_cast<char>('a' + i % 26)));
  writer.Finish();
  return ReadFile(path + "/data.mdb");
}

// LMDB's page header: flags (P_BRANCH 1, P_LEAF 2, P_OVERFLOW 4, P_META 8) at byte 10 of each page.
constexpr size_t kPage = 4096;
uint16_t PageFlags(const std::string& file, size_t page) {
  return static_cast<uint16_t>(static_cast<uint8_t>(file[page * kPage + 10]) |
                               static_cast<uint8_t>(file[page * kPage + 11]) << 8);
}

// Opens the damaged copy and walks every record as the data layers do; returns the Error ("" when the
// copy still opens, and then every view must read without a fault).
std::string OpenDamaged(const std::string& path) {
  try {
    LmdbRecords records(path, "layer d (Data)");
    size_t bytes = 0;
    for (uint64_t i = 0; i < records.size(); ++i) bytes += records.key(i).size() + records.value(i).size();
    EXPECT_GT(bytes, 0u);
    return "";
  } catch (const Error& e) {
    return e.what();
  }
}

}  // namespace

// A copy cut short would raise SIGBUS at the first read past its end: every cut is refused at open.
TEST(Lmdb, ATruncatedDatabaseIsRefusedAtOpen) {
  const std::string dir = TempDir();
  const std::string bytes = WriteSeveralPages(dir + "/good", 300);
  ASSERT_GT(bytes.size(), 20 * kPage);
  std::filesystem::create_directories(dir + "/cut");
  std::filesystem::copy_file(dir + "/good/lock.mdb", dir + "/cut/lock.mdb");
  for (size_t length = 2 * kPage; length < bytes.size(); length += kPage / 2) {
    WriteFile(dir + "/cut/data.mdb", bytes.substr(0, length));
    const std::string error = OpenDamaged(dir + "/cut");
    EXPECT_EQ(error.rfind("layer d (Data): LMDB '" + dir + "/cut' is truncated: data.mdb holds " +
                              std::to_string(length) + " bytes but its header counts ", 0),
              0u)
        << "cut at " << length << ": " << error;
  }
}

// mdb_env_open divides by the page size its meta page gives (found by fuzzing: SIGFPE for 0).
TEST(Lmdb, AMetaPageWithoutAPageSizeIsRefused) {
  const std::string dir = TempDir();
  std::string bytes = WriteSeveralPages(dir + "/db", 10);
  for (int i = 40; i < 44; ++i) bytes[i] = 0;  // meta page 0: mm_dbs[FREE_DBI].md_pad, the page size
  WriteFile(dir + "/db/data.mdb", bytes);
  EXPECT_EQ(OpenDamaged(dir + "/db"),
            "layer d (Data): LMDB '" + dir + "/db' is corrupt: its meta page 0 gives a page size of 0 bytes");
}

// A leaf page marked as a branch trips LMDB's assertion in mdb_cursor_next, which would abort().
TEST(Lmdb, LmdbsOwnAssertionBecomesAnError) {
  const std::string dir = TempDir();
  std::string bytes = WriteSeveralPages(dir + "/db", 300);
  std::vector<size_t> leaves;
  for (size_t page = 2; page < bytes.size() / kPage; ++page)
    if (PageFlags(bytes, page) == 2) leaves.push_back(page);
  ASSERT_GE(leaves.size(), 3u);
  // Any leaf but the first (the walk reaches it through mdb_cursor_next).
  bytes[leaves[1] * kPage + 10] = 1;
  WriteFile(dir + "/db/data.mdb", bytes);
  const std::string error = OpenDamaged(dir + "/db");
  EXPECT_EQ(error.rfind("layer d (Data): LMDB '" + dir + "/db' is corrupt: ", 0), 0u) << error;
  EXPECT_NE(error.find("record "), std::string::npos) << error;
}

// Every page of the file damaged in turn, at several places (page numbers, flags, node offsets and
// sizes, key and value bytes): each open either reads every record inside the file or is one Error
// naming the database; the process never faults or aborts.
TEST(Lmdb, FlippedBytesNeverCrash) {
  const std::string dir = TempDir();
  const std::string bytes = WriteSeveralPages(dir + "/good", 120);
  std::filesystem::create_directories(dir + "/bad");
  std::filesystem::copy_file(dir + "/good/lock.mdb", dir + "/bad/lock.mdb");
  int opened = 0, refused = 0;
  for (size_t page = 0; page < bytes.size() / kPage; ++page) {
    for (size_t offset : {0, 8, 10, 12, 14, 16, 17, 18, 20, 22, 24, 26, 28, 30, 60, 200, 1000, 2500, 4000}) {
      for (uint8_t mask : {0x01, 0x80, 0xff}) {
        std::string damaged = bytes;
        damaged[page * kPage + offset] = static_cast<char>(damaged[page * kPage + offset] ^ mask);
        WriteFile(dir + "/bad/data.mdb", damaged);
        const std::string error = OpenDamaged(dir + "/bad");
        if (error.empty()) {
          ++opened;
          continue;
        }
        ++refused;
        EXPECT_NE(error.find("LMDB '" + dir + "/bad'"), std::string::npos) << error;
      }
    }
  }
  EXPECT_GT(refused, 0);
  EXPECT_GT(opened, 0);  // bytes no read depends on (free space) change nothing
}

}  // namespace cortado::test
