// DPI-C functions over the C ABI of the EthLink models (include/ethlink.h), for SystemVerilog
// testbenches. ethlink_dpi_pkg.sv imports them; docs/cosim.md §5.1 describes them.
//
// DPI-C passes integers, strings and fixed-size byte arrays, not C structures or pointers, so
// this file keeps the context in C and gives each call of the ABI a signature made of those:
//
//   - every function returns the ABI's code (ETHLINK_OK, ETHLINK_NONE or a negative error);
//     after a negative one, ethlink_dpi_last_error() gives "<code name>: <text>";
//   - handles are `int unsigned`, times `longint unsigned` nanoseconds;
//   - frames, payloads and event data cross as `byte unsigned x[ETHLINK_DPI_MAX]` with a length
//     beside them, load-store data as `byte unsigned x[ETHLINK_DPI_MAX_LS]`.
//
// One context serves one simulation; DPI calls of one simulation come from one thread.
//
// SPDX-License-Identifier: MIT OR Apache-2.0

#include <cstdio>
#include <cstring>

#include "ethlink.h"
#include "svdpi.h"

// The prototypes Verilator generates from the imports of ethlink_dpi_pkg.sv (V<top>__Dpi.h,
// named by -DETHLINK_DPI_HEADER=V<top>__Dpi.h): including them makes the compiler check that
// every definition below matches its import.
#ifdef ETHLINK_DPI_HEADER
#define ETHLINK_DPI_STRING2(x) #x
#define ETHLINK_DPI_STRING(x) ETHLINK_DPI_STRING2(x)
#include ETHLINK_DPI_STRING(ETHLINK_DPI_HEADER)
#endif

namespace {

// Bytes of the largest frame, payload or event data (the largest MFS).
constexpr int kMax = 9216;
// Bytes of the largest load or store.
constexpr int kMaxLs = 256;

ethlink_ctx *ctx = nullptr;
char last_error[768] = "";

// Records the text of a failed call and returns its code.
int fail(int rc, const char *what) {
  char text[640] = "";
  size_t len = 0;
  if (ctx != nullptr) {
    ethlink_last_error(ctx, text, sizeof text, &len);
  }
  std::snprintf(last_error, sizeof last_error, "%s: %s: %s", what, ethlink_code_name(rc), text);
  return rc;
}

// Keeps the text of a failed call; passes every code through.
int note(int rc, const char *what) { return rc < 0 ? fail(rc, what) : rc; }

// An argument the shim itself refuses.
int refuse(const char *what, const char *why, long long value) {
  std::snprintf(last_error, sizeof last_error, "%s: ETHLINK_ERR_ARGUMENT: %s (%lld)", what, why,
                value);
  return ETHLINK_ERR_ARGUMENT;
}

// Before the context exists every call is refused, as a NULL context would be.
int no_context(const char *what) {
  std::snprintf(last_error, sizeof last_error,
                "%s: ETHLINK_ERR_NULL_POINTER: ethlink_dpi_open was not called", what);
  return ETHLINK_ERR_NULL_POINTER;
}

#define NEED_CTX(what)                                                                            \
  do {                                                                                            \
    if (ctx == nullptr) return no_context(what);                                                  \
  } while (0)

}  // namespace

