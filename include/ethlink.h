/*
 * ethlink.h: the C ABI of the EthLink models (link end, endpoint, switch).
 *
 * Generated from ffi/src by cbindgen; do not edit. Documentation: docs/cosim.md.
 * SPDX-License-Identifier: MIT OR Apache-2.0
 */

#ifndef ETHLINK_H
#define ETHLINK_H

#include <stddef.h>
#include <stdint.h>

// Version of the ABI this library exports: [`crate::ethlink_abi_version`] returns it. It changes
// whenever a function, structure or constant changes meaning or layout. Version 2 refuses times
// after `ETHLINK_TIME_MAX_NS`, a group MAC address as a link end's own, and fences and new
// operations beyond the endpoint's bounds. Version 3 adds `llr_max_age_ns` at the end of
// `ethlink_link_params` (link.md LINK-3-18) and `hold_max_ns` after `busy_backoff_ns` in
// `ethlink_endpoint_config` (endpoint.md EP-8-9). Version 4 adds `write_chunk` after
// `read_chunk` in `ethlink_endpoint_config` (endpoint.md EP-6-2, EP-6-13). Version 5 adds
// `tick_ns` and `rate_gbps` at the end of `ethlink_description`: the clock and line rate a
// conformance harness judges timing by (docs/conformance.md §4.2).
#define ETHLINK_ABI_VERSION 5

// The latest time a model takes, in nanoseconds: 2^63 - 1 (about 292 years; the largest
// `int64_t`, and the largest SystemVerilog `longint`), the horizon of link.md LINK-1-2. A call
// given a later `now_ns` returns `ETHLINK_ERR_ARGUMENT` and changes nothing; a deadline later
// than it is never reached, and `ethlink_poll_timeout` reports none.
#define ETHLINK_TIME_MAX_NS 9223372036854775807

// Success.
#define ETHLINK_OK 0

// Success, but the poll found nothing (no frame to send, no deadline, no event).
#define ETHLINK_NONE 1

// A pointer parameter that must not be NULL was NULL.
#define ETHLINK_ERR_NULL_POINTER -1

// The handle names no live device of this context: never made, destroyed, or made by another
// context.
#define ETHLINK_ERR_HANDLE -2

// A parameter is out of its range: an unknown enumeration value, a field of a configuration
// or a request out of range, a port the device does not have.
#define ETHLINK_ERR_ARGUMENT -3

// The output buffer is too short. Nothing was consumed; the length needed was written where
// the call returns lengths, so the call can be repeated with a larger buffer.
#define ETHLINK_ERR_BUFFER_TOO_SMALL -4

// The time given is earlier than a time given before on this handle.
#define ETHLINK_ERR_TIME_BACKWARDS -5

// The device refused a valid request: a queue full, every tag in use, a region that does not
// exist, the context's device table full.
#define ETHLINK_ERR_REFUSED -6

// The call is for another role (a link-end call on a switch handle, for instance).
#define ETHLINK_ERR_WRONG_ROLE -7

// An internal error was caught at the boundary. The device it happened in is unusable from
// then on: every call on its handle but [`crate::ethlink_destroy`] returns this code.
#define ETHLINK_ERR_PANIC -8

// Role of a device: one end of one link (link.md).
#define ETHLINK_ROLE_LINK_END 0

// Role of a device: a GPU endpoint with its ports (endpoint.md).
#define ETHLINK_ROLE_ENDPOINT 1

// Role of a device: a switch (switch.md).
#define ETHLINK_ROLE_SWITCH 2

// Capability bit (classes.md Table CLS-T2): RDMA as a target.
#define ETHLINK_CAP_RDMA (1 << 0)

// Capability bit: atomics as a target.
#define ETHLINK_CAP_ATOMICS (1 << 1)

// Capability bit: a shared memory space.
#define ETHLINK_CAP_SHARED (1 << 2)

// Capability bit: several transactions per DATA frame.
#define ETHLINK_CAP_PACKING (1 << 3)

// Capability bit: 802.1Q-tagged frames.
#define ETHLINK_CAP_TAGGED (1 << 4)

// Capability bit: cut-through forwarding with stomped FCS.
#define ETHLINK_CAP_CUT_THROUGH (1 << 5)

// Event kind: a link delivered a payload to its upper layer (link end only); the payload is in
// the data buffer.
#define ETHLINK_EVENT_DELIVERED 1

// Event kind: a submitted payload will not be delivered (link end only); `reason` is an
// `ETHLINK_LOST_*` value and the payload is in the data buffer.
#define ETHLINK_EVENT_LOST 2

// Event kind: the link of `port` came up.
#define ETHLINK_EVENT_LINK_UP 3

