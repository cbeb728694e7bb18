// One end of one EthLink link (docs/spec/link.md): bring-up with INIT and INIT_ECHO, link-level
// retry (go-back-N from a replay ring), credit-based flow control per VC with CF and CC, the
// receive pipeline of wire.md section 7, and the counters of Table LINK-T3 behind a register port.
//
// The datapath modules move bytes; this module holds the protocol state and decides, one action
// per cycle, in this order of priority: a multi-cycle action under way (taking the link down,
// a withdrawal), an input (the physical link, a released hold, a withdrawal, a received frame's
// verdict), a timer due, the next frame to send (LINK-3-15: INIT_ECHO, INIT, NACK, ACK, CF, CC,
// replayed frames, new frames), and one step of the scheduler of new frames. Timers are absolute
// tick counts compared with `now`, which advances on every cycle with `tick` high.
import el_pkg::ETHERTYPE;
import el_pkg::SEQ_W;
import el_pkg::SEQ_MASK;
import el_pkg::HALF;
import el_pkg::MFS_MAX;
import el_pkg::HDR_LEN;
import el_pkg::K_DATA;
import el_pkg::K_ACK;
import el_pkg::K_NACK;
import el_pkg::K_CF;
import el_pkg::K_CC;
import el_pkg::K_INIT;
import el_pkg::K_INIT_ECHO;
import el_pkg::F_ACK_REQ;
import el_pkg::UP_DELIVERED;
import el_pkg::UP_LOST_UNKNOWN;
import el_pkg::UP_LOST_MFS;
import el_pkg::UP_LOST_VC;
import el_pkg::UP_LOST_WITHDRAWN;
import el_pkg::UP_LINK_UP;
import el_pkg::UP_DOWN_FLUSH;
import el_pkg::UP_DOWN_PHYSICAL;
import el_pkg::UP_DOWN_RESTART;
import el_pkg::C_ACKS_SENT;
import el_pkg::C_ACKS_RECEIVED;
import el_pkg::C_NACKS_SENT;
import el_pkg::C_NACKS_RECEIVED;
import el_pkg::C_FRAMES_REPLAYED;
import el_pkg::C_REPLAYS_BY_NACK;
import el_pkg::C_REPLAY_TIMEOUTS;
import el_pkg::C_FLUSHES;
import el_pkg::C_FLUSHES_AGED;
import el_pkg::C_FRAMES_UNKNOWN_FATE;
import el_pkg::C_RX_FCS_ERRORS;
import el_pkg::C_RX_DAMAGED;
import el_pkg::C_RX_STOMPED;
import el_pkg::C_RX_FOREIGN;
import el_pkg::C_RX_BAD_VERSION;
import el_pkg::C_RX_UNKNOWN_KIND;
import el_pkg::C_RX_MALFORMED_CONTROL;
import el_pkg::C_RX_VC_NOT_AGREED;
import el_pkg::C_RX_NOT_UP;
import el_pkg::C_DUPLICATES;
import el_pkg::C_DISCARDED_AFTER_NACK;
import el_pkg::C_STALE_ACKS;
import el_pkg::C_STALE_CF_ENTRIES;
import el_pkg::C_STALE_CC_ENTRIES;
import el_pkg::C_CF_SENT;
import el_pkg::C_CF_RECEIVED;
import el_pkg::C_CC_SENT;
import el_pkg::C_CC_RECEIVED;
import el_pkg::C_INITS_SENT;
import el_pkg::C_INITS_RECEIVED;
import el_pkg::C_INIT_ECHOES_SENT;
import el_pkg::C_INIT_ECHOES_RECEIVED;
import el_pkg::C_INIT_ECHOES_IGNORED;
import el_pkg::C_INIT_REFUSED;
import el_pkg::C_INIT_TIMEOUTS;
import el_pkg::C_LINK_UPS;
import el_pkg::C_REINITS;
import el_pkg::C_OVERSIZE_FOR_PEER;
import el_pkg::C_NOT_AGREED_VC;
import el_pkg::C_FRAMES_WITHDRAWN;
import el_pkg::C_REPLAY_BYTES_MAX;
import el_pkg::C_REPLAY_FRAMES_MAX;
import el_pkg::C_RX_OCCUPIED_MAX_CREDITS;
import el_pkg::C_REPLAY_AGE_MAX;
import el_pkg::N_LINK_COUNTERS;
import el_pkg::V_TX_FRAMES;
import el_pkg::V_TX_BYTES;
import el_pkg::V_RX_FRAMES;
import el_pkg::V_RX_BYTES;
import el_pkg::V_CREDIT_OVERRUNS;
import el_pkg::V_CREDIT_STALLS;
import el_pkg::V_CREDIT_STALL_TICKS;
import el_pkg::V_CREDITS_RECOVERED;
import el_pkg::N_VC_COUNTERS;

