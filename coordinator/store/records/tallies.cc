#include "coordinator/store/records/tallies.h"

#include <algorithm>
#include <cmath>
#include <memory>
#include <tuple>
#include <vector>

#include "absl/strings/str_cat.h"
#include "common/status_macros.h"
#include "coordinator/store/records/keys.h"
#include "coordinator/store/records/record_codec.h"
#include "coordinator/v1/stored.pb.h"
#include "google/protobuf/wrappers.pb.h"
#include "storage/key_codec.h"

namespace coordinator {
namespace {

using storage::ColumnFamily;
using storage::Transaction;

constexpr ColumnFamily kFamily = ColumnFamily::kIndex;

uint8_t TallyByte(Tally tally) { return static_cast<uint8_t>(tally); }

// The stripe a record's changes go to: FNV-1a of its id, the same in every process. Any stripe
// would keep the totals right (a reader adds them all up, and a stripe may hold a change of a
// record counted in another, such as a score changed after a rebuild put everything in stripe
// 0); one per record spreads the writers of different records over the stripes.
uint8_t StripeOf(absl::string_view record_id) {
  uint32_t hash = 2166136261u;
  for (const char c : record_id) {
    hash ^= static_cast<uint8_t>(c);
    hash *= 16777619u;
  }
  return static_cast<uint8_t>(hash % kTallyStripes);
}

// What a stripe's sum may be off zero by after adding and taking away the same scores (floating
// point); a stripe with no records and no more than this goes.
constexpr double kSumResidue = 1e-9;

// Applies `deltas` to the stripe `stripe` of each total: the deltas of one total merged, those
// that cancel out dropped, and the stripes locked in key order.
absl::Status Apply(Transaction& txn, std::vector<TallyDelta> deltas, uint8_t stripe) {
  std::vector<std::pair<std::string, TallyDelta>> keyed;
  for (TallyDelta& d : deltas) {
    keyed.emplace_back(keys::TallyStripe(TallyByte(d.tally), d.group, stripe), std::move(d));
  }
  std::sort(keyed.begin(), keyed.end(),
            [](const auto& a, const auto& b) { return a.first < b.first; });
  for (size_t i = 0; i < keyed.size();) {
    const std::string& key = keyed[i].first;
    int64_t count = 0;
    double sum = 0;
    for (; i < keyed.size() && keyed[i].first == key; ++i) {
      count += keyed[i].second.count;
      sum += keyed[i].second.sum;
    }
    if (count == 0 && sum == 0) continue;
    v1::StoredTally stored;
    absl::StatusOr<std::string> raw = txn.GetForUpdate(kFamily, key);
    if (raw.ok()) {
      RETURN_IF_ERROR(DecodeRecord(*raw, &stored));
    } else if (!absl::IsNotFound(raw.status())) {
      return raw.status();
    }
    stored.set_count(stored.count() + count);
    stored.set_sum(stored.sum() + sum);
    // A stripe back at no records and no sum goes. One at no records may still hold a sum: a
    // score changed (count +0) of a record counted in another stripe.
    if (stored.count() == 0 && std::abs(stored.sum()) <= kSumResidue) {
      RETURN_IF_ERROR(txn.Delete(kFamily, key));
    } else {
      RETURN_IF_ERROR(txn.Put(kFamily, key, EncodeRecord(stored)));
    }
  }
  return absl::OkStatus();
}

// The group a tally key names, and whether the key is one.
absl::StatusOr<std::string> GroupOf(absl::string_view key) {
  storage::KeyReader reader(key);
  RETURN_IF_ERROR(reader.ReadByte().status());
  RETURN_IF_ERROR(reader.ReadByte().status());
  return reader.ReadString();
}

}  // namespace

absl::Status Tallies::TxnApply(Transaction& txn, std::vector<TallyDelta> deltas,
                               absl::string_view record_id) {
  if (deltas.empty()) return absl::OkStatus();
  return Apply(txn, std::move(deltas), StripeOf(record_id));
}

absl::Status Tallies::TxnAdd(Transaction& txn, Tally tally, absl::string_view group,
                             absl::string_view record_id, int64_t count) {
  if (count == 0) return absl::OkStatus();
  return Apply(txn, {TallyDelta{tally, std::string(group), count, 0}}, StripeOf(record_id));
}

absl::StatusOr<TallyTotal> Tallies::Read(storage::Store& store, Tally tally,
                                         absl::string_view group) {
  const std::string prefix = keys::TallyGroupPrefix(TallyByte(tally), group);
  std::unique_ptr<storage::Iterator> it =
      store.NewIterator(kFamily, prefix, storage::PrefixUpperBound(prefix));
  TallyTotal total;
  for (; it->Valid(); it->Next()) {
    v1::StoredTally stored;
    RETURN_IF_ERROR(DecodeRecord(it->value(), &stored));
    total.count += stored.count();
    total.sum += stored.sum();
  }
  RETURN_IF_ERROR(it->status());
  return total;
}

absl::StatusOr<std::map<std::string, TallyTotal>> Tallies::ReadGroups(storage::Store& store,
                                                                      Tally tally) {
  const std::string prefix = keys::TallyPrefix(TallyByte(tally));
  std::unique_ptr<storage::Iterator> it =
      store.NewIterator(kFamily, prefix, storage::PrefixUpperBound(prefix));
  std::map<std::string, TallyTotal> groups;
  for (; it->Valid(); it->Next()) {
    ASSIGN_OR_RETURN(std::string group, GroupOf(it->key()));
    v1::StoredTally stored;
    RETURN_IF_ERROR(DecodeRecord(it->value(), &stored));
    TallyTotal& total = groups[std::move(group)];
    total.count += stored.count();
    total.sum += stored.sum();
  }
  RETURN_IF_ERROR(it->status());
  for (auto g = groups.begin(); g != groups.end();) {
    g = g->second.count == 0 ? groups.erase(g) : std::next(g);
  }
  return groups;
}

absl::StatusOr<bool> Tallies::Built(storage::Store& store) {
  absl::StatusOr<std::string> raw = store.Get(kFamily, keys::DerivedBuilt("tallies"));
  if (absl::IsNotFound(raw.status())) return false;
  RETURN_IF_ERROR(raw.status());
  google::protobuf::Int64Value version;
  RETURN_IF_ERROR(DecodeRecord(*raw, &version));
  return version.value() >= kTalliesVersion;
}

namespace {

// Computes every total from the records and, in one transaction, replaces the stored ones with
// them and records kTalliesVersion. Unless `force`, the transaction first looks at the marker
// and changes nothing when it is there: another replica of an etcd data set, starting at the
// same time, built them first (and may serve writes already). Whether it built them.
absl::StatusOr<bool> Build(storage::Store& store, const std::vector<TallySource>& sources,
                           bool force) {
  // Every total, summed in memory first: as many entries as there are groups, not records.
  std::map<std::pair<Tally, std::string>, TallyTotal> totals;
  const TallySink add = [&](const TallyDelta& d) {
    TallyTotal& total = totals[{d.tally, d.group}];
    total.count += d.count;
    total.sum += d.sum;
  };
  for (const TallySource& source : sources) RETURN_IF_ERROR(source(store, add));
  bool built = false;
  RETURN_IF_ERROR(store.RunTransaction([&](Transaction& txn) -> absl::Status {
    built = false;
    absl::StatusOr<std::string> marker = txn.GetForUpdate(kFamily, keys::DerivedBuilt("tallies"));
    if (!marker.ok() && !absl::IsNotFound(marker.status())) return marker.status();
    if (marker.ok() && !force) {
      google::protobuf::Int64Value version;
      RETURN_IF_ERROR(DecodeRecord(*marker, &version));
      if (version.value() >= kTalliesVersion) return absl::OkStatus();
    }
    built = true;
    const std::string prefix = keys::AllTalliesPrefix();
    std::unique_ptr<storage::Iterator> it =
        txn.NewIterator(kFamily, prefix, storage::PrefixUpperBound(prefix));
    for (; it->Valid(); it->Next()) RETURN_IF_ERROR(txn.Delete(kFamily, it->key()));
    RETURN_IF_ERROR(it->status());
    for (const auto& [key, total] : totals) {
      if (total.count == 0) continue;
      v1::StoredTally stored;
      stored.set_count(total.count);
      stored.set_sum(total.sum);
      RETURN_IF_ERROR(txn.Put(kFamily, keys::TallyStripe(TallyByte(key.first), key.second, 0),
                              EncodeRecord(stored)));
    }
    google::protobuf::Int64Value version;
    version.set_value(kTalliesVersion);
    return txn.Put(kFamily, keys::DerivedBuilt("tallies"), EncodeRecord(version));
  }));
  return built;
}

}  // namespace

absl::Status Tallies::Rebuild(storage::Store& store, const std::vector<TallySource>& sources) {
  return Build(store, sources, /*force=*/true).status();
}

absl::StatusOr<bool> Tallies::EnsureBuilt(storage::Store& store,
                                          const std::vector<TallySource>& sources) {
  ASSIGN_OR_RETURN(const bool built, Built(store));
  if (built) return false;
  return Build(store, sources, /*force=*/false);
}

}  // namespace coordinator
