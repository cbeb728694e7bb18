// el_bridge: drives the Verilated SystemVerilog link end `el_link_end` from the conformance
// harness's line protocol, version 2 (docs/conformance.md section 3).
//
// The protocol logic lives in the RTL. This program is only a testbench: it turns each JSON
// request read on standard input into pin activity (frames as beats on s_rx, requests as levels,
// pulses and packets on s_sub, the configuration as register writes) and turns what the design
// puts on its output streams back into JSON answers on standard output. The contract with the
// design is hw/link_end/INTERFACE.md.
//
// Time model. The design's time is k * T ns, where k counts the cycles clocked with `tick` high
// and T is --tick-ns. The clock runs C cycles per tick (--cycles-per-tick, default 2: a 1 GHz
// clock under a 2 ns timebase), the first of each period with `tick` high. `advance` to X runs
// tick periods while (k + 1) * T <= X. An input (frame or request) at time X first runs tick
// periods until k * T >= X, then is applied with `tick` low (time frozen) and the bridge keeps
// clocking frozen cycles until the design says `quiet`.
//
// The transmitter model: m_tx is a MAC that serialises at --rate-gbps. A frame's first beat is
// stamped with the time after its cycle's tick; the wire is then busy for ser(n) = (n + 20) * 8
// / rate ns (rounded up), and m_tx_tready stays low for a new frame until it is free again.
//
// Build it with hw/link_end/build.sh (Verilator 5, C++17, nlohmann/json).

#include "Vel_link_end.h"
#include "verilated.h"
#ifdef EL_TRACE
#include "verilated_vcd_c.h"
#endif

#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <ctime>
#include <array>
#include <cerrno>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <deque>
#include <iostream>
#include <memory>
#include <stdexcept>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

