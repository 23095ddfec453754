#include "storage/etcd_store.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <deque>
#include <filesystem>
#include <map>
#include <optional>
#include <utility>
#include <vector>

#include "absl/cleanup/cleanup.h"
#include "absl/container/flat_hash_map.h"
#include "absl/container/flat_hash_set.h"
#include "absl/hash/hash.h"
#include "absl/random/random.h"
#include "absl/strings/escaping.h"
#include "absl/strings/match.h"
#include "absl/strings/numbers.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_format.h"
#include "absl/strings/str_split.h"
#include "absl/synchronization/mutex.h"
#include "absl/time/clock.h"
#include "common/status_macros.h"
#include "storage/etcd_client.h"
#include "storage/etcd_commit_queue.h"
#include "storage/etcd_read_queue.h"
#include "storage/key_codec.h"
#include "storage/rocks_store.h"

namespace storage {
namespace {

// The first key after every key that starts with `prefix` (etcd's "range_end" of a prefix).
std::string PrefixEnd(std::string prefix) {
  while (!prefix.empty()) {
    unsigned char last = static_cast<unsigned char>(prefix.back());
    if (last < 0xff) {
      prefix.back() = static_cast<char>(last + 1);
      return prefix;
    }
    prefix.pop_back();
  }
  return std::string(1, '\0');  // etcd: "\0" as range_end means "to the end"
}

}  // namespace

// What the store, its snapshots, transactions and iterators share: the client and the layout.
class EtcdStore::Impl {
 public:
  Impl(EtcdStoreOptions options, std::unique_ptr<EtcdClient> client)
      : options_(std::move(options)),
        client_(std::move(client)),
        commits_(client_.get(), options_.max_txn_ops, options_.max_request_bytes),
        reads_(client_.get(), options_.max_txn_ops) {}

  const EtcdStoreOptions& options() const { return options_; }
  EtcdClient& client() { return *client_; }
  // Where transactions commit: in batches with the concurrent ones (etcd_commit_queue.h).
  EtcdCommitQueue& commits() { return commits_; }
  // Where reads of the latest values go: in batches with the concurrent ones (etcd_read_queue.h).
  EtcdReadQueue& reads() { return reads_; }

  // <prefix><cf name>/ : every key of one column family starts with it.
  std::string FamilyPrefix(ColumnFamily cf) const {
    return absl::StrCat(options_.prefix, ColumnFamilyName(cf), "/");
  }
  std::string Key(ColumnFamily cf, absl::string_view key) const {
    return absl::StrCat(FamilyPrefix(cf), key);
  }

  // A point read at `revision` (0: the latest, linearizable). The value, or NOT_FOUND; sets
  // `mod_revision` (0 when absent) and `read_revision` (the revision the read saw) when given.
  absl::StatusOr<std::string> Read(const std::string& full_key, int64_t revision,
                                   int64_t* mod_revision, int64_t* read_revision) {
    absl::StatusOr<etcdserverpb::RangeResponse> read;
    if (revision == 0) {
      read = reads_.Read(full_key);
    } else {
      etcdserverpb::RangeRequest request;
      request.set_key(full_key);
      request.set_revision(revision);
      read = client_->Range(request);
    }
    ASSIGN_OR_RETURN(etcdserverpb::RangeResponse response, std::move(read));
    if (read_revision != nullptr) *read_revision = response.header().revision();
    if (response.kvs_size() == 0) {
      if (mod_revision != nullptr) *mod_revision = 0;
      return absl::NotFoundError("not found");
    }
    if (mod_revision != nullptr) *mod_revision = response.kvs(0).mod_revision();
    return std::move(*response.mutable_kvs(0)->mutable_value());
  }

  // The cluster's revision now.
  absl::StatusOr<int64_t> CurrentRevision() {
    etcdserverpb::RangeRequest request;
    request.set_key(Key(ColumnFamily::kDefault, kSchemaVersionKey));
    request.set_count_only(true);
    ASSIGN_OR_RETURN(etcdserverpb::RangeResponse response, client_->Range(request));
    return response.header().revision();
  }

