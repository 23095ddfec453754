// MAHABHARATHA's structured logs (.mahabharatha/logs/), written from a run's event log for
// `coordctl run export --format mahabharatha-logs`. MAHABHARATHA's workers append JSON lines to
// logs/workers/worker-<id>.jsonl (its orchestrator to worker-orchestrator.jsonl) and per-task
// events to logs/tasks/<task id>/execution.jsonl; its LogAggregator reads workers/*.jsonl and
// merges them by "ts" at read time, filtering on worker_id, task_id, level, phase, event,
// data.level and message. This file makes those files from WorkEvents, one line per event, in
// the layout of its StructuredLogWriter (json.dumps, keys in its order). docs/compat.md has the
// mapping.
#ifndef COORDCTL_MAHABHARATHA_LOGS_H_
#define COORDCTL_MAHABHARATHA_LOGS_H_

#include <map>
#include <set>
#include <string>
#include <vector>

#include "absl/container/flat_hash_map.h"
#include "absl/time/time.h"
#include "coordctl/mahabharatha_state.h"
#include "coordinator/v1/work.pb.h"

namespace coordctl {

// The files of one run's logs directory, built up event by event (events in seq order, each
// once), so that `--follow` only renders what is new.
class MahabharathaLogs {
 public:
  // `feature`: the run's feature (its run id when it has none), written in every line.
  explicit MahabharathaLogs(std::string feature);

  // Adds the lines of `event`: one in the file of the worker or orchestrator it belongs to and,
  // for an event about a task, one in the task's execution.jsonl.
  void Add(const coordinator::v1::WorkEvent& event);
  // The run's workers, read after the events added next (so every worker they name is among
  // them): their numbers name the workers in the lines and files (MahabharathaWorkerNumbers).
  void SetWorkers(const std::vector<coordinator::v1::RunWorker>& workers) {
    numbers_ = MahabharathaWorkerNumbers(workers);
  }

  // Path relative to the logs directory -> the file's text (every line ends with "\n").
  const std::map<std::string, std::string>& files() const { return files_; }

  // The paths changed since the last call, and forgets them.
  std::set<std::string> TakeChanged();

  // Worker and task ids that cannot name a file (a '/', "..", over 242 bytes, ...): their lines
  // went to workers/worker-orchestrator.jsonl (a worker's, still with its worker_id) or only
  // there and in their worker's file (a task's: no execution.jsonl). Each id once, in the
  // order met.
  const std::vector<std::string>& unnamed() const { return unnamed_; }

 private:
  // Appends `line` to `path`.
  void Append(const std::string& path, const std::string& line);
  // The file of worker `id`: workers/worker-<id>.jsonl, or the orchestrator's when the id
  // cannot name one.
  std::string WorkerFile(const std::string& id);
  void NoteUnnamed(const std::string& id);

  const std::string feature_;
  MahabharathaWorkerNumbers numbers_;
  std::map<std::string, std::string> files_;
  std::set<std::string> changed_;
  std::vector<std::string> unnamed_;
  // When each running item's current attempt was claimed, for duration_ms.
  absl::flat_hash_map<std::string, absl::Time> claimed_at_;
};

}  // namespace coordctl

#endif  // COORDCTL_MAHABHARATHA_LOGS_H_
