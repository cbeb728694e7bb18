//! Reading frames from pcap and pcapng captures, and writing the vectors' pcapng file.
//!
//! A pcapng interface says whether its frames keep their FCS (`if_fcslen` 4) or were stored
//! after the MAC checked and stripped it (`if_fcslen` 0); frames of the latter are decoded without
//! FCS. A classic pcap, or a pcapng interface without `if_fcslen`, does not say: its frames are
//! taken to end with their FCS unless the caller says otherwise. A frame the capture cut short,
//! of another link type, or on an interface with any other `if_fcslen` is reported as an error
//! for that frame rather than decoded.

use std::borrow::Cow;
use std::fmt;
use std::time::Duration;

use pcap_file::DataLink;
use pcap_file::pcap::PcapParser;
use pcap_file::pcapng::blocks::enhanced_packet::{EnhancedPacketBlock, EnhancedPacketOption};
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::blocks::section_header::SectionHeaderBlock;
use pcap_file::pcapng::{Block, PcapNgParser, PcapNgWriter};

/// One frame read from a capture: its bytes, or why they cannot be decoded.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Captured {
    /// Position of the frame in the capture, from 1.
    pub index: usize,
    /// The whole frame (including its FCS when `has_fcs`), or the reason it is not available.
    pub bytes: Result<Vec<u8>, String>,
    /// Whether the frame ends with its FCS; `false` when the capture stored it without.
    pub has_fcs: bool,
}

/// Why a capture file could not be read at all.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct CaptureError(pub String);

impl fmt::Display for CaptureError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

impl std::error::Error for CaptureError {}

const PCAPNG_MAGIC: [u8; 4] = [0x0A, 0x0D, 0x0D, 0x0A];
const PCAP_MAGICS: [[u8; 4]; 4] = [
    [0xA1, 0xB2, 0xC3, 0xD4],
    [0xD4, 0xC3, 0xB2, 0xA1],
    [0xA1, 0xB2, 0x3C, 0x4D],
    [0x4D, 0x3C, 0xB2, 0xA1],
];

/// Reads every packet of a pcap or pcapng capture held in `file`. Frames whose capture does not
/// say whether they keep their FCS are taken to end with it.
pub fn read_capture(file: &[u8]) -> Result<Vec<Captured>, CaptureError> {
    read_capture_with(file, true)
}

/// Reads every packet of a pcap or pcapng capture held in `file`. `undeclared_fcs` says whether
/// the frames of a classic pcap, or of a pcapng interface without `if_fcslen`, end with their
/// FCS; an interface's `if_fcslen` always wins over it.
pub fn read_capture_with(file: &[u8], undeclared_fcs: bool) -> Result<Vec<Captured>, CaptureError> {
    match file.first_chunk::<4>() {
        Some(m) if *m == PCAPNG_MAGIC => read_pcapng(file, undeclared_fcs),
        Some(m) if PCAP_MAGICS.contains(m) => read_pcap(file, undeclared_fcs),
        _ => Err(CaptureError(
            "not a pcap or pcapng capture (unknown magic number)".to_owned(),
        )),
    }
}

fn read_pcapng(file: &[u8], undeclared_fcs: bool) -> Result<Vec<Captured>, CaptureError> {
    let bad = |e: pcap_file::PcapError| CaptureError(format!("bad pcapng capture: {e}"));
    let (mut rest, mut parser) = PcapNgParser::new(file).map_err(bad)?;
    let mut frames = Vec::new();
    while !rest.is_empty() {
        let (next, block) = parser.next_block(rest).map_err(bad)?;
        rest = next;
        let (interface_id, data, original_len) = match &block {
            Block::EnhancedPacket(p) => (Some(p.interface_id), &p.data, p.original_len),
            Block::SimplePacket(p) => (None, &p.data, p.original_len),
            Block::Packet(p) => (Some(u32::from(p.interface_id)), &p.data, p.original_len),
            _ => continue,
        };
        let index = frames.len() + 1;
        let interface = match interface_id {
            Some(id) => usize::try_from(id)
                .ok()
                .and_then(|i| parser.interfaces().get(i)),
            None => parser.interfaces().first(),
        };
        let (bytes, has_fcs) = match interface {
            None => (
                Err("the packet names an interface the capture does not describe".to_owned()),
                undeclared_fcs,
            ),
            Some(idb) => {
                let fcs_len = idb_fcs_len(idb);
                let has_fcs = fcs_len.map_or(undeclared_fcs, |n| n != 0);
                let bytes = check_packet(fcs_len, has_fcs, &idb.linktype, data, original_len);
                (bytes, has_fcs)
            }
        };
        frames.push(Captured {
            index,
            bytes,
            has_fcs,
        });
    }
    Ok(frames)
}

