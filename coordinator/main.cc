// The coordinator binary: flags, signal handling, and the server's lifetime.
#include <pthread.h>

#include <csignal>
#include <cstdlib>
#include <fstream>
#include <thread>

#include "absl/flags/flag.h"
#include "absl/strings/ascii.h"
#include "absl/strings/str_cat.h"
#include "absl/strings/str_split.h"
#include "common/env_flags.h"
#include "common/grpc_log.h"
#include "common/log.h"
#include "common/mutex_mode.h"
#include "common/status_macros.h"
#include "common/stop_signals.h"
#include "common/url_allow_list.h"
#include "coordinator/limit_flags.h"
#include "coordinator/server.h"

ABSL_FLAG(std::string, listen, "127.0.0.1:50051", "gRPC address to listen on (host:port)");
ABSL_FLAG(std::string, data_dir, "./data", "RocksDB data directory; created when missing");
ABSL_FLAG(std::string, store, "",
          "where the data lives: empty (the default) for the embedded RocksDB in --data_dir, or "
          "an etcd cluster, etcd://host:port[,host:port...] (etcds:// for TLS); several "
          "coordinators may share one etcd prefix (docs/storage.md)");
ABSL_FLAG(std::string, etcd_prefix, "/coordinator/",
          "with --store=etcd://...: the key prefix of this data set (ends with '/')");
ABSL_FLAG(std::string, etcd_user, "", "with --store=etcd://...: etcd user (empty: no auth)");
ABSL_FLAG(std::string, etcd_password_file, "",
          "with --etcd_user: file holding that user's password (one line)");
ABSL_FLAG(std::string, etcd_ca_file, "",
          "with --store=etcds://...: CA certificate (PEM) of the members (empty: the system's)");
ABSL_FLAG(std::string, etcd_cert_file, "",
          "with --store=etcds://...: client certificate (PEM), when the cluster asks for one");
ABSL_FLAG(std::string, etcd_key_file, "", "with --etcd_cert_file: its private key (PEM)");
ABSL_FLAG(absl::Duration, etcd_timeout, absl::Seconds(10),
          "with --store=etcd://...: bound on one etcd call, retries on other members included");
ABSL_FLAG(int64_t, etcd_max_txn_ops, 10000,
          "the cluster's --max-txn-ops: larger transactions are refused before they are sent");
ABSL_FLAG(
    int64_t, etcd_max_request_bytes, 8 << 20,
    "the cluster's --max-request-bytes: larger transactions are refused before they are sent");
ABSL_FLAG(absl::Duration, election_ttl, absl::Seconds(10),
          "with --store=etcd://...: TTL of the lease through which one replica is elected to run "
          "the background jobs (reaper, retention, A2A deliveries and webhooks); whole seconds, "
          "2s to 300s: how long the jobs may go without a runner after their replica dies");
ABSL_FLAG(std::string, replica_name, "",
          "with --store=etcd://...: this replica's name in that election (default "
          "<hostname>:<gRPC port>)");
ABSL_FLAG(std::string, restore_from, "",
          "a backup directory (coordctl backup) to copy into --data_dir before starting; the data "
          "dir must be absent or empty; empty (the default) restores nothing");
ABSL_FLAG(std::string, backup_root, "",
          "directory under which Admin.Backup may write (default: any absolute path outside "
          "--data_dir that an admin names)");
ABSL_FLAG(absl::Duration, retention_terminal_ttl, absl::ZeroDuration(),
          "contexts, conversations, A2A tasks and work runs that ended longer ago than this are "
          "deleted in the background; 0 (the default) keeps them forever");
ABSL_FLAG(int64_t, retention_max_deletes_per_second, 1000,
          "rate bound of retention, in deleted records (keys) per second; also the default "
          "size of one coordctl gc pass");
ABSL_FLAG(absl::Duration, retention_period, absl::Seconds(10),
          "how often the retention task runs a pass");
ABSL_FLAG(int, max_request_bytes, 4 << 20,
          "largest request accepted, in bytes; larger ones get RESOURCE_EXHAUSTED");
ABSL_FLAG(int, worker_threads, 0,
          "threads of the work pool (scans, long transactions, A2A calls that wait on agents); "
          "0: 16 on RocksDB, where short calls run on gRPC's threads and no call waits for its "
          "fsync on a thread, and 128 on etcd, where each transaction holds one");
