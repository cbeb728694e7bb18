//! The data pattern: a deterministic stream of bytes named by a 64-bit seed, which the memory
//! keeps as a description instead of bytes, and which the fabric's workloads write and check.
//!
//! Byte `i` of pattern `seed` is byte `i % 8` (little-endian) of word `i / 8`; word `j` is the
//! SplitMix64 mix of the seed and the 64-byte block `j / 8` (the block's key), exclusive-or a
//! constant of `j % 8`: one mix per 64 bytes, so that making or checking the bytes costs little
//! beside copying them. Any byte can be computed alone, so any range can be produced or checked without its
//! neighbours. Every step of a word is a bijection of 64-bit values, so one whole word at a known
//! position names its seed: [`Pattern::recover`] finds the pattern a run of bytes continues
//! without being told its seed.
//!
//! Positions are taken modulo 2^64: the byte after position `u64::MAX` is position 0.

#![cfg_attr(
    not(test),
    warn(
        clippy::indexing_slicing,
        clippy::unwrap_used,
        clippy::expect_used,
        clippy::panic,
        clippy::cast_possible_truncation
    )
)]

/// The SplitMix64 increment, also the per-word constant of [`block_word`].
const GAMMA: u64 = 0x9E37_79B9_7F4A_7C15;
/// The first multiplier of the SplitMix64 finaliser.
const M1: u64 = 0xBF58_476D_1CE4_E5B9;
/// The second multiplier of the SplitMix64 finaliser.
const M2: u64 = 0x94D0_49BB_1331_11EB;
/// The odd constant that spreads a block number over the seed.
const BLOCK_MUL: u64 = 0xD1B5_4A32_D192_ED03;

/// The inverse of the odd `a` modulo 2^64 (Newton's iteration, each step doubling the bits that
/// are right; `a` itself is right to 3 bits).
const fn inverse(a: u64) -> u64 {
    let mut x = a;
    let mut i = 0;
    while i < 5 {
        x = x.wrapping_mul(2u64.wrapping_sub(a.wrapping_mul(x)));
        i += 1;
    }
    x
}

const M1_INV: u64 = inverse(M1);
const M2_INV: u64 = inverse(M2);

/// The `x` with `x ^ (x >> s) == y`, for `s` of at least 1.
const fn unshift(y: u64, s: u32) -> u64 {
    let mut x = y;
    let mut done = s;
    while done < 64 {
        x = y ^ (x >> s);
        done += s;
    }
    x
}

/// The SplitMix64 finaliser of `z + GAMMA`.
pub const fn mix64(mut z: u64) -> u64 {
    z = z.wrapping_add(GAMMA);
    z = (z ^ (z >> 30)).wrapping_mul(M1);
    z = (z ^ (z >> 27)).wrapping_mul(M2);
    z ^ (z >> 31)
}

/// The `z` with `mix64(z) == v`.
const fn unmix64(v: u64) -> u64 {
    let mut z = unshift(v, 31);
    z = unshift(z.wrapping_mul(M2_INV), 27);
    z = unshift(z.wrapping_mul(M1_INV), 30);
    z.wrapping_sub(GAMMA)
}

/// The key of 64-byte block `block` of pattern `seed`.
const fn block_key(seed: u64, block: u64) -> u64 {
    mix64(seed ^ block.wrapping_mul(BLOCK_MUL))
}

/// Word `k` (0..8) of the block whose key is `key`: the key with a constant of its own per
/// word, so that the eight words of a block differ and none can stand for another.
const fn block_word(key: u64, k: u64) -> u64 {
    key ^ (k + 1).wrapping_mul(GAMMA)
}

/// Word `j` of pattern `seed`.
const fn word(seed: u64, j: u64) -> u64 {
    block_word(block_key(seed, j / 8), j % 8)
}

/// The seed whose word `j` is `w`.
const fn seed_of_word(j: u64, w: u64) -> u64 {
    let key = w ^ (j % 8 + 1).wrapping_mul(GAMMA);
    unmix64(key) ^ (j / 8).wrapping_mul(BLOCK_MUL)
}

