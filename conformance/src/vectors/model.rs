//! The JSON form of a frame, shared by `decode --json` (output) and `encode` (input).
//!
//! docs/cli-json.md is the reference for every key. Keys marked *derived* there are computed from
//! the others: decode prints them for the reader, encode accepts them and checks that they agree
//! with the frame it builds.

use std::fmt;

use ethlink_protocol::{MacAddr, Status};
use serde::de::{self, Visitor};
use serde::{Deserialize, Deserializer, Serialize, Serializer};

use crate::vectors::hexio;

/// One frame: what `decode --json` prints for it and what `encode` reads.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct FrameJson {
    /// Position of the frame in its input, from 1 (derived).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub frame: Option<usize>,
    /// Frame length in bytes, destination MAC through FCS, also for a frame given without its
    /// FCS (derived).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub length: Option<usize>,
    /// The Ethernet header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub eth: Option<EthJson>,
    /// The link header.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub link: Option<LinkJson>,
    /// The body of a CF or CC frame.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub credits: Option<CreditsJson>,
    /// The body of an INIT or INIT_ECHO frame.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub init: Option<InitJson>,
    /// The network header of a DATA frame.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub network: Option<NetworkJson>,
    /// The transactions of a DATA frame, in order.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txns: Option<Vec<TxnJson>>,
    /// Runs of non-zero bytes in reserved fields and padding (WIRE-1.2-2), as they were received.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub reserved: Vec<ReservedJson>,
    /// The four FCS bytes in wire order (derived; encode always recomputes it). Absent (`None`)
    /// for a rejected frame, `null` (`Some(None)`) for a frame given without its FCS.
    #[serde(
        default,
        skip_serializing_if = "Option::is_none",
        deserialize_with = "present_or_null"
    )]
    pub fcs: Option<Option<HexBytes>>,
    /// `false` when the frame was given without its FCS (`decode --no-fcs`, a capture interface
    /// with `if_fcslen` 0); absent when the frame ends with its FCS.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub fcs_present: Option<bool>,
    /// Why the frame, its payload or one of its transactions was rejected.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub error: Option<ErrorJson>,
    /// Why a frame of a capture could not be decoded at all (no FCS, cut short, not Ethernet).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub capture_error: Option<String>,
}

/// Reads a key that may be absent (`None`, by `#[serde(default)]`), `null` (`Some(None)`) or a
/// value (`Some(Some(_))`).
fn present_or_null<'de, D, T>(d: D) -> Result<Option<Option<T>>, D::Error>
where
    D: Deserializer<'de>,
    T: Deserialize<'de>,
{
    Option::<T>::deserialize(d).map(Some)
}

/// The Ethernet header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct EthJson {
    /// Destination MAC address.
    pub dst: Mac,
    /// Source MAC address.
    pub src: Mac,
    /// The 802.1Q tag, if the frame carries one.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vlan: Option<VlanJson>,
}

/// An 802.1Q tag.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct VlanJson {
    /// Priority code point, 0..=7.
    pub pcp: u8,
    /// Drop eligible indicator.
    pub dei: bool,
    /// VLAN id, 0..=4095.
    pub vid: u16,
}

/// The frame kinds, named as wire.md §3 names them.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
pub enum KindJson {
    /// A DATA frame.
    #[serde(rename = "DATA")]
    Data,
    /// An ACK.
    #[serde(rename = "ACK")]
    Ack,
    /// A NACK.
    #[serde(rename = "NACK")]
    Nack,
    /// A credit update.
    #[serde(rename = "CF")]
    Cf,
    /// A credit resync.
    #[serde(rename = "CC")]
    Cc,
    /// An INIT.
    #[serde(rename = "INIT")]
    Init,
    /// An INIT_ECHO.
    #[serde(rename = "INIT_ECHO")]
    InitEcho,
}

impl KindJson {
    /// The name as wire.md §3 writes it.
    pub const fn name(self) -> &'static str {
        match self {
            KindJson::Data => "DATA",
            KindJson::Ack => "ACK",
            KindJson::Nack => "NACK",
            KindJson::Cf => "CF",
            KindJson::Cc => "CC",
            KindJson::Init => "INIT",
            KindJson::InitEcho => "INIT_ECHO",
        }
    }
}

