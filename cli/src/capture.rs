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
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::pcapng::blocks::enhanced_packet::{EnhancedPacketBlock, EnhancedPacketOption};
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::blocks::section_header::SectionHeaderBlock;

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

/// How a capture ended once every complete frame was read.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CaptureEnd {
    /// At the end of the file, after its last block.
    Complete,
    /// Before the end of the file: from byte `at` (counting from 0) on, the bytes are not a
    /// complete block (the capture was cut short) or not a block at all (garbage).
    Truncated {
        /// Offset of the first byte not read.
        at: u64,
        /// What is wrong there.
        reason: String,
    },
}

/// Largest block the reader accepts: a pcapng block (or pcap record) longer than this is taken
/// for garbage, so that memory stays bounded whatever the file says.
const MAX_BLOCK: usize = 64 << 20;
/// The reader's buffer at first; it grows, up to [`MAX_BLOCK`], for a longer block.
const BUFFER: usize = 1 << 16;
/// Most interfaces one section may describe: a capture names a few, and each described one is
/// kept until the section ends, so that a file of nothing but interface descriptions would
/// otherwise hold memory in proportion to its size.
const MAX_INTERFACES: usize = 1 << 16;
/// `if_fcslen`, the option of an interface description block that gives its FCS length.
const IF_FCSLEN: u16 = 13;

/// What a pcapng interface declares that matters here.
#[derive(Debug, Clone, Copy)]
struct Interface {
    ethernet: bool,
    linktype: i32,
    fcs_len: Option<u8>,
    snaplen: u32,
}

/// Reads the frames of a pcap or pcapng capture from `input` one at a time, handing each to
/// `each` as soon as it is read, in constant memory whatever the capture's size (one block in
/// memory at a time, and at most `MAX_INTERFACES` (65536) interfaces a section). `undeclared_fcs`
/// says whether the frames of a classic pcap, or of a pcapng interface without `if_fcslen`, end
/// with their FCS; an interface's `if_fcslen` always wins.
///
/// A capture cut short, or followed by bytes that are not a block, still gives every complete
/// frame before the damage, then [`CaptureEnd::Truncated`]. `Err` is for input that is not a
/// capture at all (or that cannot be read), or the first error `each` returns.
pub fn read_frames<R: std::io::Read + Send>(
    input: R,
    undeclared_fcs: bool,
    mut each: impl FnMut(Captured) -> Result<(), CaptureError>,
) -> Result<CaptureEnd, CaptureError> {
    use pcap_parser::pcapng::Block;
    use pcap_parser::{PcapBlockOwned, PcapError};

    let mut reader = match pcap_parser::create_reader(BUFFER, input) {
        Ok(r) => r,
        Err(PcapError::Eof) => {
            return Err(CaptureError(
                "the file is empty: not a pcap or pcapng capture".to_owned(),
            ));
        }
        Err(PcapError::ReadError) => {
            return Err(CaptureError("cannot read the file".to_owned()));
        }
        Err(_) => {
            return Err(CaptureError(
                "not a pcap or pcapng capture (unknown magic number)".to_owned(),
            ));
        }
    };
    // The link type of a classic pcap; the interfaces of the current pcapng section.
    let mut legacy_linktype: Option<i32> = None;
    let mut interfaces: Vec<Interface> = Vec::new();
    let mut index = 0usize;
    let mut size = BUFFER;
    loop {
        let at = reader.consumed() as u64;
        let (offset, frame) = match reader.next() {
            Ok((offset, block)) => {
                let frame = match block {
                    PcapBlockOwned::LegacyHeader(h) => {
                        legacy_linktype = Some(h.network.0);
                        None
                    }
                    PcapBlockOwned::Legacy(b) => {
                        let data = b.data.get(..b.caplen as usize).unwrap_or(b.data);
                        let linktype = legacy_linktype.unwrap_or(1);
                        Some((
                            check_packet(None, undeclared_fcs, linktype, data, b.origlen),
                            undeclared_fcs,
                        ))
                    }
                    PcapBlockOwned::NG(Block::SectionHeader(_)) => {
                        interfaces.clear();
                        None
                    }
                    PcapBlockOwned::NG(Block::InterfaceDescription(_))
                        if interfaces.len() >= MAX_INTERFACES =>
                    {
                        return Ok(CaptureEnd::Truncated {
                            at,
                            reason: format!(
                                "a section that describes more than {MAX_INTERFACES} \
                                 interfaces, taken for garbage"
                            ),
                        });
                    }
                    PcapBlockOwned::NG(Block::InterfaceDescription(idb)) => {
                        let fcs_len = idb
                            .options
                            .iter()
                            .find(|o| o.code.0 == IF_FCSLEN)
                            .and_then(|o| o.value().first().copied());
                        interfaces.push(Interface {
                            ethernet: idb.linktype.0 == 1,
                            linktype: idb.linktype.0,
                            fcs_len,
                            snaplen: idb.snaplen,
                        });
                        None
                    }
                    PcapBlockOwned::NG(Block::EnhancedPacket(p)) => {
                        let data = p.data.get(..p.caplen as usize).unwrap_or(p.data);
                        Some(ng_frame(
                            interfaces.get(p.if_id as usize),
                            undeclared_fcs,
                            data,
                            p.origlen,
                        ))
                    }
                    PcapBlockOwned::NG(Block::SimplePacket(p)) => {
                        // A simple packet block keeps min(original length, snap length) bytes.
                        let first = interfaces.first();
                        let kept = first.map_or(p.origlen, |i| match i.snaplen {
                            0 => p.origlen,
                            n => p.origlen.min(n),
                        });
                        let data = p.data.get(..kept as usize).unwrap_or(p.data);
                        Some(ng_frame(first, undeclared_fcs, data, p.origlen))
                    }
                    PcapBlockOwned::NG(_) => None,
                };
                (offset, frame)
            }
            Err(PcapError::Eof) => return Ok(CaptureEnd::Complete),
            Err(PcapError::Incomplete(_)) => {
                if reader.refill().is_err() {
                    return Err(CaptureError("cannot read the file".to_owned()));
                }
                continue;
            }
            Err(PcapError::BufferTooSmall) => {
                if size >= MAX_BLOCK {
                    return Ok(CaptureEnd::Truncated {
                        at,
                        reason: format!(
                            "a block longer than {} MiB, taken for garbage",
                            MAX_BLOCK >> 20
                        ),
                    });
                }
                size = (size * 4).min(MAX_BLOCK);
                reader.grow(size);
                if reader.refill().is_err() {
                    return Err(CaptureError("cannot read the file".to_owned()));
                }
                continue;
            }
            Err(PcapError::UnexpectedEof) => {
                return Ok(CaptureEnd::Truncated {
                    at,
                    reason: "the capture ends in the middle of a block".to_owned(),
                });
            }
            Err(PcapError::ReadError) => {
                return Err(CaptureError("cannot read the file".to_owned()));
            }
            Err(_) => {
                return Ok(CaptureEnd::Truncated {
                    at,
                    reason: "the bytes there are not a block of the capture".to_owned(),
                });
            }
        };
        reader.consume(offset);
        if let Some((bytes, has_fcs)) = frame {
            index += 1;
            each(Captured {
                index,
                bytes,
                has_fcs,
            })?;
        }
    }
}