/// Byte `pos % 8` of word `pos / 8` of pattern `seed`.
fn byte_at(seed: u64, pos: u64) -> u8 {
    let [b0, b1, b2, b3, b4, b5, b6, b7] = word(seed, pos / 8).to_le_bytes();
    match pos % 8 {
        0 => b0,
        1 => b1,
        2 => b2,
        3 => b3,
        4 => b4,
        5 => b5,
        6 => b6,
        _ => b7,
    }
}

/// Words in the 2^64 positions of a pattern.
const WORDS: u64 = 1 << 61;

/// Bytes of `len` from pattern position `offset` that come before the first word boundary.
fn lead(offset: u64, len: usize) -> usize {
    usize::try_from(offset.wrapping_neg() % 8)
        .unwrap_or(0)
        .min(len)
}

/// A place in the data pattern: the bytes it describes are bytes `offset, offset + 1, ...` of
/// the pattern named by `seed`.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct Pattern {
    /// The seed that names the pattern.
    pub seed: u64,
    /// Position of the first byte described.
    pub offset: u64,
}

impl Pattern {
    /// Bytes `offset, offset + 1, ...` of pattern `seed`.
    pub const fn new(seed: u64, offset: u64) -> Self {
        Pattern { seed, offset }
    }

    /// The pattern as two words, seed then offset: the name an endpoint gives the bytes of a
    /// payload it vouches for (`ethlink_link::Provenance`).
    pub const fn name(self) -> [u64; 2] {
        [self.seed, self.offset]
    }

    /// The pattern [`Pattern::name`] names.
    pub const fn named(name: [u64; 2]) -> Self {
        Pattern::new(name[0], name[1])
    }

    /// The same pattern `n` bytes further on.
    pub const fn advance(self, n: u64) -> Self {
        Pattern {
            seed: self.seed,
            offset: self.offset.wrapping_add(n),
        }
    }

    /// Byte `i` of the bytes described.
    pub fn byte(self, i: u64) -> u8 {
        byte_at(self.seed, self.offset.wrapping_add(i))
    }

    /// Writes the first `out.len()` bytes described into `out`.
    pub fn fill(self, out: &mut [u8]) {
        let lead = lead(self.offset, out.len());
        let (head, body) = out.split_at_mut(lead);
        for (i, b) in head.iter_mut().enumerate() {
            *b = self.byte(i as u64);
        }
        let mut j = self.offset.wrapping_add(lead as u64) / 8;
        // Words up to the first block boundary.
        let first = usize::try_from((8 - j % 8) % 8)
            .unwrap_or(0)
            .min(body.len() / 8);
        let (first_words, body) = body.split_at_mut(first * 8);
        for c in first_words.chunks_exact_mut(8) {
            c.copy_from_slice(&word(self.seed, j).to_le_bytes());
            j = (j + 1) % WORDS;
        }
        // Whole blocks: one key, eight words.
        let mut blocks = body.chunks_exact_mut(64);
        for blk in &mut blocks {
            let key = block_key(self.seed, j / 8);
            for (k, c) in blk.chunks_exact_mut(8).enumerate() {
                c.copy_from_slice(&block_word(key, k as u64).to_le_bytes());
            }
            j = (j + 8) % WORDS;
        }
        // The words and bytes after the last whole block.
        let mut words = blocks.into_remainder().chunks_exact_mut(8);
        for c in &mut words {
            c.copy_from_slice(&word(self.seed, j).to_le_bytes());
            j = (j + 1) % WORDS;
        }
        let tail = words.into_remainder();
        if !tail.is_empty() {
            for (b, v) in tail.iter_mut().zip(word(self.seed, j).to_le_bytes()) {
                *b = v;
            }
        }
    }