ABSL_FLAG(int64_t, max_queued_calls, 4096,
          "calls that may wait at once, for a worker or for the fsync that makes them durable; "
          "past it a new call gets RESOURCE_EXHAUSTED (0: no bound)");
ABSL_FLAG(double, shutdown_grace_seconds, 5,
          "on SIGTERM/SIGINT, how long in-flight calls may run before they are cancelled");
ABSL_FLAG(std::string, tier_ladder,
          "codex-mini,gpt-5.1,codex,codex-max,claude-haiku,claude-opus,aria-thinking",
          "model names of the retry tiers, tier 1 first, separated by commas");
ABSL_FLAG(int, breaker_repeated_error_threshold, 2,
          "loop breaker: the same error this many times is a repeated_error loop");
ABSL_FLAG(int, breaker_stuck_tier_threshold, 3,
          "loop breaker: this many failures without a tier change is a stuck_tier loop");
ABSL_FLAG(int, breaker_quality_gate_threshold, 2,
          "loop breaker: one quality-gate check failing this many times is a loop");
ABSL_FLAG(int64_t, breaker_log_retention, 100000,
          "loop breaker: log entries kept (older ones are deleted); 0 keeps all");
ABSL_FLAG(absl::Duration, reaper_period, absl::Seconds(1),
          "how often work items whose lease expired are taken back; a crashed worker's item is "
          "claimable again within its lease TTL plus this period");
ABSL_FLAG(std::string, http_listen, "127.0.0.1:8080",
          "HTTP address of the A2A JSON-RPC and HTTP+JSON bindings (/agents/<name>), the agent "
          "cards (/.well-known/agent-card.json) and /metrics; port 0 picks one, empty turns it "
          "off");
ABSL_FLAG(int, http_threads, 64,
          "connections the HTTP port serves at once; each event stream and blocking "
          "SendMessage holds one until it ends, and more connections wait");
ABSL_FLAG(std::string, tls_cert_file, "",
          "PEM certificate chain: with --tls_key_file, the gRPC and HTTP ports take TLS only; "
          "empty (the default) serves plaintext");
ABSL_FLAG(std::string, tls_key_file, "",
          "PEM private key of --tls_cert_file (unencrypted); both or neither");
ABSL_FLAG(std::string, token_file, "",
          "JSON file of bearer tokens, each with a principal and a role (docs/security.md); "
          "empty (the default) turns authentication off and allows only loopback addresses");
ABSL_FLAG(std::string, outbound_allow_hosts, "",
          "hosts push-notification webhooks, agent card URLs and the agents registered by card "
          "may call: host, host:port, [v6] or [v6]:port, "
          "comma-separated; empty (the default) allows loopback only (127.0.0.0/8, ::1, "
          "localhost), * allows every host");
ABSL_FLAG(std::string, default_agent, "",
          "A2A: the agent that a request without a tenant goes to; it may register after the "
          "coordinator starts. Empty (the default): the only registered agent when exactly one "
          "is; otherwise such a request is refused with the list of agents");
ABSL_FLAG(absl::Duration, a2a_call_timeout, absl::Seconds(10),
          "A2A gateway: deadline of a unary call to an agent (CancelTask) and of fetching an "
          "agent's card");
ABSL_FLAG(absl::Duration, a2a_stream_timeout, absl::Hours(1),
          "A2A gateway: deadline of one message's delivery stream to an agent");
ABSL_FLAG(absl::Duration, a2a_retry_initial_backoff, absl::Milliseconds(500),
          "A2A gateway: wait after the first failed delivery; doubles with each failure");
ABSL_FLAG(absl::Duration, a2a_retry_max_backoff, absl::Seconds(30),
          "A2A gateway: longest wait between two delivery attempts");
ABSL_FLAG(int, a2a_delivery_max_attempts, 10,
          "A2A gateway: failed deliveries that reached the agent after which the task is marked "
          "FAILED (attempts that found the agent down are not counted)");
ABSL_FLAG(absl::Duration, a2a_delivery_ttl, absl::Hours(24),
          "A2A gateway: how long a message may wait for its agent (down, or failing) before its "
          "task is marked FAILED");
ABSL_FLAG(int, a2a_delivery_threads, 64,
          "A2A gateway: messages that can be at agents at the same time");
ABSL_FLAG(absl::Duration, a2a_push_timeout, absl::Seconds(10),
          "A2A push notifications: deadline of one webhook POST");