/// The link header.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinkJson {
    /// Wire format version (derived: always 1).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub version: Option<u8>,
    /// Frame kind.
    pub kind: KindJson,
    /// Virtual channel (DATA only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vc: Option<u8>,
    /// REPLAY flag (DATA only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replay: Option<bool>,
    /// ACK_REQ flag (DATA only).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ack_req: Option<bool>,
    /// Sequence number (DATA, ACK, NACK).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub seq: Option<u32>,
}

/// The body of a CF or CC frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct CreditsJson {
    /// The VC mask (derived from `counters`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub vc_mask: Option<u8>,
    /// The counter of each VC 0..=7, `null` for VCs not in the mask.
    pub counters: [Option<u32>; 8],
}

/// The body of an INIT or INIT_ECHO frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct InitJson {
    /// The sender's nonce.
    pub nonce: u32,
    /// INIT_ECHO only: the nonce of the INIT answered.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub echo_nonce: Option<u32>,
    /// Number of VCs.
    pub vcs: u8,
    /// Credit size in bytes.
    pub credit_size: u16,
    /// Maximum frame size.
    pub mfs: u16,
    /// LLR window in frames.
    pub llr_window: u32,
    /// Credits granted on each VC 0..=7.
    pub credits: [u32; 8],
    /// Bytes the sender's receiver adds to a frame's length when it computes its cost (0..=255).
    #[serde(default)]
    pub credit_overhead: u8,
    /// The capabilities announced, by name: rdma, atomics, shared, packing, tagged, cut_through.
    #[serde(default)]
    pub caps: Vec<String>,
    /// The sender's role: link_end, endpoint, switch, or reserved (the reserved code 3).
    #[serde(default = "default_role")]
    pub role: String,
}

fn default_role() -> String {
    "link_end".to_owned()
}

/// The network header of a DATA frame.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct NetworkJson {
    /// Destination GPU id.
    pub dst_gpu: u16,
    /// Source GPU id.
    pub src_gpu: u16,
    /// Path id.
    pub path: PathJson,
    /// Transaction count (derived).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub txn_count: Option<u8>,
    /// Payload length in bytes (derived).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub payload_length: Option<u16>,
}

/// A path id split into its parts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct PathJson {
    /// Source stack, 0..=15.
    pub stack: u8,
    /// Port within the stack, 0..=15.
    pub port: u8,
}

/// The memory space of a request.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum SpaceJson {
    /// Global memory (SHARED flag clear).
    Global,
    /// Shared memory (SHARED flag set).
    Shared,
}

