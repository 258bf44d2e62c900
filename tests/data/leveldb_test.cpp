// leveldb_test.cpp — LevelDB through the backend-neutral interfaces: DbWriter/RecordSource round trips
// in key order for both backends, batched writes, dropped tails, refusals and one-line errors naming the
// path, concurrent reads, one database opened twice in a process and by threads at once, and the Data
// layer giving the same batches from a LevelDB as from an LMDB, exact resume included.
#include <signal.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <future>
#include <random>
#include <thread>

#include "cortado/data/db_writer.hpp"
#include "cortado/data/leveldb.hpp"
#include "cortado/data/records.hpp"
#include "cortado/error.hpp"
#include "test_util.hpp"

namespace cortado::test {

namespace {

namespace fs = std::filesystem;

std::string Key(int i) {
  char key[16];
  std::snprintf(key, sizeof(key), "%08d", i);
  return key;
}
std::string Value(int i) { return "value " + std::to_string(i) + std::string(i % 7, 'x'); }

// Writes records 0..n-1 in a shuffled order (the database sorts them by key).
std::string WriteShuffled(DataParameter::DB backend, const std::string& path, int n) {
  std::vector<int> order(n);
  for (int i = 0; i < n; ++i) order[i] = i;
  std::shuffle(order.begin(), order.end(), std::mt19937(5));
  auto writer = CreateDbWriter(backend, path, "test");
  for (int i : order) writer->Put(Key(i), Value(i));
  writer->Finish();
  return path;
}

// Record i: a 2×3×3 datum with pixel j = (7·i + j) % 256 and label i % 5.
void WriteDatums(DataParameter::DB backend, const std::string& path, int n) {
  auto writer = CreateDbWriter(backend, path, "test");
  Datum datum;
  datum.set_channels(2), datum.set_height(3), datum.set_width(3);
  for (int i = 0; i < n; ++i) {
    std::string pixels;
    for (int j = 0; j < 18; ++j) pixels.push_back(static_cast<char>((7 * i + j) % 256));
    datum.set_data(pixels);
    datum.set_label(i % 5);
    writer->Put(Key(i), datum.SerializeAsString());
  }
  writer->Finish();
}

std::string DataText(const std::string& source, const char* backend, const std::string& extra) {
  return "name: 'data' type: 'Data' data_param { source: '" + source + "' " + backend +
         " batch_size: 4 rand_skip: 3 " + extra + " } transform_param { crop_size: 2 mirror: true scale: 0.5 }";
}

std::vector<float> Batch(LayerFixture& f) {
  f.Forward();
  std::vector<float> out(f.top(0).data(), f.top(0).data() + f.top(0).count());
  out.insert(out.end(), f.top(1).data(), f.top(1).data() + f.top(1).count());
  return out;
}

bool Has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }

// Kills this process's child processes (from /proc/<pid>/stat: pid, (name), state, parent pid).
void KillChildren() {
  std::error_code ec;
  for (const auto& entry : fs::directory_iterator("/proc", ec)) {
    std::ifstream stat(entry.path() / "stat");
    int pid = 0, parent = 0;
    std::string name, state;
    if (stat >> pid >> name >> state >> parent && parent == ::getpid()) ::kill(pid, SIGKILL);
  }
}

}  // namespace

TEST(Leveldb, RoundTripInKeyOrderLikeLmdb) {
  const std::string dir = TempDir();
  const int n = 2 * DbWriter::kPutsPerCommit + 17;  // several write batches and a tail
  for (DataParameter::DB backend : {DataParameter::LEVELDB, DataParameter::LMDB}) {
    const std::string path = WriteShuffled(backend, dir + "/db" + std::to_string(backend), n);
    auto records = OpenRecords(backend, path, "test");
    SCOPED_TRACE(records->backend_name());
    ASSERT_EQ(records->size(), uint64_t(n));
    EXPECT_EQ(records->path(), path);
    for (int i = 0; i < n; ++i) {
      ASSERT_EQ(records->key(i), Key(i));
      ASSERT_EQ(records->value(i), Value(i));
    }
  }
  EXPECT_TRUE(fs::exists(dir + "/db0/CURRENT"));  // a LevelDB directory
  EXPECT_TRUE(fs::exists(dir + "/db1/data.mdb"));
}