  // The bytes the member in use holds in use (its Status). A scrape of /metrics asks Stats() once
  // per figure, so the member is asked at most once a second; 0 until it first answers.
  uint64_t LiveDataBytes() {
    absl::MutexLock lock(&size_mu_);
    const absl::Time now = absl::Now();
    if (now - size_asked_at_ < absl::Seconds(1)) return live_data_bytes_;
    size_asked_at_ = now;
    absl::StatusOr<etcdserverpb::StatusResponse> status = client_->Status();
    if (status.ok()) live_data_bytes_ = static_cast<uint64_t>(status->dbsizeinuse());
    return live_data_bytes_;
  }

  // The revisions of this store's own recent commits (EtcdStore::WroteRevision): a ring of the
  // newest kOwnRevisions and a set for lookups.
  void RecordOwnRevision(int64_t revision) {
    absl::MutexLock lock(&own_mu_);
    if (!own_set_.insert(revision).second) return;
    own_ring_.push_back(revision);
    if (own_ring_.size() > kOwnRevisions) {
      own_set_.erase(own_ring_.front());
      own_ring_.pop_front();
    }
  }
  bool IsOwnRevision(int64_t revision) {
    absl::MutexLock lock(&own_mu_);
    return own_set_.contains(revision);
  }

  std::atomic<uint64_t> conflicts{0};
  // A transaction that lost runs again holding the stripes of the keys it read
  // (EtcdStore::RunTransaction): the losers of one key take turns, the other keys' go on.
  static constexpr size_t kRetryStripes = 64;
  std::array<absl::Mutex, kRetryStripes> retry_stripes;

 private:
  static constexpr size_t kOwnRevisions = 4096;

  const EtcdStoreOptions options_;
  const std::unique_ptr<EtcdClient> client_;
  EtcdCommitQueue commits_;
  EtcdReadQueue reads_;
  absl::Mutex size_mu_;
  absl::Time size_asked_at_ ABSL_GUARDED_BY(size_mu_) = absl::InfinitePast();
  uint64_t live_data_bytes_ ABSL_GUARDED_BY(size_mu_) = 0;
  absl::Mutex own_mu_;
  std::deque<int64_t> own_ring_ ABSL_GUARDED_BY(own_mu_);
  absl::flat_hash_set<int64_t> own_set_ ABSL_GUARDED_BY(own_mu_);
};

namespace {

// A scan of [lower, upper) of one column family, read in pages of options.page_size keys, all
// at one revision: the one given, or the one the first page was read at.
class EtcdScan final : public Iterator {
 public:
  EtcdScan(std::shared_ptr<EtcdStore::Impl> impl, ColumnFamily cf, absl::string_view lower,
           absl::string_view upper, int64_t revision)
      : impl_(std::move(impl)),
        family_prefix_(impl_->FamilyPrefix(cf)),
        begin_(absl::StrCat(family_prefix_, lower)),
        end_(upper.empty() ? PrefixEnd(family_prefix_) : absl::StrCat(family_prefix_, upper)),
        revision_(revision) {
    Seek(lower);
  }

  void Seek(absl::string_view key) override {
    std::string from = absl::StrCat(family_prefix_, key);
    if (from < begin_) from = begin_;
    Load(std::move(from));
  }
  bool Valid() const override { return status_.ok() && pos_ < page_.kvs_size(); }
  void Next() override {
    if (!Valid()) return;
    if (++pos_ < page_.kvs_size() || !more_) return;
    // The next page starts just after the last key of this one.
    std::string from = page_.kvs(page_.kvs_size() - 1).key();
    from.push_back('\0');
    Load(std::move(from));
  }
  absl::string_view key() const override {
    return absl::string_view(page_.kvs(pos_).key()).substr(family_prefix_.size());
  }
  absl::string_view value() const override { return page_.kvs(pos_).value(); }
  absl::Status status() const override { return status_; }