/// The FCS length an interface declares (`if_fcslen`), if it declares one.
fn idb_fcs_len(idb: &InterfaceDescriptionBlock<'_>) -> Option<u8> {
    idb.options.iter().find_map(|o| match o {
        InterfaceDescriptionOption::IfFcsLen(n) => Some(*n),
        _ => None,
    })
}

fn read_pcap(file: &[u8], undeclared_fcs: bool) -> Result<Vec<Captured>, CaptureError> {
    let bad = |e: pcap_file::PcapError| CaptureError(format!("bad pcap capture: {e}"));
    let (mut rest, parser) = PcapParser::new(file).map_err(bad)?;
    let linktype = parser.header().datalink;
    let mut frames = Vec::new();
    while !rest.is_empty() {
        let (next, packet) = parser.next_packet(rest).map_err(bad)?;
        rest = next;
        // A pcap header does not say whether frames keep their FCS; the caller does.
        let bytes = check_packet(
            None,
            undeclared_fcs,
            &linktype,
            &packet.data,
            packet.orig_len,
        );
        frames.push(Captured {
            index: frames.len() + 1,
            bytes,
            has_fcs: undeclared_fcs,
        });
    }
    Ok(frames)
}

fn check_packet(
    fcs_len: Option<u8>,
    has_fcs: bool,
    linktype: &DataLink,
    data: &[u8],
    original_len: u32,
) -> Result<Vec<u8>, String> {
    if *linktype != DataLink::ETHERNET {
        return Err(format!(
            "link type {linktype:?} is not Ethernet; EthLink frames are Ethernet frames"
        ));
    }
    if let Some(n) = fcs_len.filter(|&n| n != 0 && n != 4) {
        return Err(format!(
            "the capture interface says if_fcslen={n}: an Ethernet FCS is 4 bytes \
             (if_fcslen=4) or was not stored (if_fcslen=0)"
        ));
    }
    let captured = data.len();
    if usize::try_from(original_len).is_ok_and(|o| o > captured) {
        let missing = if has_fcs {
            "the end of the frame and its FCS are missing"
        } else {
            "the end of the frame is missing"
        };
        return Err(format!(
            "the capture kept {captured} of the frame's {original_len} bytes (snap length): \
             {missing}"
        ));
    }
    Ok(data.to_vec())
}

/// Writes `frames` as a pcapng capture: one section header, one Ethernet interface with
/// nanosecond timestamps (`if_tsresol` = 9) whose frames keep their 4-byte FCS
/// (`if_fcslen` = 4), and one enhanced packet block per frame, timestamped `index * 1000` ns and
/// commented with its name. The output depends only on `frames`.
pub fn write_pcapng(frames: &[(&str, &[u8])]) -> Result<Vec<u8>, CaptureError> {
    let bad = |e: pcap_file::PcapError| CaptureError(format!("cannot write pcapng: {e}"));
    let section = SectionHeaderBlock {
        endianness: pcap_file::Endianness::Little,
        major_version: 1,
        minor_version: 0,
        section_length: -1,
        options: vec![],
    };
    let mut writer = PcapNgWriter::with_section_header(Vec::new(), section).map_err(bad)?;
    let interface = InterfaceDescriptionBlock {
        linktype: DataLink::ETHERNET,
        snaplen: 0,
        options: vec![
            InterfaceDescriptionOption::IfName(Cow::Borrowed("ethlink-vectors")),
            InterfaceDescriptionOption::IfTsResol(9),
            InterfaceDescriptionOption::IfFcsLen(4),
        ],
    };
    writer.write_pcapng_block(interface).map_err(bad)?;
    for (i, (name, bytes)) in frames.iter().enumerate() {
        let len = u32::try_from(bytes.len())
            .map_err(|_| CaptureError(format!("frame {name} is too long for pcapng")))?;
        let nanos = u64::try_from(i).unwrap_or(u64::MAX).saturating_mul(1000);
        let packet = EnhancedPacketBlock {
            interface_id: 0,
            timestamp: Duration::from_nanos(nanos),
            original_len: len,
            data: Cow::Borrowed(bytes),
            options: vec![EnhancedPacketOption::Comment(Cow::Borrowed(name))],
        };
        writer.write_pcapng_block(packet).map_err(bad)?;
    }
    Ok(writer.into_inner())
}

/// Which way a frame went, seen from the interface of a [`PcapngStream`]: pcapng's `epb_flags`
/// direction bits (1 inbound, 2 outbound).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Direction {
    /// Received by the interface's end of the cable.
    Inbound,
    /// Sent by the interface's end of the cable.
    Outbound,
}

/// A pcapng capture written frame by frame as the frames come, with their own timestamps: one
/// section header, one Ethernet interface with nanosecond timestamps (`if_tsresol` = 9) whose
/// frames keep their 4-byte FCS (`if_fcslen` = 4), then one enhanced packet block per frame
/// with its time, its direction (`epb_flags`) and a comment. Memory stays bounded whatever the
/// number of frames: each block goes to the writer at once.
pub struct PcapngStream<W: std::io::Write> {
    writer: PcapNgWriter<W>,
    frames: u64,
}