ABSL_FLAG(int, a2a_push_max_attempts, 5,
          "A2A push notifications: attempts at one webhook call before it is recorded as failed");
ABSL_FLAG(absl::Duration, a2a_push_initial_backoff, absl::Seconds(1),
          "A2A push notifications: wait after the first failed POST; doubles with each failure");

namespace {

// The store's flags: the data dir or etcd (--store and --etcd_*), the replica's election.
absl::Status ReadStoreFlags(coordinator::ServerOptions& options) {
  options.data_dir = absl::GetFlag(FLAGS_data_dir);
  options.restore_from = absl::GetFlag(FLAGS_restore_from);
  options.backup_root = absl::GetFlag(FLAGS_backup_root);
  options.store_url = absl::GetFlag(FLAGS_store);
  options.etcd.prefix = absl::GetFlag(FLAGS_etcd_prefix);
  options.etcd.user = absl::GetFlag(FLAGS_etcd_user);
  options.etcd.ca_file = absl::GetFlag(FLAGS_etcd_ca_file);
  options.etcd.cert_file = absl::GetFlag(FLAGS_etcd_cert_file);
  options.etcd.key_file = absl::GetFlag(FLAGS_etcd_key_file);
  options.etcd.max_txn_ops = absl::GetFlag(FLAGS_etcd_max_txn_ops);
  options.etcd.request_timeout_ms = absl::ToInt64Milliseconds(absl::GetFlag(FLAGS_etcd_timeout));
  options.etcd.max_request_bytes = absl::GetFlag(FLAGS_etcd_max_request_bytes);
  options.election_ttl = absl::GetFlag(FLAGS_election_ttl);
  options.replica_name = absl::GetFlag(FLAGS_replica_name);
  if (!absl::GetFlag(FLAGS_etcd_password_file).empty()) {
    std::ifstream in(absl::GetFlag(FLAGS_etcd_password_file));
    if (!in || !std::getline(in, options.etcd.password)) {
      return absl::InvalidArgumentError(absl::StrCat("--etcd_password_file: cannot read ",
                                                     absl::GetFlag(FLAGS_etcd_password_file)));
    }
  }
  if (options.etcd.user.empty() != options.etcd.password.empty()) {
    return absl::InvalidArgumentError("--etcd_user and --etcd_password_file go together");
  }
  return absl::OkStatus();
}

// The A2A gateway's flags: outbound calls, delivery and push.
absl::Status ReadGatewayFlags(coordinator::ServerOptions& options) {
  absl::StatusOr<common::HostAllowList> outbound =
      common::HostAllowList::Parse(absl::GetFlag(FLAGS_outbound_allow_hosts));
  if (!outbound.ok()) {
    return absl::InvalidArgumentError(
        absl::StrCat("--outbound_allow_hosts: ", outbound.status().message()));
  }
  options.a2a_store.outbound_allow = *std::move(outbound);
  LOG_INFO("webhooks and agent cards may call: %s", options.a2a_store.outbound_allow.ToString());
  options.default_agent = absl::GetFlag(FLAGS_default_agent);
  options.gateway.call_timeout = absl::GetFlag(FLAGS_a2a_call_timeout);
  options.gateway.stream_timeout = absl::GetFlag(FLAGS_a2a_stream_timeout);
  options.gateway.initial_backoff = absl::GetFlag(FLAGS_a2a_retry_initial_backoff);
  options.gateway.max_backoff = absl::GetFlag(FLAGS_a2a_retry_max_backoff);
  options.gateway.max_delivery_attempts = absl::GetFlag(FLAGS_a2a_delivery_max_attempts);
  options.gateway.delivery_threads = absl::GetFlag(FLAGS_a2a_delivery_threads);
  options.gateway.delivery_ttl = absl::GetFlag(FLAGS_a2a_delivery_ttl);
  options.gateway.push_timeout = absl::GetFlag(FLAGS_a2a_push_timeout);
  options.a2a_store.push_max_attempts = absl::GetFlag(FLAGS_a2a_push_max_attempts);
  options.a2a_store.push_initial_backoff = absl::GetFlag(FLAGS_a2a_push_initial_backoff);
  if (options.gateway.max_delivery_attempts <= 0 || options.gateway.delivery_threads <= 0 ||
      options.a2a_store.push_max_attempts <= 0 ||
      options.gateway.delivery_ttl <= absl::ZeroDuration()) {
    return absl::InvalidArgumentError(
        "--a2a_delivery_max_attempts, --a2a_delivery_threads, --a2a_push_max_attempts and "
        "--a2a_delivery_ttl must be positive");
  }
  return absl::OkStatus();
}

// Every flag as the server's options; INVALID_ARGUMENT naming a bad one.
absl::StatusOr<coordinator::ServerOptions> OptionsFromFlags() {
  coordinator::ServerOptions options;
  options.listen = absl::GetFlag(FLAGS_listen);
  options.max_request_bytes = absl::GetFlag(FLAGS_max_request_bytes);
  options.worker_threads = absl::GetFlag(FLAGS_worker_threads);
  options.max_queued_calls = absl::GetFlag(FLAGS_max_queued_calls);
  options.task_state.tier_ladder.clear();
  for (absl::string_view tier : absl::StrSplit(absl::GetFlag(FLAGS_tier_ladder), ',')) {
    options.task_state.tier_ladder.emplace_back(absl::StripAsciiWhitespace(tier));
  }
  options.breaker.repeated_error_threshold = absl::GetFlag(FLAGS_breaker_repeated_error_threshold);
  options.breaker.stuck_tier_threshold = absl::GetFlag(FLAGS_breaker_stuck_tier_threshold);
  options.breaker.quality_gate_threshold = absl::GetFlag(FLAGS_breaker_quality_gate_threshold);
  options.breaker.log_retention = absl::GetFlag(FLAGS_breaker_log_retention);
  options.reaper_period = absl::GetFlag(FLAGS_reaper_period);
  options.http_listen = absl::GetFlag(FLAGS_http_listen);
  options.reload_on_sighup = true;
  options.http_threads = absl::GetFlag(FLAGS_http_threads);
  options.retention.terminal_ttl = absl::GetFlag(FLAGS_retention_terminal_ttl);
  options.retention.max_deletes_per_second = absl::GetFlag(FLAGS_retention_max_deletes_per_second);
  options.retention.period = absl::GetFlag(FLAGS_retention_period);
  options.token_file = absl::GetFlag(FLAGS_token_file);
  options.tls_cert_file = absl::GetFlag(FLAGS_tls_cert_file);
  options.tls_key_file = absl::GetFlag(FLAGS_tls_key_file);
  RETURN_IF_ERROR(ReadStoreFlags(options));
  RETURN_IF_ERROR(ReadGatewayFlags(options));
  if (options.max_request_bytes <= 0 || options.worker_threads < 0 || options.http_threads <= 0 ||
      options.max_queued_calls < 0) {
    return absl::InvalidArgumentError(
        "--max_request_bytes and --http_threads must be positive, --worker_threads and "
        "--max_queued_calls not negative");
  }
  RETURN_IF_ERROR(coordinator::ApplyLimitFlags(&options));
  return options;
}

}  // namespace

