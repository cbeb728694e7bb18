//! The vectors' capture file: every vector as one packet of a pcapng file.

use std::borrow::Cow;
use std::time::Duration;

use pcap_file::DataLink;
use pcap_file::pcapng::PcapNgWriter;
use pcap_file::pcapng::blocks::enhanced_packet::{EnhancedPacketBlock, EnhancedPacketOption};
use pcap_file::pcapng::blocks::interface_description::{
    InterfaceDescriptionBlock, InterfaceDescriptionOption,
};
use pcap_file::pcapng::blocks::section_header::SectionHeaderBlock;

/// Writes `frames` as a pcapng capture: one section header, one Ethernet interface with
/// nanosecond timestamps (`if_tsresol` = 9) whose frames keep their 4-byte FCS
/// (`if_fcslen` = 4), and one enhanced packet block per frame, timestamped `index * 1000` ns and
/// commented with its name. The output depends only on `frames`.
pub fn write_pcapng(frames: &[(&str, &[u8])]) -> Result<Vec<u8>, String> {
    let bad = |e: pcap_file::PcapError| format!("cannot write pcapng: {e}");
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
            .map_err(|_| format!("frame {name} is too long for pcapng"))?;
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