impl<W: std::io::Write> fmt::Debug for PcapngStream<W> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("PcapngStream")
            .field("frames", &self.frames)
            .finish_non_exhaustive()
    }
}

impl<W: std::io::Write> PcapngStream<W> {
    /// Writes the section header and the interface (`if_name` = `name`, `if_description` =
    /// `description`) to `out`.
    pub fn new(out: W, name: &str, description: &str) -> Result<Self, CaptureError> {
        let section = SectionHeaderBlock {
            endianness: pcap_file::Endianness::Little,
            major_version: 1,
            minor_version: 0,
            section_length: -1,
            options: vec![],
        };
        let mut writer = PcapNgWriter::with_section_header(out, section).map_err(write_error)?;
        let interface = InterfaceDescriptionBlock {
            linktype: DataLink::ETHERNET,
            snaplen: 0,
            options: vec![
                InterfaceDescriptionOption::IfName(Cow::Borrowed(name)),
                InterfaceDescriptionOption::IfDescription(Cow::Borrowed(description)),
                InterfaceDescriptionOption::IfTsResol(9),
                InterfaceDescriptionOption::IfFcsLen(4),
            ],
        };
        writer.write_pcapng_block(interface).map_err(write_error)?;
        Ok(PcapngStream { writer, frames: 0 })
    }

    /// Writes one frame (destination MAC through FCS) seen at `timestamp_ns`, with its direction
    /// and a comment (none when empty).
    pub fn write(
        &mut self,
        timestamp_ns: u64,
        bytes: &[u8],
        direction: Option<Direction>,
        comment: &str,
    ) -> Result<(), CaptureError> {
        let len = u32::try_from(bytes.len())
            .map_err(|_| CaptureError("a frame is too long for pcapng".to_owned()))?;
        let mut options = Vec::new();
        if let Some(d) = direction {
            options.push(EnhancedPacketOption::Flags(match d {
                Direction::Inbound => 1,
                Direction::Outbound => 2,
            }));
        }
        if !comment.is_empty() {
            options.push(EnhancedPacketOption::Comment(Cow::Borrowed(comment)));
        }
        let packet = EnhancedPacketBlock {
            interface_id: 0,
            timestamp: Duration::from_nanos(timestamp_ns),
            original_len: len,
            data: Cow::Borrowed(bytes),
            options,
        };
        self.writer
            .write_pcapng_block(packet)
            .map_err(write_error)?;
        self.frames += 1;
        Ok(())
    }

    /// Frames written so far.
    pub fn frames(&self) -> u64 {
        self.frames
    }

    /// The writer, every block written to it.
    pub fn into_inner(self) -> W {
        self.writer.into_inner()
    }
}

fn write_error(e: pcap_file::PcapError) -> CaptureError {
    CaptureError(format!("cannot write pcapng: {e}"))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn round_trip_and_garbage() {
        let a = [1u8; 64];
        let b = [2u8; 70];
        let file = write_pcapng(&[("a", &a), ("b", &b)]).unwrap_or_default();
        let frames = read_capture(&file).unwrap_or_default();
        assert_eq!(frames.len(), 2);
        assert_eq!(
            frames.first().map(|f| f.bytes.clone()),
            Some(Ok(a.to_vec()))
        );
        assert!(read_capture(b"hello world").is_err());
        assert!(read_capture(&[]).is_err());
        // Every truncation of a good capture reads or fails cleanly.
        for cut in 0..file.len() {
            let _ = read_capture(file.get(..cut).unwrap_or_default());
        }
    }

    #[test]
    fn stream_keeps_times_directions_and_fcs() {
        let a = [3u8; 64];
        let b = [4u8; 100];
        let mut stream = PcapngStream::new(Vec::new(), "gpu0.p0", "test").expect("header");
        stream
            .write(1_234_567_890_123, &a, Some(Direction::Outbound), "first")
            .expect("a");
        stream
            .write(1_234_567_890_999, &b, Some(Direction::Inbound), "")
            .expect("b");
        assert_eq!(stream.frames(), 2);
        let file = stream.into_inner();
        let frames = read_capture(&file).expect("readable");
        assert_eq!(frames.len(), 2);
        assert!(frames.iter().all(|f| f.has_fcs));
        assert_eq!(frames.get(1).map(|f| f.bytes.clone()), Some(Ok(b.to_vec())));
        let (mut rest, mut parser) = PcapNgParser::new(&file).expect("pcapng");
        let mut seen = Vec::new();
        while !rest.is_empty() {
            let (next, block) = parser.next_block(rest).expect("block");
            rest = next;
            if let Block::EnhancedPacket(p) = block {
                seen.push((p.timestamp.as_nanos(), p.options.len()));
            }
        }
        assert_eq!(seen, vec![(1_234_567_890_123, 2), (1_234_567_890_999, 1)]);
    }
}
