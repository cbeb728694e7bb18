/*
 * The EthLink models driven from C through include/ethlink.h.
 *
 * 1. Two link ends joined by a wire exchange eight payloads; one DATA frame is damaged on the
 *    wire (a byte flipped between ethlink_poll_transmit and ethlink_handle_frame). The receiver
 *    counts an FCS error and sends a NACK, the sender replays, and every payload is delivered
 *    once and in order.
 * 2. Two endpoints joined through a switch: endpoint A (GPU 1) stores eight bytes into
 *    endpoint B (GPU 2), then loads them back, and the value matches.
 *
 * Prints what it observes; exits with status 1 when anything differs from what is expected.
 * Build and run: examples/c/build.sh
 */
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "ethlink.h"

#define MAX_FRAME 9216
#define WIRE_SLOTS 256
#define LATENCY_NS 100
#define MAX_NODES 3
#define MAX_PORTS 2

/* One direction of a wire: frames in flight, in arrival order. */
typedef struct {
  uint64_t at;
  size_t len;
  uint8_t bytes[MAX_FRAME];
} frame_t;

typedef struct {
  frame_t q[WIRE_SLOTS];
  size_t head, count;
  int to_node;
  uint16_t to_port;
} wire_t;

typedef struct {
  uint32_t h;
  const char *name;
  int out_wire[MAX_PORTS]; /* the wire each port sends on, -1 for none */
} node_t;

static ethlink_ctx *ctx;
static node_t nodes[MAX_NODES];
static int n_nodes;
static wire_t wires[2 * MAX_NODES];
static int n_wires;
static uint64_t now_ns;

/* Damage: flip a byte of the n-th frame longer than DAMAGE_MIN_LEN sent on wire 0. */
#define DAMAGE_MIN_LEN 150
static int damage_countdown = -1;
static int frames_damaged;

/* What part 1 observes at the receiver. */
static int delivered[16];
static int n_delivered;
static int links_up;

/* What part 2 observes at endpoint A. */
static int completed;
static ethlink_event last_completion;
static uint8_t completion_data[256];

static void check(int32_t rc, const char *what) {
  if (rc < 0) {
    char text[512];
    size_t len = 0;
    ethlink_last_error(ctx, text, sizeof text, &len);
    fprintf(stderr, "%s failed: %s (%s)\n", what, ethlink_code_name(rc), text);
    exit(1);
  }
}

static void expect(int ok, const char *what) {
  printf("  %-58s %s\n", what, ok ? "yes" : "NO");
  if (!ok) {
    exit(1);
  }
}

static int add_node(uint32_t h, const char *name) {
  nodes[n_nodes].h = h;
  nodes[n_nodes].name = name;
  for (int p = 0; p < MAX_PORTS; p++) {
    nodes[n_nodes].out_wire[p] = -1;
  }
  return n_nodes++;
}

/* A cable between port pa of node a and port pb of node b: one wire each way. */
static void connect(int a, uint16_t pa, int b, uint16_t pb) {
  wires[n_wires] = (wire_t){.to_node = b, .to_port = pb};
  nodes[a].out_wire[pa] = n_wires++;
  wires[n_wires] = (wire_t){.to_node = a, .to_port = pa};
  nodes[b].out_wire[pb] = n_wires++;
}

static void on_event(int node, const ethlink_event *e, const uint8_t *data) {
  switch (e->kind) {
  case ETHLINK_EVENT_LINK_UP:
    printf("  t=%6" PRIu64 " ns  %s port %u: link up\n", now_ns, nodes[node].name, e->port);
    links_up++;
    break;
  case ETHLINK_EVENT_LINK_DOWN:
    printf("  t=%6" PRIu64 " ns  %s port %u: link down (reason %u)\n", now_ns,
           nodes[node].name, e->port, e->reason);
    break;
  case ETHLINK_EVENT_DELIVERED:
    /* The payload's body is filled with its sequence number. */
    if (e->len > 8 && n_delivered < 16) {
      delivered[n_delivered++] = data[8];
    }
    break;
  case ETHLINK_EVENT_LOST:
    printf("  t=%6" PRIu64 " ns  %s: payload lost (reason %u)\n", now_ns, nodes[node].name,
           e->reason);
    break;
  case ETHLINK_EVENT_COMPLETION:
    completed++;
    last_completion = *e;
    memcpy(completion_data, data, e->len < sizeof completion_data ? e->len : sizeof completion_data);
    break;
  default:
    break;
  }
}