    /// Whether `data` is the first `data.len()` bytes described. Stops at the first block that
    /// differs.
    pub fn matches(self, data: &[u8]) -> bool {
        let lead = lead(self.offset, data.len());
        let (head, body) = data.split_at(lead);
        if !head
            .iter()
            .enumerate()
            .all(|(i, &b)| b == self.byte(i as u64))
        {
            return false;
        }
        let le = |c: &[u8]| {
            let mut b = [0u8; 8];
            b.copy_from_slice(c);
            u64::from_le_bytes(b)
        };
        let mut j = self.offset.wrapping_add(lead as u64) / 8;
        let first = usize::try_from((8 - j % 8) % 8)
            .unwrap_or(0)
            .min(body.len() / 8);
        let (first_words, body) = body.split_at(first * 8);
        for c in first_words.chunks_exact(8) {
            if le(c) != word(self.seed, j) {
                return false;
            }
            j = (j + 1) % WORDS;
        }
        let mut blocks = body.chunks_exact(64);
        for blk in &mut blocks {
            let key = block_key(self.seed, j / 8);
            let mut diff = 0u64;
            for (k, c) in blk.chunks_exact(8).enumerate() {
                diff |= le(c) ^ block_word(key, k as u64);
            }
            if diff != 0 {
                return false;
            }
            j = (j + 8) % WORDS;
        }
        let mut words = blocks.remainder().chunks_exact(8);
        for c in &mut words {
            if le(c) != word(self.seed, j) {
                return false;
            }
            j = (j + 1) % WORDS;
        }
        let tail = words.remainder();
        tail.iter()
            .zip(word(self.seed, j).to_le_bytes())
            .all(|(&a, b)| a == b)
    }

    /// How many of the first `data.len()` bytes described differ from `data`, and the index of
    /// the first that does.
    pub fn mismatches(self, data: &[u8]) -> (u64, Option<usize>) {
        let mut count = 0u64;
        let mut first = None;
        let mut want = [0u8; 256];
        for (k, got) in data.chunks(want.len()).enumerate() {
            let at = k.saturating_mul(want.len());
            let Some(w) = want.get_mut(..got.len()) else {
                break;
            };
            self.advance(at as u64).fill(w);
            if w != got {
                for (i, (a, b)) in w.iter().zip(got).enumerate() {
                    if a != b {
                        count += 1;
                        first.get_or_insert(at.saturating_add(i));
                    }
                }
            }
        }
        (count, first)
    }