module el_link_end #(
    parameter int W = 8,
    parameter int TICK_NS = 2,
    parameter int RPL_BYTES = 131072,
    parameter int RPL_FRAMES = 128,
    parameter int TXQ_BYTES = 65536,
    parameter int CNT_W = 64,
    parameter bit DEBUG = 0
) (
    input  logic           clk,
    input  logic           rst_n,
    input  logic           tick,
    input  logic           phy_up,
    input  logic [    7:0] hold,
    input  logic           withdraw,
    // MAC receive
    input  logic [8*W-1:0] s_rx_tdata,
    input  logic [  W-1:0] s_rx_tkeep,
    input  logic           s_rx_tlast,
    input  logic           s_rx_tvalid,
    output logic           s_rx_tready,
    // MAC transmit
    output logic [8*W-1:0] m_tx_tdata,
    output logic [  W-1:0] m_tx_tkeep,
    output logic           m_tx_tlast,
    output logic           m_tx_tvalid,
    input  logic           m_tx_tready,
    // upper layer: submissions
    input  logic [8*W-1:0] s_sub_tdata,
    input  logic [  W-1:0] s_sub_tkeep,
    input  logic           s_sub_tlast,
    input  logic [    2:0] s_sub_tuser,
    input  logic           s_sub_tvalid,
    output logic           s_sub_tready,
    // upper layer: deliveries, losses, events
    output logic [8*W-1:0] m_up_tdata,
    output logic [  W-1:0] m_up_tkeep,
    output logic           m_up_tlast,
    output logic [    6:0] m_up_tuser,
    output logic           m_up_tvalid,
    input  logic           m_up_tready,
    // registers
    input  logic [    7:0] reg_addr,
    input  logic           reg_wr,
    input  logic [   63:0] reg_wdata,
    input  logic           reg_rd,
    output logic [   63:0] reg_rdata,
    output logic           quiet
);
  localparam int QW = TXQ_BYTES / W;
  localparam int QAW = $clog2(QW);
  localparam int RING_WORDS = RPL_BYTES / W;
  localparam int RAW = $clog2(RING_WORDS);
  localparam int DAW = $clog2(RPL_FRAMES);
  localparam int SLOT_WORDS = (MFS_MAX + 4 + W - 1) / W;
  localparam int RXAW = $clog2(2 * SLOT_WORDS);
  localparam logic [47:0] DEFAULT_DST = 48'h0180C200000E;

  // ceil(ns / TICK_NS), for the reset values of the timer registers.
  function automatic logic [31:0] ticks(input int ns);
    ticks = 32'((ns + TICK_NS - 1) / TICK_NS);
  endfunction

  // ------------------------------------------------------------------ configuration registers

  logic [3:0] cfg_vcs;
  logic [15:0] cfg_csize;
  logic [SEQ_W-1:0] cfg_rx_credits, cfg_window;
  logic [7:0] cfg_ovh, cfg_rcmax;
  logic [13:0] cfg_mfs;
  logic [SEQ_W-1:0] cfg_rmf;
  logic [31:0] cfg_rmb, cfg_ack_spacing, cfg_ack_timer, cfg_replay_timer, cfg_cf_min_credits;
  logic [31:0] cfg_cf_min_int, cfg_cf_max_int, cfg_cc_int, cfg_init_int, cfg_init_to;
  logic [31:0] cfg_max_age;
  logic [63:0] cfg_seed;
  logic [47:0] cfg_mac;

  // ------------------------------------------------------------------ state

  typedef enum logic [1:0] {
    L_OFF,
    L_INIT,
    L_UP
  } link_e;
  typedef enum logic [1:0] {
    R_OFF,
    R_SEND_ACKS,
    R_SEND_NACK,
    R_NACK_SENT
  } rxs_e;
  // Multi-cycle actions.
  typedef enum logic [3:0] {
    M_NONE,
    M_DOWN_EVENT,   // leaving UP: the link_down event
    M_DOWN_LOST,    // then every frame of the replay ring, of unknown fate (LINK-6-7)
    M_DOWN_WAIT,    // then the streamer reads them before the ring is reused
    M_WD_VC,        // a withdrawal (or VCs not agreed at UP): the next VC with images
    M_WD_READ,      // the image's length is being read
    M_WD_PUSH,      // its loss is queued for the upper layer
    M_WD_WAIT,      // the streamer reads them before the queues are cleared
    M_WAIT_TX       // a withdrawal waits for the frame on the wire to finish
  } macro_e;
  typedef enum logic [1:0] {
    D_FLUSH,
    D_PHYSICAL,
    D_RESTART
  } down_e;
  // The scheduler of new frames.
  typedef enum logic [2:0] {
    P_SCAN,
    P_WAIT,
    P_EVAL
  } sched_e;

  logic [47:0] now;
  logic phys_seen;
  link_e state;
  macro_e macro;
  down_e down_reason;
  logic [3:0] wd_reason;  // UP_LOST_WITHDRAWN or UP_LOST_VC
  logic [7:0] wd_mask;  // VCs a withdrawal takes
  logic [2:0] wd_vc;
  logic [QAW-1:0] wd_ptr;
  logic [15:0] wd_left;
  logic [7:0] wd_clear;

  logic [31:0] rng, nonce;
  logic [47:0] peer_mac;
  logic peer_mac_valid;
  logic [31:0] p_nonce;
  logic [3:0] p_vcs;
  logic [7:0] p_ovh;
  logic [15:0] p_csize;
  logic [13:0] p_mfs;
  logic [SEQ_W-1:0] p_window;
  logic [7:0][SEQ_W-1:0] p_grant;
  logic echo_due_valid, echoed_valid;
  logic [31:0] echo_due, echoed;
  logic init_next_valid, init_dl_valid;
  logic [47:0] init_next, init_dl;

  logic [7:0] hold_seen, held_stale;
  logic [7:0][SEQ_W:0] held_cur;

  // transmit side of LLR
  logic [SEQ_W-1:0] tx_seq;
  logic [RAW-1:0] d_start[RPL_FRAMES];
  logic [13:0] d_clen[RPL_FRAMES], d_plen[RPL_FRAMES];
  logic [2:0] d_vc[RPL_FRAMES];
  logic [47:0] d_t0[RPL_FRAMES];
  logic [31:0] d_cum[RPL_FRAMES];
  logic [DAW:0] d_head, d_tail;
  logic [31:0] total_bytes;
  logic [RAW-1:0] ring_tail;
  logic rn_valid, replay_sent_first;
  logic [DAW:0] rn;  // the next frame to send again
  logic [7:0] replay_count;
  logic replay_dl_valid, cc_dl_valid;
  logic [47:0] replay_dl, cc_dl;
  logic [7:0][SEQ_W-1:0] consumed, freed_seen;
  logic [7:0] stall_valid;
  logic [47:0] stall_since[8];
  logic [2:0] rr;
  logic pop_pending, pop_now;
  logic [2:0] pop_pending_vc;
  logic [QAW:0] pop_pending_words;

  // receive side
  rxs_e rx_state;
  logic [SEQ_W-1:0] expected, last_good, remembered;
  logic remembered_valid, dup_run, ack_due, nack_due, ack_dl_valid, last_cf_valid, cf_due;
  logic cf_max_dl_valid, gate_open;
  logic [31:0] dup_bytes, bytes_since_ack, freed_since_cf;
  logic [47:0] ack_dl, last_cf, cf_max_dl;
  logic [7:0][SEQ_W-1:0] received, freed;

  logic [N_LINK_COUNTERS-1:0][CNT_W-1:0] cnt;
  logic [8*N_VC_COUNTERS-1:0][CNT_W-1:0] vcnt;

  // scheduler
  sched_e sched;
  logic [3:0] sc_i;
  logic [2:0] sc_vc;

  // ------------------------------------------------------------------ the datapath

  logic [8*QAW-1:0] q_head_flat;
  logic [8*16-1:0] q_frames_flat;
  logic [QAW-1:0] q_head[8];
  logic [15:0] q_frames[8];
  always_comb
    for (int v = 0; v < 8; v++) begin
      q_head[v] = q_head_flat[QAW*v+:QAW];
      q_frames[v] = q_frames_flat[16*v+:16];
    end

  logic sub_busy, q_pop;
  logic [2:0] q_pop_vc;
  logic [QAW:0] q_pop_words;
  logic [7:0] q_clear;
  logic [QAW+2:0] q_raddr_a, q_raddr_b, ctl_qaddr;
  logic [8*W-1:0] q_rdata_a, q_rdata_b;

  el_sub #(
      .W(W),
      .TXQ_BYTES(TXQ_BYTES)
  ) sub (
      .clk,
      .rst_n,
      .s_tdata(s_sub_tdata),
      .s_tkeep(s_sub_tkeep),
      .s_tlast(s_sub_tlast),
      .s_tuser(s_sub_tuser),
      .s_tvalid(s_sub_tvalid),
      .s_tready(s_sub_tready),
      .cfg_mfs,
      .head(q_head_flat),
      .frames(q_frames_flat),
      .pop_valid(q_pop),
      .pop_vc(q_pop_vc),
      .pop_words(q_pop_words),
      .clear(q_clear),
      .pinned(lost_out_nz),
      .busy(sub_busy),
      .raddr_a(q_raddr_a),
      .rdata_a(q_rdata_a),
      .raddr_b(q_raddr_b),
      .rdata_b(q_rdata_b)
  );

  // the receive pipeline
  logic v_valid, v_take, v_slot, v_pay_bad, rx_busy, rx_free_valid, rx_free_slot;
  logic [3:0] v_class, v_kind, v_vcs;
  logic [15:0] v_len, v_csize;
  logic [2:0] v_vc;
  logic [4:0] v_flags, v_pay_off;
  logic [SEQ_W-1:0] v_seq, v_window;
  logic [47:0] v_src;
  logic [13:0] v_pay_len, v_mfs;
  logic [31:0] v_nonce, v_echo;
  logic [7:0] v_ovh, v_mask;
  logic [8*SEQ_W-1:0] v_val;
  logic [RXAW-1:0] rx_raddr;
  logic [8*W-1:0] rx_rdata;
  logic [13:0] mfs_in_force;

  el_rx #(
      .W(W),
      .SLOT_WORDS(SLOT_WORDS)
  ) rx (
      .clk,
      .rst_n,
      .s_tdata(s_rx_tdata),
      .s_tkeep(s_rx_tkeep),
      .s_tlast(s_rx_tlast),
      .s_tvalid(s_rx_tvalid),
      .s_tready(s_rx_tready),
      .mfs_in_force,
      .v_valid,
      .v_take,
      .v_keep(up_cmd_free),
      .v_class,
      .v_len,
      .v_kind,
      .v_vc,
      .v_flags,
      .v_seq,
      .v_src,
      .v_slot,
      .v_pay_off,
      .v_pay_len,
      .v_pay_bad,
      .v_nonce,
      .v_echo,
      .v_vcs,
      .v_ovh,
      .v_csize,
      .v_mfs,
      .v_window,
      .v_mask,
      .v_val,
      .free_valid(rx_free_valid),
      .free_slot(rx_free_slot),
      .busy(rx_busy),
      .raddr(rx_raddr),
      .rdata(rx_rdata)
  );

  // the transmitter
  logic tx_cmd_valid, tx_cmd_ready, tx_busy, tx_sent;
  logic [1:0] tx_cmd_src;
  logic [8*80-1:0] tx_cbuf;
  logic [8*20-1:0] tx_hdr;
  logic [13:0] tx_clen, tx_plen;
  logic [RAW-1:0] tx_raddr, ring_raddr_b;
  logic [8*W-1:0] ring_rdata_b;

  el_tx #(
      .W(W),
      .RING_WORDS(RING_WORDS),
      .QAW(QAW)
  ) tx (
      .clk,
      .rst_n,
      .cmd_valid(tx_cmd_valid),
      .cmd_ready(tx_cmd_ready),
      .cmd_src(tx_cmd_src),
      .cmd_cbuf(tx_cbuf),
      .cmd_hdr(tx_hdr),
      .cmd_clen(tx_clen),
      .cmd_plen(tx_plen),
      .cmd_qaddr(ctl_qaddr),
      .cmd_raddr(tx_raddr),
      .busy(tx_busy),
      .sent(tx_sent),
      .q_raddr(q_raddr_a),
      .q_rdata(q_rdata_a),
      .ring_raddr_b,
      .ring_rdata_b,
      .m_tdata(m_tx_tdata),
      .m_tkeep(m_tx_tkeep),
      .m_tlast(m_tx_tlast),
      .m_tvalid(m_tx_tvalid),
      .m_tready(m_tx_tready)
  );

  // the upper-layer streamer
  logic up_cmd_valid, up_cmd_ready, up_idle, up_cmd_free;
  logic [1:0] up_cmd_src, up_rsrc;
  logic [19:0] up_cmd_addr;
  // The streamer's read address is as wide as its commands' addresses; each RAM takes the low
  // bits it needs (RXAW, QAW + 3 or RAW of them), so the top bits are read only by a RAM that
  // needs all 20: deliberately partly unused.
  /* verilator lint_off UNUSEDSIGNAL */
  logic [19:0] up_raddr;
  /* verilator lint_on UNUSEDSIGNAL */
  logic [4:0] up_cmd_off;
  logic [13:0] up_cmd_len;
  logic [6:0] up_cmd_user;
  logic [8*W-1:0] up_rdata;
  logic up_done;
  logic [1:0] up_done_src;
  logic [2:0] up_done_vc;
  // Losses from the submission queues still being streamed, per VC: their room is kept.
  logic [7:0][15:0] lost_out;
  logic [7:0] lost_out_nz;
  always_comb for (int v = 0; v < 8; v++) lost_out_nz[v] = lost_out[v] != 0;
  always_ff @(posedge clk) begin
