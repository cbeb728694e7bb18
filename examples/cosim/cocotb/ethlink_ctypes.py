"""The link-end part of the C ABI of the EthLink models (include/ethlink.h), through ctypes.

Loads libethlink_ffi.so and mirrors the structures a link end needs. Every call that returns an
error raises EthlinkError with the code's name and the context's error text.

SPDX-License-Identifier: MIT OR Apache-2.0
"""

import ctypes
from ctypes import POINTER, byref, c_char_p, c_int32, c_size_t, c_uint8, c_uint16, c_uint32
from ctypes import c_uint64, c_void_p

ABI_VERSION = 5
OK = 0
NONE = 1
ERR_REFUSED = -6

EVENT_DELIVERED = 1
EVENT_LOST = 2
EVENT_LINK_UP = 3
EVENT_LINK_DOWN = 4

# Bytes of the largest frame, payload or event data (the largest MFS).
MAX_FRAME = 9216


class LinkParams(ctypes.Structure):
    """ethlink_link_params."""

    _fields_ = [
        ("vcs", c_uint8),
        ("replay_count_max", c_uint8),
        ("credit_size", c_uint16),
        ("credit_overhead", c_uint16),
        ("mfs", c_uint16),
        ("rx_credits", c_uint32 * 8),
        ("llr_window", c_uint32),
        ("replay_max_frames", c_uint32),
        ("replay_max_bytes", c_uint32),
        ("ack_spacing", c_uint32),
        ("cf_min_credits", c_uint32),
        ("tx_queue_frames", c_uint32),
        ("tx_queue_bytes", c_uint32),
        ("ack_timer_ns", c_uint64),
        ("replay_timer_ns", c_uint64),
        ("cf_min_interval_ns", c_uint64),
        ("cf_max_interval_ns", c_uint64),
        ("cc_interval_ns", c_uint64),
        ("init_interval_ns", c_uint64),
        ("init_timeout_ns", c_uint64),
        ("llr_max_age_ns", c_uint64),
    ]


class LinkEndConfig(ctypes.Structure):
    """ethlink_link_end_config."""

    _fields_ = [
        ("link", LinkParams),
        ("mac", c_uint8 * 6),
        ("caps", c_uint32),
        ("seed", c_uint64),
    ]


class Event(ctypes.Structure):
    """ethlink_event."""

    _fields_ = [
        ("kind", c_uint32),
        ("port", c_uint16),
        ("vc", c_uint8),
        ("reason", c_uint8),
        ("op", c_uint8),
        ("status", c_uint8),
        ("status_raw", c_uint8),
        ("id", c_uint64),
        ("len", c_size_t),
    ]


class EthlinkError(Exception):
    """A call of the ABI returned an error."""