/*
 * The event loop of a simulator: at each instant, hand over the frames that arrive, run the
 * timers that are due, collect the frames to send and the events; then move time to the next
 * arrival or deadline. Runs until nothing is left before `until`.
 */
static void run(uint64_t until) {
  static uint8_t buf[MAX_FRAME];
  for (;;) {
    for (int w = 0; w < n_wires; w++) {
      wire_t *x = &wires[w];
      while (x->count > 0 && x->q[x->head].at <= now_ns) {
        frame_t *f = &x->q[x->head];
        check(ethlink_handle_frame(ctx, nodes[x->to_node].h, x->to_port, now_ns, f->bytes, f->len),
              "ethlink_handle_frame");
        x->head = (x->head + 1) % WIRE_SLOTS;
        x->count--;
      }
    }
    for (int i = 0; i < n_nodes; i++) {
      uint64_t deadline = 0;
      int32_t rc = ethlink_poll_timeout(ctx, nodes[i].h, &deadline);
      check(rc, "ethlink_poll_timeout");
      if (rc == ETHLINK_OK && deadline <= now_ns) {
        check(ethlink_handle_timeout(ctx, nodes[i].h, now_ns), "ethlink_handle_timeout");
      }
    }
    for (int i = 0; i < n_nodes; i++) {
      uint16_t port = 0;
      size_t len = 0;
      int32_t rc;
      while ((rc = ethlink_poll_transmit(ctx, nodes[i].h, now_ns, &port, buf, sizeof buf, &len)) ==
             ETHLINK_OK) {
        int w = port < MAX_PORTS ? nodes[i].out_wire[port] : -1;
        if (w < 0) {
          continue; /* an unconnected port: the frame is lost */
        }
        wire_t *x = &wires[w];
        if (x->count == WIRE_SLOTS) {
          fprintf(stderr, "wire %d overflows\n", w);
          exit(1);
        }
        frame_t *f = &x->q[(x->head + x->count) % WIRE_SLOTS];
        f->at = now_ns + LATENCY_NS;
        f->len = len;
        memcpy(f->bytes, buf, len);
        if (w == 0 && len > DAMAGE_MIN_LEN && damage_countdown > 0 && --damage_countdown == 0) {
          f->bytes[len / 2] ^= 0x5a;
          frames_damaged++;
          printf("  t=%6" PRIu64 " ns  a byte of a %zu-byte DATA frame is flipped on the wire\n",
                 now_ns, len);
        }
        x->count++;
      }
      check(rc, "ethlink_poll_transmit");
    }
    for (int i = 0; i < n_nodes; i++) {
      ethlink_event e;
      static uint8_t data[MAX_FRAME];
      int32_t rc;
      while ((rc = ethlink_poll_event(ctx, nodes[i].h, &e, data, sizeof data)) == ETHLINK_OK) {
        on_event(i, &e, data);
      }
      check(rc, "ethlink_poll_event");
    }
    uint64_t next = UINT64_MAX;
    for (int w = 0; w < n_wires; w++) {
      if (wires[w].count > 0 && wires[w].q[wires[w].head].at < next) {
        next = wires[w].q[wires[w].head].at;
      }
    }
    for (int i = 0; i < n_nodes; i++) {
      uint64_t deadline = 0;
      if (ethlink_poll_timeout(ctx, nodes[i].h, &deadline) == ETHLINK_OK) {
        if (deadline <= now_ns) {
          deadline = now_ns + 1;
        }
        if (deadline < next) {
          next = deadline;
        }
      }
    }
    if (next > until) {
      return;
    }
    now_ns = next;
  }
}

static uint64_t counter(uint32_t h, const char *name) {
  uint64_t v = 0;
  check(ethlink_counter_get(ctx, h, name, &v), name);
  return v;
}

/* A link payload: the 8-byte network header (destination GPU, source GPU, path, transaction
 * count, body length), then `body` bytes of `fill`. */
