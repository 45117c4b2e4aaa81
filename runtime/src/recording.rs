//! A call's stereo recording (caller left, agent right, time-aligned), written as it happens
//! to two files of μ-law samples in the temporary directory, so that a call holds no more of
//! it in memory than a write buffer, and made into a 16-bit WAV with `hound` when the call
//! ends.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use crate::mulaw;

/// Bytes each track buffers before writing (half a second at 8 kHz).
const BUFFER: usize = 4096;

/// μ-law samples per second.
const RATE: u64 = 8000;

/// One side of the recording.
struct Track {
    path: PathBuf,
    out: BufWriter<File>,
    /// Samples written so far.
    len: u64,
}

impl Track {
    fn create(path: PathBuf) -> std::io::Result<Self> {
        let out = BufWriter::with_capacity(BUFFER, File::create(&path)?);
        Ok(Self { path, out, len: 0 })
    }

    /// Writes `audio` starting at sample `at` (silence fills any gap before it; audio that
    /// arrives early follows what is there).
    fn write_at(&mut self, at: u64, audio: &[u8]) -> std::io::Result<()> {
        let gap = at.saturating_sub(self.len);
        let silence = [mulaw::SILENCE; 160];
        let mut left = gap;
        while left > 0 {
            let n = left.min(silence.len() as u64) as usize;
            self.out.write_all(&silence[..n])?;
            left -= n as u64;
        }
        self.out.write_all(audio)?;
        self.len += gap + audio.len() as u64;
        Ok(())
    }
}

/// A recording in progress.
pub struct Recorder {
    caller: Track,
    agent: Track,
    failed: bool,
}

impl Recorder {
    /// Starts the recording of `call_sid` in the temporary directory.
    pub fn start(call_sid: &str) -> std::io::Result<Self> {
        let dir = std::env::temp_dir();
        let unique = format!("{call_sid}-{}", std::process::id());
        Ok(Self {
            caller: Track::create(dir.join(format!("voiceplane-{unique}-caller.ulaw")))?,
            agent: Track::create(dir.join(format!("voiceplane-{unique}-agent.ulaw")))?,
            failed: false,
        })
    }

    /// The caller's audio, in order (the stream is continuous: its position is its length).
    pub fn caller(&mut self, audio: &[u8]) {
        let at = self.caller.len;
        let written = self.caller.write_at(at, audio);
        self.note(written);
    }

    /// The agent's audio, sent `elapsed_ms` after the stream started.
    pub fn agent(&mut self, elapsed_ms: u64, audio: &[u8]) {
        let written = self.agent.write_at(elapsed_ms * RATE / 1000, audio);
        self.note(written);
    }

    fn note(&mut self, written: std::io::Result<()>) {
        if let Err(e) = written
            && !self.failed
        {
            self.failed = true;
            tracing::warn!(error = %e, "the call's recording could not be written; it will be missing");
        }
    }

    /// Ends the recording `length_ms` long: the path of its WAV (the caller removes it), or
    /// `None` when it could not be written. Blocking file work: run it off the runtime's
    /// threads.
    pub fn finish(mut self, length_ms: u64) -> Option<PathBuf> {
        let length = (length_ms * RATE / 1000).max(self.caller.len.max(self.agent.len));
        let flushed = self.caller.out.flush().and(self.agent.out.flush());
        let wav = self.caller.path.with_extension("wav");
        let made = match flushed {
            Ok(()) if !self.failed => write_wav(&self.caller.path, &self.agent.path, &wav, length),
            Ok(()) => Err(std::io::Error::other("a write failed earlier")),
            Err(e) => Err(e),
        };
        let _ = std::fs::remove_file(&self.caller.path);
        let _ = std::fs::remove_file(&self.agent.path);
        match made {
            Ok(()) => Some(wav),
            Err(e) => {
                tracing::warn!(error = %e, "the call's recording could not be made");
                let _ = std::fs::remove_file(&wav);
                None
            }
        }
    }
}

fn write_wav(caller: &Path, agent: &Path, wav: &Path, length: u64) -> std::io::Result<()> {
    let spec = hound::WavSpec {
        channels: 2,
        sample_rate: 8000,
        bits_per_sample: 16,
        sample_format: hound::SampleFormat::Int,
    };
    let mut writer = hound::WavWriter::create(wav, spec).map_err(std::io::Error::other)?;
    let mut left = BufReader::new(File::open(caller)?).bytes();
    let mut right = BufReader::new(File::open(agent)?).bytes();
    for _ in 0..length {
        let l = left.next().transpose()?.unwrap_or(mulaw::SILENCE);
        let r = right.next().transpose()?.unwrap_or(mulaw::SILENCE);
        writer
            .write_sample(mulaw::DECODE[usize::from(l)])
            .and_then(|()| writer.write_sample(mulaw::DECODE[usize::from(r)]))
            .map_err(std::io::Error::other)?;
    }
    writer.finalize().map_err(std::io::Error::other)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_two_sides_are_aligned_in_time_and_the_wav_is_as_long_as_the_call() {
        let mut rec = Recorder::start("call_rectest").expect("temp dir");
        rec.caller(&[0x00; 800]); // 100 ms of loud caller audio
        rec.agent(50, &[0x80; 160]); // 20 ms of agent audio 50 ms in
        let wav = rec.finish(1000).expect("a wav");
        let mut reader = hound::WavReader::open(&wav).expect("readable");
        assert_eq!(reader.spec().channels, 2);
        assert_eq!(reader.duration(), 8000);
        let samples: Vec<i16> = reader.samples::<i16>().map(|s| s.unwrap_or(0)).collect();
        let (left, right): (Vec<i16>, Vec<i16>) = samples.chunks(2).map(|f| (f[0], f[1])).unzip();
        assert!(left[..800].iter().all(|&s| s == -32_124));
        assert!(left[800..].iter().all(|&s| s == 0));
        assert!(right[..400].iter().all(|&s| s == 0));
        assert!(right[400..560].iter().all(|&s| s == 32_124));
        assert!(right[560..].iter().all(|&s| s == 0));
        std::fs::remove_file(wav).expect("removed");
    }
}