namespace {

using Json = nlohmann::json;          // requests
using OJson = nlohmann::ordered_json;  // answers: fields in the order written
using Bytes = std::vector<uint8_t>;

// ------------------------------------------------------------------------------------------
// Datapath width, taken from the Verilated port types: a 64-bit tdata is a QData (W = 8), a
// 512-bit one a VlWide<16> (W = 64). Everything else follows from W.

using Model = Vel_link_end;
using TData = std::remove_reference_t<decltype(std::declval<Model&>().s_rx_tdata)>;
using TKeep = std::remove_reference_t<decltype(std::declval<Model&>().s_rx_tkeep)>;
constexpr unsigned W = sizeof(TData);  // bytes per beat
static_assert(W == 8 || W == 64, "el_link_end must be built with W = 8 or W = 64");

constexpr int PROTOCOL_VERSION = 2;
constexpr uint64_t SETTLE_LIMIT = 1000000;  // frozen cycles an input may take to settle
constexpr uint64_t MY_MAC = 0x02000000'0E02ULL;  // 02:00:00:00:0E:02, byte 0 in bits 47..40

// Register map (INTERFACE.md).
constexpr uint8_t REG_SEED = 0x13, REG_MAC = 0x14;
constexpr uint8_t CAP_W = 0x20, CAP_RPL_BYTES = 0x21, CAP_RPL_FRAMES = 0x22,
                  CAP_MAX_MFS = 0x24;  // 0x23 TXQ_BYTES is not needed here
constexpr uint8_t REG_LINK_COUNTERS = 0x40, REG_VC_COUNTERS = 0x80;

// The link parameters, in the order of their configuration registers 0x00.. (which is also the
// order of DEFAULTS in examples/conformance/link_end.py). `ns`: a duration, written in ticks.
struct ParamDef {
  const char* name;
  int64_t def;
  bool ns;
};
constexpr std::array<ParamDef, 19> PARAMS = {{
    {"vcs", 4, false},
    {"credit_size", 64, false},
    {"rx_credits", 1280, false},
    {"credit_overhead", 0, false},
    {"mfs", 9216, false},
    {"llr_window", 1 << 19, false},
    {"replay_max_frames", 115, false},
    {"replay_max_bytes", 58768, false},
    {"ack_spacing", 2048, false},
    {"ack_timer_ns", 500, true},
    {"replay_timer_ns", 5000, true},
    {"replay_count_max", 3, false},
    {"cf_min_credits", 8, false},
    {"cf_min_interval_ns", 100, true},
    {"cf_max_interval_ns", 2000, true},
    {"cc_interval_ns", 10000, true},
    {"init_interval_ns", 1000, true},
    {"init_timeout_ns", 1000000, true},
    {"llr_max_age_ns", 25000, true},
}};
enum ParamIndex {
  P_VCS, P_CREDIT_SIZE, P_RX_CREDITS, P_CREDIT_OVERHEAD, P_MFS, P_LLR_WINDOW,
  P_REPLAY_MAX_FRAMES, P_REPLAY_MAX_BYTES, P_ACK_SPACING, P_ACK_TIMER, P_REPLAY_TIMER,
  P_REPLAY_COUNT_MAX, P_CF_MIN_CREDITS, P_CF_MIN_INTERVAL, P_CF_MAX_INTERVAL, P_CC_INTERVAL,
  P_INIT_INTERVAL, P_INIT_TIMEOUT, P_LLR_MAX_AGE,
};
using Params = std::array<int64_t, PARAMS.size()>;

Params default_params() {
  Params p{};
  for (size_t i = 0; i < PARAMS.size(); i++) p[i] = PARAMS[i].def;
  return p;
}

// Counters (link.md Table LINK-T3), in register order: 0x40 + i, then 0x80 + 8 c + v.
constexpr std::array<const char*, 45> LINK_COUNTERS = {
    "acks_sent", "acks_received", "nacks_sent", "nacks_received", "frames_replayed",
    "replays_by_nack", "replay_timeouts", "flushes", "flushes_aged", "frames_unknown_fate",
    "rx_fcs_errors", "rx_damaged", "rx_stomped", "rx_foreign", "rx_bad_version",
    "rx_unknown_kind", "rx_malformed_control", "rx_vc_not_agreed", "rx_not_up", "duplicates",
    "discarded_after_nack", "stale_acks", "stale_cf_entries", "stale_cc_entries", "cf_sent",
    "cf_received", "cc_sent", "cc_received", "inits_sent", "inits_received",
    "init_echoes_sent", "init_echoes_received", "init_echoes_ignored", "init_refused",
    "init_timeouts", "link_ups", "reinits", "oversize_for_peer", "not_agreed_vc",
    "frames_withdrawn", "tx_stomped", "replay_bytes_max", "replay_frames_max",
    "rx_occupied_max_credits", "replay_age_max_ns"};
constexpr std::array<const char*, 8> VC_COUNTERS = {
    "tx_frames", "tx_bytes", "rx_frames", "rx_bytes", "credit_overruns", "credit_stalls",
    "credit_stall_ns", "credits_recovered"};

// m_up_tuser[6:3] (INTERFACE.md).
enum UpKind : uint8_t {
  UP_DELIVERED = 0, UP_LOST_UNKNOWN = 1, UP_LOST_MFS = 2, UP_LOST_VC = 3,
  UP_LOST_WITHDRAWN = 4, UP_LINK_UP = 8, UP_DOWN_FLUSH = 9, UP_DOWN_PHYSICAL = 10,
  UP_DOWN_RESTART = 11,
};

// The two kinds of failure an answer reports (docs/conformance.md 3.2).
struct Refused : std::runtime_error {
  using std::runtime_error::runtime_error;
};
struct Error : std::runtime_error {
  using std::runtime_error::runtime_error;
};

uint64_t ceil_div(uint64_t a, uint64_t b) { return a / b + (a % b != 0); }

// ------------------------------------------------------------------------------------------
// Beat packing, overloaded on the port type. Byte i of a beat is tdata[8i+7:8i].

inline void pack_beat(QData& d, const uint8_t* p, unsigned n) {
  uint64_t v = 0;
  for (unsigned i = 0; i < n; i++) v |= uint64_t(p[i]) << (8 * i);
  d = v;
}
template <std::size_t N>
inline void pack_beat(VlWide<N>& d, const uint8_t* p, unsigned n) {
  for (unsigned w = 0; w < N; w++) {
    EData v = 0;
    for (unsigned b = 0; b < 4; b++) {
      const unsigned i = 4 * w + b;
      if (i < n) v |= EData(p[i]) << (8 * b);
    }
    d[w] = v;
  }
}
inline uint8_t beat_byte(const QData& d, unsigned i) { return uint8_t(d >> (8 * i)); }
template <std::size_t N>
inline uint8_t beat_byte(const VlWide<N>& d, unsigned i) {
  return uint8_t(d[i / 4] >> (8 * (i % 4)));
}

// Appends the bytes whose tkeep bit is set (contiguous from lane 0 by the contract; any other
// pattern is taken lane by lane).
template <typename D>
inline void append_beat(Bytes& out, const D& data, uint64_t keep) {
  if ((keep & (keep + 1)) == 0) {  // 0, 1, 3, 7, ...: contiguous from lane 0
    const unsigned n = unsigned(__builtin_popcountll(keep));
    for (unsigned i = 0; i < n; i++) out.push_back(beat_byte(data, i));
  } else {
    for (unsigned i = 0; i < W; i++)
      if ((keep >> i) & 1) out.push_back(beat_byte(data, i));
  }
}

constexpr uint64_t keep_mask(unsigned n) { return n >= 64 ? ~uint64_t(0) : (uint64_t(1) << n) - 1; }

// ------------------------------------------------------------------------------------------
// Hex and JSON field helpers.

Bytes from_hex(const std::string& s, const char* what) {
  auto nib = [](char c) -> int {
    if (c >= '0' && c <= '9') return c - '0';
    if (c >= 'a' && c <= 'f') return c - 'a' + 10;
    if (c >= 'A' && c <= 'F') return c - 'A' + 10;
    return -1;
  };
  if (s.size() % 2) throw Error(std::string(what) + " is not hex: odd number of digits");
  Bytes b(s.size() / 2);
  for (size_t i = 0; i < b.size(); i++) {
    const int hi = nib(s[2 * i]), lo = nib(s[2 * i + 1]);
    if (hi < 0 || lo < 0) throw Error(std::string(what) + " is not hex");
    b[i] = uint8_t(hi << 4 | lo);
  }
  return b;
}

std::string to_hex(const Bytes& b) {
  static const char digits[] = "0123456789abcdef";
  std::string s(2 * b.size(), '0');
  for (size_t i = 0; i < b.size(); i++) {
    s[2 * i] = digits[b[i] >> 4];
    s[2 * i + 1] = digits[b[i] & 15];
  }
  return s;
}

const Json& field(const Json& o, const char* name) {
  auto it = o.find(name);
  if (it == o.end()) throw Error(std::string("missing field ") + name);
  return *it;
}
uint64_t get_u64(const Json& o, const char* name) {
  const Json& v = field(o, name);
  if (v.is_number_unsigned()) return v.get<uint64_t>();
  if (v.is_number_integer() && v.get<int64_t>() >= 0) return uint64_t(v.get<int64_t>());
  throw Error(std::string(name) + " must be a non-negative integer");
}
int64_t get_i64(const Json& v, const std::string& name) {
  if (v.is_number_unsigned()) {
    const uint64_t u = v.get<uint64_t>();
    return u > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(u);  // out of every range anyway
  }
  if (v.is_number_integer()) return v.get<int64_t>();
  throw Error(name + " must be an integer");
}
const std::string& get_str(const Json& o, const char* name) {
  const Json& v = field(o, name);
  if (!v.is_string()) throw Error(std::string(name) + " must be a string");
  return v.get_ref<const std::string&>();
}
// A port, optional, 0 when left out.
uint64_t get_port(const Json& o) { return o.contains("port") ? get_u64(o, "port") : 0; }

// ------------------------------------------------------------------------------------------
// The bridge: the model, its clock, and every piece of state between the two sides.

class Bridge {
 public:
  Bridge(uint64_t tick_ns, uint64_t cycles_per_tick, uint64_t rate_gbps, const std::string& trace_file)
      : T_(tick_ns), C_(cycles_per_tick), R_(rate_gbps), ctx_(std::make_unique<VerilatedContext>()) {
#ifdef EL_TRACE
    if (!trace_file.empty()) ctx_->traceEverOn(true);
#else
    (void)trace_file;
#endif
    top_ = std::make_unique<Model>(ctx_.get(), "el_link_end");
#ifdef EL_TRACE
    if (!trace_file.empty()) {
      vcd_ = std::make_unique<VerilatedVcdC>();
      top_->trace(vcd_.get(), 99);
      vcd_->open(trace_file.c_str());
    }
#endif
    top_->clk = 0;
    top_->m_up_tready = 1;
    hard_reset();
    // The capabilities are constants of the build: read them once.
    cap_w_ = read_reg(CAP_W);
    cap_rpl_bytes_ = read_reg(CAP_RPL_BYTES);
    cap_rpl_frames_ = read_reg(CAP_RPL_FRAMES);
    cap_max_mfs_ = read_reg(CAP_MAX_MFS);
  }