static size_t make_payload(uint8_t *p, size_t body, uint8_t fill) {
  p[0] = 0;
  p[1] = 1;
  p[2] = 0;
  p[3] = 0;
  p[4] = 0;
  p[5] = 1;
  p[6] = (uint8_t)(body >> 8);
  p[7] = (uint8_t)body;
  memset(p + 8, fill, body);
  return 8 + body;
}

static void link_pair(void) {
  printf("two link ends, one damaged frame\n");
  ethlink_link_end_config cfg;
  check(ethlink_link_end_config_default(&cfg), "ethlink_link_end_config_default");
  uint32_t a, b;
  cfg.mac[5] = 0x0a;
  cfg.seed = 11;
  check(ethlink_link_end_new(ctx, &cfg, &a), "ethlink_link_end_new");
  cfg.mac[5] = 0x0b;
  cfg.seed = 12;
  check(ethlink_link_end_new(ctx, &cfg, &b), "ethlink_link_end_new");
  int na = add_node(a, "link end A");
  int nb = add_node(b, "link end B");
  connect(na, 0, nb, 0);

  check(ethlink_physical(ctx, a, 0, 1, now_ns), "ethlink_physical");
  check(ethlink_physical(ctx, b, 0, 1, now_ns), "ethlink_physical");
  run(now_ns + 20000);
  expect(links_up == 2, "both ends came up");

  uint8_t p[512];
  for (int i = 0; i < 8; i++) {
    size_t len = make_payload(p, 200, (uint8_t)i);
    check(ethlink_link_submit(ctx, a, 0, p, len), "ethlink_link_submit");
  }
  damage_countdown = 3;
  run(now_ns + 100000);

  printf("  delivered at B:");
  for (int i = 0; i < n_delivered; i++) {
    printf(" %d", delivered[i]);
  }
  printf("\n");
  printf("  B: rx_fcs_errors=%" PRIu64 " nacks_sent=%" PRIu64 "; A: nacks_received=%" PRIu64
         " replays_by_nack=%" PRIu64 " frames_replayed=%" PRIu64 "\n",
         counter(b, "rx_fcs_errors"), counter(b, "nacks_sent"), counter(a, "nacks_received"),
         counter(a, "replays_by_nack"), counter(a, "frames_replayed"));
  expect(frames_damaged == 1, "one frame was damaged");
  expect(counter(b, "rx_fcs_errors") == 1, "B counted the damaged frame's FCS error");
  expect(counter(b, "nacks_sent") >= 1, "B sent a NACK");
  expect(counter(a, "nacks_received") >= 1, "A received the NACK");
  expect(counter(a, "frames_replayed") >= 1, "A replayed");
  int in_order = n_delivered == 8;
  for (int i = 0; in_order && i < 8; i++) {
    in_order = delivered[i] == i;
  }
  expect(in_order, "every payload delivered once and in order");
  check(ethlink_destroy(ctx, a), "ethlink_destroy");
  check(ethlink_destroy(ctx, b), "ethlink_destroy");
  n_nodes = 0;
  n_wires = 0;
}

/* Runs until an endpoint reports a completion, or `limit` ns pass. */
static void await_completion(uint64_t limit) {
  int before = completed;
  uint64_t end = now_ns + limit;
  while (completed == before && now_ns < end) {
    run(now_ns + 1000 < end ? now_ns + 1000 : end);
    if (completed == before) {
      now_ns = now_ns + 1000 < end ? now_ns + 1000 : end;
    }
  }
}