    /// The pattern whose bytes from position `offset` on are `data`, if there is one and `data`
    /// holds a whole word of it (at least 15 bytes always do). Its seed is read from the first
    /// whole word; every byte of `data` is then checked.
    pub fn recover(offset: u64, data: &[u8]) -> Option<Pattern> {
        // Bytes up to the first word boundary of the pattern.
        let lead = usize::try_from(offset.wrapping_neg() % 8).unwrap_or(0);
        let bytes: [u8; 8] = data.get(lead..lead.checked_add(8)?)?.try_into().ok()?;
        let j = offset.wrapping_add(lead as u64) / 8;
        let seed = seed_of_word(j, u64::from_le_bytes(bytes));
        let p = Pattern::new(seed, offset);
        p.matches(data).then_some(p)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use alloc::vec;

    #[test]
    fn inverses_undo_the_steps() {
        assert_eq!(M1.wrapping_mul(M1_INV), 1);
        assert_eq!(M2.wrapping_mul(M2_INV), 1);
        for v in [0u64, 1, 0xDEAD_BEEF, u64::MAX, 0x8000_0000_0000_0000, GAMMA] {
            assert_eq!(unmix64(mix64(v)), v);
            for s in [27, 29, 30, 31] {
                assert_eq!(unshift(v ^ (v >> s), s), v);
            }
            for j in [0u64, 7, 8, 63, 64, 1 << 40, u64::MAX] {
                assert_eq!(seed_of_word(j, word(v, j)), v);
            }
        }
    }

    #[test]
    fn bytes_are_position_addressed() {
        let mut whole = vec![0u8; 200];
        Pattern::new(7, 0).fill(&mut whole);
        for (i, &b) in whole.iter().enumerate() {
            assert_eq!(Pattern::new(7, 0).byte(i as u64), b);
        }
        for off in 0..40u64 {
            for len in [0usize, 1, 7, 8, 9, 64, 65, 150] {
                let mut part = vec![0u8; len];
                Pattern::new(7, off).fill(&mut part);
                let o = off as usize;
                assert_eq!(&part[..], &whole[o..o + len]);
                assert!(Pattern::new(7, 0).advance(off).matches(&part));
            }
        }
        let mut other = vec![0u8; 200];
        Pattern::new(8, 0).fill(&mut other);
        assert_ne!(whole, other);
        // The positions wrap at 2^64.
        let mut wrap = [0u8; 16];
        Pattern::new(3, u64::MAX - 7).fill(&mut wrap);
        assert_eq!(wrap[8], Pattern::new(3, 0).byte(0));
        assert_eq!(wrap[7], Pattern::new(3, u64::MAX).byte(0));
    }

    /// Block-at-a-time filling and matching give the bytes addressed one by one, for every
    /// alignment of start and end against words and 64-byte blocks, across the wrap at 2^64.
    #[test]
    fn blocks_agree_with_single_bytes() {
        for base in [0u64, 5, 64, 1000, u64::MAX - 300] {
            for off in 0..72u64 {
                for len in [0usize, 1, 8, 63, 64, 65, 127, 128, 129, 200, 333] {
                    let p = Pattern::new(11, base.wrapping_add(off));
                    let mut got = vec![0u8; len];
                    p.fill(&mut got);
                    let want: alloc::vec::Vec<u8> = (0..len as u64).map(|i| p.byte(i)).collect();
                    assert_eq!(got, want, "base {base} off {off} len {len}");
                    assert!(p.matches(&want));
                    if len > 0 {
                        for at in [0, len / 2, len - 1] {
                            let mut bad = want.clone();
                            bad[at] ^= 0x10;
                            assert!(!p.matches(&bad), "base {base} off {off} len {len} at {at}");
                        }
                    }
                }
            }
        }
    }

    /// Any single wrong byte is seen, and counted once.
    #[test]
    fn one_wrong_byte_is_a_mismatch() {
        let mut data = vec![0u8; 300];
        let p = Pattern::new(0x1234, 13);
        p.fill(&mut data);
        assert!(p.matches(&data));
        assert_eq!(p.mismatches(&data), (0, None));
        for i in 0..data.len() {
            data[i] ^= 0x10;
            assert!(!p.matches(&data), "byte {i}");
            assert_eq!(p.mismatches(&data), (1, Some(i)));
            assert_eq!(Pattern::recover(13, &data), None, "byte {i}");
            data[i] ^= 0x10;
        }
        // A longer or shorter buffer is not the pattern of another length.
        assert!(p.matches(&data[..17]));
    }

    #[test]
    fn the_seed_is_recovered_from_the_bytes() {
        for seed in [0u64, 1, 42, u64::MAX, 0x0123_4567_89AB_CDEF] {
            for offset in [0u64, 1, 7, 8, 63, 64, 4095, 1 << 33, u64::MAX - 20] {
                for len in [15usize, 16, 64, 256, 4096] {
                    let mut data = vec![0u8; len];
                    let p = Pattern::new(seed, offset);
                    p.fill(&mut data);
                    assert_eq!(Pattern::recover(offset, &data), Some(p));
                    // At the wrong position the bytes are not the pattern.
                    assert_eq!(Pattern::recover(offset.wrapping_add(1), &data), None);
                }
            }
        }
        // Too short to hold a whole word, or not a pattern at all.
        assert_eq!(Pattern::recover(1, &[0u8; 8]), None);
        assert_eq!(Pattern::recover(0, &[]), None);
        assert_eq!(Pattern::recover(0, &[0u8; 64]), None);
        let ramp: vec::Vec<u8> = (0..=255).collect();
        assert_eq!(Pattern::recover(0, &ramp), None);
    }
}