// A conversion that fails destroys its writer before Finish: no partial database is left behind.
// LevelDB would write its LOCK and LOG into any folder it is pointed at before finding no database.
TEST(Leveldb, AFolderWithoutADatabaseIsRefusedAndLeftAsItWas) {
  const std::string dir = TempDir() + "/photos";
  std::filesystem::create_directories(dir);
  WriteFile(dir + "/cat.jpg", "not a database");
  EXPECT_EQ(ErrorOf([&] { LeveldbRecords records(dir, "layer d (Data)"); }),
            "layer d (Data): cannot open LevelDB '" + dir + "': it holds no LevelDB (no CURRENT file)");
  int files = 0;
  for ([[maybe_unused]] const auto& entry : std::filesystem::directory_iterator(dir)) ++files;
  EXPECT_EQ(files, 1);
}

// LevelDB asserts while recovering a log file numbered 0 (found by fuzzing), which would abort the
// process: the open in a child process turns it into an Error naming the database.
TEST(Leveldb, ADatabaseLevelDbAssertsOnIsAnError) {
  const std::string path = WriteShuffled(DataParameter::LEVELDB, TempDir() + "/db", 3);
  WriteFile(path + "/000000.log", std::string(64, '\x01'));
  const std::string error = ErrorOf([&] { LeveldbRecords records(path, "layer d (Data)"); });
  EXPECT_EQ(error.rfind("layer d (Data): cannot open LevelDB '" + path + "'", 0), 0u) << error;
}

TEST(Leveldb, AnUnfinishedDatabaseIsRemovedAndAnEmptyOneIsAnError) {
  const std::string path = TempDir() + "/db";
  {
    LeveldbWriter writer(path, "test");
    writer.Put("a", "1");
    writer.Commit();
  }
  EXPECT_FALSE(std::filesystem::exists(path));
  LeveldbWriter(path, "test").Finish();
  EXPECT_EQ(ErrorOf([&] { LeveldbRecords records(path, "layer d (Data)"); }),
            "layer d (Data): LevelDB '" + path + "' holds no records");
}

TEST(Leveldb, WriterNeverOverwrites) {
  const std::string path = WriteShuffled(DataParameter::LEVELDB, TempDir() + "/db", 3);
  EXPECT_EQ(ErrorOf([&] { LeveldbWriter writer(path, "tool"); }),
            "tool: '" + path + "' already exists; remove it or choose another name");
  EXPECT_EQ(ErrorOf([&] { LeveldbWriter writer(path, ""); }),
            "'" + path + "' already exists; remove it or choose another name");
  EXPECT_EQ(OpenRecords(DataParameter::LEVELDB, path, "")->size(), 3u);  // untouched
}

TEST(Leveldb, OpenErrorsAreOneLineNamingThePath) {
  const std::string dir = TempDir();
  EXPECT_EQ(ErrorOf([&] { OpenRecords(DataParameter::LEVELDB, dir + "/missing", "layer d (Data)"); }),
            "layer d (Data): cannot open LevelDB '" + dir + "/missing': No such file or directory");
  EXPECT_FALSE(fs::exists(dir + "/missing"));  // LevelDB was not allowed to create it
  WriteFile(dir + "/file", "x");
  EXPECT_EQ(ErrorOf([&] { OpenRecords(DataParameter::LEVELDB, dir + "/file", ""); }),
            "cannot open LevelDB '" + dir + "/file': Not a directory");
  const std::string lmdb = WriteShuffled(DataParameter::LMDB, dir + "/lmdb", 2);
  EXPECT_EQ(ErrorOf([&] { OpenRecords(DataParameter::LEVELDB, lmdb, ""); }),
            "cannot open LevelDB '" + lmdb + "': it holds an LMDB (data.mdb), not a LevelDB");
  EXPECT_FALSE(fs::exists(lmdb + "/LOCK"));
  const std::string leveldb = WriteShuffled(DataParameter::LEVELDB, dir + "/leveldb", 2);
  EXPECT_EQ(ErrorOf([&] { OpenRecords(DataParameter::LMDB, leveldb, ""); }),
            "cannot open LMDB '" + leveldb + "': it holds a LevelDB (CURRENT), not an LMDB");
  fs::create_directories(dir + "/empty_dir");
  const std::string message = ErrorOf([&] { OpenRecords(DataParameter::LEVELDB, dir + "/empty_dir", ""); });
  EXPECT_EQ(message.rfind("cannot open LevelDB '" + dir + "/empty_dir': ", 0), 0u) << message;
  EXPECT_EQ(CountLines(message + "\n"), 1) << message;
}