int main(int argc, char** argv) {
  common::SkipMutexDeadlockGraph();
  common::InitFlags("COORDINATOR_",
                    "coordinator: durable state for multi-agent systems, over gRPC.\n"
                    "  coordinator [--listen=127.0.0.1:50051] [--data_dir=./data]",
                    argc, argv);
  common::RouteGrpcLogs();

  const common::StopSignals stop_signals;  // before any thread starts
  // SIGHUP reads the token file again (TokenSource's thread waits for it): blocked here, before
  // any thread starts, so that no other thread takes it (and without a token file it does
  // nothing rather than end the process).
  sigset_t hangup;
  sigemptyset(&hangup);
  sigaddset(&hangup, SIGHUP);
  pthread_sigmask(SIG_BLOCK, &hangup, nullptr);

  absl::StatusOr<coordinator::ServerOptions> options = OptionsFromFlags();
  if (!options.ok()) {
    LOG_ERROR("%s", options.status().message());
    return 2;
  }
  absl::StatusOr<std::unique_ptr<coordinator::CoordinatorServer>> server =
      coordinator::CoordinatorServer::Start(*options);
  if (!server.ok()) {
    LOG_ERROR("cannot start: %s", server.status().message());
    return 1;
  }

  LOG_INFO("received %s; draining calls", stop_signals.Wait());
  (*server)->Shutdown(absl::Seconds(absl::GetFlag(FLAGS_shutdown_grace_seconds)));
  LOG_INFO("stopped cleanly");
  return 0;
}