  // The etcd key of the current entry (prefix and family included).
  absl::string_view full_key() const { return page_.kvs(pos_).key(); }
  // The revision the scan reads at (0 until its first page was read).
  int64_t revision() const { return revision_; }

 private:
  void Load(std::string from) {
    page_.Clear();
    pos_ = 0;
    more_ = false;
    if (from >= end_) return;
    etcdserverpb::RangeRequest request;
    request.set_key(std::move(from));
    request.set_range_end(end_);
    request.set_limit(impl_->options().page_size);
    request.set_revision(revision_);
    absl::StatusOr<etcdserverpb::RangeResponse> response = impl_->client().Range(request);
    if (!response.ok()) {
      status_ = response.status();
      return;
    }
    page_ = *std::move(response);
    more_ = page_.more();
    // Later pages read the same moment as the first.
    if (revision_ == 0) revision_ = page_.header().revision();
  }

  const std::shared_ptr<EtcdStore::Impl> impl_;
  const std::string family_prefix_;
  const std::string begin_;
  const std::string end_;
  int64_t revision_;
  etcdserverpb::RangeResponse page_;
  int pos_ = 0;
  bool more_ = false;
  absl::Status status_;
};

// The writes a transaction buffers until it commits, by etcd key: a value, or nullopt for a
// delete.
using WriteSet = std::map<std::string, std::optional<std::string>, std::less<>>;

// A transaction's scan: the committed records (at the transaction's read revision) with its
// own buffered writes laid over them. Writes made while it scans are seen by keys not yet
// visited; the current key is kept as a copy, so key() stays good whatever is written.
class EtcdTransactionScan final : public Iterator {
 public:
  EtcdTransactionScan(std::unique_ptr<EtcdScan> base, const WriteSet* writes,
                      std::string family_prefix, absl::string_view lower, absl::string_view upper)
      : base_(std::move(base)),
        writes_(writes),
        family_prefix_(std::move(family_prefix)),
        begin_(absl::StrCat(family_prefix_, lower)),
        end_(upper.empty() ? PrefixEnd(family_prefix_) : absl::StrCat(family_prefix_, upper)) {
    Settle(begin_, /*inclusive=*/true);
  }

  void Seek(absl::string_view key) override {
    base_->Seek(key);
    std::string from = absl::StrCat(family_prefix_, key);
    if (from < begin_) from = begin_;
    Settle(std::move(from), /*inclusive=*/true);
  }
  bool Valid() const override { return valid_; }
  void Next() override {
    if (valid_) Settle(current_, /*inclusive=*/false);
  }
  absl::string_view key() const override {
    return absl::string_view(current_).substr(family_prefix_.size());
  }
  absl::string_view value() const override {
    if (from_write_) {
      auto it = writes_->find(current_);
      if (it != writes_->end() && it->second.has_value()) return *it->second;
      return {};
    }
    return base_->value();
  }
  absl::Status status() const override { return base_->status(); }

 private:
  // Positions on the first visible key at or after `from` (after it when not inclusive).
  void Settle(std::string from, bool inclusive) {
    valid_ = false;
    while (true) {
      while (base_->Valid() && (inclusive ? base_->full_key() < from : base_->full_key() <= from)) {
        base_->Next();
      }
      auto w = inclusive ? writes_->lower_bound(from) : writes_->upper_bound(from);
      const bool write_here = w != writes_->end() && w->first < end_;
      const bool base_here = base_->Valid();
      if (!write_here && !base_here) return;
      if (write_here && (!base_here || w->first <= base_->full_key())) {
        if (!w->second.has_value()) {
          // Deleted by this transaction: skip it (and the committed record under it).
          from = w->first;
          inclusive = false;
          continue;
        }
        current_ = w->first;
        from_write_ = true;
      } else {
        current_ = std::string(base_->full_key());
        from_write_ = false;
      }
      valid_ = true;
      return;
    }
  }

