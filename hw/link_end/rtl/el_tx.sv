// The transmitter: one frame at a time, a beat per cycle, FCS computed on the fly and placed
// after the content (wire.md section 2.5), whatever lane the content ends in.
//
// Three sources: a control frame whose content the controller built in `cbuf`; a new DATA frame,
// its 20-byte header from `hdr` over the image in the submission queue, padded to 60 bytes and
// copied into the replay ring as it leaves; a frame of the replay ring sent again with the
// REPLAY flag set (LINK-3-7), its FCS recomputed.
import el_pkg::HDR_LEN;
import el_pkg::F_REPLAY;

module el_tx #(
    parameter int W = 8,
    parameter int RING_WORDS = 8192,
    parameter int RAW = $clog2(RING_WORDS),
    parameter int QAW = 13
) (
    input  logic              clk,
    input  logic              rst_n,
    // a command, taken when ready
    input  logic              cmd_valid,
    output logic              cmd_ready,
    input  logic [       1:0] cmd_src,  // 0 control, 1 new DATA, 2 replay
    input  logic [    8*80-1:0] cmd_cbuf,  // control content, byte 0 in bits 7:0
    input  logic [    8*20-1:0] cmd_hdr,   // new DATA: its header
    input  logic [      13:0] cmd_clen,  // content bytes (no FCS)
    input  logic [      13:0] cmd_plen,  // new DATA: payload bytes
    input  logic [QAW+2:0]    cmd_qaddr, // new DATA: the image's first word in the queue RAM
    input  logic [   RAW-1:0] cmd_raddr, // the ring word the frame is read from or copied to
    output logic              busy,
    output logic              sent,      // the last beat of a frame left this cycle
    // the submission queue RAM, read port A
    output logic [QAW+2:0]    q_raddr,
    input  logic [   8*W-1:0] q_rdata,
    // the ring's second read port, for the upper-layer streamer
    input  logic [   RAW-1:0] ring_raddr_b,
    output logic [   8*W-1:0] ring_rdata_b,
    // to the MAC
    output logic [   8*W-1:0] m_tdata,
    output logic [     W-1:0] m_tkeep,
    output logic              m_tlast,
    output logic              m_tvalid,
    input  logic              m_tready
);
  localparam logic [1:0] SRC_CTRL = 2'd0, SRC_NEW = 2'd1;  // 2'd2, a replay, is the default below

  logic            run;
  logic [1:0]      src;
  logic [8*80-1:0] cbuf;
  logic [8*20-1:0] hdr;
  logic [13:0]     clen, plen;
  logic [QAW+2:0]  qbase;
  logic [RAW-1:0]  rbase;
  logic [15:0]     i;  // the beat on the output
  logic [31:0]     crc;

  assign cmd_ready = !run;
  assign busy = run;

  wire fire = m_tvalid && m_tready;
  logic [15:0] nbeats;
  assign nbeats = 16'((32'(clen) + 4 + W - 1) / W);

  // Read addresses: the word of the beat on the output, or the next one when it leaves.
  assign q_raddr = run ? qbase + (QAW + 3)'(i) + (QAW + 3)'(fire) : cmd_qaddr;

  logic [RAW-1:0] ring_ra, ring_wa;
  logic ring_we;
  logic [8*W-1:0] ring_rdata_a, content;
  assign ring_ra = run ? rbase + RAW'(i) + RAW'(fire) : cmd_raddr;
  assign ring_we = run && fire && src == SRC_NEW && 32'(i) * W < 32'(clen);
  assign ring_wa = rbase + RAW'(i);

  el_ram #(
      .DW(8 * W),
      .DEPTH(RING_WORDS)
  ) ring (
      .clk,
      .we(ring_we),
      .waddr(ring_wa),
      .wdata(content),
      .raddr_a(ring_ra),
      .rdata_a(ring_rdata_a),
      .raddr_b(ring_raddr_b),
      .rdata_b(ring_rdata_b)
  );

  // The beat: content lanes, then the FCS.
  logic [31:0] crc_cur, fcs;
  logic [31:0] p;
  always_comb begin
    content = '0;
    crc_cur = crc;
    m_tkeep = '0;
    for (int l = 0; l < W; l++) begin
      p = 32'(i) * W + 32'(l);
      if (p < 32'(clen)) begin
        case (src)
          SRC_CTRL: content[8*l+:8] = (p < 80) ? cbuf[8*p[6:0]+:8] : 8'h00;
          SRC_NEW:
          if (p < HDR_LEN) content[8*l+:8] = hdr[8*p[4:0]+:8];
          else if (p < HDR_LEN + 32'(plen)) content[8*l+:8] = q_rdata[8*l+:8];
          else content[8*l+:8] = 8'h00;
          default: content[8*l+:8] = (p == 15) ? (ring_rdata_a[8*l+:8] | {3'b000, F_REPLAY})
                                               : ring_rdata_a[8*l+:8];
        endcase
        crc_cur = el_pkg::crc_byte(crc_cur, content[8*l+:8]);
      end
    end
    fcs = ~crc_cur;
    m_tdata = content;
    for (int l = 0; l < W; l++) begin
      p = 32'(i) * W + 32'(l);
      if (p < 32'(clen) + 4) m_tkeep[l] = 1;
      if (p >= 32'(clen) && p < 32'(clen) + 4) m_tdata[8*l+:8] = fcs[8*(p-32'(clen))+:8];
    end
  end
  assign m_tvalid = run;
  assign m_tlast = run && (i == nbeats - 16'd1);
  assign sent = fire && m_tlast;

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      run <= 0;
    end else if (!run) begin
      if (cmd_valid) begin
        run <= 1;
        src <= cmd_src;
        cbuf <= cmd_cbuf;
        hdr <= cmd_hdr;
        clen <= cmd_clen;
        plen <= cmd_plen;
        qbase <= cmd_qaddr;
        rbase <= cmd_raddr;
        i <= 0;
        crc <= 32'hFFFFFFFF;
      end
    end else if (fire) begin
      crc <= crc_cur;
      i <= i + 16'd1;
      if (m_tlast) run <= 0;
    end
  end
endmodule