TEST(Leveldb, BackendFlag) {
  EXPECT_EQ(ParseBackendFlag("lmdb"), DataParameter::LMDB);
  EXPECT_EQ(ParseBackendFlag("leveldb"), DataParameter::LEVELDB);
  EXPECT_EQ(ErrorOf([] { ParseBackendFlag("rocksdb"); }),
            "unknown --backend=rocksdb; use --backend=lmdb or --backend=leveldb");
}

TEST(Leveldb, ConcurrentReadsFromManyThreads) {
  const int n = 500;
  const std::string path = WriteShuffled(DataParameter::LEVELDB, TempDir() + "/db", n);
  LeveldbRecords records(path, "test");
  std::vector<int> wrong(8, 0);
  std::vector<std::thread> threads;
  for (int t = 0; t < 8; ++t) {
    threads.emplace_back([&, t] {
      std::mt19937 rng(t);
      for (int k = 0; k < 4000; ++k) {
        const int i = static_cast<int>(rng() % n);
        const std::string_view value = records.value(i);
        wrong[t] += value != Value(i) || records.key(i) != Key(i);
      }
    });
  }
  for (auto& thread : threads) thread.join();
  for (int t = 0; t < 8; ++t) EXPECT_EQ(wrong[t], 0) << "thread " << t;
}

TEST(Leveldb, OneDatabaseOpenedTwiceInAProcess) {
  const std::string path = WriteShuffled(DataParameter::LEVELDB, TempDir() + "/db", 4);
  {
    LeveldbRecords train(path, "train"), test(path + "/", "test");  // LevelDB's LOCK allows one open
    EXPECT_EQ(train.value(3), Value(3));
    EXPECT_EQ(test.value(2), Value(2));
  }
  LeveldbRecords again(path, "again");  // closed and unlocked with the last reader
  EXPECT_EQ(again.value(0), Value(0));
}

// Both backends let a process open a database once, so their readers share one handle per database
// (a train and a test net, data-parallel ranks). Threads opening it while others close it each see
// every record: a second LMDB environment would reset the reader table, and a reader starting then
// saw the empty first meta page ("holds no records"); a LevelDB handle still closing holds its LOCK.
TEST(Leveldb, ThreadsOpeningOneDatabaseAtOnceEachSeeEveryRecordLikeLmdb) {
  for (const auto& [backend, rounds] : {std::pair{DataParameter::LMDB, 150}, std::pair{DataParameter::LEVELDB, 15}}) {
    const std::string path = WriteShuffled(backend, TempDir() + "/db" + std::to_string(backend), 20);
    const int threads = 4;
    std::vector<std::string> problems(threads);
    std::vector<std::thread> workers;
    for (int t = 0; t < threads; ++t)
      workers.emplace_back([&, t, rounds = rounds, backend = backend] {
        for (int round = 0; round < rounds && problems[t].empty(); ++round) {
          try {
            const auto records = OpenRecords(backend, path, "layer d" + std::to_string(t) + " (Data)");
            if (records->size() != 20 || records->value(19) != Value(19))
              problems[t] = "round " + std::to_string(round) + ": " + std::to_string(records->size()) + " records";
          } catch (const Error& e) {
            problems[t] = e.what();
          }
        }
      });
    for (auto& worker : workers) worker.join();
    for (int t = 0; t < threads; ++t) EXPECT_EQ(problems[t], "") << "thread " << t;
  }
}