// Event kind: the link of `port` went down; `reason` is an `ETHLINK_DOWN_*` value.
#define ETHLINK_EVENT_LINK_DOWN 4

// Event kind: an operation of an endpoint ended; `op`, `id`, `status` and `status_raw` say
// which and how, and the data of a load or the old value of an atomic is in the data buffer.
#define ETHLINK_EVENT_COMPLETION 5

// Loss reason: the frame was in the replay buffer at a FLUSH or a link down; it may have been
// delivered once or not at all.
#define ETHLINK_LOST_UNKNOWN_FATE 0

// Loss reason: longer than the MFS agreed with the peer; never sent.
#define ETHLINK_LOST_EXCEEDS_PEER_MFS 1

// Loss reason: on a VC beyond those agreed with the peer; never sent.
#define ETHLINK_LOST_VC_NOT_AGREED 2

// Loss reason: taken back by `ethlink_link_withdraw`; never sent.
#define ETHLINK_LOST_WITHDRAWN 3

// Down reason: the replay count exceeded its maximum (FLUSH).
#define ETHLINK_DOWN_FLUSH 0

// Down reason: the physical link went down.
#define ETHLINK_DOWN_PHYSICAL 1

// Down reason: the peer initialised again.
#define ETHLINK_DOWN_PEER_RESTART 2

// Operation kind of a completion: a load-store operation, `id` is its tag.
#define ETHLINK_OP_LS 0

// Operation kind of a completion: an RDMA descriptor, `id` is what `ethlink_endpoint_post`
// returned.
#define ETHLINK_OP_RDMA 1

// Operation kind of a completion: a fence, `id` is what `ethlink_endpoint_fence` returned.
#define ETHLINK_OP_FENCE 2

// Completion status (transaction.md §3): performed.
#define ETHLINK_STATUS_OK 0

// Completion status: the target refused the access (key, permissions).
#define ETHLINK_STATUS_ACCESS_VIOLATION 1

// Completion status: the address is outside the region.
#define ETHLINK_STATUS_OUT_OF_RANGE 2

// Completion status: the target does not support the operation.
#define ETHLINK_STATUS_UNSUPPORTED 3

// Completion status: the data is poisoned.
#define ETHLINK_STATUS_POISONED 4

// Completion status: the request was malformed.
#define ETHLINK_STATUS_MALFORMED 5

// Completion status: the address is not aligned for the operation.
#define ETHLINK_STATUS_MISALIGNED 6

// Completion status: the target was busy after every retry.
#define ETHLINK_STATUS_BUSY 7

// Completion status: the target answered a status this version does not know; its value is
// in `status_raw`.
#define ETHLINK_STATUS_UNKNOWN 8

// Completion status: no usable path until the deadline; never sent.
#define ETHLINK_STATUS_NO_PATH 9

// Completion status: an atomic lost with its link: performed once or not at all.
#define ETHLINK_STATUS_FATE_UNKNOWN 10

// Completion status: no final response before the deadline after every retry.
#define ETHLINK_STATUS_TIMEOUT 11

// Memory space: global memory.
#define ETHLINK_SPACE_GLOBAL 0

// Memory space: shared memory.
#define ETHLINK_SPACE_SHARED 1

// Region permission bit: remote reads.
#define ETHLINK_PERM_READ (1 << 0)

// Region permission bit: remote writes.
#define ETHLINK_PERM_WRITE (1 << 1)

// Region permission bit: remote atomics.
#define ETHLINK_PERM_ATOMIC (1 << 2)

// Load-store operation: read `len` bytes.
#define ETHLINK_LS_LOAD 0

// Load-store operation: write the `data_len` bytes at `data`.
#define ETHLINK_LS_STORE 1

// Load-store operation: add `value` to the `width`-byte value and return the old one.
#define ETHLINK_LS_FETCH_ADD 2

// Load-store operation: store `value` and return the old one.
#define ETHLINK_LS_SWAP 3

// Load-store operation: store `value` if the old value equals `compare`; return the old one.
#define ETHLINK_LS_COMPARE_SWAP 4

// Load-balancing policy of an endpoint (endpoint.md EP-4-2): a hash of the destination and
// the stream or tag picks the port.
#define ETHLINK_POLICY_HASH 0

// Load-balancing policy: the next port in a cycle.
#define ETHLINK_POLICY_ROUND_ROBIN 1

// Load-balancing policy: the port with the fewest bytes waiting.
#define ETHLINK_POLICY_LEAST_LOADED 2

// Load-balancing policy: round-robin, and every RDMA write segment on the next port.
#define ETHLINK_POLICY_SPRAY 3

// Forwarding mode of a switch: a frame may leave `latency` after its first bit arrived.
#define ETHLINK_MODE_CUT_THROUGH 0