static void endpoints_through_a_switch(void) {
  printf("two endpoints through a switch\n");
  ethlink_endpoint_config ec;
  check(ethlink_endpoint_config_default(&ec), "ethlink_endpoint_config_default");
  ec.stacks = 1;
  ec.ports_per_stack = 1;
  uint32_t ea, eb, sw;
  ec.gpu = 1;
  ec.seed = 21;
  check(ethlink_endpoint_new(ctx, &ec, &ea), "ethlink_endpoint_new");
  ec.gpu = 2;
  ec.seed = 22;
  check(ethlink_endpoint_new(ctx, &ec, &eb), "ethlink_endpoint_new");
  ethlink_switch_config sc;
  check(ethlink_switch_config_default(&sc), "ethlink_switch_config_default");
  sc.ports = 2;
  sc.seed = 23;
  check(ethlink_switch_new(ctx, &sc, &sw), "ethlink_switch_new");
  const uint16_t to_a[] = {0}, to_b[] = {1};
  check(ethlink_switch_set_route(ctx, sw, 1, to_a, 1), "ethlink_switch_set_route");
  check(ethlink_switch_set_route(ctx, sw, 2, to_b, 1), "ethlink_switch_set_route");
  int na = add_node(ea, "endpoint A");
  int nb = add_node(eb, "endpoint B");
  int ns = add_node(sw, "switch");
  connect(na, 0, ns, 0);
  connect(nb, 0, ns, 1);

  links_up = 0;
  check(ethlink_physical(ctx, ea, 0, 1, now_ns), "ethlink_physical");
  check(ethlink_physical(ctx, eb, 0, 1, now_ns), "ethlink_physical");
  check(ethlink_physical(ctx, sw, 0, 1, now_ns), "ethlink_physical");
  check(ethlink_physical(ctx, sw, 1, 1, now_ns), "ethlink_physical");
  run(now_ns + 20000);
  expect(links_up == 4, "all four link ends came up");

  check(ethlink_endpoint_register(ctx, eb, ETHLINK_SPACE_GLOBAL, 0x10000, 4096, 7,
                                  ETHLINK_PERM_READ | ETHLINK_PERM_WRITE),
        "ethlink_endpoint_register");
  const uint8_t value[8] = {0x88, 0x77, 0x66, 0x55, 0x44, 0x33, 0x22, 0x11};
  ethlink_ls_request req = {0};
  req.kind = ETHLINK_LS_STORE;
  req.space = ETHLINK_SPACE_GLOBAL;
  req.dst = 2;
  req.key = 7;
  req.addr = 0x10040;
  req.data = value;
  req.data_len = sizeof value;
  uint16_t tag = 0;
  check(ethlink_endpoint_issue(ctx, ea, now_ns, &req, &tag), "ethlink_endpoint_issue (store)");
  await_completion(100000);
  printf("  t=%6" PRIu64 " ns  store tag %u completed, status %u\n", now_ns, tag,
         last_completion.status);
  expect(last_completion.op == ETHLINK_OP_LS && last_completion.id == tag &&
             last_completion.status == ETHLINK_STATUS_OK,
         "the store completed OK");
  uint8_t at_b[8] = {0};
  check(ethlink_endpoint_mem_read(ctx, eb, ETHLINK_SPACE_GLOBAL, 0x10040, at_b, sizeof at_b),
        "ethlink_endpoint_mem_read");
  expect(memcmp(at_b, value, sizeof value) == 0, "B's memory holds the value stored");

  req.kind = ETHLINK_LS_LOAD;
  req.len = 8;
  req.data = NULL;
  req.data_len = 0;
  check(ethlink_endpoint_issue(ctx, ea, now_ns, &req, &tag), "ethlink_endpoint_issue (load)");
  await_completion(100000);
  printf("  t=%6" PRIu64 " ns  load tag %u completed, status %u, %zu bytes:", now_ns, tag,
         last_completion.status, last_completion.len);
  for (size_t i = 0; i < last_completion.len && i < sizeof completion_data; i++) {
    printf(" %02x", completion_data[i]);
  }
  printf("\n");
  expect(last_completion.op == ETHLINK_OP_LS && last_completion.id == tag &&
             last_completion.status == ETHLINK_STATUS_OK && last_completion.len == 8 &&
             memcmp(completion_data, value, 8) == 0,
         "the load returned the value stored");
  uint64_t forwarded = 0;
  check(ethlink_counter_get(ctx, sw, "port1.tx_frames.vc0", &forwarded), "ethlink_counter_get");
  size_t n = 0;
  check(ethlink_counter_count(ctx, sw, &n), "ethlink_counter_count");
  printf("  the switch forwarded %" PRIu64 " DATA frames to B on VC 0 and keeps %zu counters\n",
         forwarded, n);
}

int main(void) {
  if (ethlink_abi_version() != ETHLINK_ABI_VERSION) {
    fprintf(stderr, "library ABI %u, header ABI %u\n", ethlink_abi_version(),
            ETHLINK_ABI_VERSION);
    return 1;
  }
  check(ethlink_ctx_new(&ctx), "ethlink_ctx_new");
  link_pair();
  endpoints_through_a_switch();
  ethlink_ctx_free(ctx);
  printf("all observations as expected\n");
  return 0;
}