`ifndef SYNTHESIS  // Yosys has no $fdisplay
    if (DEBUG && up_cmd_valid && up_cmd_ready) $fdisplay(32'h80000002, "t=%0d upcmd src=%0d addr=%0d len=%0d user=%h", now, up_cmd_src, up_cmd_addr, up_cmd_len, up_cmd_user);
`endif
    if (!rst_n) lost_out <= '0;
    else
      for (int v = 0; v < 8; v++)
        lost_out[v] <= lost_out[v]
            + ((up_cmd_valid && up_cmd_ready && up_cmd_src == 2'd1 && up_cmd_user[2:0] == 3'(v))
               ? 16'd1 : 16'd0)
            - ((up_done && up_done_src == 2'd1 && up_done_vc == 3'(v)) ? 16'd1 : 16'd0);
  end

  el_up #(
      .W(W)
  ) up (
      .clk,
      .rst_n,
      .cmd_valid(up_cmd_valid),
      .cmd_ready(up_cmd_ready),
      .cmd_src(up_cmd_src),
      .cmd_addr(up_cmd_addr),
      .cmd_off(up_cmd_off),
      .cmd_len(up_cmd_len),
      .cmd_user(up_cmd_user),
      .cmd_free(up_cmd_free),
      .cmd_slot(v_slot),
      .idle(up_idle),
      .rsrc(up_rsrc),
      .raddr(up_raddr),
      .rdata(up_rdata),
      .free_valid(rx_free_valid),
      .free_slot(rx_free_slot),
      .done_valid(up_done),
      .done_src(up_done_src),
      .done_vc(up_done_vc),
      .m_tdata(m_up_tdata),
      .m_tkeep(m_up_tkeep),
      .m_tlast(m_up_tlast),
      .m_tuser(m_up_tuser),
      .m_tvalid(m_up_tvalid),
      .m_tready(m_up_tready)
  );

  assign rx_raddr = RXAW'(up_raddr);
  assign q_raddr_b = (QAW + 3)'(up_raddr);
  assign ring_raddr_b = RAW'(up_raddr);
  always_comb
    case (up_rsrc)
      2'd0: up_rdata = rx_rdata;
      2'd1: up_rdata = q_rdata_b;
      default: up_rdata = ring_rdata_b;
    endcase

  // ------------------------------------------------------------------ derived values

  logic [3:0] agreed_vcs;
  logic [13:0] agreed_mfs;
  logic [SEQ_W-1:0] window;
  logic [DAW:0] rcount;  // frames in the replay ring
  logic [SEQ_W:0] limit;
  logic [31:0] replay_bytes;
  logic aged;
  logic [4:0] own_cshift, peer_cshift;
  logic holds_stale;
  always_comb begin
    agreed_vcs = (cfg_vcs < p_vcs) ? cfg_vcs : p_vcs;
    agreed_mfs = (cfg_mfs < p_mfs) ? cfg_mfs : p_mfs;
    window = (cfg_window < p_window) ? cfg_window : p_window;
    mfs_in_force = (state == L_UP) ? agreed_mfs : cfg_mfs;
    rcount = d_tail - d_head;
    limit = {1'b0, (window < cfg_rmf) ? window : cfg_rmf};
    replay_bytes = (rcount == 0) ? 32'd0 : total_bytes - d_cum[d_head[DAW-1:0]];
    aged = state == L_UP && rcount != 0
        && d_t0[d_head[DAW-1:0]] + 48'(cfg_max_age) <= now;
    own_cshift = el_pkg::log2_pow2(cfg_csize);
    peer_cshift = el_pkg::log2_pow2(p_csize);
    holds_stale = held_stale != 0;
  end

  // LINK-2-12: the grants of a peer cannot carry a frame of the agreed MFS.
  logic refuses;
  always_comb begin
    logic [3:0] vcs;
    logic [13:0] mfs;
    logic [31:0] need;
    vcs = (cfg_vcs < v_vcs) ? cfg_vcs : v_vcs;
    mfs = (cfg_mfs < v_mfs) ? cfg_mfs : v_mfs;
    need = el_pkg::ceil_shift(32'(mfs) + 32'(v_ovh), el_pkg::log2_pow2(v_csize));
    refuses = 0;
    for (int v = 0; v < 8; v++)
      if (v < int'(vcs) && 32'(v_val[SEQ_W*v+:SEQ_W]) < need) refuses = 1;
  end

  // The credit body of a CF or CC: the agreed VCs' mask and values.
  function automatic logic [8*36-1:0] credit_body(input logic [8*SEQ_W-1:0] vals,
                                                   input logic [3:0] n);
    logic [8*36-1:0] b;
    b = '0;
    b[7:0] = 8'((9'd1 << n) - 9'd1);
    for (int v = 0; v < 8; v++)
      if (v < int'(n)) begin
        b[8*(4+4*v)+:8] = 8'd0;
        b[8*(5+4*v)+:8] = {4'd0, vals[SEQ_W*v+16+:4]};
        b[8*(6+4*v)+:8] = vals[SEQ_W*v+8+:8];
        b[8*(7+4*v)+:8] = vals[SEQ_W*v+:8];
      end
    credit_body = b;
  endfunction

  // The parameter body of INIT and INIT_ECHO (wire.md section 4.5).
  function automatic logic [8*52-1:0] params_body(input logic [31:0] own, input logic [31:0] echo);
    logic [8*52-1:0] b;
    b = '0;
    for (int k = 0; k < 4; k++) begin
      b[8*k+:8] = own[8*(3-k)+:8];
      b[8*(4+k)+:8] = echo[8*(3-k)+:8];
    end
    b[8*8+:8] = {4'd0, cfg_vcs};
    b[8*9+:8] = cfg_ovh;
    b[8*10+:8] = cfg_csize[15:8];
    b[8*11+:8] = cfg_csize[7:0];
    b[8*12+:8] = {2'd0, cfg_mfs[13:8]};
    b[8*13+:8] = cfg_mfs[7:0];
    b[8*17+:8] = {4'd0, cfg_window[19:16]};
    b[8*18+:8] = cfg_window[15:8];
    b[8*19+:8] = cfg_window[7:0];
    for (int v = 0; v < 8; v++)
      if (v < int'(cfg_vcs)) begin
        b[8*(21+4*v)+:8] = {4'd0, cfg_rx_credits[19:16]};
        b[8*(22+4*v)+:8] = cfg_rx_credits[15:8];
        b[8*(23+4*v)+:8] = cfg_rx_credits[7:0];
      end
    params_body = b;
  endfunction

  // The first 20 bytes of every frame this end sends.
  function automatic logic [8*20-1:0] header(input logic [3:0] kind, input logic [2:0] vc,
                                             input logic [4:0] flags, input logic [SEQ_W-1:0] seq);
    logic [8*20-1:0] h;
    logic [47:0] dst;
    dst = peer_mac_valid ? peer_mac : DEFAULT_DST;
    for (int k = 0; k < 6; k++) begin
      h[8*k+:8] = dst[8*(5-k)+:8];
      h[8*(6+k)+:8] = cfg_mac[8*(5-k)+:8];
    end
    h[8*12+:8] = ETHERTYPE[15:8];
    h[8*13+:8] = ETHERTYPE[7:0];
    h[8*14+:8] = {4'd1, kind};
    h[8*15+:8] = {vc, flags};
    h[8*16+:8] = 8'd0;
    h[8*17+:8] = {4'd0, seq[19:16]};
    h[8*18+:8] = seq[15:8];
    h[8*19+:8] = seq[7:0];
    header = h;
  endfunction

  // xorshift32: never 0, never the value before (LINK-2-2 asks a nonce that changes).
  function automatic logic [31:0] xorshift(input logic [31:0] x);
    logic [31:0] y;
    y = x ^ (x << 13);
    y = y ^ (y >> 17);
    xorshift = y ^ (y << 5);
  endfunction

  logic [8*SEQ_W-1:0] freed_flat, consumed_flat;
  always_comb
    for (int v = 0; v < 8; v++) begin
      freed_flat[SEQ_W*v+:SEQ_W] = freed[v];
      consumed_flat[SEQ_W*v+:SEQ_W] = consumed[v];
    end

  // Credits occupied in the receive buffer over every VC, with the VC of a frame being accepted.
  logic [SEQ_W+3:0] occ_sum;
  logic [31:0] acc_cost;
  always_comb begin
    acc_cost = el_pkg::ceil_shift(32'(v_len) + 32'(cfg_ovh), own_cshift);
    occ_sum = 0;
    for (int v = 0; v < 8; v++)
      occ_sum = occ_sum + {4'd0, SEQ_W'(received[v] - freed[v])}
          + ((3'(v) == v_vc) ? {4'd0, SEQ_W'(acc_cost)} : '0);
  end

  // The scheduler's view of the head image.
  logic [13:0] sc_plen;
  logic [15:0] sc_n;
  logic [31:0] sc_cost;
  logic [SEQ_W-1:0] sc_credit_left;
  logic [2:0] sc_cand;
  logic sc_found;
  logic [QAW:0] sc_words;
  always_comb begin
    sc_plen = {q_rdata_a[5:0], q_rdata_a[15:8]};
    sc_n = (16'(sc_plen) + 16'd24 < 16'd64) ? 16'd64 : 16'(sc_plen) + 16'd24;
    sc_cost = el_pkg::ceil_shift(32'(sc_n) + 32'(p_ovh), peer_cshift);
    sc_credit_left = p_grant[sc_vc] - (consumed[sc_vc] - freed_seen[sc_vc]);
    sc_words = (QAW + 1)'((32'(sc_plen) + HDR_LEN + W - 1) / W);
    sc_found = 0;
    sc_cand = 0;
    for (int i = 7; i >= 0; i--)
      if (4'(i) >= sc_i && q_frames[rr+3'(i)] != 0) begin
        sc_found = 1;
        sc_cand = rr + 3'(i);
      end
  end

  // The withdrawal's view of the image being read.
  logic [13:0] wd_plen_now;
  assign wd_plen_now = {q_rdata_a[5:0], q_rdata_a[15:8]};

  // What the transmitter should send next (LINK-3-15).
  typedef enum logic [2:0] {
    X_NONE,
    X_ECHO,
    X_INIT,
    X_NACK,
    X_ACK,
    X_CF,
    X_CC,
    X_REPLAY
  } pick_e;
  pick_e tx_pick;
  logic cf_ready;
  always_comb begin
    cf_ready = freed_since_cf >= cfg_cf_min_credits
        && (!last_cf_valid || now >= last_cf + 48'(cfg_cf_min_int));
    tx_pick = X_NONE;
    if (echo_due_valid && phys_seen && !holds_stale) tx_pick = X_ECHO;
    else if (state == L_INIT && phys_seen && init_next_valid && init_next <= now) tx_pick = X_INIT;
    else if (state == L_UP) begin
      if (nack_due) tx_pick = X_NACK;
      else if (ack_due) tx_pick = X_ACK;
      else if (cf_due || cf_ready) tx_pick = X_CF;
      else if (rcount == 0 && cc_dl_valid && now >= cc_dl) tx_pick = X_CC;
      else if (rn_valid) tx_pick = X_REPLAY;
    end
  end

  // A timer due now.
  logic timer_due;
  always_comb begin
    timer_due = 0;
    if (state == L_INIT && init_dl_valid && init_dl <= now) timer_due = 1;
    if (state == L_UP) begin
      if (ack_dl_valid && ack_dl <= now) timer_due = 1;
      if (cf_max_dl_valid && cf_max_dl <= now) timer_due = 1;
      if (aged) timer_due = 1;
      if (replay_dl_valid && replay_dl <= now) timer_due = 1;
    end
  end

  // The new frame the scheduler holds may be sent: room in the replay ring (LINK-3-3, LINK-3-17)
  // and credits.
  logic send_ok, ring_full;
  logic [4:0] ack_req_flag;
  always_comb begin
    ring_full = (SEQ_W + 1)'(rcount) >= limit || replay_bytes + 32'(sc_n) > cfg_rmb;
    send_ok = !ring_full && sc_cost <= 32'(sc_credit_left);
    ack_req_flag = 0;
    if (((SEQ_W + 1)'(rcount) < (limit + 1) >> 1 && (limit + 1) >> 1 <= (SEQ_W + 1)'(rcount) + 1)
        || (replay_bytes < cfg_rmb >> 1 && cfg_rmb >> 1 <= replay_bytes + 32'(sc_n)))
      ack_req_flag = F_ACK_REQ;
  end

  // ------------------------------------------------------------------ the action of this cycle

  // Outside a multi-cycle action, one action per cycle in this order; the combinational commands
  // to the datapath and the sequential block below both read these.
  logic input_pending, act_frame, act_timer, act_pick, act_sched, sc_go, sc_lose;
  always_comb begin
    input_pending = phy_up != phys_seen || (hold_seen & ~hold) != 0 || withdraw;
    act_frame = macro == M_NONE && !input_pending && v_valid && up_cmd_ready;
    act_timer = macro == M_NONE && !input_pending && !(v_valid && up_cmd_ready) && timer_due;
    act_pick = macro == M_NONE && !input_pending && !(v_valid && up_cmd_ready) && !timer_due
        && tick && tx_cmd_ready && !tx_sent && tx_pick != X_NONE;
    act_sched = macro == M_NONE && !input_pending && !(v_valid && up_cmd_ready) && !timer_due
        && !act_pick;
    // The scheduler decides on the head it read (a new frame begins on a tick only).
    sc_go = act_sched && sched == P_EVAL && tick && tx_cmd_ready && !tx_sent && !pop_pending
        && gate_open && state == L_UP && up_cmd_ready;
    sc_lose = 4'(sc_vc) >= agreed_vcs || sc_n > 16'(agreed_mfs);
  end

  // The verdict taken this cycle, where the datapath must know it at once: a DATA frame accepted
  // and handed up (LINK-4-1), or an INIT_ECHO that brings the link UP (LINK-2-3).
  logic acc_overrun, rx_delivers, rx_comes_up;
  always_comb begin
    acc_overrun = acc_cost > 32'(cfg_rx_credits) - 32'(SEQ_W'(received[v_vc] - freed[v_vc]));
    rx_delivers = v_class == 4'd0 && v_kind == K_DATA && state == L_UP && v_seq == expected
        && 4'(v_vc) < agreed_vcs && !acc_overrun;
    rx_comes_up = v_class == 4'd0 && v_kind == K_INIT_ECHO && phys_seen && state == L_INIT
        && v_echo == nonce && !holds_stale && !refuses;
  end

  // ------------------------------------------------------------------ outputs to the datapath

  assign quiet = !rx_busy && !v_valid && !sub_busy && macro == M_NONE && up_idle
      && (phy_up == phys_seen) && (hold_seen & ~hold) == 0 && !withdraw;

  // ------------------------------------------------------------------ the controller

  // The configuration registers, written through the register port.
  always_ff @(posedge clk) begin
    if (!rst_n) begin
      cfg_vcs <= 4;
      cfg_csize <= 64;
      cfg_rx_credits <= 1280;
      cfg_ovh <= 0;
      cfg_mfs <= 14'd9216;
      cfg_window <= 20'h80000;
      cfg_rmf <= 115;
      cfg_rmb <= 58768;
      cfg_ack_spacing <= 2048;
      cfg_ack_timer <= ticks(500);
      cfg_replay_timer <= ticks(5000);
      cfg_rcmax <= 3;
      cfg_cf_min_credits <= 8;
      cfg_cf_min_int <= ticks(100);
      cfg_cf_max_int <= ticks(2000);
      cfg_cc_int <= ticks(10000);
      cfg_init_int <= ticks(1000);
      cfg_init_to <= ticks(1000000);
      cfg_max_age <= ticks(25000);
      cfg_seed <= 0;
      cfg_mac <= 48'h02000000_0E02;
    end else if (reg_wr) begin
      case (reg_addr)
        8'h00: cfg_vcs <= reg_wdata[3:0];
        8'h01: cfg_csize <= reg_wdata[15:0];
        8'h02: cfg_rx_credits <= reg_wdata[SEQ_W-1:0];
        8'h03: cfg_ovh <= reg_wdata[7:0];
        8'h04: cfg_mfs <= reg_wdata[13:0];
        8'h05: cfg_window <= reg_wdata[SEQ_W-1:0];
        8'h06: cfg_rmf <= reg_wdata[SEQ_W-1:0];
        8'h07: cfg_rmb <= reg_wdata[31:0];
        8'h08: cfg_ack_spacing <= reg_wdata[31:0];
        8'h09: cfg_ack_timer <= reg_wdata[31:0];
        8'h0A: cfg_replay_timer <= reg_wdata[31:0];
        8'h0B: cfg_rcmax <= reg_wdata[7:0];
        8'h0C: cfg_cf_min_credits <= reg_wdata[31:0];
        8'h0D: cfg_cf_min_int <= reg_wdata[31:0];
        8'h0E: cfg_cf_max_int <= reg_wdata[31:0];
        8'h0F: cfg_cc_int <= reg_wdata[31:0];
        8'h10: cfg_init_int <= reg_wdata[31:0];
        8'h11: cfg_init_to <= reg_wdata[31:0];
        8'h12: cfg_max_age <= reg_wdata[31:0];
        8'h13: cfg_seed <= reg_wdata;
        8'h14: cfg_mac <= reg_wdata[47:0];
        default: ;
      endcase
    end
  end

  always_ff @(posedge clk) begin
    if (reg_rd) begin
      if (reg_addr >= 8'h80) reg_rdata <= 64'(vcnt[reg_addr[5:0]]);
      else if (reg_addr >= 8'h40 && reg_addr < 8'h40 + 8'(N_LINK_COUNTERS))
        reg_rdata <= 64'(cnt[reg_addr-8'h40]);
      else
        case (reg_addr)
          8'h00: reg_rdata <= 64'(cfg_vcs);
          8'h01: reg_rdata <= 64'(cfg_csize);
          8'h02: reg_rdata <= 64'(cfg_rx_credits);
          8'h03: reg_rdata <= 64'(cfg_ovh);
          8'h04: reg_rdata <= 64'(cfg_mfs);
          8'h05: reg_rdata <= 64'(cfg_window);
          8'h06: reg_rdata <= 64'(cfg_rmf);
          8'h07: reg_rdata <= 64'(cfg_rmb);
          8'h08: reg_rdata <= 64'(cfg_ack_spacing);
          8'h09: reg_rdata <= 64'(cfg_ack_timer);
          8'h0A: reg_rdata <= 64'(cfg_replay_timer);
          8'h0B: reg_rdata <= 64'(cfg_rcmax);
          8'h0C: reg_rdata <= 64'(cfg_cf_min_credits);
          8'h0D: reg_rdata <= 64'(cfg_cf_min_int);
          8'h0E: reg_rdata <= 64'(cfg_cf_max_int);
          8'h0F: reg_rdata <= 64'(cfg_cc_int);
          8'h10: reg_rdata <= 64'(cfg_init_int);
          8'h11: reg_rdata <= 64'(cfg_init_to);
          8'h12: reg_rdata <= 64'(cfg_max_age);
          8'h13: reg_rdata <= cfg_seed;
          8'h14: reg_rdata <= 64'(cfg_mac);
          8'h20: reg_rdata <= 64'(W);
          8'h21: reg_rdata <= 64'(RPL_BYTES);
          8'h22: reg_rdata <= 64'(RPL_FRAMES);
          8'h23: reg_rdata <= 64'(TXQ_BYTES);
          8'h24: reg_rdata <= 64'(MFS_MAX);
          default: reg_rdata <= 64'd0;
        endcase
    end
  end

  // Commands to the datapath, driven by the controller each cycle.
  always_comb begin
    tx_cmd_valid = 0;
    tx_cmd_src = 0;
    tx_cbuf = '0;
    tx_hdr = '0;
    tx_clen = 14'd60;
    tx_plen = 0;
    tx_raddr = ring_tail;
    up_cmd_valid = 0;
    up_cmd_src = 0;
    up_cmd_addr = 0;
    up_cmd_off = 5'd20;
    up_cmd_len = 0;
    up_cmd_user = 0;
    up_cmd_free = 0;
    v_take = 0;
    q_pop = 0;
    q_pop_vc = pop_pending_vc;
    q_pop_words = pop_pending_words;
    q_clear = 0;
    if ((tx_sent && pop_pending) || pop_now) q_pop = 1;
    case (macro)
      M_DOWN_EVENT: begin
        up_cmd_valid = 1;
        up_cmd_user = {
          down_reason == D_FLUSH ? UP_DOWN_FLUSH
              : down_reason == D_PHYSICAL ? UP_DOWN_PHYSICAL : UP_DOWN_RESTART, 3'd0
        };
      end
      M_DOWN_LOST:
      if (d_head != d_tail) begin
        up_cmd_valid = 1;
        up_cmd_src = 2;
        up_cmd_addr = 20'(d_start[d_head[DAW-1:0]]);
        up_cmd_len = d_plen[d_head[DAW-1:0]];
        up_cmd_user = {UP_LOST_UNKNOWN, d_vc[d_head[DAW-1:0]]};
      end
      M_WD_PUSH: begin
        up_cmd_valid = 1;
        up_cmd_src = 1;
        up_cmd_addr = 20'({wd_vc, wd_ptr});
        up_cmd_len = wd_plen_now;
        up_cmd_user = {wd_reason, wd_vc};
      end
      M_WD_WAIT: if (up_idle) q_clear = wd_clear;
      default: ;
    endcase
    if (act_frame) begin
      v_take = 1;
      if (rx_delivers) begin
        up_cmd_valid = 1;
        up_cmd_src = 0;
        up_cmd_addr = v_slot ? 20'(SLOT_WORDS) : 20'd0;
        up_cmd_off = v_pay_off;
        up_cmd_len = v_pay_len;
        up_cmd_user = {UP_DELIVERED, v_vc};
        up_cmd_free = 1;
      end else if (rx_comes_up) begin
        up_cmd_valid = 1;
        up_cmd_user = {UP_LINK_UP, 3'd0};
      end
    end else if (act_pick) begin
      tx_cmd_valid = 1;
      case (tx_pick)
        X_ECHO: begin
          tx_cbuf = {64'd0, params_body(nonce, echo_due), header(K_INIT_ECHO, 0, 0, 0)};
          tx_clen = 14'd72;
        end
        X_INIT: begin
          tx_cbuf = {64'd0, params_body(nonce, 32'd0), header(K_INIT, 0, 0, 0)};
          tx_clen = 14'd72;
        end
        X_NACK: tx_cbuf = {480'd0, header(K_NACK, 0, 0, last_good)};
        X_ACK: tx_cbuf = {480'd0, header(K_ACK, 0, 0, last_good)};
        X_CF: tx_cbuf = {192'd0, credit_body(freed_flat, agreed_vcs), header(K_CF, 0, 0, 0)};
        X_CC: tx_cbuf = {192'd0, credit_body(consumed_flat, agreed_vcs), header(K_CC, 0, 0, 0)};
        default: begin  // X_REPLAY
          tx_cmd_src = 2;
          tx_raddr = d_start[rn[DAW-1:0]];
          tx_clen = d_clen[rn[DAW-1:0]];
        end
      endcase
    end else if (sc_go) begin
      if (sc_lose) begin
        up_cmd_valid = 1;
        up_cmd_src = 1;
        up_cmd_addr = 20'({sc_vc, q_head[sc_vc]});
        up_cmd_len = sc_plen;
        up_cmd_user = {(4'(sc_vc) >= agreed_vcs) ? UP_LOST_VC : UP_LOST_MFS, sc_vc};
      end else if (send_ok) begin
        tx_cmd_valid = 1;
        tx_cmd_src = 1;
        tx_hdr = header(K_DATA, sc_vc, ack_req_flag, tx_seq);
        tx_clen = (sc_plen + 14'd20 < 14'd60) ? 14'd60 : sc_plen + 14'd20;
        tx_plen = sc_plen;
        tx_raddr = ring_tail;
      end
    end
  end
  assign ctl_qaddr = (macro == M_WD_READ || macro == M_WD_PUSH || macro == M_WD_VC)
      ? {wd_vc, wd_ptr} : {sc_vc, q_head[sc_vc]};

  // ------------------------------------------------------------------ sequential control

  task automatic bump(input int c);
    cnt[c] <= cnt[c] + 1;
  endtask

  // The ticks from t to now, as a counter value (modulo 2^CNT_W).
  function automatic logic [CNT_W-1:0] ticks_since(input logic [47:0] t);
    ticks_since = CNT_W'(now) - CNT_W'(t);
  endfunction

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      now <= 0;
      phys_seen <= 0;
      state <= L_OFF;
      macro <= M_NONE;
      rng <= 32'h9E3779B9;
      nonce <= 0;
      peer_mac_valid <= 0;
      p_vcs <= 1;
      p_mfs <= 14'd9216;
      p_window <= 1;
      p_csize <= 64;
      p_ovh <= 0;
      echo_due_valid <= 0;
      echoed_valid <= 0;
      init_next_valid <= 0;
      init_dl_valid <= 0;
      hold_seen <= 0;
      held_stale <= 0;
      rr <= 0;
      sched <= P_SCAN;
      sc_i <= 0;
      sc_vc <= 0;
      pop_pending <= 0;
      pop_now <= 0;
      d_head <= 0;
      d_tail <= 0;
      ring_tail <= 0;
      total_bytes <= 0;
      rn_valid <= 0;
      replay_dl_valid <= 0;
      cc_dl_valid <= 0;
      rx_state <= R_OFF;
      ack_due <= 0;
      nack_due <= 0;
      ack_dl_valid <= 0;
      cf_due <= 0;
      cf_max_dl_valid <= 0;
      last_cf_valid <= 0;
      gate_open <= 0;
      freed_since_cf <= 0;
      for (int v = 0; v < 8; v++) begin
        held_cur[v] <= 0;
        stall_valid[v] <= 0;
        consumed[v] <= 0;
        freed_seen[v] <= 0;
        received[v] <= 0;
        freed[v] <= 0;
        p_grant[v] <= 0;
      end
      for (int c = 0; c < N_LINK_COUNTERS; c++) cnt[c] <= 0;
      for (int c = 0; c < 8 * N_VC_COUNTERS; c++) vcnt[c] <= 0;
    end else begin
      if (tick) now <= now + 48'd1;
      if (reg_wr && reg_addr == 8'h13)
        rng <= (reg_wdata[31:0] ^ reg_wdata[63:32] ^ 32'h9E3779B9) == 0 ? 32'd1
            : reg_wdata[31:0] ^ reg_wdata[63:32] ^ 32'h9E3779B9;
      if (tx_sent && pop_pending) pop_pending <= 0;
      pop_now <= 0;
      // The scheduler's read is stale once the transmitter used the read port.
      if (tx_busy && sched != P_SCAN) begin
        sched <= P_SCAN;
        sc_i <= 0;
      end

      case (macro)
        // ---------------------------------------------------------- leaving UP (LINK-6-7)
        M_DOWN_EVENT: if (up_cmd_ready) macro <= M_DOWN_LOST;
        M_DOWN_LOST:
        if (d_head == d_tail) macro <= M_DOWN_WAIT;
        else if (up_cmd_ready) begin
          bump(C_FRAMES_UNKNOWN_FATE);
          d_head <= d_head + 1;
        end
        M_DOWN_WAIT:
        if (up_idle) begin
          macro <= M_NONE;
          total_bytes <= 0;
          if (down_reason == D_PHYSICAL) begin
            state <= L_OFF;
            peer_mac_valid <= 0;
            echo_due_valid <= 0;
            init_next_valid <= 0;
            init_dl_valid <= 0;
          end else enter_init();
        end
        // ---------------------------------------------------------- withdrawal (LINK-6-5)
        M_WAIT_TX: if (!tx_busy && !pop_pending) macro <= M_WD_VC;
        M_WD_VC: begin
          if (wd_mask == 0) macro <= M_WD_WAIT;
          else begin
            logic [2:0] v;
            v = 0;
            for (int k = 7; k >= 0; k--) if (wd_mask[k]) v = 3'(k);
            wd_mask[v] <= 0;
            if (q_frames[v] != 0) begin
              wd_vc <= v;
              wd_ptr <= q_head[v];
              wd_left <= q_frames[v];
              wd_clear[v] <= 1;
              macro <= M_WD_READ;
              if (wd_reason == UP_LOST_WITHDRAWN && stall_valid[v]) begin
                vcnt[8*V_CREDIT_STALL_TICKS+int'(v)] <= vcnt[8*V_CREDIT_STALL_TICKS+int'(v)]
                    + ticks_since(stall_since[v]);
                stall_valid[v] <= 0;
              end
            end
          end
        end
        M_WD_READ: macro <= M_WD_PUSH;  // the image's first word is read this cycle
        M_WD_PUSH: begin
          if (up_cmd_ready) begin
            if (wd_reason == UP_LOST_WITHDRAWN) bump(C_FRAMES_WITHDRAWN);
            else bump(C_NOT_AGREED_VC);
            wd_ptr <= wd_ptr + QAW'((32'(wd_plen_now) + HDR_LEN + W - 1) / W);
            wd_left <= wd_left - 1;
            macro <= (wd_left == 1) ? M_WD_VC : M_WD_READ;
          end
        end
        M_WD_WAIT:
        if (up_idle) begin
          macro <= M_NONE;
          sched <= P_SCAN;
          sc_i <= 0;
        end
        // ---------------------------------------------------------- one action
        default: begin
          if (phy_up != phys_seen) begin
            phys_seen <= phy_up;
            if (phy_up) enter_init();
            else leave_up(D_PHYSICAL);
          end else if ((hold_seen & ~hold) != 0) begin
            release_hold();
          end else if (withdraw) begin
            wd_mask <= 8'hFF;
            wd_clear <= 0;
            wd_reason <= UP_LOST_WITHDRAWN;
            macro <= M_WAIT_TX;
          end else if (act_frame) on_frame();
          else if (act_timer) fire();
          else if (act_pick) on_pick();
          else schedule();
          if ((hold_seen & ~hold) == 0) hold_seen <= hold;
        end
      endcase
    end
  end

  // ------------------------------------------------------------------ bring-up (link.md §2)

  task automatic enter_init();
    logic [31:0] n;
    n = xorshift(rng);
    rng <= n;
    nonce <= n;
    state <= L_INIT;
    echoed_valid <= 0;
    init_next <= now;
    init_next_valid <= 1;
    init_dl <= now + 48'(cfg_init_to);
    init_dl_valid <= 1;
  endtask

  // Every edge out of UP (Table LINK-T6), or physical down from INIT.
  task automatic leave_up(input down_e why);
    logic was_up;
    was_up = state == L_UP;
    down_reason <= why;
    macro <= (was_up || d_head != d_tail) ? M_DOWN_EVENT : M_DOWN_LOST;
    if (state == L_UP || state == L_INIT) bump(C_REINITS);
    if (why != D_PHYSICAL) state <= L_INIT;
    else state <= L_OFF;
    rn_valid <= 0;
    replay_count <= 0;
    replay_dl_valid <= 0;
    cc_dl_valid <= 0;
    cf_max_dl_valid <= 0;
    rx_state <= R_OFF;
    ack_due <= 0;
    nack_due <= 0;
    ack_dl_valid <= 0;
    gate_open <= 0;
    sched <= P_SCAN;
    sc_i <= 0;
    for (int v = 0; v < 8; v++) begin
      // A payload kept by a hold now belongs to an earlier incarnation (LINK-6-4).
      if (held_cur[v] != 0) begin
        held_stale[v] <= 1;
        held_cur[v] <= 0;
      end
      if (stall_valid[v]) begin
        vcnt[8*V_CREDIT_STALL_TICKS+v] <= vcnt[8*V_CREDIT_STALL_TICKS+v]
            + ticks_since(stall_since[v]);
        stall_valid[v] <= 0;
      end
    end
  endtask

  // LINK-2-5: what entering UP resets.
  task automatic come_up();
    logic [7:0] vc_gone;
    logic [3:0] vcs;  // the VCs agreed from now on (agreed_vcs still has the old p_vcs)
    p_nonce <= v_nonce;
    p_vcs <= v_vcs;
    p_ovh <= v_ovh;
    p_csize <= v_csize;
    p_mfs <= v_mfs;
    p_window <= v_window;
    for (int v = 0; v < 8; v++) begin
      p_grant[v] <= v_val[SEQ_W*v+:SEQ_W];
      consumed[v] <= 0;
      freed_seen[v] <= 0;
      received[v] <= 0;
      freed[v] <= 0;
    end
    tx_seq <= 0;
    d_head <= d_tail;
    total_bytes <= 0;
    rn_valid <= 0;
    replay_count <= 0;
    replay_dl_valid <= 0;
    expected <= 0;
    last_good <= SEQ_MASK;
    remembered_valid <= 0;
    dup_run <= 0;
    dup_bytes <= 0;
    ack_due <= 0;
    nack_due <= 0;
    bytes_since_ack <= 0;
    ack_dl_valid <= 0;
    freed_since_cf <= 0;
    last_cf_valid <= 0;
    cf_due <= 0;
    state <= L_UP;
    rx_state <= R_SEND_ACKS;
    init_next_valid <= 0;
    init_dl_valid <= 0;
    cc_dl <= now + 48'(cfg_cc_int);
    cc_dl_valid <= 1;
    cf_max_dl <= now + 48'(cfg_cf_max_int);
    cf_max_dl_valid <= 1;
    gate_open <= echoed_valid && echoed == v_nonce;
    bump(C_LINK_UPS);
    bump(C_INIT_ECHOES_RECEIVED);
    // Queued payloads on a VC the peer does not have are lost now; one too long for the
    // agreed MFS when it reaches the head of its queue.
    vcs = (cfg_vcs < v_vcs) ? cfg_vcs : v_vcs;
    for (int v = 0; v < 8; v++) vc_gone[v] = v >= int'(vcs);
    wd_mask <= vc_gone;
    wd_clear <= 0;
    wd_reason <= UP_LOST_VC;
    macro <= M_WAIT_TX;
  endtask

  task automatic release_hold();
    logic [2:0] v;
    logic stale_after;
    v = 0;
    for (int k = 7; k >= 0; k--) if (hold_seen[k] && !hold[k]) v = 3'(k);
    hold_seen[v] <= 0;
    if (held_cur[v] != 0) begin
      freed[v] <= freed[v] + SEQ_W'(held_cur[v]);
      freed_since_cf <= freed_since_cf + 32'(held_cur[v]);
      held_cur[v] <= 0;
    end
    held_stale[v] <= 0;
    stale_after = (held_stale & ~(8'd1 << v)) != 0;
    // LINK-2-18: drained, a new nonce, then the echo and the INIT at once.
    if (holds_stale && !stale_after && state == L_INIT && phys_seen) begin
      rng <= xorshift(rng);
      nonce <= xorshift(rng);
      init_next <= now;
      init_next_valid <= 1;
    end
  endtask

  // ------------------------------------------------------------------ receive

  task automatic damaged();
    if (state == L_UP && rx_state == R_SEND_ACKS) begin
      rx_state <= R_SEND_NACK;
      nack_due <= 1;
      remembered_valid <= 0;
    end
  endtask

  task automatic on_frame();
`ifndef SYNTHESIS  // Yosys has no $fdisplay
    if (DEBUG) $fdisplay(32'h80000002, "t=%0d frame class=%0d kind=%0d vc=%0d seq=%0d len=%0d exp=%0d st=%0d plen=%0d bad=%0d rcv=%0d fr=%0d cost=%0d", now, v_class, v_kind, v_vc, v_seq, v_len, expected, state, v_pay_len, v_pay_bad, received[v_vc], freed[v_vc], acc_cost);
`endif
    case (v_class)
      4'd1: begin
        bump(C_RX_DAMAGED);
        damaged();
      end
      4'd2: begin
        bump(C_RX_FCS_ERRORS);
        damaged();
      end
      4'd3: bump(C_RX_STOMPED);
      4'd4: bump(C_RX_FOREIGN);
      4'd5: bump(C_RX_BAD_VERSION);
      4'd6: bump(C_RX_UNKNOWN_KIND);
      4'd7: bump(C_RX_MALFORMED_CONTROL);
      default:
      if (v_kind == K_INIT || v_kind == K_INIT_ECHO) begin
        if (!phys_seen) bump(C_RX_NOT_UP);
        else if (v_kind == K_INIT) on_init();
        else on_init_echo();
      end else if (state != L_UP) bump(C_RX_NOT_UP);
      else begin
        gate_open <= 1;
        case (v_kind)
          K_ACK: begin
            bump(C_ACKS_RECEIVED);
            on_ack(0);
          end
          K_NACK: begin
            bump(C_NACKS_RECEIVED);
            on_ack(1);
          end
          K_CF: begin
            bump(C_CF_RECEIVED);
            on_cf();
          end
          K_CC: begin
            bump(C_CC_RECEIVED);
            on_cc();
          end
          default: on_data();
        endcase
      end
    endcase
  endtask

  task automatic on_init();
    if (refuses) bump(C_INIT_REFUSED);
    else begin
      bump(C_INITS_RECEIVED);
      peer_mac <= v_src;
      peer_mac_valid <= 1;
      if (state == L_UP && v_nonce != p_nonce) leave_up(D_RESTART);
      echo_due <= v_nonce;
      echo_due_valid <= 1;
    end
  endtask

  task automatic on_init_echo();
    // LINK-2-18: no UP while the buffer holds a payload of an earlier incarnation.
    if (state != L_INIT || v_echo != nonce || holds_stale) bump(C_INIT_ECHOES_IGNORED);
    else if (refuses) bump(C_INIT_REFUSED);
    else begin
      peer_mac <= v_src;
      peer_mac_valid <= 1;
      come_up();
    end
  endtask

  task automatic on_data();
    logic [SEQ_W-1:0] d, back;
    logic [2:0] v;
    logic [31:0] bsa;
    v = v_vc;
    d = v_seq - expected;
    back = expected - v_seq;
    if (d == 0 && 4'(v) < agreed_vcs && acc_overrun) begin
      // LINK-5-6: no buffer for it; the frame is not accepted.
      vcnt[8*V_CREDIT_OVERRUNS+int'(v)] <= vcnt[8*V_CREDIT_OVERRUNS+int'(v)] + 1;
    end else if (d == 0) begin
      if (4'(v) < agreed_vcs) begin
        received[v] <= received[v] + SEQ_W'(acc_cost);
        if (CNT_W'(occ_sum) > cnt[C_RX_OCCUPIED_MAX_CREDITS])
          cnt[C_RX_OCCUPIED_MAX_CREDITS] <= CNT_W'(occ_sum);
        vcnt[8*V_RX_FRAMES+int'(v)] <= vcnt[8*V_RX_FRAMES+int'(v)] + 1;
        vcnt[8*V_RX_BYTES+int'(v)] <= vcnt[8*V_RX_BYTES+int'(v)] + CNT_W'(v_len);
        if (hold[v]) held_cur[v] <= held_cur[v] + (SEQ_W + 1)'(acc_cost);
        else begin
          freed[v] <= freed[v] + SEQ_W'(acc_cost);
          freed_since_cf <= freed_since_cf + acc_cost;
        end
      end else bump(C_RX_VC_NOT_AGREED);
      last_good <= expected;
      expected <= expected + 1;
      if (rx_state == R_SEND_NACK || rx_state == R_NACK_SENT) nack_due <= 0;
      rx_state <= R_SEND_ACKS;
      remembered_valid <= 0;
      dup_run <= 0;
      bsa = bytes_since_ack + 32'(v_len);
      bytes_since_ack <= bsa;
      if (!ack_dl_valid) begin
        ack_dl <= now + 48'(cfg_ack_timer);
        ack_dl_valid <= 1;
      end
      if (bsa >= cfg_ack_spacing || (v_flags & F_ACK_REQ) != 0) ack_due <= 1;
    end else if (back >= 1 && back <= window) begin
      bump(C_DUPLICATES);
      // LINK-4-16: the first duplicate since an accept, a NACK or UP makes an ACK due; then
      // one per ack_spacing bytes of duplicates.
      if (dup_run) begin
        if (dup_bytes + 32'(v_len) >= cfg_ack_spacing) begin
          dup_bytes <= 0;
          ack_due <= 1;
        end else dup_bytes <= dup_bytes + 32'(v_len);
      end else begin
        dup_run <= 1;
        dup_bytes <= 0;
        ack_due <= 1;
      end
    end else begin
      bump(C_DISCARDED_AFTER_NACK);
      case (rx_state)
        R_SEND_ACKS: begin
          rx_state <= R_SEND_NACK;
          nack_due <= 1;
          remembered <= d;
          remembered_valid <= 1;
        end
        R_SEND_NACK: begin
          remembered <= (!remembered_valid || d > remembered) ? d : remembered;
          remembered_valid <= 1;
        end
        default: begin  // NACK_SENT
          if (remembered_valid && d <= remembered) begin
            rx_state <= R_SEND_NACK;
            nack_due <= 1;
          end
          remembered <= d;
          remembered_valid <= 1;
        end
      endcase
    end
  endtask

  task automatic on_ack(input logic nack);
    logic [SEQ_W-1:0] oldest, n;
    logic ok;
    logic [DAW:0] left, rel;
    oldest = tx_seq - SEQ_W'(rcount);
    if (rcount != 0) begin
      n = v_seq - oldest + 1;
      ok = n <= SEQ_W'(rcount);
    end else begin
      n = 0;
      ok = v_seq == tx_seq - 1;
    end
    if (!ok) bump(C_STALE_ACKS);
    else begin
      left = rcount - (DAW + 1)'(n);
      if (n != 0) begin
        // The oldest frame acknowledged waited longest (replay_age_max_ns, LINK-3-18).
        if (ticks_since(d_t0[d_head[DAW-1:0]]) > cnt[C_REPLAY_AGE_MAX])
          cnt[C_REPLAY_AGE_MAX] <= ticks_since(d_t0[d_head[DAW-1:0]]);
        d_head <= d_head + (DAW + 1)'(n);
        replay_count <= 0;
        if (rn_valid) begin
          rel = rn - d_head;
          if (rel < (DAW + 1)'(n)) rn <= d_head + (DAW + 1)'(n);
          if (left == 0 || (rel < (DAW + 1)'(n) ? d_head + (DAW + 1)'(n) : rn) == d_tail)
            rn_valid <= 0;
        end
        replay_dl <= now + 48'(cfg_replay_timer);
        replay_dl_valid <= left != 0;
      end
      if (nack && left != 0) start_replay(1, left);
    end
  endtask

  task automatic start_replay(input logic by_nack, input logic [DAW:0] left);
    if (rn_valid && !replay_sent_first) begin
      // LINK-3-9: a replay is pending and has sent nothing yet.
      replay_dl <= now + 48'(cfg_replay_timer);
      replay_dl_valid <= 1;
    end else begin
      if (by_nack) bump(C_REPLAYS_BY_NACK);
      else bump(C_REPLAY_TIMEOUTS);
      if (replay_count >= cfg_rcmax) flush(0);
      else begin
        replay_count <= replay_count + 1;
        replay_dl <= now + 48'(cfg_replay_timer);
        replay_dl_valid <= 1;
        rn <= d_tail - left;
        rn_valid <= 1;
        replay_sent_first <= 0;
      end
    end
  endtask

  task automatic flush(input logic by_age);
    bump(C_FLUSHES);
    if (by_age) bump(C_FLUSHES_AGED);
    leave_up(D_FLUSH);
  endtask

  task automatic on_cf();
    logic [SEQ_W-1:0] val, ahead;
    logic [CNT_W-1:0] stale;
    stale = 0;
    for (int v = 0; v < 8; v++)
      if (v_mask[v]) begin
        val = v_val[SEQ_W*v+:SEQ_W];
        ahead = val - freed_seen[v];
        if (v >= int'(agreed_vcs)) stale = stale + 1;
        else if (ahead != 0) begin
          if (ahead < HALF && SEQ_W'(consumed[v] - val) < HALF) freed_seen[v] <= val;
          else stale = stale + 1;
        end
      end
    cnt[C_STALE_CF_ENTRIES] <= cnt[C_STALE_CF_ENTRIES] + stale;
  endtask

  task automatic on_cc();
    logic [SEQ_W-1:0] val, d;
    logic [CNT_W-1:0] stale;
    stale = 0;
    // WIRE-4.3-2: a CC without a VC is ignored whole, and asks no CF (LINK-5-13).
    for (int v = 0; v < 8; v++)
      if (v_mask[v]) begin
        val = v_val[SEQ_W*v+:SEQ_W];
        d = val - received[v];
        if (v >= int'(agreed_vcs)) stale = stale + 1;
        else if (d != 0) begin
          if (d < HALF) begin
            received[v] <= received[v] + d;
            freed[v] <= freed[v] + d;
            vcnt[8*V_CREDITS_RECOVERED+v] <= vcnt[8*V_CREDITS_RECOVERED+v] + CNT_W'(d);
          end else stale = stale + 1;
        end
      end
    cnt[C_STALE_CC_ENTRIES] <= cnt[C_STALE_CC_ENTRIES] + stale;
    if (v_mask != 0) cf_due <= 1;
  endtask

  // ------------------------------------------------------------------ timers

  task automatic fire();
    if (state == L_INIT && init_dl_valid && init_dl <= now) begin
      bump(C_INIT_TIMEOUTS);
      init_dl_valid <= 0;
    end else if (state == L_UP) begin
      if (ack_dl_valid && ack_dl <= now) begin
        ack_due <= 1;
        ack_dl_valid <= 0;
      end
      if (cf_max_dl_valid && cf_max_dl <= now) begin
        cf_due <= 1;
        cf_max_dl_valid <= 0;
      end
      if (aged) flush(1);
      else if (replay_dl_valid && replay_dl <= now) begin
        replay_dl_valid <= 0;
        if (rcount != 0) start_replay(0, rcount);
      end
    end
  endtask

  // ------------------------------------------------------------------ transmit

  task automatic on_pick();
    case (tx_pick)
      X_ECHO: begin
        bump(C_INIT_ECHOES_SENT);
        echoed <= echo_due;
        echoed_valid <= 1;
        if (state == L_UP && echo_due == p_nonce) gate_open <= 1;
        echo_due_valid <= 0;
      end
      X_INIT: begin
        bump(C_INITS_SENT);
        init_next <= now + 48'(cfg_init_int);
      end
      X_NACK: begin
        bump(C_NACKS_SENT);
        nack_due <= 0;
        ack_due <= 0;
        rx_state <= R_NACK_SENT;
        dup_run <= 0;
        bytes_since_ack <= 0;
        ack_dl_valid <= 0;
      end
      X_ACK: begin
        bump(C_ACKS_SENT);
        ack_due <= 0;
        bytes_since_ack <= 0;
        ack_dl_valid <= 0;
      end
      X_CF: begin
        bump(C_CF_SENT);
        cf_due <= 0;
        freed_since_cf <= 0;
        last_cf <= now;
        last_cf_valid <= 1;
        cf_max_dl <= now + 48'(cfg_cf_max_int);
        cf_max_dl_valid <= 1;
      end
      X_CC: begin
        bump(C_CC_SENT);
        cc_dl <= now + 48'(cfg_cc_int);
      end
      default: begin  // X_REPLAY
        bump(C_FRAMES_REPLAYED);
        replay_sent_first <= 1;
        rn <= rn + 1;
        if (rn + 1 == d_tail) rn_valid <= 0;
      end
    endcase
  endtask

  // One step of the scheduler of new frames (LINK-3-15's last place): from the round-robin
  // pointer, the first VC whose head can go is sent; a head the agreed parameters cannot carry
  // is lost; a full ring stops the pass; a VC short of credits is passed over.
  task automatic schedule();
    case (sched)
      P_SCAN: begin
`ifndef SYNTHESIS  // Yosys has no $fdisplay
      if (DEBUG && tick) $fdisplay(32'h80000002, "t=%0d scan found=%0d cand=%0d i=%0d rr=%0d frames=%h gate=%0d", now, sc_found, sc_cand, sc_i, rr, q_frames_flat, gate_open);
`endif
      if (state == L_UP && gate_open && !tx_busy && !pop_pending && !pop_now) begin
        if (sc_found) begin
          sc_vc <= sc_cand;
          sched <= P_WAIT;
        end else sc_i <= 0;
      end
      end
      P_WAIT: sched <= tx_busy ? P_SCAN : P_EVAL;
      P_EVAL: begin
`ifndef SYNTHESIS  // Yosys has no $fdisplay
      if (DEBUG && tick) $fdisplay(32'h80000002, "t=%0d eval vc=%0d plen=%0d n=%0d agreed=%0d/%0d full=%0d ok=%0d gate=%0d upr=%0d popp=%0d txr=%0d sent=%0d", now, sc_vc, sc_plen, sc_n, agreed_vcs, agreed_mfs, ring_full, send_ok, gate_open, up_cmd_ready, pop_pending, tx_cmd_ready, tx_sent);
`endif
      if (sc_go) begin
        if (sc_lose) begin
          if (4'(sc_vc) >= agreed_vcs) bump(C_NOT_AGREED_VC);
          else bump(C_OVERSIZE_FOR_PEER);
          pop_pending_vc <= sc_vc;
          pop_pending_words <= sc_words;
          pop_now <= 1;
          sched <= P_SCAN;
          sc_i <= 0;
        end else if (ring_full) begin
          sched <= P_SCAN;
          sc_i <= 0;
        end else if (!send_ok) begin
          if (!stall_valid[sc_vc]) begin
            stall_valid[sc_vc] <= 1;
            stall_since[sc_vc] <= now;
            vcnt[8*V_CREDIT_STALLS+int'(sc_vc)] <= vcnt[8*V_CREDIT_STALLS+int'(sc_vc)] + 1;
          end
          sched <= P_SCAN;
          sc_i <= 4'(3'(sc_vc - rr)) + 1;
        end else begin
          if (stall_valid[sc_vc]) begin
            vcnt[8*V_CREDIT_STALL_TICKS+int'(sc_vc)] <= vcnt[8*V_CREDIT_STALL_TICKS+int'(sc_vc)]
                + ticks_since(stall_since[sc_vc]);
            stall_valid[sc_vc] <= 0;
          end
          d_start[d_tail[DAW-1:0]] <= ring_tail;
          d_clen[d_tail[DAW-1:0]] <= tx_clen;
          d_plen[d_tail[DAW-1:0]] <= sc_plen;
          d_vc[d_tail[DAW-1:0]] <= sc_vc;
          d_t0[d_tail[DAW-1:0]] <= now;
          d_cum[d_tail[DAW-1:0]] <= total_bytes;
          d_tail <= d_tail + 1;
          total_bytes <= total_bytes + 32'(sc_n);
          ring_tail <= ring_tail + RAW'((32'(tx_clen) + W - 1) / W);
          if (rcount == 0) begin
            replay_dl <= now + 48'(cfg_replay_timer);
            replay_dl_valid <= 1;
          end
          if (CNT_W'(rcount) + 1 > cnt[C_REPLAY_FRAMES_MAX])
            cnt[C_REPLAY_FRAMES_MAX] <= CNT_W'(rcount) + 1;
          if (CNT_W'(replay_bytes) + CNT_W'(sc_n) > cnt[C_REPLAY_BYTES_MAX])
            cnt[C_REPLAY_BYTES_MAX] <= CNT_W'(replay_bytes) + CNT_W'(sc_n);
          tx_seq <= tx_seq + 1;
          consumed[sc_vc] <= consumed[sc_vc] + SEQ_W'(sc_cost);
          vcnt[8*V_TX_FRAMES+int'(sc_vc)] <= vcnt[8*V_TX_FRAMES+int'(sc_vc)] + 1;
          vcnt[8*V_TX_BYTES+int'(sc_vc)] <= vcnt[8*V_TX_BYTES+int'(sc_vc)] + CNT_W'(sc_n);
          rr <= sc_vc + 1;
          pop_pending <= 1;
          pop_pending_vc <= sc_vc;
          pop_pending_words <= sc_words;
          sched <= P_SCAN;
          sc_i <= 0;
        end
      end
      end
      default: sched <= P_SCAN;
    endcase
  endtask

endmodule