  const std::unique_ptr<EtcdScan> base_;
  const WriteSet* const writes_;
  const std::string family_prefix_;
  const std::string begin_;
  const std::string end_;
  std::string current_;
  bool from_write_ = false;
  bool valid_ = false;
};

class EtcdTransaction final : public Transaction {
 public:
  explicit EtcdTransaction(std::shared_ptr<EtcdStore::Impl> impl) : impl_(std::move(impl)) {}

  absl::StatusOr<std::string> GetForUpdate(ColumnFamily cf, absl::string_view key) override {
    std::string full = impl_->Key(cf, key);
    if (auto w = writes_.find(full); w != writes_.end()) {
      if (!w->second.has_value()) return absl::NotFoundError("read for update: deleted");
      return *w->second;
    }
    int64_t mod_revision = 0;
    int64_t read_revision = 0;
    // Every read of the transaction sees the moment of its first read.
    absl::StatusOr<std::string> value =
        impl_->Read(full, read_revision_, &mod_revision, &read_revision);
    if (!value.ok() && !absl::IsNotFound(value.status())) {
      // The moment was compacted away under a long transaction: run it again.
      if (absl::IsOutOfRange(value.status())) conflict_ = true;
      return value.status();
    }
    if (read_revision_ == 0) read_revision_ = read_revision;
    // The first read of a key is what the commit compares against.
    reads_.try_emplace(std::move(full), mod_revision);
    if (!value.ok()) return absl::NotFoundError("read for update: not found");
    return value;
  }

  absl::Status Put(ColumnFamily cf, absl::string_view key, absl::string_view value) override {
    writes_[impl_->Key(cf, key)] = std::string(value);
    return absl::OkStatus();
  }

  absl::Status Delete(ColumnFamily cf, absl::string_view key) override {
    writes_[impl_->Key(cf, key)] = std::nullopt;
    return absl::OkStatus();
  }

  std::unique_ptr<Iterator> NewIterator(ColumnFamily cf, absl::string_view lower,
                                        absl::string_view upper) override {
    auto base = std::make_unique<EtcdScan>(impl_, cf, lower, upper, read_revision_);
    if (read_revision_ == 0) read_revision_ = base->revision();
    return std::make_unique<EtcdTransactionScan>(std::move(base), &writes_, impl_->FamilyPrefix(cf),
                                                 lower, upper);
  }

  // Whether a read failed because the transaction's moment is gone (then it runs again).
  bool conflict() const { return conflict_; }

  // The retry stripes (Impl::retry_stripes) of the keys read for update, in ascending order,
  // each once: the order every loser locks them in, so that no two wait for each other.
  std::vector<size_t> ReadStripes() const {
    std::vector<size_t> stripes;
    for (const auto& [key, revision] : reads_) {
      stripes.push_back(EtcdStore::RetryStripeOf(key));
    }
    std::sort(stripes.begin(), stripes.end());
    stripes.erase(std::unique(stripes.begin(), stripes.end()), stripes.end());
    return stripes;
  }