// Forwarding mode of a switch: a frame may leave `latency` after its last bit arrived.
#define ETHLINK_MODE_STORE_AND_FORWARD 1

// Bytes of the name in [`Description`], its terminating NUL included.
#define ETHLINK_NAME_LEN 64

// An `ethlink_ctx`: the devices made through it and the text of the last error.
typedef struct ethlink_ctx ethlink_ctx;

// The link parameters of one link end, or of every port of an endpoint or a switch (link.md
// Table LINK-T1). Durations are in nanoseconds.
typedef struct {
  // Virtual channels, 1..=8.
  uint8_t vcs;
  // Replays without progress before FLUSH, 1..=255.
  uint8_t replay_count_max;
  // Bytes per credit: a power of two, 32..=2048.
  uint16_t credit_size;
  // Bytes added to a frame's length when its credit cost is computed, 0..=255.
  uint16_t credit_overhead;
  // Maximum frame size, 320..=9216.
  uint16_t mfs;
  // Credits granted on each VC; 0 on the VCs beyond `vcs`.
  uint32_t rx_credits[8];
  // Most unacknowledged sequenced frames.
  uint32_t llr_window;
  // Most frames in the replay buffer.
  uint32_t replay_max_frames;
  // Most bytes in the replay buffer.
  uint32_t replay_max_bytes;
  // Bytes accepted between cumulative ACKs.
  uint32_t ack_spacing;
  // Freed credits that trigger a CF.
  uint32_t cf_min_credits;
  // Frames the transmit queue of each VC holds before a submit is refused.
  uint32_t tx_queue_frames;
  // Bytes the transmit queue of each VC holds before a submit is refused.
  uint32_t tx_queue_bytes;
  // Longest an accepted frame waits for its ACK.
  uint64_t ack_timer_ns;
  // Time without ACK progress before the replay buffer is replayed.
  uint64_t replay_timer_ns;
  // Least time between two CF frames.
  uint64_t cf_min_interval_ns;
  // Most time between two CF frames while UP.
  uint64_t cf_max_interval_ns;
  // Period of CC frames.
  uint64_t cc_interval_ns;
  // Period of INIT frames while initialising.
  uint64_t init_interval_ns;
  // Time in INIT after which an initialisation timeout is counted.
  uint64_t init_timeout_ns;
  // Longest a frame stays in the replay buffer after its first transmission; FLUSH then.
  uint64_t llr_max_age_ns;
} ethlink_link_params;

// Configuration of a link end. Fill it with `ethlink_link_end_config_default` and change what
// differs.
typedef struct {
  // The link parameters.
  ethlink_link_params link;
  // The port's own unicast MAC address, the source of every frame it sends: bit 0 of
  // `mac[0]` (the group bit) must be 0 (wire.md WIRE-2.3-1).
  uint8_t mac[6];
  // Capabilities announced in INIT and INIT_ECHO: `ETHLINK_CAP_*` bits.
  uint32_t caps;
  // Seed of the nonces the end draws: give every incarnation of a device its own.
  uint64_t seed;
} ethlink_link_end_config;

// Configuration of a GPU endpoint (endpoint.md Table EP-T1). Fill it with
// `ethlink_endpoint_config_default` and change what differs. Durations are in nanoseconds.
typedef struct {
  // Parameters of every port's link (each port derives its MAC address and nonce seed).
  ethlink_link_params link;
  // The GPU id, 0..=0xFFFE.
  uint16_t gpu;
  // Protocol stacks, 1..=16.
  uint8_t stacks;
  // Ports per stack, 1..=16; the endpoint has `stacks * ports_per_stack` ports.
  uint8_t ports_per_stack;
  // Load-balancing policy: an `ETHLINK_POLICY_*` value.
  uint8_t policy;
  // Retries of one operation, 0..=16.
  uint8_t max_retries;
  // Tags of the load-store unit.
  uint16_t lsu_tags;
  // Tags of the RDMA engine.
  uint16_t rdma_tags;
  // Capabilities: `ETHLINK_CAP_*` bits (RDMA, ATOMICS, SHARED as a target; PACKING).
  uint32_t caps;
  // RDMA descriptors outstanding at most.
  uint32_t rdma_queue;
  // Bytes per RDMA segment.
  uint32_t segment;
  // Bytes per RDMA_READ.
  uint32_t read_chunk;
  // Bytes of one RDMA write on the wire, and the longest write a target reassembles.
  uint32_t write_chunk;
  // Chunks of one RDMA read outstanding at most.
  uint32_t read_window;
  // RDMA writes a target reassembles at once.
  uint32_t max_reassemblies;
  // 256-byte blocks the reassembly records cover in all.
  uint32_t max_reassembly_blocks;
  // RDMA reads a target serves at once.
  uint32_t max_read_jobs;
  // Bytes of responses held before the target stops taking requests.
  uint32_t response_backlog;
  // Bytes queued per port and VC before the RDMA engine waits.
  uint32_t port_queue;
  // Entries of the region table of each memory space.
  uint32_t max_regions;
  // Longest a transaction waits for others to share its frame.
  uint64_t pack_delay_ns;
  // Deadline of an operation after issue, retry or progress.
  uint64_t op_timeout_ns;
  // Rest of a tag whose operation was retried or ended without its final response.
  uint64_t tag_quarantine_ns;
  // Longest a request or response can live in the fabric.
  uint64_t frame_lifetime_ns;
  // Wait before the first retry of an operation answered BUSY.
  uint64_t busy_backoff_ns;
  // Longest a target keeps a request frame it stopped taking; discarded unperformed then.
  uint64_t hold_max_ns;
  // Bytes of global memory.
  uint64_t global_size;
  // Bytes of shared memory.
  uint64_t shared_size;
  // Seed of the ports' nonces.
  uint64_t seed;
} ethlink_endpoint_config;

