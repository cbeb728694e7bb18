// The receive pipeline of wire.md section 7, stages 1 to 5, on a W-byte datapath.
//
// Frames stream in from the MAC and are written, beat by beat, into one of two slots of a frame
// RAM while the CRC runs over every byte (FCS included: a right FCS leaves the residue
// 0xDEBB20E3, a stomped one 0) and the first HB bytes are kept in flops. The cycle after the
// last beat the verdict is formed from those flops alone: length, FCS, EtherType (behind an
// optional 802.1Q tag), version, kind, the size of a control body, the fields of INIT and of
// CF/CC, and where a DATA frame's payload lies. The verdict waits in `v_*` until the controller
// takes it; the slot stays busy until whoever hands the payload up frees it.
import el_pkg::SEQ_W;
import el_pkg::HALF;
import el_pkg::MFS_MAX;
import el_pkg::HB;
import el_pkg::ETHERTYPE;
import el_pkg::VLAN_TPID;
import el_pkg::K_DATA;
import el_pkg::K_CF;
import el_pkg::K_CC;
import el_pkg::K_INIT;
import el_pkg::K_INIT_ECHO;
import el_pkg::CRC_RESIDUE_GOOD;
import el_pkg::CRC_RESIDUE_STOMPED;

module el_rx #(
    parameter int W = 8,
    parameter int SLOT_WORDS = (MFS_MAX + 4 + W - 1) / W,
    parameter int AW = $clog2(2 * SLOT_WORDS)
) (
    input  logic             clk,
    input  logic             rst_n,
    // from the MAC
    input  logic [8*W-1:0]   s_tdata,
    input  logic [  W-1:0]   s_tkeep,
    input  logic             s_tlast,
    input  logic             s_tvalid,
    output logic             s_tready,
    input  logic [13:0]      mfs_in_force,  // frames longer are damaged (WIRE-7-1)
    // the verdict
    output logic             v_valid,
    input  logic             v_take,        // the controller took the verdict this cycle
    input  logic             v_keep,        // and hands the payload up: the slot stays busy
    output logic [3:0]       v_class,
    output logic [15:0]      v_len,         // frame bytes, FCS included (saturating)
    output logic [3:0]       v_kind,
    output logic [2:0]       v_vc,
    output logic [4:0]       v_flags,
    output logic [SEQ_W-1:0] v_seq,
    output logic [47:0]      v_src,
    output logic             v_slot,
    output logic [4:0]       v_pay_off,     // where the payload starts: 20, or 24 behind a tag
    output logic [13:0]      v_pay_len,
    output logic             v_pay_bad,     // a DATA frame accepted but malformed (LINK-4-17)
    // control bodies
    output logic [31:0]      v_nonce,
    output logic [31:0]      v_echo,
    output logic [3:0]       v_vcs,
    output logic [7:0]       v_ovh,
    output logic [15:0]      v_csize,
    output logic [13:0]      v_mfs,
    output logic [SEQ_W-1:0] v_window,
    output logic [7:0]       v_mask,
    output logic [8*SEQ_W-1:0] v_val,       // INIT grants, or CF/CC values, VC 0 in bits 19:0
    // slots
    input  logic             free_valid,    // a slot is free again
    input  logic             free_slot,
    output logic             busy,          // a frame is partly received or awaits its verdict
    // the frame RAM's second read port, for the upper-layer streamer
    input  logic [AW-1:0]    raddr,
    output logic [8*W-1:0]   rdata
);
  // Verdict classes.
  localparam logic [3:0] RV_OK = 4'd0, RV_DAMAGED = 4'd1, RV_FCS = 4'd2, RV_STOMPED = 4'd3,
                         RV_FOREIGN = 4'd4, RV_BAD_VERSION = 4'd5, RV_UNKNOWN_KIND = 4'd6,
                         RV_MALFORMED = 4'd7;

  logic             cur;  // the slot being filled
  logic [1:0]       slot_busy;
  logic [15:0]      beat;
  logic [15:0]      len;
  logic [31:0]      crc;
  logic [HB-1:0][7:0] hb;
  logic             fin;  // the last beat came: the verdict forms this cycle

  assign s_tready = !fin && !v_valid && !slot_busy[cur];
  assign busy = fin || v_valid || (beat != 0);

  wire take_beat = s_tvalid && s_tready;

  // The CRC over this beat's bytes.
  logic [31:0] crc_next;
  logic [ 7:0] nkeep;
  always_comb begin
    crc_next = crc;
    nkeep = 0;
    for (int l = 0; l < W; l++) begin
      if (s_tkeep[l]) begin
        crc_next = el_pkg::crc_byte(crc_next, s_tdata[8*l+:8]);
        nkeep = nkeep + 8'd1;
      end
    end
  end

  logic [AW-1:0] waddr;
  logic [8*W-1:0] unused_b;  // the frame RAM's second port is not used here
  assign waddr = AW'(cur ? SLOT_WORDS : 0) + AW'(beat);

  el_ram #(
      .DW(8 * W),
      .DEPTH(2 * SLOT_WORDS)
  ) ram (
      .clk,
      .we(take_beat && beat < 16'(SLOT_WORDS)),
      .waddr,
      .wdata(s_tdata),
      .raddr_a(raddr),
      .rdata_a(rdata),
      .raddr_b('0),
      .rdata_b(unused_b)
  );

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      cur <= 0;
      slot_busy <= 0;
      beat <= 0;
      len <= 0;
      crc <= 32'hFFFFFFFF;
      fin <= 0;
    end else begin
      if (take_beat) begin
        for (int i = 0; i < HB; i++) if (beat == 16'(i / W)) hb[i] <= s_tdata[8*(i%W)+:8];
        beat <= (beat == 16'hFFFF) ? beat : beat + 16'd1;
        len <= (len > 16'hFF00) ? 16'hFFFF : len + 16'(nkeep);
        crc <= crc_next;
        if (s_tlast) fin <= 1;
      end
      if (fin) begin
        fin <= 0;
        beat <= 0;
        len <= 0;
        crc <= 32'hFFFFFFFF;
        slot_busy[cur] <= 1;
        cur <= !cur;
      end
      if (free_valid) slot_busy[free_slot] <= 0;
      if (v_take && !v_keep) slot_busy[v_slot] <= 0;
    end
  end

  // ---------------------------------------------------------------- the verdict, from flops

  logic       tag;
  logic [7:0] f [64];  // the frame from its EtherType on, behind the tag when there is one
  always_comb begin
    tag = {hb[12], hb[13]} == VLAN_TPID;
    for (int k = 0; k < 64; k++) f[k] = tag ? hb[16+k] : hb[12+k];
  end

  function automatic logic [31:0] be32(input int at);
    be32 = {f[at], f[at+1], f[at+2], f[at+3]};
  endfunction

  // The low 20 bits of a big-endian 32-bit field: sequence numbers and credit values.
  function automatic logic [SEQ_W-1:0] be20(input int at);
    be20 = {f[at+1][3:0], f[at+2], f[at+3]};
  endfunction

  logic [3:0] c_class;
  logic [15:0] blen, csize_need, content;
  logic [13:0] plen;
  logic pbad, params_ok;
  logic [15:0] ptotal;
  logic [15:0] hlen;  // bytes before the body: 20, or 24 behind a tag
  always_comb begin
    hlen = tag ? 16'd24 : 16'd20;
    blen = len - 16'd4 - hlen;
    content = len - 16'd4;
    c_class = RV_OK;
    csize_need = 0;
    case (f[2][3:0])
      K_CF, K_CC: csize_need = 16'd36;
      K_INIT, K_INIT_ECHO: csize_need = 16'd52;
      default: csize_need = 0;
    endcase
    // INIT and INIT_ECHO fields in range (WIRE-4.5-1).
    params_ok = f[8+8] >= 8'd1 && f[8+8] <= 8'd8
        && {f[8+10], f[8+11]} >= 16'd32 && {f[8+10], f[8+11]} <= 16'd2048
        && (({f[8+10], f[8+11]} & ({f[8+10], f[8+11]} - 16'd1)) == 0)
        && {f[8+12], f[8+13]} >= 16'd320 && {f[8+12], f[8+13]} <= 16'(MFS_MAX)
        && be20(8 + 16) >= 1 && be20(8 + 16) <= HALF;
    for (int v = 0; v < 8; v++)
      if (v < int'(f[8+8]) && !(be20(8 + 20 + 4 * v) >= 1
          && be20(8 + 20 + 4 * v) < HALF))
        params_ok = 0;
    if (len < 16'd64 || len > 16'(mfs_in_force)) c_class = RV_DAMAGED;
    else if (crc != CRC_RESIDUE_GOOD)
      c_class = (crc == CRC_RESIDUE_STOMPED) ? RV_STOMPED : RV_FCS;
    else if ({f[0], f[1]} != ETHERTYPE) c_class = RV_FOREIGN;
    else if (f[2][7:4] != 4'd1) c_class = RV_BAD_VERSION;
    else if (f[2][3:0] > K_INIT_ECHO) c_class = RV_UNKNOWN_KIND;
    else if (f[2][3:0] != K_DATA) begin
      // A control body is exactly its size, or padded to 60 bytes of content (WIRE-4-1).
      if (blen < csize_need
          || (blen > csize_need && hlen + csize_need >= 16'd60)
          || (blen > csize_need && content > 16'd60))
        c_class = RV_MALFORMED;
      else if ((f[2][3:0] == K_INIT || f[2][3:0] == K_INIT_ECHO) && !params_ok)
        c_class = RV_MALFORMED;
    end
    // Where a DATA frame's payload lies: its network header's length (LINK-4-17).
    ptotal = 16'd8 + {f[8+6], f[8+7]};
    pbad = 0;
    if (blen < 16'd8) pbad = 1;
    else if (ptotal > blen) pbad = 1;
    else if (blen > ptotal && content > ((hlen + ptotal > 16'd60) ? hlen + ptotal : 16'd60))
      pbad = 1;
    plen = pbad ? 14'd0 : ptotal[13:0];
  end

  always_ff @(posedge clk) begin
    if (!rst_n) v_valid <= 0;
    else if (fin) begin
      v_valid <= 1;
      v_class <= c_class;
      v_len <= len;
      v_kind <= f[2][3:0];
      v_vc <= f[3][7:5];
      v_flags <= f[3][4:0];
      v_seq <= be20(4);
      v_src <= {hb[6], hb[7], hb[8], hb[9], hb[10], hb[11]};
      v_slot <= cur;
      v_pay_off <= tag ? 5'd24 : 5'd20;
      v_pay_len <= plen;
      v_pay_bad <= pbad;
      v_nonce <= be32(8);
      v_echo <= be32(12);
      v_vcs <= f[8+8][3:0];
      v_ovh <= f[8+9];
      v_csize <= {f[8+10], f[8+11]};
      v_mfs <= {f[8+12][5:0], f[8+13]};
      v_window <= be20(8 + 16);
      v_mask <= f[8];
      for (int v = 0; v < 8; v++)
        v_val[SEQ_W*v+:SEQ_W] <= (f[2][3:0] == K_INIT || f[2][3:0] == K_INIT_ECHO)
            ? be20(8 + 20 + 4 * v) : be20(8 + 4 + 4 * v);
    end else if (v_take) v_valid <= 0;
  end
endmodule
