//! The agent's speech: each sentence spoken in order as it comes, and what of a cut turn
//! the caller heard.

use super::*;

/// A sentence of the agent's turn, as it is spoken.
pub(super) struct Spoken {
    pub(super) text: String,
    pub(super) mark: String,
    /// Frames queued for it; known once its speech is complete.
    pub(super) frames: u32,
    /// Frames of it sent so far.
    pub(super) sent: u32,
    /// When its first frame was sent.
    pub(super) first_sent: Option<Instant>,
    /// Whether its mark came back: all of it was played.
    pub(super) played: bool,
}

/// What the speech task sends the loop.
pub(super) enum Speech {
    Audio(usize, Bytes),
    End(usize),
    Failed(UpstreamError),
}

/// What of `sentences` the caller heard: the ones played whole, and (when `cut_at` says the
/// rest was cut then) the words of the one playing, in proportion to its time played.
pub(super) fn spoken_text(sentences: &[Spoken], cut_at: Option<Instant>) -> String {
    let Some(cut_at) = cut_at else {
        return sentences
            .iter()
            .map(|s| s.text.as_str())
            .collect::<Vec<_>>()
            .join(" ");
    };
    let mut heard: Vec<String> = Vec::new();
    for sentence in sentences {
        if sentence.played {
            heard.push(sentence.text.clone());
            continue;
        }
        if let Some(first) = sentence.first_sent {
            let total = FRAME * sentence.frames.max(sentence.sent).max(1);
            let played = cut_at.saturating_duration_since(first).min(total);
            let words: Vec<&str> = sentence.text.split_whitespace().collect();
            let n =
                (words.len() as f64 * played.as_secs_f64() / total.as_secs_f64()).floor() as usize;
            if n > 0 {
                heard.push(words[..n.min(words.len())].join(" "));
            }
        }
        break;
    }
    heard.join(" ")
}

/// Speaks the turn's sentences in order, each as soon as it comes; a sentence whose speech
/// fails before any audio is asked once more.
pub(super) async fn speak(
    voice: Voice,
    mut sentences: mpsc::UnboundedReceiver<(usize, String)>,
    audio: mpsc::Sender<Speech>,
) {
    while let Some((index, text)) = sentences.recv().await {
        let request = SpeakRequest {
            voice: voice.voice.clone(),
            model: voice.model.clone(),
            text,
            format: crate::upstream::AudioFormat::Mulaw8k,
        };
        let mut tries = 0;
        loop {
            tries += 1;
            let mut sent_any = false;
            let failure = match voice.tts.speak(&voice.key, &request).await {
                Ok(mut stream) => {
                    let mut failure = None;
                    while let Some(chunk) = stream.next().await {
                        match chunk {
                            Ok(bytes) => {
                                sent_any = true;
                                if audio.send(Speech::Audio(index, bytes)).await.is_err() {
                                    return;
                                }
                            }
                            Err(e) => {
                                failure = Some(e);
                                break;
                            }
                        }
                    }
                    failure
                }
                Err(e) => Some(e),
            };
            match failure {
                None => break,
                Some(e) if tries < 2 && !sent_any => {
                    tracing::warn!(error = %e, "speech failed; asking once more");
                }
                Some(e) => {
                    let _ = audio.send(Speech::Failed(e)).await;
                    return;
                }
            }
        }
        if audio.send(Speech::End(index)).await.is_err() {
            return;
        }
    }
}
