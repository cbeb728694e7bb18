// The submission queues: one ring per VC in a shared RAM, each payload stored as the image of
// the DATA frame that will carry it, its first byte at byte 20 (after a 20-byte header whose
// first two bytes hold the payload length until the frame is built) and every image starting on
// a word. A payload is taken only when its VC's ring has room for a frame of the MFS, so a
// packet is never stalled half way; the upper layer waits at tready otherwise.
import el_pkg::HDR_LEN;

module el_sub #(
    parameter int W = 8,
    parameter int TXQ_BYTES = 65536,
    parameter int QW = TXQ_BYTES / W,  // words per VC
    parameter int QAW = $clog2(QW),
    parameter int AW = QAW + 3
) (
    input  logic           clk,
    input  logic           rst_n,
    input  logic [8*W-1:0] s_tdata,
    input  logic [  W-1:0] s_tkeep,
    input  logic           s_tlast,
    input  logic [    2:0] s_tuser,
    input  logic           s_tvalid,
    output logic           s_tready,
    input  logic [   13:0] cfg_mfs,
    // the queues' heads, for the controller
    output logic [8*QAW-1:0] head,       // word of the oldest image of each VC
    output logic [8*16-1:0]  frames,     // images in each VC's ring
    input  logic           pop_valid,    // the oldest image of pop_vc leaves
    input  logic [    2:0] pop_vc,
    input  logic [QAW:0]   pop_words,
    input  logic [    7:0] clear,        // every image of the VCs set leaves
    input  logic [    7:0] pinned,       // images that left may still be read: keep their room
    output logic           busy,
    // reads: port A for the controller and the transmitter, port B for the upper-layer streamer
    input  logic [AW-1:0]  raddr_a,
    output logic [8*W-1:0] rdata_a,
    input  logic [AW-1:0]  raddr_b,
    output logic [8*W-1:0] rdata_b
);
  localparam int S = HDR_LEN % W;  // the payload's first byte in its word
  localparam int Q = HDR_LEN / W;  // the payload's first word in its image

  // The lanes below S: the bytes a beat carries over into the next image word.
  function automatic logic [8*W-1:0] low_lanes();
    logic [8*W-1:0] m;
    m = '0;
    for (int l = 0; l < S; l++) m[8*l+:8] = 8'hFF;
    low_lanes = m;
  endfunction
  localparam logic [8*W-1:0] CMASK = low_lanes();

  logic [7:0][QAW:0] hd, tl;  // ring pointers, one bit more than the ring
  logic [7:0][QAW:0] fr;  // the room freed: behind hd while an image that left is being read
  logic [7:0][15:0] nf;
  always_comb
    for (int v = 0; v < 8; v++) begin
      head[QAW*v+:QAW] = hd[v][QAW-1:0];
      frames[16*v+:16] = nf[v];
    end

  typedef enum logic [1:0] {
    IDLE,
    BEATS,
    FLUSH,
    WORD0
  } state_e;
  state_e st;
  logic [2:0] vc;
  logic [QAW:0] base;  // where the image starts
  logic [QAW:0] j;  // payload beats taken
  logic [13:0] plen;
  logic [8*W-1:16] w0;  // the image's first word above the length field, written last with it
  logic [8*W-1:0] carry;

  // Room for a frame of the MFS (its image and a word of slack) in the ring of s_tuser.
  logic [QAW:0] need, used;
  always_comb begin
    need = (QAW + 1)'((32'(cfg_mfs) + W - 1) / W + 1);
    used = tl[s_tuser] - fr[s_tuser];
  end

  // A packet's first beat is taken in the cycle it is offered when its VC's ring has room, so
  // the offer may change VC from one cycle to the next until then.
  wire starting = (st == IDLE) && s_tvalid && (QAW + 1)'(QW) - used >= need;
  assign s_tready = starting || (st == BEATS);
  assign busy = (st != IDLE);

  // The packet being taken, with its first beat's values in the cycle it starts.
  logic [2:0] vc_c;
  logic [QAW:0] base_c, j_c;
  logic [13:0] plen_c;
  logic [8*W-1:0] carry_c;
  always_comb begin
    vc_c = starting ? s_tuser : vc;
    base_c = starting ? tl[s_tuser] : base;
    j_c = starting ? '0 : j;
    plen_c = starting ? '0 : plen;
    carry_c = starting ? '0 : carry;
  end
  wire take = s_tvalid && s_tready;

  logic [8*W-1:0] word;  // the image word this beat completes
  logic [7:0] nkeep;
  always_comb begin
    nkeep = 0;
    for (int l = 0; l < W; l++) if (s_tkeep[l]) nkeep = nkeep + 8'd1;
    if (S == 0) word = s_tdata;
    else word = (s_tdata << (8 * S)) | (carry_c & CMASK);
  end

  logic           we;
  logic [AW-1:0]  waddr;
  logic [8*W-1:0] wdata;
  always_comb begin
    we = 0;
    waddr = '0;
    wdata = word;
    if (take && !(Q == 0 && j_c == 0)) begin
      we = 1;
      waddr = {vc_c, QAW'(base_c + (QAW + 1)'(Q) + j_c)};
    end else if (st == FLUSH) begin
      we = 1;
      waddr = {vc, QAW'(base + (QAW + 1)'(Q) + j)};
      wdata = carry & CMASK;
    end else if (st == WORD0) begin
      we = 1;
      waddr = {vc, QAW'(base)};
      wdata = {w0, plen[7:0], 2'b00, plen[13:8]};
    end
  end

  el_ram #(
      .DW(8 * W),
      .DEPTH(8 * QW)
  ) ram (
      .clk,
      .we,
      .waddr,
      .wdata,
      .raddr_a,
      .rdata_a,
      .raddr_b,
      .rdata_b
  );

  // Image words: ceil((20 + len) / W).
  function automatic logic [QAW:0] image_words(input logic [13:0] len);
    image_words = (QAW + 1)'((32'(len) + HDR_LEN + W - 1) / W);
  endfunction

  logic [QAW:0] done_words;
  assign done_words = image_words(plen);

  always_ff @(posedge clk) begin
    if (!rst_n) begin
      st <= IDLE;
      for (int v = 0; v < 8; v++) begin
        hd[v] <= 0;
        fr[v] <= 0;
        tl[v] <= 0;
        nf[v] <= 0;
      end
    end else begin
      case (st)
        IDLE, BEATS:
        if (take) begin
          if (starting) begin
            vc <= s_tuser;
            base <= tl[s_tuser];
            w0 <= '0;
          end
          if (Q == 0 && j_c == 0) w0 <= word[8*W-1:16];
          carry <= s_tdata >> (8 * (W - S));
          plen <= plen_c + 14'(nkeep);
          j <= j_c + 1;
          st <= BEATS;
          if (s_tlast) begin
            // Does the image reach a word past the one this beat completed?
            if (image_words(plen_c + 14'(nkeep)) > (QAW + 1)'(Q) + j_c + 1) st <= FLUSH;
            else st <= WORD0;
          end
        end
        FLUSH: st <= WORD0;
        WORD0: begin
          st <= IDLE;
          tl[vc] <= base + done_words;
        end
        default: st <= IDLE;
      endcase
      // The image count and the pointers of the controller's side.
      for (int v = 0; v < 8; v++) begin
        if (!pinned[v]) fr[v] <= hd[v];
        if (clear[v]) begin
          hd[v] <= tl[v];
          nf[v] <= 0;
        end else begin
          if (pop_valid && pop_vc == 3'(v)) hd[v] <= hd[v] + pop_words;
          nf[v] <= nf[v] + ((st == WORD0 && vc == 3'(v)) ? 16'd1 : 16'd0)
                         - ((pop_valid && pop_vc == 3'(v)) ? 16'd1 : 16'd0);
        end
      end
    end
  end
endmodule