extern "C" {

int ethlink_dpi_open() {
  if (ethlink_abi_version() != ETHLINK_ABI_VERSION) {
    std::snprintf(last_error, sizeof last_error,
                  "ethlink_dpi_open: the library has ABI version %u, the header %u",
                  ethlink_abi_version(), static_cast<unsigned>(ETHLINK_ABI_VERSION));
    return ETHLINK_ERR_ARGUMENT;
  }
  if (ctx != nullptr) {
    return ETHLINK_OK;
  }
  return note(ethlink_ctx_new(&ctx), "ethlink_ctx_new");
}

void ethlink_dpi_close() {
  ethlink_ctx_free(ctx);
  ctx = nullptr;
}

const char *ethlink_dpi_last_error() { return last_error; }

const char *ethlink_dpi_code_name(int rc) { return ethlink_code_name(rc); }

int ethlink_dpi_link_end_new(unsigned char mac_low, unsigned long long seed,
                             unsigned int tx_queue_frames, unsigned int *h) {
  NEED_CTX("ethlink_link_end_new");
  ethlink_link_end_config cfg;
  int rc = ethlink_link_end_config_default(&cfg);
  if (rc != ETHLINK_OK) return note(rc, "ethlink_link_end_config_default");
  cfg.mac[5] = mac_low;
  cfg.seed = seed;
  if (tx_queue_frames != 0) cfg.link.tx_queue_frames = tx_queue_frames;
  uint32_t out = 0;
  rc = note(ethlink_link_end_new(ctx, &cfg, &out), "ethlink_link_end_new");
  *h = out;
  return rc;
}

int ethlink_dpi_endpoint_new(unsigned short gpu, unsigned long long seed, unsigned int *h) {
  NEED_CTX("ethlink_endpoint_new");
  ethlink_endpoint_config cfg;
  int rc = ethlink_endpoint_config_default(&cfg);
  if (rc != ETHLINK_OK) return note(rc, "ethlink_endpoint_config_default");
  cfg.gpu = gpu;
  cfg.stacks = 1;
  cfg.ports_per_stack = 1;
  cfg.seed = seed;
  uint32_t out = 0;
  rc = note(ethlink_endpoint_new(ctx, &cfg, &out), "ethlink_endpoint_new");
  *h = out;
  return rc;
}

int ethlink_dpi_switch_new(unsigned short ports, unsigned long long seed, unsigned int *h) {
  NEED_CTX("ethlink_switch_new");
  ethlink_switch_config cfg;
  int rc = ethlink_switch_config_default(&cfg);
  if (rc != ETHLINK_OK) return note(rc, "ethlink_switch_config_default");
  cfg.ports = ports;
  cfg.seed = seed;
  uint32_t out = 0;
  rc = note(ethlink_switch_new(ctx, &cfg, &out), "ethlink_switch_new");
  *h = out;
  return rc;
}

int ethlink_dpi_switch_route(unsigned int h, unsigned short dst, unsigned short port) {
  NEED_CTX("ethlink_switch_set_route");
  const uint16_t ports[1] = {port};
  return note(ethlink_switch_set_route(ctx, h, dst, ports, 1), "ethlink_switch_set_route");
}

int ethlink_dpi_destroy(unsigned int h) {
  NEED_CTX("ethlink_destroy");
  return note(ethlink_destroy(ctx, h), "ethlink_destroy");
}

int ethlink_dpi_physical(unsigned int h, unsigned short port, unsigned char up,
                         unsigned long long now) {
  NEED_CTX("ethlink_physical");
  return note(ethlink_physical(ctx, h, port, up, now), "ethlink_physical");
}

int ethlink_dpi_handle_frame(unsigned int h, unsigned short port, unsigned long long now,
                             const unsigned char *frame, int len) {
  NEED_CTX("ethlink_handle_frame");
  if (len < 0 || len > kMax) return refuse("ethlink_handle_frame", "len out of 0..9216", len);
  return note(ethlink_handle_frame(ctx, h, port, now, frame, static_cast<size_t>(len)),
              "ethlink_handle_frame");
}

int ethlink_dpi_poll_transmit(unsigned int h, unsigned long long now, unsigned short *port,
                              unsigned char *frame, int *len) {
  NEED_CTX("ethlink_poll_transmit");
  uint16_t p = 0;
  size_t n = 0;
  int rc = ethlink_poll_transmit(ctx, h, now, &p, frame, kMax, &n);
  *port = p;
  *len = n <= static_cast<size_t>(kMax) ? static_cast<int>(n) : kMax;
  return note(rc, "ethlink_poll_transmit");
}

int ethlink_dpi_poll_timeout(unsigned int h, unsigned long long *deadline) {
  NEED_CTX("ethlink_poll_timeout");
  uint64_t d = 0;
  int rc = ethlink_poll_timeout(ctx, h, &d);
  *deadline = d;
  return note(rc, "ethlink_poll_timeout");
}

int ethlink_dpi_handle_timeout(unsigned int h, unsigned long long now) {
  NEED_CTX("ethlink_handle_timeout");
  return note(ethlink_handle_timeout(ctx, h, now), "ethlink_handle_timeout");
}

int ethlink_dpi_poll_event(unsigned int h, unsigned int *kind, unsigned short *port,
                           unsigned char *vc, unsigned char *reason, unsigned char *op,
                           unsigned char *status, unsigned long long *id, unsigned char *data,
                           int *len) {
  NEED_CTX("ethlink_poll_event");
  ethlink_event e;
  std::memset(&e, 0, sizeof e);
  int rc = ethlink_poll_event(ctx, h, &e, data, kMax);
  *kind = e.kind;
  *port = e.port;
  *vc = e.vc;
  *reason = e.reason;
  *op = e.op;
  *status = e.status;
  *id = e.id;
  *len = e.len <= static_cast<size_t>(kMax) ? static_cast<int>(e.len) : kMax;
  return note(rc, "ethlink_poll_event");
}

int ethlink_dpi_counter(unsigned int h, const char *name, unsigned long long *value) {
  NEED_CTX("ethlink_counter_get");
  uint64_t v = 0;
  int rc = ethlink_counter_get(ctx, h, name, &v);
  *value = v;
  return note(rc, "ethlink_counter_get");
}

int ethlink_dpi_link_submit(unsigned int h, unsigned char vc, const unsigned char *payload,
                            int len) {
  NEED_CTX("ethlink_link_submit");
  if (len < 0 || len > kMax) return refuse("ethlink_link_submit", "len out of 0..9216", len);
  return note(ethlink_link_submit(ctx, h, vc, payload, static_cast<size_t>(len)),
              "ethlink_link_submit");
}

int ethlink_dpi_endpoint_register(unsigned int h, unsigned char space, unsigned long long base,
                                  unsigned long long len, unsigned int key, unsigned int perms) {
  NEED_CTX("ethlink_endpoint_register");
  return note(ethlink_endpoint_register(ctx, h, space, base, len, key, perms),
              "ethlink_endpoint_register");
}

int ethlink_dpi_endpoint_mem_write(unsigned int h, unsigned char space, unsigned long long addr,
                                   const unsigned char *data, int len) {
  NEED_CTX("ethlink_endpoint_mem_write");
  if (len < 0 || len > kMaxLs)
    return refuse("ethlink_endpoint_mem_write", "len out of 0..256", len);
  return note(ethlink_endpoint_mem_write(ctx, h, space, addr, data, static_cast<size_t>(len)),
              "ethlink_endpoint_mem_write");
}

int ethlink_dpi_endpoint_mem_read(unsigned int h, unsigned char space, unsigned long long addr,
                                  unsigned char *data, int len) {
  NEED_CTX("ethlink_endpoint_mem_read");
  if (len < 0 || len > kMaxLs)
    return refuse("ethlink_endpoint_mem_read", "len out of 0..256", len);
  return note(ethlink_endpoint_mem_read(ctx, h, space, addr, data, static_cast<size_t>(len)),
              "ethlink_endpoint_mem_read");
}

int ethlink_dpi_endpoint_store(unsigned int h, unsigned long long now, unsigned short dst,
                               unsigned char space, unsigned int key, unsigned long long addr,
                               unsigned char ordered, unsigned int stream,
                               const unsigned char *data, int len, unsigned short *tag) {
  NEED_CTX("ethlink_endpoint_issue");
  if (len < 0 || len > kMaxLs) return refuse("ethlink_endpoint_issue", "len out of 0..256", len);
  ethlink_ls_request req;
  std::memset(&req, 0, sizeof req);
  req.kind = ETHLINK_LS_STORE;
  req.space = space;
  req.ordered = ordered;
  req.dst = dst;
  req.key = key;
  req.stream = stream;
  req.addr = addr;
  req.data = data;
  req.data_len = static_cast<size_t>(len);
  uint16_t t = 0;
  int rc = ethlink_endpoint_issue(ctx, h, now, &req, &t);
  *tag = t;
  return note(rc, "ethlink_endpoint_issue");
}

int ethlink_dpi_endpoint_load(unsigned int h, unsigned long long now, unsigned short dst,
                              unsigned char space, unsigned int key, unsigned long long addr,
                              unsigned char ordered, unsigned int stream, int len,
                              unsigned short *tag) {
  NEED_CTX("ethlink_endpoint_issue");
  if (len < 0 || len > kMaxLs) return refuse("ethlink_endpoint_issue", "len out of 0..256", len);
  ethlink_ls_request req;
  std::memset(&req, 0, sizeof req);
  req.kind = ETHLINK_LS_LOAD;
  req.space = space;
  req.ordered = ordered;
  req.dst = dst;
  req.key = key;
  req.stream = stream;
  req.addr = addr;
  req.len = static_cast<uint16_t>(len);
  uint16_t t = 0;
  int rc = ethlink_endpoint_issue(ctx, h, now, &req, &t);
  *tag = t;
  return note(rc, "ethlink_endpoint_issue");
}

int ethlink_dpi_endpoint_atomic(unsigned int h, unsigned long long now, unsigned char kind,
                                unsigned short dst, unsigned char space, unsigned int key,
                                unsigned long long addr, unsigned char width,
                                unsigned long long value, unsigned long long compare,
                                unsigned short *tag) {
  NEED_CTX("ethlink_endpoint_issue");
  ethlink_ls_request req;
  std::memset(&req, 0, sizeof req);
  req.kind = kind;
  req.space = space;
  req.width = width;
  req.dst = dst;
  req.key = key;
  req.addr = addr;
  req.value = value;
  req.compare = compare;
  uint16_t t = 0;
  int rc = ethlink_endpoint_issue(ctx, h, now, &req, &t);
  *tag = t;
  return note(rc, "ethlink_endpoint_issue");
}

int ethlink_dpi_endpoint_fence(unsigned int h, unsigned long long now, unsigned long long *id) {
  NEED_CTX("ethlink_endpoint_fence");
  uint64_t out = 0;
  int rc = ethlink_endpoint_fence(ctx, h, now, &out);
  *id = out;
  return note(rc, "ethlink_endpoint_fence");
}

}  // extern "C"
