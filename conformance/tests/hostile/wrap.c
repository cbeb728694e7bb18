/* A link end that misbehaves at the C ABI boundary, for the harness's tests: it forwards every
 * call to the reference library (REAL_LIB, loaded with dlopen) and breaks one rule, chosen when
 * it is compiled:
 *
 *   MODE_TX_FOREVER     ethlink_poll_transmit never says NONE: a 64-byte frame every call
 *   MODE_EVENT_FOREVER  ethlink_poll_event never says NONE: a link-up event every call
 *   MODE_HANG_CTX_NEW   ethlink_ctx_new never returns
 *   MODE_HANG_DESCRIBE  ethlink_describe never returns
 *   MODE_HANG_FREE      ethlink_ctx_free never returns
 *   MODE_NULL_CTX       ethlink_ctx_new returns ETHLINK_OK and no context
 *   MODE_EXIT           the third ethlink_handle_frame ends the process with exit(0)
 *   MODE_CRASH          the third ethlink_handle_frame writes through a NULL pointer
 *   MODE_COUNTERS       ethlink_counter_count says 2^30 counters
 *
 * Build: cc -shared -fPIC -DMODE_X '-DREAL_LIB="path"' -I include wrap.c -o wrap.so -ldl
 */
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "ethlink.h"

static void *real(const char *name) {
    static void *lib;
    if (!lib) {
        lib = dlopen(REAL_LIB, RTLD_NOW | RTLD_LOCAL);
        if (!lib) {
            fprintf(stderr, "wrap: %s\n", dlerror());
            abort();
        }
    }
    void *f = dlsym(lib, name);
    if (!f) {
        fprintf(stderr, "wrap: no %s\n", name);
        abort();
    }
    return f;
}

/* The real function `name` with the type of the function of that name in ethlink.h. */
#define REAL(name) ((__typeof__(&name))real(#name))

__attribute__((unused)) static void forever(void) {
    for (;;) {
        sleep(1);
    }
}

uint32_t ethlink_abi_version(void) { return REAL(ethlink_abi_version)(); }

int32_t ethlink_ctx_new(ethlink_ctx **out) {
#ifdef MODE_HANG_CTX_NEW
    forever();
#endif
#ifdef MODE_NULL_CTX
    *out = NULL;
    return ETHLINK_OK;
#endif
    return REAL(ethlink_ctx_new)(out);
}

void ethlink_ctx_free(ethlink_ctx *ctx) {
#ifdef MODE_HANG_FREE
    forever();
#endif
    REAL(ethlink_ctx_free)(ctx);
}

int32_t ethlink_last_error(ethlink_ctx *ctx, char *buf, size_t cap, size_t *len) {
    return REAL(ethlink_last_error)(ctx, buf, cap, len);
}

int32_t ethlink_link_end_config_default(ethlink_link_end_config *cfg) {
    return REAL(ethlink_link_end_config_default)(cfg);
}

int32_t ethlink_link_end_new(ethlink_ctx *ctx, const ethlink_link_end_config *cfg, uint32_t *out) {
    return REAL(ethlink_link_end_new)(ctx, cfg, out);
}

int32_t ethlink_destroy(ethlink_ctx *ctx, uint32_t h) { return REAL(ethlink_destroy)(ctx, h); }

int32_t ethlink_describe(ethlink_ctx *ctx, uint32_t h, ethlink_description *out) {
#ifdef MODE_HANG_DESCRIBE
    forever();
#endif
    int32_t code = REAL(ethlink_describe)(ctx, h, out);
#ifdef MODE_COARSE_CLOCK
    /* An RTL model with a 256 ns timer tick behind a 25 Gb/s serialiser. */
    out->tick_ns = 256;
    out->rate_gbps = 25;
#endif
#ifdef MODE_TICK_TOO_COARSE
    out->tick_ns = 300;
#endif
    return code;
}

int32_t ethlink_physical(ethlink_ctx *ctx, uint32_t h, uint16_t port, uint8_t up, uint64_t now_ns) {
    return REAL(ethlink_physical)(ctx, h, port, up, now_ns);
}

int32_t ethlink_handle_frame(ethlink_ctx *ctx, uint32_t h, uint16_t port, uint64_t now_ns,
                             const uint8_t *bytes, size_t len) {
#if defined(MODE_EXIT) || defined(MODE_CRASH)
    static int frames;
    if (++frames == 3) {
#ifdef MODE_EXIT
        exit(0);
#else
        /* A real fault, not raise(): a process may catch a raised signal and go on. */
        *(volatile int *)(uintptr_t)0 = 1;
#endif
    }
#endif
    return REAL(ethlink_handle_frame)(ctx, h, port, now_ns, bytes, len);
}

int32_t ethlink_poll_transmit(ethlink_ctx *ctx, uint32_t h, uint64_t now_ns, uint16_t *port,
                              uint8_t *buf, size_t cap, size_t *len) {
    int32_t code = REAL(ethlink_poll_transmit)(ctx, h, now_ns, port, buf, cap, len);
#ifdef MODE_TX_FOREVER
    if (code == ETHLINK_NONE && cap >= 64) {
        memset(buf, 0x5a, 64);
        *port = 0;
        *len = 64;
        return ETHLINK_OK;
    }
#endif
    return code;
}

int32_t ethlink_poll_timeout(ethlink_ctx *ctx, uint32_t h, uint64_t *deadline_ns) {
    return REAL(ethlink_poll_timeout)(ctx, h, deadline_ns);
}

int32_t ethlink_handle_timeout(ethlink_ctx *ctx, uint32_t h, uint64_t now_ns) {
    return REAL(ethlink_handle_timeout)(ctx, h, now_ns);
}

int32_t ethlink_poll_event(ethlink_ctx *ctx, uint32_t h, ethlink_event *event, uint8_t *data,
                           size_t cap) {
    int32_t code = REAL(ethlink_poll_event)(ctx, h, event, data, cap);
#ifdef MODE_EVENT_FOREVER
    if (code == ETHLINK_NONE) {
        memset(event, 0, sizeof *event);
        event->kind = ETHLINK_EVENT_LINK_UP;
        return ETHLINK_OK;
    }
#endif
    return code;
}

int32_t ethlink_counter_count(ethlink_ctx *ctx, uint32_t h, size_t *count) {
    int32_t code = REAL(ethlink_counter_count)(ctx, h, count);
#ifdef MODE_COUNTERS
    *count = (size_t)1 << 30;
#endif
    return code;
}

int32_t ethlink_counter_at(ethlink_ctx *ctx, uint32_t h, size_t index, char *name, size_t cap,
                           size_t *name_len, uint64_t *value) {
    return REAL(ethlink_counter_at)(ctx, h, index, name, cap, name_len, value);
}

int32_t ethlink_link_submit(ethlink_ctx *ctx, uint32_t h, uint8_t vc, const uint8_t *payload,
                            size_t len) {
    return REAL(ethlink_link_submit)(ctx, h, vc, payload, len);
}

int32_t ethlink_link_hold(ethlink_ctx *ctx, uint32_t h, uint8_t vc, uint8_t hold) {
    return REAL(ethlink_link_hold)(ctx, h, vc, hold);
}

int32_t ethlink_link_withdraw(ethlink_ctx *ctx, uint32_t h, size_t *count) {
    return REAL(ethlink_link_withdraw)(ctx, h, count);
}