/// One transaction, tagged by its opcode name.
///
/// `frame_offset` (derived) is where the transaction starts in the frame; `dlen` (derived) is the
/// number of data bytes.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "opcode", deny_unknown_fields)]
pub enum TxnJson {
    /// LOAD (§6.3).
    #[serde(rename = "LOAD")]
    Load {
        /// Offset of the transaction in the frame (derived).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame_offset: Option<usize>,
        /// Tag.
        tag: u16,
        /// Memory space.
        space: SpaceJson,
        /// Memory key.
        key: u32,
        /// Target address.
        address: Address,
        /// Bytes to read.
        length: u16,
    },
    /// STORE (§6.4).
    #[serde(rename = "STORE")]
    Store {
        /// Offset of the transaction in the frame (derived).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame_offset: Option<usize>,
        /// Tag.
        tag: u16,
        /// Memory space.
        space: SpaceJson,
        /// Memory key.
        key: u32,
        /// Target address.
        address: Address,
        /// Number of data bytes (derived).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dlen: Option<u16>,
        /// The bytes to write.
        data: HexBytes,
    },
    /// ATOMIC_FADD (§6.5).
    #[serde(rename = "ATOMIC_FADD")]
    AtomicFadd {
        /// Offset of the transaction in the frame (derived).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame_offset: Option<usize>,
        /// Tag.
        tag: u16,
        /// Memory space.
        space: SpaceJson,
        /// Memory key.
        key: u32,
        /// Target address.
        address: Address,
        /// Operand size in bytes, 4 or 8.
        width: u8,
        /// The addend.
        addend: u64,
    },
    /// ATOMIC_SWAP (§6.5).
    #[serde(rename = "ATOMIC_SWAP")]
    AtomicSwap {
        /// Offset of the transaction in the frame (derived).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame_offset: Option<usize>,
        /// Tag.
        tag: u16,
        /// Memory space.
        space: SpaceJson,
        /// Memory key.
        key: u32,
        /// Target address.
        address: Address,
        /// Operand size in bytes, 4 or 8.
        width: u8,
        /// The new value.
        value: u64,
    },
    /// ATOMIC_CAS (§6.5).
    #[serde(rename = "ATOMIC_CAS")]
    AtomicCas {
        /// Offset of the transaction in the frame (derived).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame_offset: Option<usize>,
        /// Tag.
        tag: u16,
        /// Memory space.
        space: SpaceJson,
        /// Memory key.
        key: u32,
        /// Target address.
        address: Address,
        /// Operand size in bytes, 4 or 8.
        width: u8,
        /// The value expected.
        compare: u64,
        /// The new value.
        value: u64,
    },
    /// FENCE (§6.6).
    #[serde(rename = "FENCE")]
    Fence {
        /// Offset of the transaction in the frame (derived).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame_offset: Option<usize>,
        /// Tag.
        tag: u16,
    },
    /// RDMA_WRITE segment (§6.7).
    #[serde(rename = "RDMA_WRITE")]
    RdmaWrite {
        /// Offset of the transaction in the frame (derived).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame_offset: Option<usize>,
        /// Tag naming the write.
        tag: u16,
        /// Memory space.
        space: SpaceJson,
        /// Memory key.
        key: u32,
        /// Base address of the whole write.
        address: Address,
        /// Offset of this segment from the base address.
        offset: u32,
        /// Length of the whole write.
        total_length: u32,
        /// Number of data bytes (derived).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dlen: Option<u16>,
        /// The segment's bytes.
        data: HexBytes,
    },
    /// RDMA_READ (§6.8).
    #[serde(rename = "RDMA_READ")]
    RdmaRead {
        /// Offset of the transaction in the frame (derived).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame_offset: Option<usize>,
        /// Tag.
        tag: u16,
        /// Memory space.
        space: SpaceJson,
        /// Memory key.
        key: u32,
        /// First byte to read.
        address: Address,
        /// Bytes to read.
        total_length: u32,
    },
    /// LOAD_RESP (§6.9).
    #[serde(rename = "LOAD_RESP")]
    LoadResp {
        /// Offset of the transaction in the frame (derived).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame_offset: Option<usize>,
        /// Tag of the request.
        tag: u16,
        /// Status.
        status: StatusJson,
        /// Number of data bytes (derived).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dlen: Option<u16>,
        /// The bytes read (empty unless OK).
        data: HexBytes,
    },
    /// STORE_RESP (§6.9).
    #[serde(rename = "STORE_RESP")]
    StoreResp {
        /// Offset of the transaction in the frame (derived).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame_offset: Option<usize>,
        /// Tag of the request.
        tag: u16,
        /// Status.
        status: StatusJson,
    },
    /// ATOMIC_FADD_RESP (§6.9).
    #[serde(rename = "ATOMIC_FADD_RESP")]
    AtomicFaddResp {
        /// Offset of the transaction in the frame (derived).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame_offset: Option<usize>,
        /// Tag of the request.
        tag: u16,
        /// Status.
        status: StatusJson,
        /// Operand size in bytes (OK only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        width: Option<u8>,
        /// The value before the operation (OK only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        old: Option<u64>,
    },
    /// ATOMIC_SWAP_RESP (§6.9).
    #[serde(rename = "ATOMIC_SWAP_RESP")]
    AtomicSwapResp {
        /// Offset of the transaction in the frame (derived).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame_offset: Option<usize>,
        /// Tag of the request.
        tag: u16,
        /// Status.
        status: StatusJson,
        /// Operand size in bytes (OK only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        width: Option<u8>,
        /// The value before the operation (OK only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        old: Option<u64>,
    },
    /// ATOMIC_CAS_RESP (§6.9).
    #[serde(rename = "ATOMIC_CAS_RESP")]
    AtomicCasResp {
        /// Offset of the transaction in the frame (derived).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame_offset: Option<usize>,
        /// Tag of the request.
        tag: u16,
        /// Status.
        status: StatusJson,
        /// Operand size in bytes (OK only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        width: Option<u8>,
        /// The value before the operation (OK only).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        old: Option<u64>,
    },
    /// FENCE_RESP (§6.9).
    #[serde(rename = "FENCE_RESP")]
    FenceResp {
        /// Offset of the transaction in the frame (derived).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame_offset: Option<usize>,
        /// Tag of the request.
        tag: u16,
        /// Status.
        status: StatusJson,
    },
    /// RDMA_COMPLETION (§6.9).
    #[serde(rename = "RDMA_COMPLETION")]
    RdmaCompletion {
        /// Offset of the transaction in the frame (derived).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame_offset: Option<usize>,
        /// Tag of the write.
        tag: u16,
        /// Status.
        status: StatusJson,
        /// Length of the write.
        total_length: u32,
    },
    /// RDMA_READ_RESP segment (§6.9).
    #[serde(rename = "RDMA_READ_RESP")]
    RdmaReadResp {
        /// Offset of the transaction in the frame (derived).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame_offset: Option<usize>,
        /// Tag of the read.
        tag: u16,
        /// Status.
        status: StatusJson,
        /// Offset of the segment from the start of the read.
        offset: u32,
        /// Length of the whole read.
        total_length: u32,
        /// Number of data bytes (derived).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dlen: Option<u16>,
        /// The segment's bytes (empty unless OK).
        data: HexBytes,
    },
    /// A transaction whose opcode wire.md does not define (WIRE-6.1-5, WIRE-6.1-7).
    #[serde(rename = "UNKNOWN")]
    Unknown {
        /// Offset of the transaction in the frame (derived).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        frame_offset: Option<usize>,
        /// The raw opcode.
        code: u8,
        /// Byte 1 of the prefix (flags or status), raw.
        flags_status: u8,
        /// Tag.
        tag: u16,
        /// Header length in 32-bit words (derived from `header`).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        hlen: Option<u8>,
        /// The header bytes after the 8-byte prefix.
        header: HexBytes,
        /// Number of data bytes (derived).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        dlen: Option<u16>,
        /// The data bytes.
        data: HexBytes,
        /// What a receiver must do with it (derived).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        receiver_action: Option<String>,
    },
}