  ~Bridge() {
    top_->final();
#ifdef EL_TRACE
    if (vcd_) vcd_->close();
#endif
  }

  uint64_t cap_w() const { return cap_w_; }

  // One request line in, one answer out. Never throws.
  OJson handle(const Json& msg) {
    OJson ans;
    try {
      const std::string& op = get_str(msg, "op");
      if (op == "hello") ans = hello(msg);
      else if (op == "reset") ans = reset(msg);
      else if (op == "frame") ans = frame(msg);
      else if (op == "request") ans = request(msg);
      else if (op == "advance") ans = advance(msg);
      else if (op == "counters") ans = counters();
      else if (op == "bye") ans = OJson{{"ok", true}};
      else throw Error("unknown op " + op);
    } catch (const Refused& e) {
      ans = OJson{{"ok", false}, {"refused", e.what()}};
    } catch (const std::exception& e) {
      ans = OJson{{"ok", false}, {"error", e.what()}};
    }
    return ans;
  }

 private:
  // ---------------------------------------------------------------- collected outputs

  struct TxFrame {  // a frame taken from m_tx
    uint64_t stamp;  // ns: when its first bit leaves
    uint64_t order;  // observation order, to keep equal times stable
    Bytes bytes;
  };
  struct UpItem {  // a packet or an event taken from m_up
    uint64_t time;  // ns: when its last beat was taken
    uint64_t order;
    uint8_t kind, vc;
    Bytes payload;
  };
  struct Packet {  // a submitted payload the design has not taken yet
    uint64_t order;  // submission order, over all VCs
    Bytes bytes;
  };

  // ---------------------------------------------------------------- the clock

  uint64_t now() const { return k_ * T_; }

  // One clock cycle. Drives every stream input from the bridge's state, lets the combinational
  // outputs settle, notes which handshakes happen at this edge (capturing the output beats
  // before the edge changes them), clocks the edge, then updates the bridge's state. This is
  // the hot loop: no allocation beyond amortised vector growth, no JSON.
  // One period of the timebase: the clock runs C_ cycles, the first with `tick` high, so that
  // every cycle of the period is at its new time.
  void tick_period() {
    cycle(true);
    for (uint64_t c = 1; c < C_; c++) cycle(false);
  }

  void cycle(bool tick) {
    Model& m = *top_;
    const uint64_t k_after = k_ + (tick ? 1 : 0);
    cycles_++;

    // Inputs for this cycle.
    m.tick = tick;
    if (rx_active_ && !rx_loaded_) load_rx_beat();
    m.s_rx_tvalid = rx_active_;
    if (sub_cur_ < 0 && sub_pending_) sub_select();
    if (sub_cur_ >= 0 && !sub_loaded_) load_sub_beat();
    m.s_sub_tvalid = sub_cur_ >= 0;
    const bool tx_ready = in_reset_ ? false : (tx_mid_ || k_after * T_ >= wire_free_);
    m.m_tx_tready = tx_ready;
    m.m_up_tready = !in_reset_;

    m.clk = 0;
    m.eval();
    trace_dump();

    // Handshakes of this edge, seen before it.
    const bool rx_fire = rx_active_ && m.s_rx_tready;
    const bool sub_fire = sub_cur_ >= 0 && m.s_sub_tready;
    const bool tx_fire = tx_ready && m.m_tx_tvalid;
    const bool up_fire = !in_reset_ && m.m_up_tvalid;
    bool tx_last = false, up_last = false;
    uint8_t up_user = 0;
    if (tx_fire) {
      if (!tx_mid_) tx_cur_.clear();
      append_beat(tx_cur_, m.m_tx_tdata, uint64_t(m.m_tx_tkeep));
      tx_last = m.m_tx_tlast;
    }
    if (up_fire) {
      if (!up_mid_) up_cur_.clear();
      up_user = m.m_up_tuser;
      append_beat(up_cur_, m.m_up_tdata, uint64_t(m.m_up_tkeep));
      up_last = m.m_up_tlast;
    }

    // The edge.
    m.clk = 1;
    m.eval();
    trace_dump();
    k_ = k_after;

    // State after the edge.
    if (rx_active_) {
      if (rx_fire) {
        rx_loaded_ = false;
        rx_pos_ += W;
        if (rx_last_) rx_active_ = false;
      }
    }
    if (sub_cur_ >= 0) {
      if (sub_fire) sub_accepted();
      else if (!sub_started_) sub_refused_head();
    }
    if (tx_fire) {
      if (!tx_mid_) {
        tx_stamp_ = now();  // the first beat: the time after this cycle's tick
        tx_order_ = order_++;
      }
      tx_mid_ = !tx_last;
      if (tx_last) {
        // The wire is busy for ser(n) = (n + 20) * 8 / rate ns (link.md 1.2), rounded up.
        wire_free_ = tx_stamp_ + ceil_div((tx_cur_.size() + 20) * 8, R_);
        frames_.push_back(TxFrame{tx_stamp_, tx_order_, tx_cur_});
      }
    }
    if (up_fire) {
      if (!up_mid_) up_user_ = up_user;  // kind and VC are those of the first beat
      up_mid_ = !up_last;
      if (up_last) take_up_item();
    }
  }