/// A pcapng packet on `interface` (none: the packet names an interface the section does not
/// describe): its bytes or why they cannot be decoded, and whether it ends with its FCS.
fn ng_frame(
    interface: Option<&Interface>,
    undeclared_fcs: bool,
    data: &[u8],
    original_len: u32,
) -> (Result<Vec<u8>, String>, bool) {
    match interface {
        None => (
            Err("the packet names an interface the capture does not describe".to_owned()),
            undeclared_fcs,
        ),
        Some(i) => {
            let has_fcs = i.fcs_len.map_or(undeclared_fcs, |n| n != 0);
            let linktype = if i.ethernet { 1 } else { i.linktype };
            (
                check_packet(i.fcs_len, has_fcs, linktype, data, original_len),
                has_fcs,
            )
        }
    }
}

/// Reads every packet of a pcap or pcapng capture held in `file`. Frames whose capture does not
/// say whether they keep their FCS are taken to end with it.
pub fn read_capture(file: &[u8]) -> Result<Vec<Captured>, CaptureError> {
    read_capture_with(file, true)
}

/// Reads every packet of a pcap or pcapng capture held in `file` into memory (see
/// [`read_frames`], which reads one at a time). `undeclared_fcs` says whether the frames of a
/// classic pcap, or of a pcapng interface without `if_fcslen`, end with their FCS. A capture
/// cut short is an error here, after the frames before the damage were read.
pub fn read_capture_with(file: &[u8], undeclared_fcs: bool) -> Result<Vec<Captured>, CaptureError> {
    let mut frames = Vec::new();
    match read_frames(file, undeclared_fcs, |f| {
        frames.push(f);
        Ok(())
    })? {
        CaptureEnd::Complete => Ok(frames),
        CaptureEnd::Truncated { at, reason } => Err(CaptureError(format!(
            "truncated at byte {at}: {reason} (after {} frames)",
            frames.len()
        ))),
    }
}

fn check_packet(
    fcs_len: Option<u8>,
    has_fcs: bool,
    linktype: i32,
    data: &[u8],
    original_len: u32,
) -> Result<Vec<u8>, String> {
    if linktype != 1 {
        return Err(format!(
            "link type {linktype} is not Ethernet (1); EthLink frames are Ethernet frames"
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
    ethlink_conformance::vectors::pcapng::write_pcapng(frames).map_err(CaptureError)
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

    /// The writer.
    pub fn get_mut(&mut self) -> &mut W {
        self.writer.get_mut()
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
    use pcap_file::pcapng::{Block, PcapNgParser};

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