  // Commits the buffered writes if nothing read for update changed since: true when it did,
  // false when another writer got there first (nothing written).
  absl::StatusOr<bool> Commit() {
    if (writes_.empty()) return true;
    const EtcdStoreOptions& options = impl_->options();
    const int64_t ops = static_cast<int64_t>(writes_.size());
    const int64_t compares = static_cast<int64_t>(reads_.size());
    if (ops > options.max_txn_ops || compares > options.max_txn_ops) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "this transaction writes %d keys after reading %d, more than the etcd cluster takes "
          "in one transaction (--max-txn-ops=%d)",
          ops, compares, options.max_txn_ops));
    }
    EtcdCommit commit;
    etcdserverpb::TxnRequest& request = commit.txn;
    for (const auto& [key, mod_revision] : reads_) {
      commit.reads.push_back(key);
      etcdserverpb::Compare* compare = request.add_compare();
      compare->set_result(etcdserverpb::Compare::EQUAL);
      compare->set_target(etcdserverpb::Compare::MOD);
      compare->set_key(key);
      compare->set_mod_revision(mod_revision);
    }
    for (auto& [key, value] : writes_) {
      commit.writes.push_back(key);
      etcdserverpb::RequestOp* op = request.add_success();
      if (value.has_value()) {
        etcdserverpb::PutRequest* put = op->mutable_request_put();
        put->set_key(key);
        put->set_value(std::move(*value));
      } else {
        op->mutable_request_delete_range()->set_key(key);
      }
    }
    const int64_t bytes = static_cast<int64_t>(request.ByteSizeLong());
    if (bytes > options.max_request_bytes) {
      return absl::ResourceExhaustedError(absl::StrFormat(
          "this transaction is %d bytes, more than the etcd cluster takes in one request "
          "(--max-request-bytes=%d)",
          bytes, options.max_request_bytes));
    }
    commit.bytes = bytes;
    ASSIGN_OR_RETURN(const EtcdCommitQueue::Outcome outcome,
                     impl_->commits().Commit(std::move(commit)));
    if (outcome.committed) impl_->RecordOwnRevision(outcome.revision);
    return outcome.committed;
  }

 private:
  const std::shared_ptr<EtcdStore::Impl> impl_;
  // The revision every read of this transaction reads at (0 until the first read).
  int64_t read_revision_ = 0;
  absl::flat_hash_map<std::string, int64_t> reads_;
  WriteSet writes_;
  bool conflict_ = false;
};

// A read-only view at one revision (Store::NewSnapshot).
class EtcdSnapshot final : public Store {
 public:
  EtcdSnapshot(std::shared_ptr<EtcdStore::Impl> impl, int64_t revision)
      : impl_(std::move(impl)), revision_(revision) {}

  absl::StatusOr<std::string> Get(ColumnFamily cf, absl::string_view key) override {
    return impl_->Read(impl_->Key(cf, key), revision_, nullptr, nullptr);
  }
  std::unique_ptr<Iterator> NewIterator(ColumnFamily cf, absl::string_view lower,
                                        absl::string_view upper) override {
    return std::make_unique<EtcdScan>(impl_, cf, lower, upper, revision_);
  }
  absl::Status RunTransaction(absl::FunctionRef<absl::Status(Transaction&)>) override {
    return absl::FailedPreconditionError("a snapshot is read-only");
  }
  absl::Status Checkpoint(const std::string&) override {
    return absl::FailedPreconditionError("checkpoint the store, not a snapshot of it");
  }
  absl::StatusOr<std::unique_ptr<Store>> NewSnapshot() override {
    return std::unique_ptr<Store>(new EtcdSnapshot(impl_, revision_));
  }
  bool WritesMayBlock() const override { return true; }

 private:
  const std::shared_ptr<EtcdStore::Impl> impl_;
  const int64_t revision_;
};

}  // namespace

EtcdClientOptions ClientOptionsOf(const EtcdStoreOptions& options) {
  EtcdClientOptions client_options;
  client_options.endpoints = options.endpoints;
  client_options.tls = options.tls;
  client_options.ca_file = options.ca_file;
  client_options.cert_file = options.cert_file;
  client_options.key_file = options.key_file;
  client_options.user = options.user;
  client_options.password = options.password;
  client_options.request_timeout = absl::Milliseconds(options.request_timeout_ms);
  return client_options;
}