  void trace_dump() {
#ifdef EL_TRACE
    if (vcd_) vcd_->dump(trace_time_++);
#endif
  }

  // s_rx: the beat at rx_pos_ of the frame being fed.
  void load_rx_beat() {
    const size_t left = rx_frame_.size() - rx_pos_;
    const unsigned n = unsigned(std::min<size_t>(W, left));
    pack_beat(top_->s_rx_tdata, rx_frame_.data() + rx_pos_, n);
    top_->s_rx_tkeep = static_cast<TKeep>(keep_mask(n));
    rx_last_ = left <= W;  // a zero-length frame is one beat with tkeep 0
    top_->s_rx_tlast = rx_last_;
    rx_loaded_ = true;
  }

  // s_sub: picks the packet to offer. Submission order over all VCs, except that a VC whose
  // head the design has just refused (its queue is full) is passed over until every VC with a
  // packet waiting has been refused once, so that a full queue does not block the others.
  void sub_select() {
    unsigned cand = sub_pending_ & ~sub_refused_;
    if (!cand) {
      sub_refused_ = 0;
      cand = sub_pending_;
    }
    int best = -1;
    for (int v = 0; v < 8; v++)
      if (((cand >> v) & 1) && (best < 0 || subq_[v].front().order < subq_[best].front().order))
        best = v;
    sub_cur_ = best;
    sub_pos_ = 0;
    sub_loaded_ = false;
  }

  void load_sub_beat() {
    const Bytes& b = subq_[sub_cur_].front().bytes;
    const size_t left = b.size() - sub_pos_;
    const unsigned n = unsigned(std::min<size_t>(W, left));
    pack_beat(top_->s_sub_tdata, b.data() + sub_pos_, n);
    top_->s_sub_tkeep = static_cast<TKeep>(keep_mask(n));
    sub_last_ = left <= W;  // an empty payload is one beat with tkeep 0
    top_->s_sub_tlast = sub_last_;
    top_->s_sub_tuser = uint8_t(sub_cur_);
    sub_loaded_ = true;
  }

  void sub_accepted() {
    if (!sub_started_) {
      sub_started_ = true;
      sub_refused_ = 0;
      sub_blocked_ = false;
    }
    sub_loaded_ = false;
    sub_pos_ += W;
    if (sub_last_) {
      auto& q = subq_[sub_cur_];
      q.pop_front();
      if (q.empty()) sub_pending_ &= ~(1u << sub_cur_);
      sub_cur_ = -1;
      sub_started_ = false;
    }
  }

  void sub_refused_head() {
    sub_refused_ |= 1u << sub_cur_;
    if ((sub_pending_ & ~sub_refused_) == 0) sub_blocked_ = true;  // every waiting VC is full
    // Offer another VC next cycle if there is one; else keep offering this one as it is.
    if (__builtin_popcount(sub_pending_) > 1) sub_cur_ = -1;
  }

  // A whole packet or event from m_up.
  void take_up_item() {
    const uint8_t kind = up_user_ >> 3, vc = up_user_ & 7;
    switch (kind) {
      case UP_DELIVERED: case UP_LOST_UNKNOWN: case UP_LOST_MFS: case UP_LOST_VC:
      case UP_LOST_WITHDRAWN: case UP_LINK_UP: case UP_DOWN_FLUSH: case UP_DOWN_PHYSICAL:
      case UP_DOWN_RESTART:
        ups_.push_back(UpItem{now(), order_++, kind, vc, up_cur_});
        break;
      default:
        if (fault_.empty()) fault_ = "the design put kind " + std::to_string(kind) + " on m_up";
    }
  }

  // ---------------------------------------------------------------- driving sequences

  // Clocks frozen cycles until done() holds after an edge; an error past SETTLE_LIMIT.
  template <typename Done>
  void settle(Done done, const char* what) {
    for (uint64_t i = 0; i < SETTLE_LIMIT; i++) {
      cycle(false);
      if (done()) return;
    }
    throw Error(std::string("the design did not settle within 1000000 cycles after ") + what);
  }

  // No packet is partly taken, and every one still waiting has been refused by a full queue.
  bool sub_settled() const {
    return !sub_started_ && (sub_pending_ == 0 || sub_blocked_);
  }
  bool quiet() const { return top_->quiet && sub_settled(); }

