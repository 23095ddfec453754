#include "storage/etcd_watch.h"

#include <map>
#include <utility>

#include "absl/strings/match.h"
#include "absl/strings/str_cat.h"
#include "absl/time/clock.h"
#include "common/log.h"
#include "common/status_macros.h"
#include "common/thread_name.h"
#include "grpcpp/grpcpp.h"
#include "storage/etcd_client.h"

namespace storage {
namespace {

std::string FamilyPrefix(const std::string& prefix, ColumnFamily cf) {
  return absl::StrCat(prefix, ColumnFamilyName(cf), "/");
}

}  // namespace

absl::StatusOr<std::unique_ptr<EtcdWatch>> EtcdWatch::Start(
    const EtcdStoreOptions& options, std::vector<ColumnFamily> families, int64_t after_revision,
    std::function<void(const std::vector<EtcdChange>&)> on_changes,
    std::function<void(int64_t compacted_revision)> on_gap) {
  if (families.empty()) return absl::InvalidArgumentError("a watch needs a column family");
  EtcdClientOptions client_options = ClientOptionsOf(options);
  ASSIGN_OR_RETURN(std::unique_ptr<EtcdClient> client, EtcdClient::Connect(client_options));
  if (after_revision == 0) {
    // From now: the revision the cluster is at.
    etcdserverpb::RangeRequest now;
    now.set_key(options.prefix);
    now.set_count_only(true);
    ASSIGN_OR_RETURN(etcdserverpb::RangeResponse response, client->Range(now));
    after_revision = response.header().revision();
  }
  std::unique_ptr<EtcdWatch> watch(new EtcdWatch(std::move(client), options.prefix,
                                                 std::move(families), after_revision,
                                                 std::move(on_changes), std::move(on_gap)));
  watch->thread_ = std::thread([w = watch.get()] {
    common::SetThreadName("etcd-watch");
    w->Run();
  });
  return watch;
}

EtcdWatch::EtcdWatch(std::unique_ptr<EtcdClient> client, std::string prefix,
                     std::vector<ColumnFamily> families, int64_t after_revision,
                     std::function<void(const std::vector<EtcdChange>&)> on_changes,
                     std::function<void(int64_t)> on_gap)
    : client_(std::move(client)),
      prefix_(std::move(prefix)),
      families_(std::move(families)),
      on_changes_(std::move(on_changes)),
      on_gap_(std::move(on_gap)),
      delivered_(after_revision) {}

EtcdWatch::~EtcdWatch() {
  {
    absl::MutexLock lock(&mu_);
    stop_ = true;
    if (context_ != nullptr) context_->TryCancel();
  }
  if (thread_.joinable()) thread_.join();
}

int64_t EtcdWatch::delivered_revision() const {
  absl::MutexLock lock(&mu_);
  return delivered_;
}

void EtcdWatch::Run() {
  while (true) {
    {
      absl::MutexLock lock(&mu_);
      if (stop_) return;
    }
    Stream();
    // The stream ended (a member lost, a leader change): resume on a member that answers.
    absl::MutexLock lock(&mu_);
    auto stopping = [this]() ABSL_SHARED_LOCKS_REQUIRED(mu_) { return stop_; };
    mu_.AwaitWithTimeout(absl::Condition(&stopping), absl::Milliseconds(200));
  }
}

void EtcdWatch::Stream() {
  grpc::ClientContext context;
  auto stream = client_->OpenWatch(&context);
  if (stream == nullptr) return;
  int64_t from;
  {
    absl::MutexLock lock(&mu_);
    if (stop_) return;
    context_ = &context;
    from = delivered_ + 1;
  }
  // One watch over the whole prefix (filtered by family here): etcd sends all the events of
  // one revision in one response, so each response holds whole commits.
  etcdserverpb::WatchRequest request;
  etcdserverpb::WatchCreateRequest* create = request.mutable_create_request();
  create->set_key(prefix_);
  std::string end = prefix_;
  end.back() = static_cast<char>(end.back() + 1);  // the prefix ends with '/'
  create->set_range_end(end);
  create->set_start_revision(from);
  std::map<int64_t, std::vector<EtcdChange>> commits;
  etcdserverpb::WatchResponse response;
  if (stream->Write(request)) {
    while (stream->Read(&response)) {
      if (response.compact_revision() > 0) {
        // What the watch had to resume from is gone.
        LOG_WARN("etcd compacted revisions up to %d before the watch read them",
                 response.compact_revision());
        if (on_gap_) on_gap_(response.compact_revision());
        absl::MutexLock lock(&mu_);
        delivered_ = response.compact_revision() - 1;
        break;  // resumes from the oldest revision kept
      }
      if (response.canceled()) break;
      commits.clear();
      for (const mvccpb::Event& event : response.events()) {
        const std::string& key = event.kv().key();
        for (ColumnFamily cf : families_) {
          const std::string family = FamilyPrefix(prefix_, cf);
          if (!absl::StartsWith(key, family)) continue;
          EtcdChange change;
          change.cf = cf;
          change.key = key.substr(family.size());
          if (event.type() == mvccpb::Event::PUT) change.value = event.kv().value();
          change.revision = event.kv().mod_revision();
          commits[change.revision].push_back(std::move(change));
          break;
        }
      }
      for (auto& [revision, changes] : commits) {
        // Counted before the call, so that whoever the call tells (a test waiting on it) reads
        // a delivered_revision() that includes it. The call cannot fail, and this thread alone
        // resumes the stream, so nothing is skipped by counting first.
        {
          absl::MutexLock lock(&mu_);
          delivered_ = revision;
        }
        on_changes_(changes);
      }
    }
  }
  stream->Finish().IgnoreError();
  absl::MutexLock lock(&mu_);
  context_ = nullptr;
}

}  // namespace storage
