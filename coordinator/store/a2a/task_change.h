// What one change of an A2A task did, as its parts (A2ATasks, A2ADeliveryQueue, A2APush and the
// in-transaction steps of records.h) report it to the gateway: the header afterwards, the events
// appended, and what the change queued.
#ifndef COORDINATOR_STORE_A2A_TASK_CHANGE_H_
#define COORDINATOR_STORE_A2A_TASK_CHANGE_H_

#include <cstdint>
#include <vector>

#include "a2a/v1/a2a.pb.h"
#include "coordinator/v1/a2a_stored.pb.h"

namespace coordinator {

namespace a2apb = ::lf::a2a::v1;

// The task header afterwards and the events the change appended (none when the change was
// ignored, e.g. an update that arrives after the task ended).
struct TaskChange {
  v1::StoredTask header;
  std::vector<v1::StoredEvent> events;
  // The history seq of the message whose delivery this change queued (AcceptMessage), else 0.
  int64_t queued_delivery_seq = 0;
  // That message as stored (history seq queued_delivery_seq), so that a delivery started from
  // this change sends it without reading it back.
  a2apb::Message queued_message;
  // Whether the change queued webhook calls (a status change of a task with push configs).
  bool pushes_queued = false;
  // AcceptMessage: the history seq of the message accepted, which its sender's answer answers.
  // The same as queued_delivery_seq, unless the message was a repeat of one accepted already
  // (`repeated`): then it is that one's, and nothing was stored or queued again.
  int64_t sent_seq = 0;
  bool repeated = false;
};

}  // namespace coordinator

#endif  // COORDINATOR_STORE_A2A_TASK_CHANGE_H_
