// Constants and pure functions shared by the modules of the link end.
//
// Frame layout (wire.md section 2 and 3): destination MAC (6), source MAC (6), optional 802.1Q
// tag (4), EtherType 0x88B5 (2), link header (6: version and kind, VC and flags, sequence),
// body, padding to 60 bytes of content, FCS (4, least significant byte first).
package el_pkg;

  localparam logic [15:0] ETHERTYPE = 16'h88B5;
  localparam logic [15:0] VLAN_TPID = 16'h8100;
  localparam int SEQ_W = 20;  // sequence numbers and credit counters are modulo 2^20
  localparam logic [SEQ_W-1:0] SEQ_MASK = '1;
  localparam logic [SEQ_W-1:0] HALF = SEQ_W'(1 << 19);  // half the sequence space
  localparam int MFS_MAX = 9216;
  localparam int HDR_LEN = 20;  // untagged header: MACs, EtherType, link header
  localparam int HB = 80;  // bytes of every received frame kept in flops for the verdict

  // Kinds (wire.md Table WIRE-T2).
  localparam logic [3:0] K_DATA = 4'd0, K_ACK = 4'd1, K_NACK = 4'd2, K_CF = 4'd3, K_CC = 4'd4,
                         K_INIT = 4'd5, K_INIT_ECHO = 4'd6;
  localparam logic [4:0] F_REPLAY = 5'h01, F_ACK_REQ = 5'h02;

  // Upper-layer stream kinds (m_up_tuser[6:3]).
  localparam logic [3:0] UP_DELIVERED = 4'd0, UP_LOST_UNKNOWN = 4'd1, UP_LOST_MFS = 4'd2,
                         UP_LOST_VC = 4'd3, UP_LOST_WITHDRAWN = 4'd4, UP_LINK_UP = 4'd8,
                         UP_DOWN_FLUSH = 4'd9, UP_DOWN_PHYSICAL = 4'd10, UP_DOWN_RESTART = 4'd11;

  // Link counters (link.md Table LINK-T3), register 0x40 + index; replay_age_max counts ticks.
  localparam int C_ACKS_SENT = 0;
  localparam int C_ACKS_RECEIVED = 1;
  localparam int C_NACKS_SENT = 2;
  localparam int C_NACKS_RECEIVED = 3;
  localparam int C_FRAMES_REPLAYED = 4;
  localparam int C_REPLAYS_BY_NACK = 5;
  localparam int C_REPLAY_TIMEOUTS = 6;
  localparam int C_FLUSHES = 7;
  localparam int C_FLUSHES_AGED = 8;
  localparam int C_FRAMES_UNKNOWN_FATE = 9;
  localparam int C_RX_FCS_ERRORS = 10;
  localparam int C_RX_DAMAGED = 11;
  localparam int C_RX_STOMPED = 12;
  localparam int C_RX_FOREIGN = 13;
  localparam int C_RX_BAD_VERSION = 14;
  localparam int C_RX_UNKNOWN_KIND = 15;
  localparam int C_RX_MALFORMED_CONTROL = 16;
  localparam int C_RX_VC_NOT_AGREED = 17;
  localparam int C_RX_NOT_UP = 18;
  localparam int C_DUPLICATES = 19;
  localparam int C_DISCARDED_AFTER_NACK = 20;
  localparam int C_STALE_ACKS = 21;
  localparam int C_STALE_CF_ENTRIES = 22;
  localparam int C_STALE_CC_ENTRIES = 23;
  localparam int C_CF_SENT = 24;
  localparam int C_CF_RECEIVED = 25;
  localparam int C_CC_SENT = 26;
  localparam int C_CC_RECEIVED = 27;
  localparam int C_INITS_SENT = 28;
  localparam int C_INITS_RECEIVED = 29;
  localparam int C_INIT_ECHOES_SENT = 30;
  localparam int C_INIT_ECHOES_RECEIVED = 31;
  localparam int C_INIT_ECHOES_IGNORED = 32;
  localparam int C_INIT_REFUSED = 33;
  localparam int C_INIT_TIMEOUTS = 34;
  localparam int C_LINK_UPS = 35;
  localparam int C_REINITS = 36;
  localparam int C_OVERSIZE_FOR_PEER = 37;
  localparam int C_NOT_AGREED_VC = 38;
  localparam int C_FRAMES_WITHDRAWN = 39;
  // 40 is tx_stomped: this end never stomps a frame it sends, so that counter stays 0.
  localparam int C_REPLAY_BYTES_MAX = 41;
  localparam int C_REPLAY_FRAMES_MAX = 42;
  localparam int C_RX_OCCUPIED_MAX_CREDITS = 43;
  localparam int C_REPLAY_AGE_MAX = 44;
  localparam int N_LINK_COUNTERS = 45;

  // Per-VC counters, register 0x80 + 8 * counter + VC; credit_stall_ticks counts ticks.
  localparam int V_TX_FRAMES = 0;
  localparam int V_TX_BYTES = 1;
  localparam int V_RX_FRAMES = 2;
  localparam int V_RX_BYTES = 3;
  localparam int V_CREDIT_OVERRUNS = 4;
  localparam int V_CREDIT_STALLS = 5;
  localparam int V_CREDIT_STALL_TICKS = 6;
  localparam int V_CREDITS_RECOVERED = 7;
  localparam int N_VC_COUNTERS = 8;

  // CRC-32 of IEEE 802.3 (reflected, polynomial 0x04C11DB7), one byte.
  function automatic logic [31:0] crc_byte(input logic [31:0] crc, input logic [7:0] b);
    logic [31:0] c;
    c = crc ^ {24'd0, b};
    for (int i = 0; i < 8; i++) c = (c >> 1) ^ (c[0] ? 32'hEDB88320 : 32'h0);
    crc_byte = c;
  endfunction

  // The register state after a frame whose FCS is right (the residue), and after one whose FCS
  // is the complement of the right one (stomped, wire.md WIRE-2.5-3).
  localparam logic [31:0] CRC_RESIDUE_GOOD = 32'hDEBB20E3;
  localparam logic [31:0] CRC_RESIDUE_STOMPED = 32'h00000000;

  // ceil(n / 2^shift) for a power-of-two divisor: no division.
  function automatic logic [31:0] ceil_shift(input logic [31:0] n, input logic [4:0] shift);
    logic [31:0] mask;
    mask = (32'd1 << shift) - 32'd1;
    ceil_shift = (n >> shift) + ((n & mask) != 0 ? 32'd1 : 32'd0);
  endfunction

  // log2 of a power of two of at most 2^15.
  function automatic logic [4:0] log2_pow2(input logic [15:0] x);
    logic [4:0] r;
    r = 0;
    for (int i = 0; i < 16; i++) if (x[i]) r = i[4:0];
    log2_pow2 = r;
  endfunction

endpackage
