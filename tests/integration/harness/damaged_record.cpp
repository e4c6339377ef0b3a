#include "harness/damaged_record.hpp"

#include <lmdb.h>

#include <stdexcept>
#include <string>

#include "index/index.hpp"
#include "shard/reader.hpp"

namespace dedupd::itest {

namespace {

void check(int rc, const char* what) {
  if (rc != 0) throw std::runtime_error(std::string(what) + ": " + mdb_strerror(rc));
}

}  // namespace

void index_with_a_damaged_file_record(const std::filesystem::path& index_dir,
                                      const std::vector<const MadeShard*>& shards, const MadeShard& damaged) {
  std::filesystem::create_directories(index_dir);
  shard::Hash damaged_file;
  {
    index::Options o;
    o.dir = index_dir.string();
    auto idx = index::Index::open(o);
    if (!idx) throw std::runtime_error(idx.error().to_string());
    if (auto on = (*idx)->set_outbox(true, 0); !on) throw std::runtime_error(on.error().to_string());
    for (const MadeShard* m : shards) {
      auto view = shard::ShardView::parse(m->bytes);
      if (!view) throw std::runtime_error(view.error().to_string());
      if (auto in = (*idx)->ingest(*view, index::SourceInfo{}); !in) throw std::runtime_error(in.error().to_string());
      if (m == &damaged) damaged_file = (*view->files().begin()).hash();
    }
  }
  MDB_env* env = nullptr;
  check(mdb_env_create(&env), "mdb_env_create");
  MDB_txn* txn = nullptr;
  try {
    check(mdb_env_set_maxdbs(env, 32), "mdb_env_set_maxdbs");
    check(mdb_env_open(env, index_dir.c_str(), 0, 0640), "mdb_env_open");
    check(mdb_txn_begin(env, nullptr, 0, &txn), "mdb_txn_begin");
    MDB_dbi files;
    check(mdb_dbi_open(txn, "files", 0, &files), "mdb_dbi_open files");
    MDB_val k{32, damaged_file.bytes.data()}, v{3, const_cast<char*>("bad")};
    check(mdb_put(txn, files, &k, &v, 0), "mdb_put");
    MDB_txn* done = txn;
    txn = nullptr;  // a commit frees it, whatever it returns
    check(mdb_txn_commit(done), "mdb_txn_commit");
  } catch (...) {
    if (txn) mdb_txn_abort(txn);
    mdb_env_close(env);
    throw;
  }
  mdb_env_close(env);
}

}  // namespace dedupd::itest