absl::Status ParseEtcdUrl(absl::string_view url, EtcdStoreOptions* options) {
  absl::string_view rest = url;
  bool tls = false;
  if (absl::ConsumePrefix(&rest, "etcds://")) {
    tls = true;
  } else if (!absl::ConsumePrefix(&rest, "etcd://")) {
    return absl::InvalidArgumentError(absl::StrCat(
        "store URL '", url, "' is not etcd://host:port[,host:port...] (or etcds:// for TLS)"));
  }
  std::vector<std::string> endpoints;
  for (absl::string_view endpoint : absl::StrSplit(rest, ',')) {
    const size_t colon = endpoint.rfind(':');
    int port = 0;
    if (endpoint.empty() || colon == absl::string_view::npos || colon == 0 ||
        !absl::SimpleAtoi(endpoint.substr(colon + 1), &port) || port <= 0 || port > 65535 ||
        endpoint.find_first_of("/?#@ ") != absl::string_view::npos) {
      return absl::InvalidArgumentError(
          absl::StrCat("store URL '", url, "': '", endpoint, "' is not host:port"));
    }
    endpoints.emplace_back(endpoint);
  }
  options->endpoints = std::move(endpoints);
  options->tls = tls;
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<EtcdStore>> EtcdStore::Open(EtcdStoreOptions options) {
  if (options.prefix.empty() || options.prefix.back() != '/') {
    return absl::InvalidArgumentError(
        absl::StrCat("etcd prefix '", options.prefix, "' must be non-empty and end with '/'"));
  }
  if (options.page_size <= 0 || options.max_txn_ops <= 0 || options.max_request_bytes <= 0) {
    return absl::InvalidArgumentError("etcd page size and limits must be positive");
  }
  EtcdClientOptions client_options = ClientOptionsOf(options);
  ASSIGN_OR_RETURN(std::unique_ptr<EtcdClient> client, EtcdClient::Connect(client_options));
  auto impl = std::make_shared<Impl>(options, std::move(client));
  std::unique_ptr<EtcdStore> store(new EtcdStore(std::move(options), std::move(impl)));
  RETURN_IF_ERROR(store->CheckSchema());
  return store;
}

EtcdStore::EtcdStore(EtcdStoreOptions options, std::shared_ptr<Impl> impl)
    : options_(std::move(options)), impl_(std::move(impl)) {}

EtcdStore::~EtcdStore() = default;

bool EtcdStore::WroteRevision(int64_t revision) const { return impl_->IsOwnRevision(revision); }

uint64_t EtcdStore::transaction_conflicts() const {
  return impl_->conflicts.load(std::memory_order_relaxed);
}

uint64_t EtcdStore::commits_sent() const { return impl_->commits().commits(); }

uint64_t EtcdStore::commit_requests() const { return impl_->commits().batches(); }

uint64_t EtcdStore::latest_reads() const { return impl_->reads().reads(); }

uint64_t EtcdStore::read_requests() const { return impl_->reads().batches(); }

absl::Status EtcdStore::CheckSchema() {
  const std::string key = impl_->Key(ColumnFamily::kDefault, kSchemaVersionKey);
  for (int attempt = 0; attempt < 3; ++attempt) {
    absl::StatusOr<std::string> stored = impl_->Read(key, 0, nullptr, nullptr);
    if (stored.ok()) {
      if (stored->size() != 4) {
        return absl::DataLossError(absl::StrFormat(
            "etcd prefix %s has a malformed schema version record", options_.prefix));
      }
      uint32_t version = 0;
      for (char c : *stored) version = (version << 8) | static_cast<uint8_t>(c);
      if (version > kSchemaVersion) {
        return absl::FailedPreconditionError(absl::StrFormat(
            "etcd prefix %s has schema version %d, newer than this coordinator understands (%d)",
            options_.prefix, version, kSchemaVersion));
      }
      if (version < 1) {
        return absl::DataLossError(absl::StrFormat(
            "etcd prefix %s has an invalid schema version %d", options_.prefix, version));
      }
      if (version == 1) {
        // 1 -> 2, as RocksStore::CheckSchema: nothing of the layout moves (the coordinator
        // builds its running totals at start); the version goes up so that a binary that does
        // not keep them refuses the data set. One compare-and-put: of replicas opening together
        // one moves it, the others read it again.
        etcdserverpb::TxnRequest upgrade;
        etcdserverpb::Compare* same = upgrade.add_compare();
        same->set_result(etcdserverpb::Compare::EQUAL);
        same->set_target(etcdserverpb::Compare::VALUE);
        same->set_key(key);
        same->set_value(*stored);
        etcdserverpb::PutRequest* put = upgrade.add_success()->mutable_request_put();
        put->set_key(key);
        std::string encoded;
        AppendUint32BigEndian(2, &encoded);
        put->set_value(encoded);
        ASSIGN_OR_RETURN(etcdserverpb::TxnResponse response, impl_->client().Txn(upgrade));
        if (!response.succeeded()) continue;
        version = 2;
      }
      schema_version_ = version;
      return absl::OkStatus();
    }
    if (!absl::IsNotFound(stored.status())) return stored.status();
    // No version: the prefix must be empty (anything else was not written by the
    // coordinator). One transaction checks that and records the version, so that replicas
    // opening together record it once.
    const std::string prefix_end = PrefixEnd(options_.prefix);
    etcdserverpb::TxnRequest txn;
    etcdserverpb::Compare* empty = txn.add_compare();
    empty->set_result(etcdserverpb::Compare::EQUAL);
    empty->set_target(etcdserverpb::Compare::VERSION);
    empty->set_key(options_.prefix);
    empty->set_range_end(prefix_end);
    empty->set_version(0);
    etcdserverpb::PutRequest* put = txn.add_success()->mutable_request_put();
    put->set_key(key);
    std::string encoded;
    AppendUint32BigEndian(kSchemaVersion, &encoded);
    put->set_value(encoded);
    // When the prefix is not empty, the answer says with what.
    etcdserverpb::RangeRequest* any = txn.add_failure()->mutable_request_range();
    any->set_key(options_.prefix);
    any->set_range_end(prefix_end);
    any->set_limit(1);
    any->set_keys_only(true);
    ASSIGN_OR_RETURN(etcdserverpb::TxnResponse response, impl_->client().Txn(txn));
    if (response.succeeded()) {
      schema_version_ = kSchemaVersion;
      return absl::OkStatus();
    }
    const etcdserverpb::RangeResponse& found = response.responses(0).response_range();
    if (found.kvs_size() > 0 && found.kvs(0).key() != key) {
      return absl::FailedPreconditionError(absl::StrFormat(
          "etcd prefix %s holds data (%s) but records no schema version; it was not written by "
          "the coordinator: choose another --etcd_prefix",
          options_.prefix, absl::CHexEscape(found.kvs(0).key())));
    }
    // Another replica recorded it first: read what it wrote.
  }
  return absl::AbortedError("the schema version record kept changing while it was read");
}

absl::StatusOr<std::string> EtcdStore::Get(ColumnFamily cf, absl::string_view key) {
  return impl_->Read(impl_->Key(cf, key), 0, nullptr, nullptr);
}

std::unique_ptr<Iterator> EtcdStore::NewIterator(ColumnFamily cf, absl::string_view lower,
                                                 absl::string_view upper) {
  return std::make_unique<EtcdScan>(impl_, cf, lower, upper, /*revision=*/0);
}

size_t EtcdStore::RetryStripeOf(absl::string_view etcd_key) {
  return absl::HashOf(etcd_key) % Impl::kRetryStripes;
}

absl::Status EtcdStore::RunTransaction(absl::FunctionRef<absl::Status(Transaction&)> fn) {
  absl::BitGen random;
  // After a first loss, the transaction runs again holding the stripes of the keys it read: the
  // contenders for those keys in this process then stop beating each other, and a hot key gets
  // through in order, while transactions on other keys go on (other replicas still compete,
  // which the bounded retries cover). Stripes are locked in ascending order and only once.
  std::vector<absl::Mutex*> held;
  absl::Cleanup release = [&held] {
    for (auto it = held.rbegin(); it != held.rend(); ++it) (*it)->Unlock();
  };
  for (int attempt = 0;; ++attempt) {
    EtcdTransaction txn(impl_);
    absl::Status s = fn(txn);
    if (s.ok()) {
      ASSIGN_OR_RETURN(const bool committed, txn.Commit());
      if (committed) return absl::OkStatus();
    } else if (!txn.conflict()) {
      return s;
    }
    impl_->conflicts.fetch_add(1, std::memory_order_relaxed);
    if (attempt >= options_.max_transaction_retries) {
      return absl::AbortedError(absl::StrFormat(
          "the transaction lost to concurrent writers %d times in a row; try again", attempt + 1));
    }
    if (held.empty()) {
      std::vector<size_t> stripes = txn.ReadStripes();
      if (stripes.empty()) stripes.push_back(0);  // lost without reads: a moment compacted away
      for (size_t stripe : stripes) {
        impl_->retry_stripes[stripe].Lock();
        held.push_back(&impl_->retry_stripes[stripe]);
      }
      continue;
    }
    // Back off a little, more after each loss, so that replicas contending spread out.
    const int64_t cap_us = std::min<int64_t>(20000, int64_t{200} << std::min(attempt, 7));
    absl::SleepFor(absl::Microseconds(absl::Uniform<int64_t>(random, 0, cap_us)));
  }
}

absl::Status EtcdStore::Checkpoint(const std::string& dir) {
  std::error_code ec;
  if (std::filesystem::exists(dir, ec)) {
    return absl::AlreadyExistsError(absl::StrCat("checkpoint directory ", dir, " already exists"));
  }
  ASSIGN_OR_RETURN(const int64_t revision, impl_->CurrentRevision());
  StoreOptions rocks_options;
  rocks_options.path = dir;
  absl::Status copied = CopyInto(rocks_options, revision);
  if (!copied.ok()) std::filesystem::remove_all(dir, ec);  // no half copy is left behind
  return copied;
}

absl::Status EtcdStore::CopyInto(const StoreOptions& rocks_options, int64_t revision) {
  ASSIGN_OR_RETURN(std::unique_ptr<RocksStore> copy, RocksStore::Open(rocks_options));
  // Copies in batches of about 4 MiB, all read at one revision.
  constexpr size_t kBatchBytes = 4 << 20;
  for (int i = 0; i < static_cast<int>(ColumnFamily::kCount); ++i) {
    const ColumnFamily cf = static_cast<ColumnFamily>(i);
    EtcdScan scan(impl_, cf, "", "", revision);
    while (scan.Valid()) {
      std::vector<std::pair<std::string, std::string>> batch;
      size_t bytes = 0;
      for (; scan.Valid() && bytes < kBatchBytes; scan.Next()) {
        batch.emplace_back(std::string(scan.key()), std::string(scan.value()));
        bytes += batch.back().first.size() + batch.back().second.size();
      }
      RETURN_IF_ERROR(copy->RunTransaction([&](Transaction& txn) -> absl::Status {
        for (const auto& [key, value] : batch) RETURN_IF_ERROR(txn.Put(cf, key, value));
        return absl::OkStatus();
      }));
    }
    RETURN_IF_ERROR(scan.status());
  }
  return absl::OkStatus();
}

absl::StatusOr<std::unique_ptr<Store>> EtcdStore::NewSnapshot() {
  ASSIGN_OR_RETURN(const int64_t revision, impl_->CurrentRevision());
  return std::unique_ptr<Store>(new EtcdSnapshot(impl_, revision));
}

StoreStats EtcdStore::Stats() {
  StoreStats stats;
  stats.live_data_bytes = impl_->LiveDataBytes();
  stats.commits = commits_sent();
  stats.commit_requests = commit_requests();
  stats.reads = latest_reads();
  stats.read_requests = read_requests();
  stats.transaction_conflicts = transaction_conflicts();
  return stats;
}

}  // namespace storage