/// A run of non-zero bytes in reserved fields or padding.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ReservedJson {
    /// Offset of the first byte in the frame.
    pub offset: usize,
    /// The bytes as received.
    pub hex: HexBytes,
}

/// A parse error as JSON.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct ErrorJson {
    /// Which check failed: `frame`, `payload` or `transaction`.
    pub level: String,
    /// For transaction errors, the position of the transaction in the frame, from 1.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub transaction: Option<usize>,
    /// The field, as `ethlink_protocol::Field::name` spells it.
    pub field: String,
    /// What was wrong, in a word.
    pub kind: String,
    /// Offset of the field in the frame.
    pub offset: usize,
    /// The requirement violated.
    pub spec: String,
    /// What the receiver must do.
    pub action: String,
    /// Whether the link layer answers with a NACK.
    pub nack: bool,
    /// The whole error as one line.
    pub message: String,
}

/// Bytes written as a lower-case hex string.
#[derive(Debug, Clone, PartialEq, Eq, Default)]
pub struct HexBytes(pub Vec<u8>);

impl Serialize for HexBytes {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&hexio::to_hex(&self.0))
    }
}

impl<'de> Deserialize<'de> for HexBytes {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        if text.trim().is_empty() {
            return Ok(HexBytes(Vec::new()));
        }
        hexio::parse_hex(&text)
            .map(HexBytes)
            .map_err(|e| de::Error::custom(format!("not hex bytes: {e}")))
    }
}

/// A 64-bit address, written `"0x"` and 16 hex digits (JSON numbers lose precision above 2^53).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Address(pub u64);

impl Serialize for Address {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(&format!("{:#018x}", self.0))
    }
}