class Ethlink:
    """One context of the library and the link ends made in it."""

    def __init__(self, path):
        lib = ctypes.CDLL(str(path))
        self._lib = lib
        signatures = {
            "ethlink_abi_version": (c_uint32, []),
            "ethlink_code_name": (c_char_p, [c_int32]),
            "ethlink_ctx_new": (c_int32, [POINTER(c_void_p)]),
            "ethlink_ctx_free": (None, [c_void_p]),
            "ethlink_last_error": (
                c_int32,
                [c_void_p, c_char_p, c_size_t, POINTER(c_size_t)],
            ),
            "ethlink_link_end_config_default": (c_int32, [POINTER(LinkEndConfig)]),
            "ethlink_link_end_new": (
                c_int32,
                [c_void_p, POINTER(LinkEndConfig), POINTER(c_uint32)],
            ),
            "ethlink_physical": (c_int32, [c_void_p, c_uint32, c_uint16, c_uint8, c_uint64]),
            "ethlink_handle_frame": (
                c_int32,
                [c_void_p, c_uint32, c_uint16, c_uint64, c_char_p, c_size_t],
            ),
            "ethlink_poll_transmit": (
                c_int32,
                [
                    c_void_p,
                    c_uint32,
                    c_uint64,
                    POINTER(c_uint16),
                    c_char_p,
                    c_size_t,
                    POINTER(c_size_t),
                ],
            ),
            "ethlink_poll_timeout": (c_int32, [c_void_p, c_uint32, POINTER(c_uint64)]),
            "ethlink_handle_timeout": (c_int32, [c_void_p, c_uint32, c_uint64]),
            "ethlink_poll_event": (
                c_int32,
                [c_void_p, c_uint32, POINTER(Event), c_char_p, c_size_t],
            ),
            "ethlink_counter_get": (
                c_int32,
                [c_void_p, c_uint32, c_char_p, POINTER(c_uint64)],
            ),
            "ethlink_link_submit": (c_int32, [c_void_p, c_uint32, c_uint8, c_char_p, c_size_t]),
        }
        for name, (restype, argtypes) in signatures.items():
            fn = getattr(lib, name)
            fn.restype = restype
            fn.argtypes = argtypes
        if lib.ethlink_abi_version() != ABI_VERSION:
            raise EthlinkError(
                f"the library has ABI version {lib.ethlink_abi_version()}, "
                f"these bindings {ABI_VERSION}"
            )
        self._ctx = c_void_p()
        self._check(lib.ethlink_ctx_new(byref(self._ctx)), "ethlink_ctx_new")
        self._frame = ctypes.create_string_buffer(MAX_FRAME)
        self._data = ctypes.create_string_buffer(MAX_FRAME)

    def close(self):
        """Frees the context and every device in it."""
        if self._ctx:
            self._lib.ethlink_ctx_free(self._ctx)
            self._ctx = c_void_p()

    def _check(self, rc, what):
        if rc >= 0:
            return rc
        text = ctypes.create_string_buffer(512)
        length = c_size_t(0)
        if self._ctx:
            self._lib.ethlink_last_error(self._ctx, text, len(text), byref(length))
        name = self._lib.ethlink_code_name(rc).decode()
        raise EthlinkError(f"{what}: {name}: {text.value.decode(errors='replace')}")

    def link_end_new(self, mac_low, seed, tx_queue_frames=None):
        """A link end whose MAC address ends in `mac_low`; returns its handle."""
        cfg = LinkEndConfig()
        self._check(self._lib.ethlink_link_end_config_default(byref(cfg)), "config_default")
        if cfg.link.mfs != MAX_FRAME or not 1 <= cfg.link.vcs <= 8:
            raise EthlinkError("the default configuration reads wrong: the layout differs")
        cfg.mac[5] = mac_low
        cfg.seed = seed
        if tx_queue_frames is not None:
            cfg.link.tx_queue_frames = tx_queue_frames
        h = c_uint32(0)
        self._check(self._lib.ethlink_link_end_new(self._ctx, byref(cfg), byref(h)), "new")
        return h.value

    def physical(self, h, up, now):
        self._check(self._lib.ethlink_physical(self._ctx, h, 0, int(up), now), "physical")

    def handle_frame(self, h, now, frame):
        self._check(
            self._lib.ethlink_handle_frame(self._ctx, h, 0, now, bytes(frame), len(frame)),
            "handle_frame",
        )

    def poll_transmit(self, h, now):
        """The next frame to send, as bytes, or None."""
        port = c_uint16(0)
        length = c_size_t(0)
        rc = self._check(
            self._lib.ethlink_poll_transmit(
                self._ctx, h, now, byref(port), self._frame, MAX_FRAME, byref(length)
            ),
            "poll_transmit",
        )
        if rc == NONE:
            return None
        return self._frame.raw[: length.value]

    def poll_timeout(self, h):
        """The next deadline in ns, or None."""
        deadline = c_uint64(0)
        rc = self._check(
            self._lib.ethlink_poll_timeout(self._ctx, h, byref(deadline)), "poll_timeout"
        )
        return None if rc == NONE else deadline.value

    def handle_timeout(self, h, now):
        self._check(self._lib.ethlink_handle_timeout(self._ctx, h, now), "handle_timeout")

    def poll_event(self, h):
        """The next event and its data, or None."""
        event = Event()
        rc = self._check(
            self._lib.ethlink_poll_event(self._ctx, h, byref(event), self._data, MAX_FRAME),
            "poll_event",
        )
        if rc == NONE:
            return None
        return event, self._data.raw[: event.len]

    def counter(self, h, name):
        value = c_uint64(0)
        self._check(
            self._lib.ethlink_counter_get(self._ctx, h, name.encode(), byref(value)),
            f"counter {name}",
        )
        return value.value

    def submit(self, h, vc, payload):
        """Queues a payload; returns False when the VC's queue is full."""
        rc = self._lib.ethlink_link_submit(self._ctx, h, vc, bytes(payload), len(payload))
        if rc == ERR_REFUSED:
            return False
        self._check(rc, "link_submit")
        return True