// Configuration of a switch (switch.md Table SW-T1). Fill it with
// `ethlink_switch_config_default` and change what differs. Durations are in nanoseconds.
typedef struct {
  // Parameters of every port's link.
  ethlink_link_params link;
  // The switch's number (part of every port's MAC address).
  uint16_t id;
  // Ports, 1..=1024.
  uint16_t ports;
  // Forwarding mode: an `ETHLINK_MODE_*` value.
  uint8_t mode;
  // Frames of one VC an egress link may hold queued, 1..=64.
  uint32_t egress_depth;
  // Port-to-port latency, at most 10 us.
  uint64_t latency_ns;
  // Longest a frame may stay in the switch before it starts to leave.
  uint64_t max_residence_ns;
  // Line rate of every port in Gb/s: the cut-through timing, and the pace at which each port
  // hands out frames (a port sends its next frame once the previous one, with preamble and
  // inter-frame gap, has left).
  double rate_gbps;
  // Seed of the ports' nonces.
  uint64_t seed;
} ethlink_switch_config;

// What a device says of itself.
typedef struct {
  // `ETHLINK_ABI_VERSION` of the library.
  uint32_t abi_version;
  // Its role: an `ETHLINK_ROLE_*` value.
  uint8_t role;
  // Its number of ports (1 for a link end).
  uint16_t ports;
  // Capabilities it implements: `ETHLINK_CAP_*` bits.
  uint32_t caps;
  // A name for reports, NUL-terminated.
  char name[ETHLINK_NAME_LEN];
  // The tick of the clock its timers run on, in ns (link.md LINK-1-5): 1..=256; 0 is taken
  // as 1. A model wrapping an RTL simulation gives its clock period, rounded up.
  uint32_t tick_ns;
  // The line rate its ports serialise frames at, in Gb/s (25..=1600); 0 when frames leave
  // as soon as they are made.
  uint32_t rate_gbps;
} ethlink_description;

// Something a device reports to its upper layer; the bytes that go with it (a payload, the
// data of a completion) are written to the data buffer given with it.
typedef struct {
  // An `ETHLINK_EVENT_*` value.
  uint32_t kind;
  // The port it concerns (0 for a link end and for completions).
  uint16_t port;
  // The VC of a delivered or lost payload.
  uint8_t vc;
  // `ETHLINK_LOST_*` for a lost payload, `ETHLINK_DOWN_*` for a link down, else 0.
  uint8_t reason;
  // Completion: an `ETHLINK_OP_*` value.
  uint8_t op;
  // Completion: an `ETHLINK_STATUS_*` value.
  uint8_t status;
  // Completion with `ETHLINK_STATUS_UNKNOWN`: the status byte the target sent; otherwise the
  // wire value of the status (0 for the statuses that never cross the wire).
  uint8_t status_raw;
  // Completion: the tag of a load-store operation or the id of a descriptor or fence.
  uint64_t id;
  // Bytes of data that go with the event: written to the data buffer, or needed in it when
  // the call returns `ETHLINK_ERR_BUFFER_TOO_SMALL`.
  size_t len;
} ethlink_event;