impl<'de> Deserialize<'de> for Address {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        struct V;
        impl Visitor<'_> for V {
            type Value = Address;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("a 64-bit address as a string \"0x...\" or a non-negative integer")
            }
            fn visit_u64<E: de::Error>(self, v: u64) -> Result<Address, E> {
                Ok(Address(v))
            }
            fn visit_str<E: de::Error>(self, v: &str) -> Result<Address, E> {
                let digits = v
                    .strip_prefix("0x")
                    .or_else(|| v.strip_prefix("0X"))
                    .ok_or_else(|| E::custom(format!("address {v:?} must start with 0x")))?;
                u64::from_str_radix(digits, 16)
                    .map(Address)
                    .map_err(|e| E::custom(format!("address {v:?}: {e}")))
            }
        }
        d.deserialize_any(V)
    }
}

/// A MAC address written `aa:bb:cc:dd:ee:ff`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct Mac(pub MacAddr);

impl Serialize for Mac {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.collect_str(&self.0)
    }
}

impl<'de> Deserialize<'de> for Mac {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        let bad = || {
            de::Error::custom(format!(
                "{text:?} is not a MAC address like 02:00:00:00:00:01"
            ))
        };
        let mut mac = [0u8; 6];
        let mut parts = text.split(':');
        for byte in &mut mac {
            let part = parts.next().ok_or_else(bad)?;
            if part.len() != 2 {
                return Err(bad());
            }
            *byte = u8::from_str_radix(part, 16).map_err(|_| bad())?;
        }
        if parts.next().is_some() {
            return Err(bad());
        }
        Ok(Mac(MacAddr(mac)))
    }
}

/// A response status: its name as wire.md §6.9 writes it (`"OK"`, `"BUSY"`, ...), or `"0x.."`
/// with the raw value for a status wire.md does not define (WIRE-1.2-3, WIRE-6.9-2).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct StatusJson(pub Status);

impl Serialize for StatusJson {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self.0 {
            Status::Unknown(v) => s.serialize_str(&format!("{v:#04x}")),
            known => s.serialize_str(known.name()),
        }
    }
}

impl<'de> Deserialize<'de> for StatusJson {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Self, D::Error> {
        let text = String::deserialize(d)?;
        if let Some(digits) = text.strip_prefix("0x").or_else(|| text.strip_prefix("0X")) {
            return u8::from_str_radix(digits, 16)
                .map(|v| StatusJson(Status::from_u8(v)))
                .map_err(|e| de::Error::custom(format!("status {text:?}: {e}")));
        }
        (0..=u8::MAX)
            .map(Status::from_u8)
            .find(|s| !matches!(s, Status::Unknown(_)) && s.name() == text)
            .map(StatusJson)
            .ok_or_else(|| {
                de::Error::custom(format!(
                    "unknown status {text:?}: expected OK, ACCESS_VIOLATION, OUT_OF_RANGE, \
                     UNSUPPORTED, POISONED, MALFORMED, MISALIGNED, BUSY or a raw value \"0x..\""
                ))
            })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn status_names_and_raw_values() {
        let s: StatusJson = serde_json::from_str("\"BUSY\"").unwrap_or(StatusJson(Status::Ok));
        assert_eq!(s.0, Status::Busy);
        let s: StatusJson = serde_json::from_str("\"0x42\"").unwrap_or(StatusJson(Status::Ok));
        assert_eq!(s.0, Status::Unknown(0x42));
        assert_eq!(
            serde_json::to_string(&StatusJson(Status::Unknown(0x42))).ok(),
            Some("\"0x42\"".to_owned())
        );
        assert!(serde_json::from_str::<StatusJson>("\"FINE\"").is_err());
    }

    #[test]
    fn txn_rejects_unknown_keys() {
        let text = r#"{"opcode":"FENCE","tag":1,"colour":"red"}"#;
        let err = serde_json::from_str::<TxnJson>(text)
            .err()
            .map(|e| e.to_string());
        assert!(err.is_some_and(|e| e.contains("colour")));
    }

    #[test]
    fn address_forms() {
        let a: Result<Address, _> = serde_json::from_str("\"0x1000\"");
        assert_eq!(a.ok(), Some(Address(0x1000)));
        let a: Result<Address, _> = serde_json::from_str("4096");
        assert_eq!(a.ok(), Some(Address(0x1000)));
        assert!(serde_json::from_str::<Address>("\"1000\"").is_err());
    }
}
