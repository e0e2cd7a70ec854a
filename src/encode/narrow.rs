//! Leaf codes at the narrowest width that holds a QI's leaves. A direct evaluation gathers every
//! row's code of every QI, streaming them from memory once per node; most QIs have at most 256
//! leaves, so one byte per row instead of four cuts what those gathers read (the `u32` codes stay
//! for everything else).

/// A QI's leaf codes as one or two bytes per row, when its leaves fit.
#[derive(Debug, Clone)]
pub enum NarrowCodes {
    /// At most 256 leaves.
    U8(Vec<u8>),
    /// At most 65,536 leaves.
    U16(Vec<u16>),
    /// More leaves: the `u32` codes are read as they are.
    Wide,
}

impl NarrowCodes {
    /// The narrow form of `codes`, every one of which is below `leaves`.
    pub fn of(codes: &[u32], leaves: usize) -> Self {
        // A code that did not fit would be truncated: the width is chosen from the leaf count,
        // which bounds every code (each indexes its hierarchy's leaves).
        if leaves <= 1 << 8 {
            NarrowCodes::U8(codes.iter().map(|&c| c as u8).collect())
        } else if leaves <= 1 << 16 {
            NarrowCodes::U16(codes.iter().map(|&c| c as u16).collect())
        } else {
            NarrowCodes::Wide
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The width follows the leaf count at its limits, and the codes are kept exactly.
    #[test]
    fn width_follows_the_leaf_count() {
        let codes: Vec<u32> = vec![0, 255, 7];
        assert!(matches!(NarrowCodes::of(&codes, 256), NarrowCodes::U8(c) if c == [0, 255, 7]));
        let codes: Vec<u32> = vec![0, 256, 65_535];
        assert!(
            matches!(NarrowCodes::of(&codes, 65_536), NarrowCodes::U16(c) if c == [0, 256, 65_535])
        );
        assert!(matches!(
            NarrowCodes::of(&[65_536], 65_537),
            NarrowCodes::Wide
        ));
    }
}