  // Brings the design to time x for an input: tick cycles until k * T >= x, then frozen cycles
  // until nothing of an earlier input or packet is in process.
  void bring_to_input(uint64_t x, const char* what) {
    while (now() < x) tick_period();
    if (!(top_->quiet && !sub_started_)) settle([&] { return top_->quiet && !sub_started_; }, what);
  }

  void hard_reset() {
    Model& m = *top_;
    in_reset_ = true;
    m.rst_n = 0;
    m.phy_up = 0;
    m.hold = 0;
    m.withdraw = 0;
    m.reg_wr = 0;
    m.reg_rd = 0;
    m.s_rx_tvalid = 0;
    m.s_sub_tvalid = 0;
    rx_active_ = false;
    clear_subs();
    cycle(false);
    cycle(false);
    m.rst_n = 1;
    in_reset_ = false;
    // Every piece of bridge state back to its start.
    k_ = 0;
    params_ = default_params();
    phy_ = false;
    hold_ = 0;
    rx_active_ = rx_loaded_ = rx_last_ = false;
    rx_pos_ = 0;
    tx_mid_ = false;
    tx_cur_.clear();
    wire_free_ = 0;
    up_mid_ = false;
    up_cur_.clear();
    frames_.clear();
    ups_.clear();
    withdrawn_ = 0;
    fault_.clear();
    order_ = 0;
  }

  void clear_subs() {
    for (auto& q : subq_) q.clear();
    sub_pending_ = sub_refused_ = 0;
    sub_cur_ = -1;
    sub_started_ = sub_loaded_ = sub_blocked_ = sub_last_ = false;
    sub_pos_ = 0;
    sub_order_ = 0;
  }

  void write_reg(uint8_t addr, uint64_t value) {
    top_->reg_addr = addr;
    top_->reg_wdata = value;
    top_->reg_wr = 1;
    cycle(false);
    top_->reg_wr = 0;
  }

  // reg_rd for one cycle; reg_rdata holds the value after that edge.
  uint64_t read_reg(uint8_t addr) {
    top_->reg_addr = addr;
    top_->reg_rd = 1;
    cycle(false);
    top_->reg_rd = 0;
    return top_->reg_rdata;
  }

  // ---------------------------------------------------------------- operations

  OJson hello(const Json& msg) const {
    auto v = msg.find("version");
    if (v == msg.end() || !v->is_number_integer() || v->get<int64_t>() != PROTOCOL_VERSION)
      throw Error("this device speaks version 2");
    return OJson{{"ok", true},
                 {"version", PROTOCOL_VERSION},
                 {"name", "ethlink SystemVerilog link end (" + std::to_string(W * 8) +
                              "-bit datapath, Verilator)"},
                 {"role", "link_end"},
                 {"caps", OJson::array()},
                 {"ports", 1},
                 {"tick_ns", T_},
                 {"rate_gbps", R_}};
  }

  // check_params() of examples/conformance/link_end.py, plus what this build can hold.
  void check_params(const Params& p) const {
    struct Range {
      int idx;
      int64_t lo, hi;
    };
    const int64_t G = 1000000000;
    const Range ranges[] = {
        {P_VCS, 1, 8},
        {P_CREDIT_SIZE, 32, 2048},
        {P_RX_CREDITS, 1, (1 << 19) - 1},
        {P_CREDIT_OVERHEAD, 0, 255},
        {P_MFS, 320, 9216},
        {P_LLR_WINDOW, 1, 1 << 19},
        {P_REPLAY_MAX_FRAMES, 1, p[P_LLR_WINDOW]},
        {P_REPLAY_MAX_BYTES, p[P_MFS], int64_t(1) << 30},
        {P_ACK_SPACING, 64, 1 << 20},
        {P_ACK_TIMER, 1, G},
        {P_REPLAY_TIMER, 1, G},
        {P_REPLAY_COUNT_MAX, 1, 255},
        {P_CF_MIN_CREDITS, 1, (int64_t(1) << 32) - 1},
        {P_CF_MIN_INTERVAL, 0, G},
        {P_CF_MAX_INTERVAL, 1, G},
        {P_CC_INTERVAL, 1, G},
        {P_INIT_INTERVAL, 1, G},
        {P_INIT_TIMEOUT, 1, G},
        {P_LLR_MAX_AGE, 1, G},
    };
    for (const Range& r : ranges)
      if (p[r.idx] < r.lo || p[r.idx] > r.hi)
        throw Refused(std::string(PARAMS[r.idx].name) + " = " + std::to_string(p[r.idx]) +
                      " is outside " + std::to_string(r.lo) + ".." + std::to_string(r.hi));
    if (p[P_CREDIT_SIZE] & (p[P_CREDIT_SIZE] - 1))
      throw Refused("credit_size " + std::to_string(p[P_CREDIT_SIZE]) + " is not a power of two");
    if (p[P_INIT_TIMEOUT] < p[P_INIT_INTERVAL])
      throw Refused("init_timeout_ns must be at least init_interval_ns");
    if (p[P_CF_MIN_INTERVAL] >= p[P_CF_MAX_INTERVAL])
      throw Refused("cf_min_interval_ns must be below cf_max_interval_ns");
    if (p[P_RX_CREDITS] * p[P_CREDIT_SIZE] < p[P_MFS] + p[P_CREDIT_OVERHEAD])
      throw Refused("rx_credits cannot hold one frame of the MFS (LINK-2-13)");
    // The replay buffer of this build: each frame takes up to W - 1 bytes more in the ring.
    if (uint64_t(p[P_REPLAY_MAX_FRAMES]) > cap_rpl_frames_)
      throw Refused("replay_max_frames = " + std::to_string(p[P_REPLAY_MAX_FRAMES]) +
                    " exceeds the " + std::to_string(cap_rpl_frames_) +
                    " replay slots of this build (RPL_FRAMES)");
    const uint64_t ring = uint64_t(p[P_REPLAY_MAX_BYTES]) + uint64_t(p[P_REPLAY_MAX_FRAMES]) * (W - 1);
    if (ring > cap_rpl_bytes_)
      throw Refused("replay_max_bytes = " + std::to_string(p[P_REPLAY_MAX_BYTES]) + " with " +
                    std::to_string(p[P_REPLAY_MAX_FRAMES]) + " frames needs " +
                    std::to_string(ring) + " bytes of replay ring, this build has " +
                    std::to_string(cap_rpl_bytes_) + " (RPL_BYTES)");
    if (uint64_t(p[P_MFS]) > cap_max_mfs_)
      throw Refused("mfs = " + std::to_string(p[P_MFS]) + " exceeds the largest MFS of this build (" +
                    std::to_string(cap_max_mfs_) + ")");
  }

