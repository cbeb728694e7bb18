// A SystemVerilog testbench that runs the EthLink models through DPI-C (ethlink_dpi_pkg.sv,
// ethlink_dpi.cc) with the wires between them modelled in SystemVerilog.
//
// +test=link      two link ends; the testbench flips a bit of one DATA frame on the wire and
//                 checks that the receiver NACKs, the sender replays from the damaged frame,
//                 and every payload arrives once and in order on its VC.
// +test=endpoint  two endpoints (GPU 1, GPU 2) through a two-port switch; endpoint A stores,
//                 loads, runs atomics and fences against B's memory, and the testbench checks
//                 every completion and B's memory against a model of its own.
//
// A clock paces the event loop of docs/cosim.md §3: at every rising edge the testbench hands
// over the frames that have crossed their wire, runs the timers that are due, puts the frames
// the models send on their wires and takes their events. Any failure ends the simulation with
// $fatal, so the process exits with a non-zero status.
//
// Build and run: examples/cosim/verilator/run.sh
//
// SPDX-License-Identifier: MIT OR Apache-2.0

`timescale 1ns / 1ns

module tb_ethlink;
  import ethlink_dpi_pkg::*;

  // Clock period and the time a frame takes on a wire, in ns.
  localparam int CLK_NS = 4;
  localparam longint unsigned WIRE_NS = 100;
  // Simulated time after which a test that has not finished fails.
  localparam longint unsigned WATCHDOG_NS = 5_000_000;

  localparam int MAX_NODES = 3;
  localparam int MAX_PORTS = 2;
  // A power of two: Verilator 5.006 mis-compiles the bounds check of an array of queues
  // whose size is not one.
  localparam int MAX_WIRES = 8;
  localparam int WIRE_FRAMES = 512;

  // A frame in flight, or a payload kept for comparison.
  class frame_c;
    longint unsigned at;
    int len;
    byte unsigned bytes[];  // len of them
  endclass

  // The end of an endpoint operation.
  class completion_c;
    byte unsigned op;
    byte unsigned status;
    int len;
    byte unsigned data[ETHLINK_DPI_MAX_LS];
  endclass

  bit clk = 0;
  always #(CLK_NS / 2) clk = ~clk;

  // The devices, their ports' wires, and the frames on each wire.
  int n_nodes = 0;
  int n_wires = 0;
  int unsigned node_h[MAX_NODES];
  string node_name[MAX_NODES];
  int out_wire[MAX_NODES][MAX_PORTS];
  int wire_to_node[MAX_WIRES];
  shortint unsigned wire_to_port[MAX_WIRES];
  frame_c wire_q[MAX_WIRES][$];
  int wire_data_frames[MAX_WIRES];
  bit looping = 0;

  // The arrays that cross DPI (Verilator passes module variables, not class members).
  byte unsigned in_buf[ETHLINK_DPI_MAX];
  byte unsigned tx_buf[ETHLINK_DPI_MAX];
  byte unsigned ev_buf[ETHLINK_DPI_MAX];

  // Which test runs: the taps and the event handlers look at it.
  string test_name = "";
  int links_up = 0;
  int links_down = 0;
  int lost = 0;

  // ---------------------------------------------------------------------------------------------
  // Checks

  function automatic void ok(int rc, string what);
    if (rc < 0) $fatal(1, "%s failed: %s", what, ethlink_dpi_last_error());
  endfunction

  function automatic void check(bit cond, string what);
    $display("  %-62s %s", what, cond ? "yes" : "NO");
    if (!cond) $fatal(1, "check failed: %s", what);
  endfunction

  function automatic longint unsigned counter(int unsigned h, string name);
    longint unsigned v;
    ok(ethlink_dpi_counter(h, name, v), {"ethlink_dpi_counter ", name});
    return v;
  endfunction

  function automatic longint unsigned now_ns();
    return longint'($time);
  endfunction

  // ---------------------------------------------------------------------------------------------
  // Topology

  function automatic int add_node(int unsigned h, string name);
    node_h[n_nodes] = h;
    node_name[n_nodes] = name;
    for (int p = 0; p < MAX_PORTS; p++) out_wire[n_nodes][p] = -1;
    n_nodes++;
    return n_nodes - 1;
  endfunction

  // A cable between port pa of node a and port pb of node b: one wire each way.
  function automatic void connect(int a, int pa, int b, int pb);
    wire_to_node[n_wires] = b;
    wire_to_port[n_wires] = shortint'(pb);
    out_wire[a][pa] = n_wires;
    n_wires++;
    wire_to_node[n_wires] = a;
    wire_to_port[n_wires] = shortint'(pa);
    out_wire[b][pb] = n_wires;
    n_wires++;
  endfunction

  function automatic void clear_topology();
    for (int w = 0; w < MAX_WIRES; w++) begin
      wire_q[w].delete();
      wire_data_frames[w] = 0;
    end
    n_nodes = 0;
    n_wires = 0;
  endfunction

  // ---------------------------------------------------------------------------------------------
  // The link header of a frame on a wire (wire.md §2, §3)

  function automatic int link_header(frame_c f);
    if (f.len >= 20 && f.bytes[12] == 8'h81 && f.bytes[13] == 8'h00) return 18;
    return 14;
  endfunction

  function automatic byte unsigned frame_kind(frame_c f);
    return f.bytes[link_header(f)] & 8'h0f;
  endfunction

  function automatic bit frame_replay(frame_c f);
    return f.bytes[link_header(f)+1][0];
  endfunction

  function automatic int unsigned frame_seq(frame_c f);
    int o = link_header(f);
    return {12'h0, f.bytes[o+3][3:0], f.bytes[o+4], f.bytes[o+5]};
  endfunction

  function automatic int unsigned seq_minus_one(int unsigned s);
    return (s + 32'hfffff) & 32'hfffff;
  endfunction

  // ---------------------------------------------------------------------------------------------
  // The event loop

  // Every frame a model sends passes here on its way onto wire w.
  function automatic void tap(int w, frame_c f);
    if (f.len < 24) $fatal(1, "a %0d-byte frame, shorter than any EthLink frame", f.len);
    if (frame_kind(f) == KIND_DATA) wire_data_frames[w]++;
    if (test_name == "link") link_tap(w, f);
  endfunction

  function automatic void on_event(int node, int unsigned kind, shortint unsigned port,
                                   byte unsigned vc, byte unsigned reason, byte unsigned op,
                                   byte unsigned status, longint unsigned id, int len);
    case (kind)
      ETHLINK_EVENT_LINK_UP: begin
        $display("  t=%0d ns  %s port %0d: link up", now_ns(), node_name[node], port);
        links_up++;
      end
      ETHLINK_EVENT_LINK_DOWN: begin
        $display("  t=%0d ns  %s port %0d: link down (reason %0d)", now_ns(), node_name[node],
                 port, reason);
        links_down++;
      end
      ETHLINK_EVENT_LOST: begin
        $display("  t=%0d ns  %s: a payload was lost (reason %0d)", now_ns(), node_name[node],
                 reason);
        lost++;
      end
      ETHLINK_EVENT_DELIVERED: link_delivered(node, vc, len);
      ETHLINK_EVENT_COMPLETION: endpoint_completion(node, op, status, id, len);
      default: $fatal(1, "%s: an event of unknown kind %0d", node_name[node], kind);
    endcase
  endfunction

  // One visit of the loop at the current time.
  function automatic void step();
    longint unsigned now = now_ns();
    // Arrivals.
    for (int w = 0; w < n_wires; w++) begin
      // (Verilator evaluates both sides of && here: test the queue and the time apart.)
      while (wire_q[w].size() > 0) begin
        frame_c f;
        if (wire_q[w][0].at > now) break;
        f = wire_q[w].pop_front();
        for (int j = 0; j < f.len; j++) in_buf[j] = f.bytes[j];
        ok(ethlink_dpi_handle_frame(node_h[wire_to_node[w]], wire_to_port[w], now, in_buf,
                                    f.len), "ethlink_dpi_handle_frame");
      end
    end
    // Timers.
    for (int n = 0; n < n_nodes; n++) begin
      longint unsigned deadline;
      int rc = ethlink_dpi_poll_timeout(node_h[n], deadline);
      ok(rc, "ethlink_dpi_poll_timeout");
      if (rc == ETHLINK_OK && deadline <= now)
        ok(ethlink_dpi_handle_timeout(node_h[n], now), "ethlink_dpi_handle_timeout");
    end
    // Transmission.
    for (int n = 0; n < n_nodes; n++) begin
      forever begin
        shortint unsigned port;
        int len;
        int w;
        frame_c f;
        int rc = ethlink_dpi_poll_transmit(node_h[n], now, port, tx_buf, len);
        ok(rc, "ethlink_dpi_poll_transmit");
        if (rc == ETHLINK_NONE) break;
        w = int'(port) < MAX_PORTS ? out_wire[n][int'(port)] : -1;
        if (w < 0) $fatal(1, "%s sent on port %0d, which has no cable", node_name[n], port);
        if (wire_q[w].size() >= WIRE_FRAMES) $fatal(1, "wire %0d holds too many frames", w);
        f = new;
        f.at = now + WIRE_NS;
        f.len = len;
        f.bytes = new[len];
        for (int j = 0; j < len; j++) f.bytes[j] = tx_buf[j];
        tap(w, f);
        wire_q[w].push_back(f);
      end
    end
    // Events.
    for (int n = 0; n < n_nodes; n++) begin
      forever begin
        int unsigned kind;
        shortint unsigned port;
        byte unsigned vc, reason, op, status;
        longint unsigned id;
        int len;
        int rc = ethlink_dpi_poll_event(node_h[n], kind, port, vc, reason, op, status, id,
                                        ev_buf, len);
        ok(rc, "ethlink_dpi_poll_event");
        if (rc == ETHLINK_NONE) break;
        on_event(n, kind, port, vc, reason, op, status, id, len);
      end
    end
  endfunction

  always @(posedge clk) if (looping) step();

  // Waits for `cycles` rising edges.
  task automatic cycles(int n);
    repeat (n) @(posedge clk);
  endtask

  // ---------------------------------------------------------------------------------------------
  // Test 1: two link ends, one damaged DATA frame

  localparam int LINK_PAYLOADS = 48;
  localparam int LINK_VCS = 2;
  // The first transmission of this DATA frame (counting from 1) gets a bit flipped; +damage=N
  // chooses another, +damage=0 none (the test then fails: no NACK, no replay).
  int damage_at = 5;

  frame_c submitted[LINK_VCS][$];
  int delivered[LINK_VCS];
  int n_delivered = 0;
  // What the taps see: DATA frames sent for the first time and again, NACKs.
  int first_sends = 0;
  int replays_seen = 0;
  int nacks_seen = 0;
  int damaged = 0;
  int unsigned damaged_seq = 0;
  int unsigned expected_seq = 0;
  bit have_seq = 0;
  int unsigned first_nack_last_good = 0;
  int unsigned first_replay_seq = 0;
  bit out_of_sequence = 0;

  // Wire 0 carries A to B, wire 1 B to A.
  function automatic void link_tap(int w, frame_c f);
    byte unsigned kind = frame_kind(f);
    int unsigned seq = frame_seq(f);
    if (w == 0 && kind == KIND_DATA) begin
      if (frame_replay(f)) begin
        if (replays_seen == 0) first_replay_seq = seq;
        replays_seen++;
        return;
      end
      // First transmissions take consecutive sequence numbers.
      if (have_seq && seq != expected_seq) out_of_sequence = 1;
      have_seq = 1;
      expected_seq = (seq + 1) & 32'hfffff;
      first_sends++;
      if (first_sends == damage_at) begin
        f.bytes[f.len/2] ^= 8'h10;
        damaged++;
        damaged_seq = seq;
        $display("  t=%0d ns  one bit of DATA frame seq %0d (%0d bytes) is flipped on the wire",
                 now_ns(), seq, f.len);
      end
    end else if (w == 1 && kind == KIND_NACK) begin
      if (nacks_seen == 0) first_nack_last_good = seq;
      nacks_seen++;
      $display("  t=%0d ns  B sends a NACK, last good seq %0d", now_ns(), seq);
    end
  endfunction

  // Payload i: the network header (destination GPU 2, source GPU 1, path 0, one transaction,
  // body length), then a body whose length and bytes depend on i.
  function automatic frame_c make_payload(int i);
    frame_c p = new;
    int body = 24 + (i * 53) % 700;
    p.len = 8 + body;
    p.bytes = new[p.len];
    p.bytes[0] = 8'h00;
    p.bytes[1] = 8'h02;
    p.bytes[2] = 8'h00;
    p.bytes[3] = 8'h01;
    p.bytes[4] = 8'h00;
    p.bytes[5] = 8'h01;
    p.bytes[6] = byte'(body >> 8);
    p.bytes[7] = byte'(body);
    for (int j = 0; j < body; j++) p.bytes[8+j] = byte'(i * 7 + j * 13 + 5);
    return p;
  endfunction

  // A payload delivered at B must be the next one submitted on its VC.
  function automatic void link_delivered(int node, byte unsigned vc, int len);
    frame_c want;
    int v = int'(vc);
    if (node != 1) $fatal(1, "%s delivered a payload; only B receives", node_name[node]);
    if (v >= LINK_VCS) $fatal(1, "B delivered a payload on VC %0d, never used", vc);
    if (submitted[v].size() == 0)
      $fatal(1, "B delivered a payload on VC %0d beyond those submitted (a duplicate)", vc);
    want = submitted[v].pop_front();
    if (len != want.len)
      $fatal(1, "payload %0d of VC %0d: %0d bytes delivered, %0d submitted", delivered[v], vc,
             len, want.len);
    for (int j = 0; j < len; j++)
      if (ev_buf[j] != want.bytes[j])
        $fatal(1, "payload %0d of VC %0d differs at byte %0d: %02x delivered, %02x submitted",
               delivered[v], vc, j, ev_buf[j], want.bytes[j]);
    delivered[v]++;
    n_delivered++;
  endfunction

  task automatic test_link();
    int unsigned a, b;
    int refusals = 0;
    longint unsigned limit;
    $display("two link ends, one damaged DATA frame");
    // A small transmit queue, so that submissions meet back-pressure.
    ok(ethlink_dpi_link_end_new(8'h0a, 64'd11, 4, a), "ethlink_dpi_link_end_new");
    ok(ethlink_dpi_link_end_new(8'h0b, 64'd12, 0, b), "ethlink_dpi_link_end_new");
    void'(add_node(a, "link end A"));
    void'(add_node(b, "link end B"));
    connect(0, 0, 1, 0);
    ok(ethlink_dpi_physical(a, 0, 1, now_ns()), "ethlink_dpi_physical");
    ok(ethlink_dpi_physical(b, 0, 1, now_ns()), "ethlink_dpi_physical");
    looping = 1;
    limit = now_ns() + 50_000;
    while (links_up < 2 && now_ns() < limit) cycles(1);
    check(links_up == 2, "both ends came up");

    // Payloads alternate between VC 0 and VC 1; a refused one is offered again a cycle later.
    for (int i = 0; i < LINK_PAYLOADS; i++) begin
      frame_c p = make_payload(i);
      int v = i % LINK_VCS;
      forever begin
        int rc;
        for (int j = 0; j < p.len; j++) in_buf[j] = p.bytes[j];
        rc = ethlink_dpi_link_submit(a, byte'(v), in_buf, p.len);
        if (rc == ETHLINK_ERR_REFUSED) begin
          refusals++;
          cycles(1);
          continue;
        end
        ok(rc, "ethlink_dpi_link_submit");
        break;
      end
      submitted[v].push_back(p);
    end
    limit = now_ns() + 500_000;
    while (n_delivered < LINK_PAYLOADS && now_ns() < limit) cycles(1);
    // Let the link settle: a late duplicate would show here.
    cycles(20_000 / CLK_NS);
    looping = 0;

    $display("  delivered at B: %0d on VC 0, %0d on VC 1; A's submissions refused %0d times",
             delivered[0], delivered[1], refusals);
    $display("  on the wires: %0d first sends, %0d replayed DATA frames, %0d NACKs", first_sends,
             replays_seen, nacks_seen);
    $display("  B: rx_fcs_errors=%0d nacks_sent=%0d; A: nacks_received=%0d replays_by_nack=%0d frames_replayed=%0d",
             counter(b, "rx_fcs_errors"), counter(b, "nacks_sent"), counter(a, "nacks_received"),
             counter(a, "replays_by_nack"), counter(a, "frames_replayed"));
    check(refusals > 0, "A's transmit queue pushed back and the testbench retried");
    if (damage_at != 0) check(damaged == 1, "one DATA frame was damaged on the wire");
    check(!out_of_sequence, "first transmissions took consecutive sequence numbers");
    check(counter(b, "rx_fcs_errors") == 1, "B counted the damaged frame's FCS error");
    check(nacks_seen >= 1 && counter(b, "nacks_sent") == longint'(nacks_seen),
           "B sent a NACK, as many as the wire carried");
    check(first_nack_last_good == seq_minus_one(damaged_seq),
           "the NACK names the frame before the damaged one as last good");
    check(counter(a, "nacks_received") == longint'(nacks_seen), "A received every NACK");
    check(counter(a, "replays_by_nack") >= 1, "A replayed because of the NACK");
    check(replays_seen >= 1 && counter(a, "frames_replayed") == longint'(replays_seen),
           "A's replayed frames carried the REPLAY flag on the wire");
    check(first_replay_seq == damaged_seq, "the replay started with the damaged frame");
    check(n_delivered == LINK_PAYLOADS && submitted[0].size() == 0 && submitted[1].size() == 0,
           "every payload delivered once, in order on its VC, byte for byte");
    check(lost == 0 && links_down == 0, "no payload lost, no link down");
    ok(ethlink_dpi_destroy(a), "ethlink_dpi_destroy");
    ok(ethlink_dpi_destroy(b), "ethlink_dpi_destroy");
    clear_topology();
  endtask

  // ---------------------------------------------------------------------------------------------
  // Test 2: two endpoints through a switch

  localparam shortint unsigned GPU_A = 1;
  localparam shortint unsigned GPU_B = 2;
  localparam int unsigned KEY = 7;
  localparam longint unsigned BASE = 64'h10000;
  localparam int REGION = 8192;
  localparam int STORES = 16;

  // B's memory as the testbench expects it, from BASE.
  byte unsigned shadow[REGION];
  completion_c done[longint unsigned];
  int unsigned lcg = 32'h1234_5678;
  int unsigned ep_a, ep_b, sw;

  function automatic byte unsigned next_byte();
    lcg = lcg * 32'd1664525 + 32'd1013904223;
    return lcg[31:24];
  endfunction

  function automatic void endpoint_completion(int node, byte unsigned op, byte unsigned status,
                                              longint unsigned id, int len);
    completion_c c = new;
    // Fences and load-store operations number their ids apart: keep them apart here too.
    longint unsigned key = {op, id[55:0]};
    if (node != 0) $fatal(1, "%s reported a completion; only A issues", node_name[node]);
    if (done.exists(key) != 0) $fatal(1, "a second completion for op %0d id %0d", op, id);
    if (len > ETHLINK_DPI_MAX_LS) $fatal(1, "a completion with %0d bytes of data", len);
    c.op = op;
    c.status = status;
    c.len = len;
    for (int j = 0; j < len; j++) c.data[j] = ev_buf[j];
    done[key] = c;
  endfunction

  // Waits for the completion of op `op` with id `id`, and takes it.
  task automatic await_completion(byte unsigned op, longint unsigned id, output completion_c c);
    longint unsigned key = {op, id[55:0]};
    longint unsigned limit = now_ns() + 200_000;
    while (done.exists(key) == 0 && now_ns() < limit) cycles(1);
    if (done.exists(key) == 0) $fatal(1, "no completion for op %0d id %0d within 200 us", op, id);
    c = done[key];
    done.delete(key);
  endtask

  function automatic bit memory_matches();
    ls_bytes_t data;
    for (int off = 0; off < REGION; off += ETHLINK_DPI_MAX_LS) begin
      ok(ethlink_dpi_endpoint_mem_read(ep_b, ETHLINK_SPACE_GLOBAL, BASE + longint'(off), data,
                                       ETHLINK_DPI_MAX_LS), "ethlink_dpi_endpoint_mem_read");
      for (int j = 0; j < ETHLINK_DPI_MAX_LS; j++)
        if (data[j] != shadow[off+j]) begin
          $display("  B's memory at +%0d holds %02x, expected %02x", off + j, data[j],
                   shadow[off+j]);
          return 0;
        end
    end
    return 1;
  endfunction

  function automatic longint unsigned shadow_u64(int off);
    longint unsigned v = 0;
    for (int j = 7; j >= 0; j--) v = (v << 8) | longint'(shadow[off+j]);
    return v;
  endfunction

  function automatic void shadow_set_u64(int off, longint unsigned v);
    for (int j = 0; j < 8; j++) shadow[off+j] = byte'(v >> (8 * j));
  endfunction

  function automatic longint unsigned data_u64(completion_c c);
    longint unsigned v = 0;
    for (int j = 7; j >= 0; j--) v = (v << 8) | longint'(c.data[j]);
    return v;
  endfunction

  // DATA frames the switch sent on a port, over its four VCs.
  function automatic longint unsigned switch_tx(int port);
    longint unsigned n = 0;
    for (int vc = 0; vc < 4; vc++) n += counter(sw, $sformatf("port%0d.tx_frames.vc%0d", port, vc));
    return n;
  endfunction

  // An atomic of width 8 at offset `off`; returns the old value it reports.
  task automatic atomic(byte unsigned kind, int off, longint unsigned value,
                        longint unsigned compare, output longint unsigned old);
    shortint unsigned tag;
    completion_c c;
    ok(ethlink_dpi_endpoint_atomic(ep_a, now_ns(), kind, GPU_B, ETHLINK_SPACE_GLOBAL, KEY,
                                   BASE + longint'(off), 8, value, compare, tag),
       "ethlink_dpi_endpoint_atomic");
    await_completion(ETHLINK_OP_LS, longint'(tag), c);
    if (c.status != ETHLINK_STATUS_OK || c.len != 8)
      $fatal(1, "atomic %0d: status %0d, %0d bytes", kind, c.status, c.len);
    old = data_u64(c);
  endtask

  task automatic test_endpoint();
    int store_off[STORES];
    int store_len[STORES];
    shortint unsigned tags[STORES];
    longint unsigned fence_id;
    longint unsigned limit;
    int all_ok;
    completion_c c;
    ls_bytes_t data;
    $display("two endpoints through a switch");
    ok(ethlink_dpi_endpoint_new(GPU_A, 64'd21, ep_a), "ethlink_dpi_endpoint_new");
    ok(ethlink_dpi_endpoint_new(GPU_B, 64'd22, ep_b), "ethlink_dpi_endpoint_new");
    ok(ethlink_dpi_switch_new(2, 64'd23, sw), "ethlink_dpi_switch_new");
    ok(ethlink_dpi_switch_route(sw, GPU_A, 0), "ethlink_dpi_switch_route");
    ok(ethlink_dpi_switch_route(sw, GPU_B, 1), "ethlink_dpi_switch_route");
    void'(add_node(ep_a, "endpoint A"));
    void'(add_node(ep_b, "endpoint B"));
    void'(add_node(sw, "switch"));
    connect(0, 0, 2, 0);  // wires 0 (A to switch) and 1 (switch to A)
    connect(1, 0, 2, 1);  // wires 2 (B to switch) and 3 (switch to B)
    ok(ethlink_dpi_physical(ep_a, 0, 1, now_ns()), "ethlink_dpi_physical");
    ok(ethlink_dpi_physical(ep_b, 0, 1, now_ns()), "ethlink_dpi_physical");
    ok(ethlink_dpi_physical(sw, 0, 1, now_ns()), "ethlink_dpi_physical");
    ok(ethlink_dpi_physical(sw, 1, 1, now_ns()), "ethlink_dpi_physical");
    looping = 1;
    limit = now_ns() + 50_000;
    while (links_up < 4 && now_ns() < limit) cycles(1);
    check(links_up == 4, "all four link ends came up");

    // B's region, filled with a pattern written directly.
    ok(ethlink_dpi_endpoint_register(ep_b, ETHLINK_SPACE_GLOBAL, BASE, longint'(REGION), KEY,
                                     ETHLINK_PERM_READ | ETHLINK_PERM_WRITE | ETHLINK_PERM_ATOMIC),
       "ethlink_dpi_endpoint_register");
    for (int i = 0; i < REGION; i++) shadow[i] = next_byte();
    for (int off = 0; off < REGION; off += ETHLINK_DPI_MAX_LS) begin
      for (int j = 0; j < ETHLINK_DPI_MAX_LS; j++) data[j] = shadow[off+j];
      ok(ethlink_dpi_endpoint_mem_write(ep_b, ETHLINK_SPACE_GLOBAL, BASE + longint'(off), data,
                                        ETHLINK_DPI_MAX_LS), "ethlink_dpi_endpoint_mem_write");
    end

    // Stores of 1 to 256 bytes, all outstanding at once, then a fence.
    for (int k = 0; k < STORES; k++) begin
      store_off[k] = k * 512 + (k * 7) % 64;
      store_len[k] = 1 + (k * 97 + 40) % 256;
      for (int j = 0; j < store_len[k]; j++) begin
        data[j] = next_byte();
        shadow[store_off[k]+j] = data[j];
      end
      ok(ethlink_dpi_endpoint_store(ep_a, now_ns(), GPU_B, ETHLINK_SPACE_GLOBAL, KEY,
                                    BASE + longint'(store_off[k]), 0, 0, data, store_len[k],
                                    tags[k]), "ethlink_dpi_endpoint_store");
    end
    ok(ethlink_dpi_endpoint_fence(ep_a, now_ns(), fence_id), "ethlink_dpi_endpoint_fence");
    await_completion(ETHLINK_OP_FENCE, fence_id, c);
    check(c.status == ETHLINK_STATUS_OK, "the fence after the stores completed OK");
    all_ok = 1;
    for (int k = 0; k < STORES; k++) begin
      longint unsigned key = {ETHLINK_OP_LS, 40'h0, tags[k]};
      if (done.exists(key) == 0) all_ok = 0;
      else begin
        if (done[key].status != ETHLINK_STATUS_OK || done[key].len != 0) all_ok = 0;
        done.delete(key);
      end
    end
    $display("  t=%0d ns  %0d stores and a fence completed", now_ns(), STORES);
    check(all_ok == 1, "every store completed OK before the fence did");
    check(memory_matches(), "B's memory holds every byte stored, and nothing else changed");

    // Loads of the same bytes, all outstanding at once.
    for (int k = 0; k < STORES; k++)
      ok(ethlink_dpi_endpoint_load(ep_a, now_ns(), GPU_B, ETHLINK_SPACE_GLOBAL, KEY,
                                   BASE + longint'(store_off[k]), 0, 0, store_len[k], tags[k]),
         "ethlink_dpi_endpoint_load");
    all_ok = 1;
    for (int k = 0; k < STORES; k++) begin
      await_completion(ETHLINK_OP_LS, longint'(tags[k]), c);
      if (c.status != ETHLINK_STATUS_OK || c.len != store_len[k]) all_ok = 0;
      for (int j = 0; j < c.len && all_ok == 1; j++)
        if (c.data[j] != shadow[store_off[k]+j]) all_ok = 0;
    end
    $display("  t=%0d ns  %0d loads completed", now_ns(), STORES);
    check(all_ok == 1, "every load returned the bytes stored");

    // An ordered stream: a store and a load of the same bytes issued together; the load sees
    // the store.
    begin
      shortint unsigned st, ld;
      completion_c cs, cl;
      int off = 3000;
      for (int j = 0; j < 32; j++) begin
        data[j] = next_byte();
        shadow[off+j] = data[j];
      end
      ok(ethlink_dpi_endpoint_store(ep_a, now_ns(), GPU_B, ETHLINK_SPACE_GLOBAL, KEY,
                                    BASE + longint'(off), 1, 5, data, 32, st),
         "ethlink_dpi_endpoint_store");
      ok(ethlink_dpi_endpoint_load(ep_a, now_ns(), GPU_B, ETHLINK_SPACE_GLOBAL, KEY,
                                   BASE + longint'(off), 1, 5, 32, ld),
         "ethlink_dpi_endpoint_load");
      await_completion(ETHLINK_OP_LS, longint'(st), cs);
      await_completion(ETHLINK_OP_LS, longint'(ld), cl);
      all_ok = int'(cs.status == ETHLINK_STATUS_OK && cl.status == ETHLINK_STATUS_OK && cl.len == 32);
      for (int j = 0; j < 32 && all_ok == 1; j++) if (cl.data[j] != data[j]) all_ok = 0;
      check(all_ok == 1, "in an ordered stream a load sees the store issued before it");
    end

    // Atomics on eight bytes.
    begin
      longint unsigned old, prior;
      int off = 4096;
      prior = shadow_u64(off);
      atomic(ETHLINK_LS_FETCH_ADD, off, 64'd1000, 0, old);
      shadow_set_u64(off, prior + 64'd1000);
      check(old == prior, "fetch-add returned the old value");
      atomic(ETHLINK_LS_COMPARE_SWAP, off, 64'h0123_4567_89ab_cdef, prior, old);
      check(old == prior + 64'd1000, "compare-swap with a stale value returned the current one");
      atomic(ETHLINK_LS_COMPARE_SWAP, off, 64'h0123_4567_89ab_cdef, prior + 64'd1000, old);
      shadow_set_u64(off, 64'h0123_4567_89ab_cdef);
      check(old == prior + 64'd1000, "compare-swap with the current value returned it");
      atomic(ETHLINK_LS_SWAP, off, 64'd42, 0, old);
      shadow_set_u64(off, 64'd42);
      check(old == 64'h0123_4567_89ab_cdef, "swap returned the value compare-swap stored");
      check(memory_matches(), "B's memory holds the results of the atomics");
    end

    // A store under a wrong key is refused by B and changes nothing.
    begin
      shortint unsigned t;
      for (int j = 0; j < 16; j++) data[j] = ~shadow[j];
      ok(ethlink_dpi_endpoint_store(ep_a, now_ns(), GPU_B, ETHLINK_SPACE_GLOBAL, KEY + 1, BASE, 0,
                                    0, data, 16, t), "ethlink_dpi_endpoint_store");
      await_completion(ETHLINK_OP_LS, longint'(t), c);
      check(c.status == ETHLINK_STATUS_ACCESS_VIOLATION,
             "a store under a wrong key completed with ACCESS_VIOLATION");
      check(memory_matches(), "and left B's memory as it was");
    end

    cycles(10_000 / CLK_NS);
    looping = 0;
    $display("  DATA frames on the wires: A to switch %0d, switch to B %0d, B to switch %0d, switch to A %0d",
             wire_data_frames[0], wire_data_frames[3], wire_data_frames[2], wire_data_frames[1]);
    $display("  switch: DATA frames sent to B %0d, to A %0d", switch_tx(1), switch_tx(0));
    check(wire_data_frames[3] > 0 && wire_data_frames[1] > 0,
           "the switch forwarded requests to B and responses to A");
    check(switch_tx(1) == longint'(wire_data_frames[3]) &&
          switch_tx(0) == longint'(wire_data_frames[1]),
          "the switch's counters agree with the DATA frames on the wires");
    check(done.size() == 0, "no completion arrived that was not waited for");
    check(lost == 0 && links_down == 0, "no link went down");
    ok(ethlink_dpi_destroy(ep_a), "ethlink_dpi_destroy");
    ok(ethlink_dpi_destroy(ep_b), "ethlink_dpi_destroy");
    ok(ethlink_dpi_destroy(sw), "ethlink_dpi_destroy");
    clear_topology();
  endtask

  // ---------------------------------------------------------------------------------------------

  initial begin
    #(WATCHDOG_NS);
    $fatal(1, "the test did not finish within %0d ns of simulated time", WATCHDOG_NS);
  end

  initial begin
    if (!$value$plusargs("test=%s", test_name)) test_name = "";
    if ($value$plusargs("damage=%d", damage_at)) $display("damaging DATA frame %0d", damage_at);
    ok(ethlink_dpi_open(), "ethlink_dpi_open");
    case (test_name)
      "link": test_link();
      "endpoint": test_endpoint();
      default: $fatal(1, "+test=link or +test=endpoint selects the test (got \"%s\")", test_name);
    endcase
    ethlink_dpi_close();
    $display("test %s passed at t=%0d ns", test_name, now_ns());
    $finish;
  end

endmodule
