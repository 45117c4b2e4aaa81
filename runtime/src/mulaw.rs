//! G.711 μ-law, the audio of phone calls: 8-bit codes of 14-bit linear samples. Decoding is a
//! 256-entry table built at compile time; encoding is the standard segment search.

/// μ-law's code for silence (a zero sample).
pub const SILENCE: u8 = 0xFF;

const BIAS: i16 = 0x84;
const CLIP: i16 = 32_635;

/// Linear 16-bit samples of every μ-law code.
pub static DECODE: [i16; 256] = {
    let mut table = [0i16; 256];
    let mut i = 0;
    while i < 256 {
        let code = !(i as u8);
        let sign = code & 0x80;
        let exponent = (code >> 4) & 0x07;
        let mantissa = (code & 0x0F) as i16;
        let magnitude = (((mantissa << 3) + BIAS) << exponent) - BIAS;
        table[i] = if sign != 0 { -magnitude } else { magnitude };
        i += 1;
    }
    table
};

/// The μ-law code of a linear 16-bit sample.
pub fn encode(sample: i16) -> u8 {
    let sign: u8 = if sample < 0 { 0x80 } else { 0 };
    let magnitude = sample.unsigned_abs().min(CLIP as u16) as i16 + BIAS;
    let mut exponent = 7u8;
    let mut mask = 0x4000i16;
    while exponent > 0 && magnitude & mask == 0 {
        exponent -= 1;
        mask >>= 1;
    }
    let mantissa = ((magnitude >> (exponent + 3)) & 0x0F) as u8;
    !(sign | (exponent << 4) | mantissa)
}

/// Linear samples of μ-law bytes.
pub fn decode_into(codes: &[u8], out: &mut Vec<i16>) {
    out.extend(codes.iter().map(|&c| DECODE[usize::from(c)]));
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn silence_is_zero_and_every_code_survives_a_round_trip() {
        assert_eq!(DECODE[usize::from(SILENCE)], 0);
        for code in 0..=255u8 {
            let sample = DECODE[usize::from(code)];
            // 0x7F and 0xFF both decode to zero; zero encodes as 0xFF.
            let back = encode(sample);
            assert_eq!(DECODE[usize::from(back)], sample, "code {code:#04x}");
        }
        assert_eq!(DECODE[0x00], -32_124);
        assert_eq!(DECODE[0x80], 32_124);
        assert_eq!(encode(i16::MAX), 0x80);
        assert_eq!(encode(i16::MIN), 0x00);
    }
}