// A load-store operation for `ethlink_endpoint_issue` (transaction.md §2).
typedef struct {
  // An `ETHLINK_LS_*` value.
  uint8_t kind;
  // The target memory space: an `ETHLINK_SPACE_*` value.
  uint8_t space;
  // Atomics: operand width, 4 or 8.
  uint8_t width;
  // 1: the operation belongs to the ordered stream `stream` (endpoint.md §4); 0: unordered.
  uint8_t ordered;
  // The target GPU id.
  uint16_t dst;
  // Load: bytes to read, 1..=256.
  uint16_t len;
  // The target region's key.
  uint32_t key;
  // The stream, when `ordered` is 1.
  uint32_t stream;
  // The target address.
  uint64_t addr;
  // Atomics: the addend, the new value, or the value stored when equal.
  uint64_t value;
  // Compare-swap: the value compared.
  uint64_t compare;
  // Store: the bytes to write (1..=256 of them).
  const uint8_t *data;
  // Store: how many.
  size_t data_len;
} ethlink_ls_request;

// An RDMA descriptor for `ethlink_endpoint_post` (transaction.md §2).
typedef struct {
  // 1: write (local to remote); 0: read (remote to local).
  uint8_t write;
  // The local memory space: an `ETHLINK_SPACE_*` value.
  uint8_t local_space;
  // The remote memory space: an `ETHLINK_SPACE_*` value.
  uint8_t space;
  // The remote GPU id.
  uint16_t dst;
  // The remote region's key.
  uint32_t key;
  // The local address.
  uint64_t local_addr;
  // The remote address.
  uint64_t addr;
  // Bytes.
  uint64_t len;
} ethlink_rdma_desc;