// A LevelDB's keys are read in a forked child, which inherits every lock another thread held at the
// fork. A thread writing a glog line holds libc's time-zone lock while it formats the time
// (localtime_r): a child whose LevelDB wrote its LOG file (whose lines LevelDB also dates) waited for it
// for ever, and the Data layer's open with it (a data loader logging "Restarting data prefetching").
TEST(Leveldb, OpensWhileAnotherThreadFormatsLogTimes) {
  const std::string path = WriteShuffled(DataParameter::LEVELDB, TempDir() + "/db", 5);
  std::atomic<bool> stop{false};
  std::thread clock([&] {
    while (!stop) {
      const std::time_t now = std::time(nullptr);
      std::tm parts{};
      localtime_r(&now, &parts);
    }
  });
  auto opens = std::async(std::launch::async, [&] {
    for (int i = 0; i < 40; ++i)
      if (LeveldbRecords(path, "test").size() != 5) return false;
    return true;
  });
  if (opens.wait_for(std::chrono::seconds(120)) != std::future_status::ready) {
    std::fprintf(stderr, "opening a LevelDB while another thread runs localtime_r hangs\n");
    KillChildren();  // else the stuck child would outlive the test, holding its output open
    std::_Exit(1);   // the thread waiting for it cannot be joined
  }
  stop = true;
  clock.join();
  EXPECT_TRUE(opens.get());
}

TEST(Leveldb, DataLayerGivesTheLmdbBatchesAndResumesExactly) {
  const std::string dir = TempDir();
  WriteDatums(DataParameter::LMDB, dir + "/lmdb", 11);
  WriteDatums(DataParameter::LEVELDB, dir + "/leveldb", 11);
  for (const std::string extra : {"threads: 1", "threads: 3 shuffle: true prefetch: 2"}) {
    SCOPED_TRACE(extra);
    LayerFixture lmdb(DataText(dir + "/lmdb", "backend: LMDB", extra), {}, 2, 7);
    LayerFixture leveldb(DataText(dir + "/leveldb", "", extra), {}, 2, 7);  // Caffe's default: LEVELDB
    std::vector<std::vector<float>> expected;
    for (int step = 0; step < 8; ++step) {  // past two epochs
      expected.push_back(Batch(lmdb));
      ASSERT_EQ(Batch(leveldb), expected.back()) << "step " << step;
    }
    // A LevelDB reader stopped after 3 batches and restored in a new layer continues as if never stopped.
    LayerFixture first(DataText(dir + "/leveldb", "backend: LEVELDB", extra), {}, 2, 7);
    for (int step = 0; step < 3; ++step) Batch(first);
    const Layer::ReaderState state = first.layer().reader_state();
    LayerFixture resumed(DataText(dir + "/leveldb", "backend: LEVELDB", extra), {}, 2, 99);
    resumed.layer().RestoreReaderState(state);
    for (int step = 3; step < 8; ++step) ASSERT_EQ(Batch(resumed), expected[step]) << "step " << step;
  }
}

TEST(Leveldb, DataLayerErrors) {
  const std::string dir = TempDir();
  WriteDatums(DataParameter::LMDB, dir + "/lmdb", 2);
  const std::string message = ErrorOf([&] { LayerFixture f(DataText(dir + "/lmdb", "", ""), {}, 2); });
  EXPECT_EQ(message, "layer data (Data): '" + dir + "/lmdb' is an LMDB but data_param.backend is LEVELDB "
                     "(Caffe's default when backend is not given); set backend: LMDB");
  EXPECT_EQ(ErrorOf([&] { LayerFixture f(DataText(dir + "/none", "", ""), {}, 2); }),
            "layer data (Data): cannot open LevelDB '" + dir + "/none': No such file or directory");
  auto writer = CreateDbWriter(DataParameter::LEVELDB, dir + "/corrupt", "test");
  Datum d;
  d.set_channels(2), d.set_height(3), d.set_width(3), d.set_data(std::string(18, '\1'));
  writer->Put("a", d.SerializeAsString());
  writer->Put("b", std::string("\xff\xff\xff\xff", 4));
  writer->Finish();
  writer.reset();
  LayerFixture f(DataText(dir + "/corrupt", "", "threads: 2"), {}, 2);
  const std::string corrupt = ErrorOf([&] { f.Forward(); });
  EXPECT_TRUE(Has(corrupt, "record 'b' of LevelDB '" + dir + "/corrupt' is not a Datum")) << corrupt;
}

}  // namespace cortado::test
