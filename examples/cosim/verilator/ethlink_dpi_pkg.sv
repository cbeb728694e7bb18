// The EthLink models for SystemVerilog: the DPI-C imports of ethlink_dpi.cc and the constants
// of include/ethlink.h they need. docs/cosim.md §5.1 describes them.
//
// Every function returns the ABI's code: ETHLINK_OK (0), ETHLINK_NONE (1) or a negative error,
// whose text ethlink_dpi_last_error() gives. Times are nanoseconds.
//
// SPDX-License-Identifier: MIT OR Apache-2.0

`timescale 1ns / 1ns

package ethlink_dpi_pkg;

  // Bytes of the largest frame, payload or event data, and of the largest load or store.
  localparam int ETHLINK_DPI_MAX = 9216;
  localparam int ETHLINK_DPI_MAX_LS = 256;

  // Return codes.
  localparam int ETHLINK_OK = 0;
  localparam int ETHLINK_NONE = 1;
  localparam int ETHLINK_ERR_REFUSED = -6;

  // Event kinds.
  localparam int unsigned ETHLINK_EVENT_DELIVERED = 1;
  localparam int unsigned ETHLINK_EVENT_LOST = 2;
  localparam int unsigned ETHLINK_EVENT_LINK_UP = 3;
  localparam int unsigned ETHLINK_EVENT_LINK_DOWN = 4;
  localparam int unsigned ETHLINK_EVENT_COMPLETION = 5;

  // Completions.
  localparam byte unsigned ETHLINK_OP_LS = 0;
  localparam byte unsigned ETHLINK_OP_FENCE = 2;
  localparam byte unsigned ETHLINK_STATUS_OK = 0;
  localparam byte unsigned ETHLINK_STATUS_ACCESS_VIOLATION = 1;

  // Memory, permissions and atomics.
  localparam byte unsigned ETHLINK_SPACE_GLOBAL = 0;
  localparam int unsigned ETHLINK_PERM_READ = 1;
  localparam int unsigned ETHLINK_PERM_WRITE = 2;
  localparam int unsigned ETHLINK_PERM_ATOMIC = 4;
  localparam byte unsigned ETHLINK_LS_FETCH_ADD = 2;
  localparam byte unsigned ETHLINK_LS_SWAP = 3;
  localparam byte unsigned ETHLINK_LS_COMPARE_SWAP = 4;

  // Frame kinds of the link header (wire.md §3).
  localparam byte unsigned KIND_DATA = 0;
  localparam byte unsigned KIND_ACK = 1;
  localparam byte unsigned KIND_NACK = 2;

  typedef byte unsigned frame_bytes_t[ETHLINK_DPI_MAX];
  typedef byte unsigned ls_bytes_t[ETHLINK_DPI_MAX_LS];

  // The context: once per simulation, before any other call.
  import "DPI-C" function int ethlink_dpi_open();
  import "DPI-C" function void ethlink_dpi_close();
  import "DPI-C" function string ethlink_dpi_last_error();
  import "DPI-C" function string ethlink_dpi_code_name(input int rc);

  // Devices. A link end's MAC address ends in `mac_low`; `tx_queue_frames` 0 keeps the default.
  // Endpoints have one port; switches `ports`.
  import "DPI-C" function int ethlink_dpi_link_end_new(
    input byte unsigned mac_low, input longint unsigned seed, input int unsigned tx_queue_frames,
    output int unsigned h);
  import "DPI-C" function int ethlink_dpi_endpoint_new(
    input shortint unsigned gpu, input longint unsigned seed, output int unsigned h);
  import "DPI-C" function int ethlink_dpi_switch_new(
    input shortint unsigned ports, input longint unsigned seed, output int unsigned h);
  import "DPI-C" function int ethlink_dpi_switch_route(
    input int unsigned h, input shortint unsigned dst, input shortint unsigned port);
  import "DPI-C" function int ethlink_dpi_destroy(input int unsigned h);

  // The event loop (docs/cosim.md §3).
  import "DPI-C" function int ethlink_dpi_physical(
    input int unsigned h, input shortint unsigned port, input byte unsigned up,
    input longint unsigned now);
  import "DPI-C" function int ethlink_dpi_handle_frame(
    input int unsigned h, input shortint unsigned port, input longint unsigned now,
    input byte unsigned frame[ETHLINK_DPI_MAX], input int len);
  import "DPI-C" function int ethlink_dpi_poll_transmit(
    input int unsigned h, input longint unsigned now, output shortint unsigned port,
    output byte unsigned frame[ETHLINK_DPI_MAX], output int len);
  import "DPI-C" function int ethlink_dpi_poll_timeout(
    input int unsigned h, output longint unsigned deadline);
  import "DPI-C" function int ethlink_dpi_handle_timeout(
    input int unsigned h, input longint unsigned now);
  import "DPI-C" function int ethlink_dpi_poll_event(
    input int unsigned h, output int unsigned kind, output shortint unsigned port,
    output byte unsigned vc, output byte unsigned reason, output byte unsigned op,
    output byte unsigned status, output longint unsigned id,
    output byte unsigned data[ETHLINK_DPI_MAX], output int len);
  import "DPI-C" function int ethlink_dpi_counter(
    input int unsigned h, input string name, output longint unsigned value);

  // Link end.
  import "DPI-C" function int ethlink_dpi_link_submit(
    input int unsigned h, input byte unsigned vc, input byte unsigned payload[ETHLINK_DPI_MAX],
    input int len);

  // Endpoint.
  import "DPI-C" function int ethlink_dpi_endpoint_register(
    input int unsigned h, input byte unsigned space, input longint unsigned base,
    input longint unsigned len, input int unsigned key, input int unsigned perms);
  import "DPI-C" function int ethlink_dpi_endpoint_mem_write(
    input int unsigned h, input byte unsigned space, input longint unsigned addr,
    input byte unsigned data[ETHLINK_DPI_MAX_LS], input int len);
  import "DPI-C" function int ethlink_dpi_endpoint_mem_read(
    input int unsigned h, input byte unsigned space, input longint unsigned addr,
    output byte unsigned data[ETHLINK_DPI_MAX_LS], input int len);
  import "DPI-C" function int ethlink_dpi_endpoint_store(
    input int unsigned h, input longint unsigned now, input shortint unsigned dst,
    input byte unsigned space, input int unsigned key, input longint unsigned addr,
    input byte unsigned ordered, input int unsigned stream,
    input byte unsigned data[ETHLINK_DPI_MAX_LS], input int len, output shortint unsigned tag);
  import "DPI-C" function int ethlink_dpi_endpoint_load(
    input int unsigned h, input longint unsigned now, input shortint unsigned dst,
    input byte unsigned space, input int unsigned key, input longint unsigned addr,
    input byte unsigned ordered, input int unsigned stream, input int len,
    output shortint unsigned tag);
  import "DPI-C" function int ethlink_dpi_endpoint_atomic(
    input int unsigned h, input longint unsigned now, input byte unsigned kind,
    input shortint unsigned dst, input byte unsigned space, input int unsigned key,
    input longint unsigned addr, input byte unsigned width, input longint unsigned value,
    input longint unsigned compare, output shortint unsigned tag);
  import "DPI-C" function int ethlink_dpi_endpoint_fence(
    input int unsigned h, input longint unsigned now, output longint unsigned id);

endpackage