#ifdef __cplusplus
extern "C" {
#endif // __cplusplus

// The version of the ABI the library exports (`ETHLINK_ABI_VERSION` of its header). A caller
// checks it against the version of the header it was compiled with.
uint32_t ethlink_abi_version(void);

// The name of a return code ("ETHLINK_ERR_HANDLE", ...), as a static NUL-terminated string;
// "ETHLINK_UNKNOWN_CODE" for a value that is none. Never NULL.
const char *ethlink_code_name(int32_t code);

// Makes a context and writes it to `*out`. Free it with `ethlink_ctx_free`.
//
// Errors: NULL_POINTER (`out` is NULL).
int32_t ethlink_ctx_new(ethlink_ctx **out);

// Frees a context and every device it holds. NULL is ignored. The pointer and every handle of
// the context are invalid afterwards.
void ethlink_ctx_free(ethlink_ctx *ctx);

// Copies the text of the last error returned by a call on `ctx` into `buf` (at most `cap`
// bytes, NUL-terminated; truncated when it does not fit) and writes its full length, without
// the NUL, to `*len`. The text is empty when no call has failed. `buf` may be NULL when `cap`
// is 0. This call leaves the text as it is.
//
// Errors: NULL_POINTER (`ctx` or `len` NULL, or `buf` NULL with `cap` > 0), BUFFER_TOO_SMALL
// (the text was truncated to `cap - 1` bytes; `*len` says how many `cap` needs, less one).
int32_t ethlink_last_error(ethlink_ctx *ctx,
                           char *buf,
                           size_t cap,
                           size_t *len);

// Fills `*cfg` with the default configuration of a link end (link.md §1.1).
//
// Errors: NULL_POINTER.
int32_t ethlink_link_end_config_default(ethlink_link_end_config *cfg);

// Fills `*cfg` with the default configuration of an endpoint (endpoint.md Table EP-T1).
//
// Errors: NULL_POINTER.
int32_t ethlink_endpoint_config_default(ethlink_endpoint_config *cfg);

// Fills `*cfg` with the default configuration of a switch (switch.md Table SW-T1).
//
// Errors: NULL_POINTER.
int32_t ethlink_switch_config_default(ethlink_switch_config *cfg);

// Makes a link end with the configuration `*cfg` and writes its handle to `*out`. Its
// physical link starts down and its time at 0.
//
// Errors: NULL_POINTER, ARGUMENT (a field out of range, or a group address as `mac`: the text
// names the field), REFUSED (the context holds the most devices it can).
int32_t ethlink_link_end_new(ethlink_ctx *ctx,
                             const ethlink_link_end_config *cfg,
                             uint32_t *out);

// Makes an endpoint with the configuration `*cfg` and writes its handle to `*out`. Every port's
// physical link starts down and its time at 0.
//
// Errors: NULL_POINTER, ARGUMENT (a field out of range), REFUSED (the context is full).
int32_t ethlink_endpoint_new(ethlink_ctx *ctx,
                             const ethlink_endpoint_config *cfg,
                             uint32_t *out);

// Makes a switch with the configuration `*cfg` and an empty forwarding table
// (`ethlink_switch_set_route` fills it), and writes its handle to `*out`. Every port's physical
// link starts down and its time at 0.
//
// Errors: NULL_POINTER, ARGUMENT (a field out of range), REFUSED (the context is full).
int32_t ethlink_switch_new(ethlink_ctx *ctx,
                           const ethlink_switch_config *cfg,
                           uint32_t *out);

// Destroys the device `h` names; the handle names nothing afterwards.
//
// Errors: NULL_POINTER, HANDLE.
int32_t ethlink_destroy(ethlink_ctx *ctx,
                        uint32_t h);

// Writes what the device is to `*out`: role, ports, capabilities and a name.
//
// Errors: NULL_POINTER, HANDLE.
int32_t ethlink_describe(ethlink_ctx *ctx,
                         uint32_t h,
                         ethlink_description *out);

// The physical link of `port` comes up (`up` = 1: signal detected, the MAC ready) or goes down
// (`up` = 0) at `now_ns`.
//
// Errors: NULL_POINTER, HANDLE, ARGUMENT (no such port, `up` neither 0 nor 1, `now_ns` after
// ETHLINK_TIME_MAX_NS), TIME_BACKWARDS.
int32_t ethlink_physical(ethlink_ctx *ctx,
                         uint32_t h,
                         uint16_t port,
                         uint8_t up,
                         uint64_t now_ns);

// The frame of `len` bytes at `bytes` (destination MAC address through FCS) arrived whole on
// `port` at `now_ns`. A damaged frame is given as it is: the model checks it.
//
// Errors: NULL_POINTER (`bytes` NULL with `len` > 0), HANDLE, ARGUMENT (no such port, `now_ns`
// after ETHLINK_TIME_MAX_NS), TIME_BACKWARDS.
int32_t ethlink_handle_frame(ethlink_ctx *ctx,
                             uint32_t h,
                             uint16_t port,
                             uint64_t now_ns,
                             const uint8_t *bytes,
                             size_t len);

// Writes the next frame to send at `now_ns`, if any, to `buf` (`cap` bytes), its port to
// `*port` and its length (FCS included) to `*len`. Call it until it returns ETHLINK_NONE. A
// buffer of 9216 bytes (the largest MFS) always suffices.
//
// Returns OK (a frame was written) or NONE (nothing to send now).
// Errors: NULL_POINTER (`port` or `len` NULL, `buf` NULL with `cap` > 0), HANDLE, ARGUMENT
// (`now_ns` after ETHLINK_TIME_MAX_NS), TIME_BACKWARDS, BUFFER_TOO_SMALL (nothing consumed;
// `*port` and `*len` say which port's frame needs how many bytes).
int32_t ethlink_poll_transmit(ethlink_ctx *ctx,
                              uint32_t h,
                              uint64_t now_ns,
                              uint16_t *port,
                              uint8_t *buf,
                              size_t cap,
                              size_t *len);

// Writes to `*deadline_ns` the time at which `ethlink_handle_timeout` must be called next. The
// deadline may be at or before the device's current time: then call it at once.
//
// Returns OK, or NONE when the device has no deadline at or before ETHLINK_TIME_MAX_NS (nothing
// happens until the next input; a deadline after it is never reached).
// Errors: NULL_POINTER, HANDLE.
int32_t ethlink_poll_timeout(ethlink_ctx *ctx,
                             uint32_t h,
                             uint64_t *deadline_ns);

// Runs the timers due at or before `now_ns`. Calling it when nothing is due does nothing.
//
// Errors: NULL_POINTER, HANDLE, ARGUMENT (`now_ns` after ETHLINK_TIME_MAX_NS), TIME_BACKWARDS.
int32_t ethlink_handle_timeout(ethlink_ctx *ctx,
                               uint32_t h,
                               uint64_t now_ns);

// Writes the next event, if any, to `*event` and the bytes that go with it (a payload, the
// data of a completion) to `data` (`cap` bytes); `event->len` says how many. Call it until it
// returns ETHLINK_NONE. A buffer of 9216 bytes always suffices.
//
// Returns OK (an event was written) or NONE.
// Errors: NULL_POINTER (`event` NULL, `data` NULL with `cap` > 0), HANDLE, BUFFER_TOO_SMALL
// (nothing consumed: `*event` is written, and `event->len` is the size `data` needs).
int32_t ethlink_poll_event(ethlink_ctx *ctx,
                           uint32_t h,
                           ethlink_event *event,
                           uint8_t *data,
                           size_t cap);

// Takes a snapshot of the device's counters and writes how many there are to `*count`;
// `ethlink_counter_at` reads the snapshot. Names are those of the conformance boundary
// (docs/conformance.md): `<name>` or `<name>.vc<v>` for a link end, `port<p>.<name>...` and
// `port<p>.link.<name>...` for the ports of an endpoint or a switch.
//
// Errors: NULL_POINTER, HANDLE.
int32_t ethlink_counter_count(ethlink_ctx *ctx,
                              uint32_t h,
                              size_t *count);

// Writes counter `index` of the last snapshot (`ethlink_counter_count`; counters are in name
// order): its NUL-terminated name to `name` (`cap` bytes), the name's length without the NUL
// to `*name_len`, and its value to `*value`.
//
// Errors: NULL_POINTER (`name_len` or `value` NULL, `name` NULL with `cap` > 0), HANDLE,
// ARGUMENT (`index` beyond the snapshot), BUFFER_TOO_SMALL (nothing written to `name`;
// `*name_len` + 1 bytes are needed).
int32_t ethlink_counter_at(ethlink_ctx *ctx,
                           uint32_t h,
                           size_t index,
                           char *name,
                           size_t cap,
                           size_t *name_len,
                           uint64_t *value);

// Writes the value of the counter named `name` (NUL-terminated) to `*value`.
//
// Errors: NULL_POINTER, HANDLE, ARGUMENT (no counter has that name).
int32_t ethlink_counter_get(ethlink_ctx *ctx,
                            uint32_t h,
                            const char *name,
                            uint64_t *value);

// Link end: queues `payload` (`len` bytes: network header and transactions) for sending on
// `vc`.
//
// Errors: NULL_POINTER, HANDLE, WRONG_ROLE, ARGUMENT (no such VC, a payload that is not a
// network header followed by its length, a frame longer than the MFS), REFUSED (the VC's
// transmit queue is full: send frames and try again).
int32_t ethlink_link_submit(ethlink_ctx *ctx,
                            uint32_t h,
                            uint8_t vc,
                            const uint8_t *payload,
                            size_t len);

// Link end: with `hold` = 1, the payloads delivered on `vc` from now on keep their space in
// the receive buffer after their event is taken, so that the buffer fills and the peer runs
// out of credits; with `hold` = 0, every payload kept is drained and its credits returned (none
// for a payload delivered before the link last left UP: the link comes UP again only once every
// such payload has been drained, LINK-6-4, LINK-2-18).
//
// Errors: NULL_POINTER, HANDLE, WRONG_ROLE, ARGUMENT (no such VC, `hold` neither 0 nor 1).
int32_t ethlink_link_hold(ethlink_ctx *ctx,
                          uint32_t h,
                          uint8_t vc,
                          uint8_t hold);

// Link end: takes back every payload submitted and not sent yet (link.md LINK-6-5). Each comes
// back as an ETHLINK_EVENT_LOST with reason ETHLINK_LOST_WITHDRAWN, in submission order on its
// VC. Writes how many to `*count`.
//
// Errors: NULL_POINTER, HANDLE, WRONG_ROLE.
int32_t ethlink_link_withdraw(ethlink_ctx *ctx,
                              uint32_t h,
                              size_t *count);

// Endpoint: registers the region of `len` bytes at `base` of memory space `space`
// (`ETHLINK_SPACE_*`) under `key`, with the permissions `perms` (`ETHLINK_PERM_*` bits).
//
// Errors: NULL_POINTER, HANDLE, WRONG_ROLE, ARGUMENT (bad space or permission bits), REFUSED
// (the region is out of the space, overlaps another, or the table is full: the text says).
int32_t ethlink_endpoint_register(ethlink_ctx *ctx,
                                  uint32_t h,
                                  uint8_t space,
                                  uint64_t base,
                                  uint64_t len,
                                  uint32_t key,
                                  uint32_t perms);

// Endpoint: removes the region of `space` that starts at `base`.
//
// Errors: NULL_POINTER, HANDLE, WRONG_ROLE, ARGUMENT (bad space), REFUSED (no region starts
// there).
int32_t ethlink_endpoint_deregister(ethlink_ctx *ctx,
                                    uint32_t h,
                                    uint8_t space,
                                    uint64_t base);

// Endpoint: poisons `len` bytes of its own memory from `addr`, as an uncorrectable memory
// error would (writing a byte clears its poison).
//
// Errors: NULL_POINTER, HANDLE, WRONG_ROLE, ARGUMENT (bad space, bytes outside the space),
// REFUSED (the space keeps 65536 poisoned ranges apart already and these bytes touch none of
// them: poison bytes that touch one, or write some).
int32_t ethlink_endpoint_poison(ethlink_ctx *ctx,
                                uint32_t h,
                                uint8_t space,
                                uint64_t addr,
                                uint64_t len);

// Endpoint: writes the `len` bytes at `data` to its own memory at `addr` directly (set-up; no
// network traffic).
//
// Errors: NULL_POINTER, HANDLE, WRONG_ROLE, ARGUMENT (bad space, bytes outside the space).
int32_t ethlink_endpoint_mem_write(ethlink_ctx *ctx,
                                   uint32_t h,
                                   uint8_t space,
                                   uint64_t addr,
                                   const uint8_t *data,
                                   size_t len);

// Endpoint: reads `len` bytes of its own memory at `addr` into `buf` directly (a check; no
// network traffic).
//
// Errors: NULL_POINTER, HANDLE, WRONG_ROLE, ARGUMENT (bad space, bytes outside the space).
int32_t ethlink_endpoint_mem_read(ethlink_ctx *ctx,
                                  uint32_t h,
                                  uint8_t space,
                                  uint64_t addr,
                                  uint8_t *buf,
                                  size_t len);

// Endpoint: issues the load-store operation `*req` at `now_ns` and writes its tag to `*tag`;
// its end comes as an ETHLINK_EVENT_COMPLETION with op ETHLINK_OP_LS and this tag as id.
//
// Errors: NULL_POINTER (`req` or `tag` NULL, `req->data` NULL for a store with `data_len` >
// 0), HANDLE, WRONG_ROLE, ARGUMENT (bad kind, space, width, ordered flag, length, address,
// `now_ns` after ETHLINK_TIME_MAX_NS), REFUSED (every tag is in use, or the completions not yet
// taken fill the endpoint's bound, endpoint.md EP-5-10: take completions), TIME_BACKWARDS.
int32_t ethlink_endpoint_issue(ethlink_ctx *ctx,
                               uint32_t h,
                               uint64_t now_ns,
                               const ethlink_ls_request *req,
                               uint16_t *tag);

// Endpoint: posts the RDMA descriptor `*desc` at `now_ns` and writes its id to `*id`; its end
// comes as an ETHLINK_EVENT_COMPLETION with op ETHLINK_OP_RDMA and this id.
//
// Errors: NULL_POINTER, HANDLE, WRONG_ROLE, ARGUMENT (a bad field, `now_ns` after
// ETHLINK_TIME_MAX_NS), REFUSED (the RDMA queue is full, or the completions not yet taken fill
// the endpoint's bound: take completions), TIME_BACKWARDS.
int32_t ethlink_endpoint_post(ethlink_ctx *ctx,
                              uint32_t h,
                              uint64_t now_ns,
                              const ethlink_rdma_desc *desc,
                              uint64_t *id);

// Endpoint: a fence at `now_ns` (transaction.md §4); writes its id to `*id`. It completes
// (op ETHLINK_OP_FENCE) once every operation issued or posted before it has.
//
// Errors: NULL_POINTER, HANDLE, WRONG_ROLE, ARGUMENT (`now_ns` after ETHLINK_TIME_MAX_NS),
// REFUSED (as many fences are outstanding as the endpoint holds, endpoint.md EP-5-9, or the
// completions not yet taken fill its bound, EP-5-10: take completions), TIME_BACKWARDS.
int32_t ethlink_endpoint_fence(ethlink_ctx *ctx,
                               uint32_t h,
                               uint64_t now_ns,
                               uint64_t *id);

// Switch: writes the forwarding-table entry of GPU `dst`: frames for it leave by one of the
// `count` ports at `ports` (at most 64, each once), chosen by the path hash among those UP. An
// empty list (`ports` may then be NULL) leaves `dst` unroutable. Frames already received keep
// the port they were given.
//
// Errors: NULL_POINTER (`ports` NULL with `count` > 0), HANDLE, WRONG_ROLE, ARGUMENT (GPU id
// 0xffff, more than 64 ports, a port twice, a port the switch does not have).
int32_t ethlink_switch_set_route(ethlink_ctx *ctx,
                                 uint32_t h,
                                 uint16_t dst,
                                 const uint16_t *ports,
                                 size_t count);

// Switch: writes the forwarding-table entry of GPU `dst` as `ethlink_switch_set_route` does,
// with its `count` ports divided into `group_count` groups of preference whose sizes are at
// `groups`, most preferred first (switch.md §2.3): frames for `dst` leave by a port of the
// first group that has one UP, chosen there by the path hash. No sizes (`groups` may then be
// NULL) make the list one group.
//
// Errors: NULL_POINTER (`ports` or `groups` NULL with a count > 0), HANDLE, WRONG_ROLE,
// ARGUMENT (as `ethlink_switch_set_route`, and a group size of 0 or sizes that do not add up
// to `count`).
int32_t ethlink_switch_set_route_groups(ethlink_ctx *ctx,
                                        uint32_t h,
                                        uint16_t dst,
                                        const uint16_t *ports,
                                        size_t count,
                                        const uint16_t *groups,
                                        size_t group_count);

#ifdef __cplusplus
}  // extern "C"
#endif  // __cplusplus

#endif  /* ETHLINK_H */