  OJson reset(const Json& msg) {
    const Json& setup = field(msg, "setup");
    if (!setup.is_object()) throw Error("setup must be an object");
    // The parameters asked for, checked before anything is touched.
    Params p = default_params();
    if (auto link = setup.find("link"); link != setup.end() && !link->is_null()) {
      if (!link->is_object()) throw Error("setup.link must be an object");
      for (auto it = link->begin(); it != link->end(); ++it) {
        auto def = std::find_if(PARAMS.begin(), PARAMS.end(),
                                [&](const ParamDef& d) { return it.key() == d.name; });
        if (def == PARAMS.end()) throw Refused("unknown link parameter " + it.key());
        p[size_t(def - PARAMS.begin())] = get_i64(it.value(), it.key());
      }
    }
    uint64_t seed = 0;
    if (auto s = setup.find("seed"); s != setup.end() && !s->is_null())
      seed = uint64_t(get_i64(*s, "seed"));

    hard_reset();
    check_params(p);
    params_ = p;
    for (size_t i = 0; i < PARAMS.size(); i++) {
      const uint64_t v = uint64_t(p[i]);
      write_reg(uint8_t(i), PARAMS[i].ns ? ceil_div(v, T_) : v);  // durations in ticks
    }
    write_reg(REG_SEED, seed);
    write_reg(REG_MAC, MY_MAC);
    if (!top_->quiet) settle([&] { return bool(top_->quiet); }, "reset");

    OJson params = OJson::object();
    for (size_t i = 0; i < PARAMS.size(); i++) params[PARAMS[i].name] = p[i];
    return OJson{{"ok", true}, {"params", params}};
  }

  OJson frame(const Json& msg) {
    const uint64_t t = get_u64(msg, "time_ns");
    if (get_port(msg) != 0) throw Error("a link end has port 0 only");
    Bytes bytes = from_hex(get_str(msg, "hex"), "hex");
    bring_to_input(t, "a frame");
    rx_frame_ = std::move(bytes);
    rx_pos_ = 0;
    rx_active_ = true;
    rx_loaded_ = false;
    settle([&] { return !rx_active_ && quiet(); }, "a frame");
    return OJson{{"ok", true}};
  }

  OJson request(const Json& msg) {
    const uint64_t t = get_u64(msg, "time_ns");
    const Json& r = field(msg, "request");
    if (!r.is_object()) throw Error("request must be an object");
    const std::string& req = get_str(r, "req");
    if (get_port(r) != 0) throw Refused("a link end has port 0 only");
    Model& m = *top_;

    if (req == "physical_up" || req == "physical_down") {
      bring_to_input(t, req.c_str());
      phy_ = req == "physical_up";
      m.phy_up = phy_;
      settle([&] { return quiet(); }, req.c_str());  // at least one edge sees the level
    } else if (req == "hold") {
      const uint64_t vc = get_u64(r, "vc");
      if (vc > 7) throw Refused("VC " + std::to_string(vc));
      const Json& h = field(r, "hold");
      if (!h.is_boolean()) throw Error("hold must be a boolean");
      bring_to_input(t, "hold");
      hold_ = h.get<bool>() ? uint8_t(hold_ | 1u << vc) : uint8_t(hold_ & ~(1u << vc));
      m.hold = hold_;
      settle([&] { return quiet(); }, "hold");
    } else if (req == "submit") {
      const uint64_t vc = get_u64(r, "vc");
      if (vc > 7) throw Refused("VC " + std::to_string(vc));
      Bytes payload = from_hex(get_str(r, "payload"), "payload");
      // The DATA frame that would carry it: header 20, payload, FCS 4, at least 64 (LINK-2-19).
      const uint64_t len = std::max<uint64_t>(64, 20 + payload.size() + 4);
      if (len > uint64_t(params_[P_MFS]))
        throw Refused("a frame of " + std::to_string(len) + " B exceeds the MFS");
      bring_to_input(t, "submit");
      subq_[vc].push_back(Packet{sub_order_++, std::move(payload)});
      sub_pending_ |= 1u << vc;
      sub_blocked_ = false;  // not refused yet
      settle([&] { return quiet(); }, "submit");
    } else if (req == "withdraw") {
      bring_to_input(t, "withdraw");
      // Take back what the design has not started to take (nothing is partly taken here),
      // before the pulse, so that no packet enters at the edge that withdraws.
      std::array<std::deque<Packet>, 8> mine;
      for (int v = 0; v < 8; v++) mine[v].swap(subq_[v]);
      clear_subs();
      m.s_sub_tvalid = 0;
      m.withdraw = 1;
      cycle(false);
      m.withdraw = 0;
      // Wait for the design's own `withdrawn` outputs too: those come first (LINK-6-5).
      settle([&] { return quiet() && !up_mid_ && !top_->m_up_tvalid; }, "withdraw");
      for (int v = 0; v < 8; v++)
        for (Packet& pk : mine[v]) {
          ups_.push_back(UpItem{now(), order_++, UP_LOST_WITHDRAWN, uint8_t(v), std::move(pk.bytes)});
          withdrawn_++;
        }
    } else {
      throw Refused("a link end does not take " + req);
    }
    return OJson{{"ok", true}, {"reply", OJson::object()}};
  }

