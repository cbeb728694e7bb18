// The upper-layer streamer: payloads delivered and lost, and link events, in the order the
// controller queued them. A payload is read from the RAM it lies in (the received frame's slot,
// the submission queue, the replay ring) starting at a byte offset and realigned to lane 0.
module el_up #(
    parameter int W = 8,
    parameter int DEPTH = 4
) (
    input  logic           clk,
    input  logic           rst_n,
    // commands
    input  logic           cmd_valid,
    output logic           cmd_ready,
    input  logic [    1:0] cmd_src,    // 0 received frame, 1 submission queue, 2 replay ring
    input  logic [   19:0] cmd_addr,   // the word the frame or image starts at
    input  logic [    4:0] cmd_off,    // the payload's first byte from there: 20 or 24
    input  logic [   13:0] cmd_len,
    input  logic [    6:0] cmd_user,   // {kind, vc}
    input  logic           cmd_free,   // free the received frame's slot when done
    input  logic           cmd_slot,
    output logic           idle,
    // the RAM read
    output logic [    1:0] rsrc,
    output logic [   19:0] raddr,
    input  logic [8*W-1:0] rdata,
    // the received frame's slot is free
    output logic           free_valid,
    output logic           free_slot,
    // a payload was streamed whole: its command's source and VC
    output logic           done_valid,
    output logic [    1:0] done_src,
    output logic [    2:0] done_vc,
    // to the upper layer
    output logic [8*W-1:0] m_tdata,
    output logic [  W-1:0] m_tkeep,
    output logic           m_tlast,
    output logic [    6:0] m_tuser,
    output logic           m_tvalid,
    input  logic           m_tready
);
  localparam int CW = 2 + 20 + 5 + 14 + 7 + 2;
  localparam int PW = $clog2(DEPTH);

  logic [CW-1:0] fifo[DEPTH];
  logic [PW:0] wp, rp;
  assign cmd_ready = (wp - rp) != (PW + 1)'(DEPTH);

  typedef enum logic [1:0] {
    IDLE,
    PRIME,
    RUN
  } state_e;
  state_e st;
  logic [1:0] src;
  logic [19:0] wbase;
  logic [4:0] sh;
  logic [13:0] len;
  logic [6:0] user;
  logic free, slot;
  logic [15:0] k;
  logic [8*W-1:0] w_lo;

  assign idle = (st == IDLE) && (wp == rp);
  assign rsrc = src;

  wire fire = m_tvalid && m_tready;
  logic [15:0] nbeats;
  assign nbeats = (len == 0) ? 16'd1 : 16'((32'(len) + W - 1) / W);

  // The head command.
  logic [CW-1:0] h;
  assign h = fifo[rp[PW-1:0]];
  logic [19:0] h_wbase;
  assign h_wbase = h[CW-3-:20] + 20'(32'(h[CW-23-:5]) / W);

  always_comb begin
    case (st)
      IDLE: raddr = h_wbase;
      PRIME: raddr = wbase + 20'd1;
      default: raddr = wbase + 20'(k) + (fire ? 20'd2 : 20'd1);
    endcase
  end

  always_comb begin
    // The pair of words shifted down by the offset: its low word is the beat.
    m_tdata = (8 * W)'({rdata, w_lo} >> (8 * sh));
    m_tkeep = '0;
    for (int l = 0; l < W; l++) if (32'(k) * W + 32'(l) < 32'(len)) m_tkeep[l] = 1;
  end
  assign m_tvalid = (st == RUN);
  assign m_tlast = (k == nbeats - 16'd1);
  assign m_tuser = user;
  assign free_valid = fire && m_tlast && free;
  assign free_slot = slot;
  assign done_valid = fire && m_tlast;
  assign done_src = src;
  assign done_vc = user[2:0];

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      wp <= 0;
      rp <= 0;
      st <= IDLE;
    end else begin
      if (cmd_valid && cmd_ready) begin
        fifo[wp[PW-1:0]] <= {cmd_src, cmd_addr, cmd_off, cmd_len, cmd_user, cmd_free, cmd_slot};
        wp <= wp + 1;
      end
      case (st)
        IDLE:
        if (wp != rp) begin
          {src, wbase, sh, len, user, free, slot} <= {
            h[CW-1-:2], h_wbase, 5'(32'(h[CW-23-:5]) % W), h[CW-28-:14], h[CW-42-:7], h[1], h[0]
          };
          rp <= rp + 1;
          k <= 0;
          st <= PRIME;
        end
        PRIME: begin
          w_lo <= rdata;
          st <= RUN;
        end
        default:
        if (fire) begin
          w_lo <= rdata;
          k <= k + 16'd1;
          if (m_tlast) st <= IDLE;
        end
      endcase
    end
  end
endmodule