  OJson advance(const Json& msg) {
    const uint64_t x = get_u64(msg, "time_ns");
    while ((k_ + 1) * T_ <= x) tick_period();
    // A frame whose first beat left by x is finished with time frozen, so that it is reported
    // now, inside this advance's window, and not after it.
    if (tx_mid_) settle([&] { return !tx_mid_; }, "the end of a transmitted frame");
    if (!fault_.empty()) throw Error(fault_);

    // Every upper-layer item, and every frame stamped by x, merged in time order; within one
    // time, in the order they were observed.
    OJson out = OJson::array();
    size_t u = 0;
    auto emit_up = [&](UpItem& it) {
      static const char* const lost[] = {"", "unknown_fate", "exceeds_peer_mfs", "vc_not_agreed",
                                         "withdrawn"};
      static const char* const down[] = {"flush", "physical", "peer_restart"};
      if (it.kind == UP_DELIVERED)
        out.push_back(OJson{{"out", "delivered"}, {"port", 0}, {"vc", it.vc}, {"payload", to_hex(it.payload)}});
      else if (it.kind <= UP_LOST_WITHDRAWN)
        out.push_back(OJson{{"out", "lost"}, {"port", 0}, {"vc", it.vc}, {"reason", lost[it.kind]},
                            {"payload", to_hex(it.payload)}});
      else if (it.kind == UP_LINK_UP)
        out.push_back(OJson{{"out", "link_up"}, {"port", 0}});
      else
        out.push_back(OJson{{"out", "link_down"}, {"port", 0}, {"reason", down[it.kind - UP_DOWN_FLUSH]}});
    };
    while (!frames_.empty() && frames_.front().stamp <= x) {
      TxFrame& f = frames_.front();
      while (u < ups_.size() && (ups_[u].time < f.stamp || (ups_[u].time == f.stamp && ups_[u].order < f.order)))
        emit_up(ups_[u++]);
      out.push_back(OJson{{"out", "frame"}, {"port", 0}, {"time_ns", f.stamp}, {"hex", to_hex(f.bytes)}});
      frames_.pop_front();
    }
    while (u < ups_.size()) emit_up(ups_[u++]);
    ups_.clear();
    return OJson{{"ok", true}, {"out", std::move(out)}};
  }

  OJson counters() {
    OJson c = OJson::object();
    for (size_t i = 0; i < LINK_COUNTERS.size(); i++) {
      uint64_t v = read_reg(uint8_t(REG_LINK_COUNTERS + i));
      const std::string name = LINK_COUNTERS[i];
      if (name == "replay_age_max_ns") v *= T_;  // counted in ticks
      if (name == "frames_withdrawn") v += withdrawn_;  // taken back from the bridge's FIFO
      c[name] = v;
    }
    for (size_t ci = 0; ci < VC_COUNTERS.size(); ci++)
      for (unsigned v = 0; v < 8; v++) {
        uint64_t val = read_reg(uint8_t(REG_VC_COUNTERS + 8 * ci + v));
        const std::string name = VC_COUNTERS[ci];
        if (name == "credit_stall_ns") val *= T_;  // counted in ticks
        c[name + ".vc" + std::to_string(v)] = val;
      }
    return OJson{{"ok", true}, {"counters", std::move(c)}};
  }

  // ---------------------------------------------------------------- state

  const uint64_t T_;  // ns per tick
  const uint64_t C_;  // clock cycles per tick: C_ - 1 with `tick` low, then one with it high
  const uint64_t R_;  // line rate, Gb/s
  std::unique_ptr<VerilatedContext> ctx_;
  std::unique_ptr<Model> top_;
#ifdef EL_TRACE
  std::unique_ptr<VerilatedVcdC> vcd_;
  uint64_t trace_time_ = 0;
#endif
  uint64_t cap_w_ = 0, cap_rpl_bytes_ = 0, cap_rpl_frames_ = 0, cap_max_mfs_ = 0;
  Params params_ = default_params();  // in force: the MFS bounds a submission

  uint64_t k_ = 0;       // ticks since reset: the design's time is k_ * T_
 public:
  uint64_t cycles_ = 0;  // clock cycles since the process started
 private:
  uint64_t order_ = 0;   // observation order of outputs
  bool in_reset_ = false;
  bool phy_ = false;
  uint8_t hold_ = 0;

  // s_rx: the frame being fed.
  Bytes rx_frame_;
  size_t rx_pos_ = 0;
  bool rx_active_ = false, rx_loaded_ = false, rx_last_ = false;

  // s_sub: the bridge's FIFO of submitted packets, per VC, and the one on offer.
  std::array<std::deque<Packet>, 8> subq_;
  uint64_t sub_order_ = 0;
  unsigned sub_pending_ = 0;  // VCs with a packet waiting
  unsigned sub_refused_ = 0;  // VCs whose head was refused since the last packet was taken
  int sub_cur_ = -1;          // VC on offer, -1 none
  size_t sub_pos_ = 0;
  bool sub_started_ = false;  // its first beat was taken
  bool sub_loaded_ = false, sub_last_ = false;
  bool sub_blocked_ = false;  // every VC waiting was refused: their queues are full
  uint64_t withdrawn_ = 0;    // packets withdrawn from the bridge's FIFO since reset

  // m_tx: the MAC model.
  bool tx_mid_ = false;
  uint64_t tx_stamp_ = 0, tx_order_ = 0;
  Bytes tx_cur_;
  uint64_t wire_free_ = 0;  // ns: when the last frame has left the wire
  std::deque<TxFrame> frames_;

  // m_up: the upper layer.
  bool up_mid_ = false;
  uint8_t up_user_ = 0;
  Bytes up_cur_;
  std::vector<UpItem> ups_;

  std::string fault_;  // the design broke the contract: the next advance answers an error
};

// ------------------------------------------------------------------------------------------

[[noreturn]] void usage_exit(const std::string& why) {
  std::fprintf(stderr, "el_bridge: %s\nusage: el_bridge [--tick-ns T] [--cycles-per-tick C] [--rate-gbps R] [--trace FILE]\n",
               why.c_str());
  std::exit(2);
}

uint64_t parse_num(const char* opt, const char* s) {
  char* end = nullptr;
  errno = 0;
  const unsigned long long v = std::strtoull(s, &end, 10);
  if (!*s || *end || errno || s[0] == '-') usage_exit(std::string(opt) + " needs a positive integer");
  return v;
}

void write_line(const OJson& ans) {
  const std::string s = ans.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  std::fwrite(s.data(), 1, s.size(), stdout);
  std::fputc('\n', stdout);
  std::fflush(stdout);
}

int run(int argc, char** argv) {
  uint64_t tick_ns = W == 8 ? 2 : 1;
  uint64_t rate_gbps = W == 8 ? 25 : 400;
  uint64_t cycles_per_tick = 2;
  std::string trace;
  for (int i = 1; i < argc; i++) {
    const std::string a = argv[i];
    auto value = [&]() -> const char* {
      if (i + 1 >= argc) usage_exit(a + " needs a value");
      return argv[++i];
    };
    if (a == "--tick-ns") tick_ns = parse_num("--tick-ns", value());
    else if (a == "--rate-gbps") rate_gbps = parse_num("--rate-gbps", value());
    else if (a == "--cycles-per-tick") cycles_per_tick = parse_num("--cycles-per-tick", value());
    else if (a == "--trace") trace = value();
    else usage_exit("unknown argument " + a);
  }
  if (tick_ns < 1 || tick_ns > 256) usage_exit("--tick-ns must be 1 to 256");
  if (rate_gbps < 25 || rate_gbps > 1600) usage_exit("--rate-gbps must be 25 to 1600");
  if (cycles_per_tick < 1 || cycles_per_tick > 64) usage_exit("--cycles-per-tick must be 1 to 64");
  // The datapath carries W bytes per cycle, C cycles per tick: W * 8 * C / T Gb/s at most.
  if (rate_gbps * tick_ns > uint64_t(W) * 8 * cycles_per_tick)
    usage_exit("a " + std::to_string(W * 8) + "-bit datapath at " + std::to_string(cycles_per_tick) +
               " beats per " + std::to_string(tick_ns) + " ns carries at most " +
               std::to_string(W * 8 * cycles_per_tick / tick_ns) + " Gb/s, below --rate-gbps " +
               std::to_string(rate_gbps));
#ifndef EL_TRACE
  if (!trace.empty()) usage_exit("--trace: this build has no tracing (build.sh --trace)");
#endif

  Bridge bridge(tick_ns, cycles_per_tick, rate_gbps, trace);
  if (bridge.cap_w() != W) {
    std::fprintf(stderr, "el_bridge: the design says W = %llu, its ports are %u bytes wide\n",
                 static_cast<unsigned long long>(bridge.cap_w()), W);
    return 2;
  }

  std::ios::sync_with_stdio(false);
  std::string line;
  while (std::getline(std::cin, line)) {
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") == std::string::npos) continue;
    Json msg;
    OJson ans;
    bool bye = false;
    try {
      msg = Json::parse(line);
      if (!msg.is_object()) throw Error("a request must be a JSON object");
      ans = bridge.handle(msg);
      auto op = msg.find("op");
      bye = op != msg.end() && op->is_string() && *op == "bye";
    } catch (const std::exception& e) {
      ans = OJson{{"ok", false}, {"error", std::string("malformed request: ") + e.what()}};
    }
    if (msg.is_object()) {
      if (auto s = msg.find("seq"); s != msg.end()) ans["seq"] = *s;
    }
    write_line(ans);
    if (bye) break;
  }
  // EL_BRIDGE_STATS=FILE: append the clock cycles this process ran and its CPU seconds, for the
  // simulation speed of docs/hardware.md.
  if (const char* stats = std::getenv("EL_BRIDGE_STATS")) {
    if (FILE* f = std::fopen(stats, "a")) {
      std::fprintf(f, "%llu %.6f\n", static_cast<unsigned long long>(bridge.cycles_),
                   double(std::clock()) / CLOCKS_PER_SEC);
      std::fclose(f);
    }
  }
  return 0;  // end of input or bye
}

}  // namespace

int main(int argc, char** argv) {
  try {
    return run(argc, argv);
  } catch (const std::exception& e) {
    std::fprintf(stderr, "el_bridge: %s\n", e.what());
  } catch (...) {
    std::fprintf(stderr, "el_bridge: unknown exception\n");
  }
  return 1;
}
