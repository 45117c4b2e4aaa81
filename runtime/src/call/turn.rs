//! The agent's turn: what its model and speech tasks produce, and how the call starts,
//! hears, speaks, settles and cuts a turn.

use super::*;

/// The agent's turn in flight.
pub(super) struct Turn {
    pub(super) id: u32,
    pub(super) thinking: Option<JoinHandle<Result<Vec<ChatMessage>, UpstreamError>>>,
    pub(super) thoughts: mpsc::UnboundedReceiver<Thought>,
    pub(super) speaking: JoinHandle<()>,
    /// Sentences to speak; dropped once the model is done, which ends the speech task.
    pub(super) to_speak: Option<mpsc::UnboundedSender<(usize, String)>>,
    pub(super) audio: mpsc::Receiver<Speech>,
    pub(super) speech_done: bool,
    pub(super) sentences: Vec<Spoken>,
    /// Finished rounds of tool calls, kept even if the rest of the turn is cut.
    pub(super) rounds: Vec<ChatMessage>,
    /// The whole turn's messages, once the model is done: kept when it has been heard.
    pub(super) answer: Vec<ChatMessage>,
    /// When the caller's turn that started it ended.
    pub(super) answering_since: Option<Instant>,
    pub(super) first_frame_sent: bool,
}

/// What a turn's tasks produced.
pub(super) enum TurnEvent {
    Thought(Thought),
    Done(Result<Result<Vec<ChatMessage>, UpstreamError>, tokio::task::JoinError>),
    Speech(Option<Speech>),
}

impl Turn {
    /// The next thing the turn's model or speech produced.
    pub(super) async fn next(&mut self) -> TurnEvent {
        let speaking = !self.speech_done;
        let audio = &mut self.audio;
        match self.thinking.as_mut() {
            // Thoughts only while the model works: once it is done the channel is closed,
            // and its last thoughts are taken with its answer.
            Some(thinking) => tokio::select! {
                Some(thought) = self.thoughts.recv() => TurnEvent::Thought(thought),
                done = thinking => TurnEvent::Done(done),
                speech = audio.recv(), if speaking => TurnEvent::Speech(speech),
            },
            None if speaking => TurnEvent::Speech(audio.recv().await),
            None => never().await,
        }
    }

    pub(super) fn abort(&mut self) {
        if let Some(thinking) = self.thinking.take() {
            thinking.abort();
        }
        self.speaking.abort();
    }
}

impl Live {
    pub(super) fn caller_speaks(&mut self) {
        self.last_activity = Instant::now();
        self.prompted = false;
        let audible = !self.queue.is_empty()
            || self.marks_pending > 0
            || self
                .turn
                .as_ref()
                .is_some_and(|t| t.sentences.iter().any(|s| s.sent > 0));
        if audible {
            self.interrupt();
        }
    }

    /// The caller's turn ended: the agent answers what was said.
    pub(super) fn end_of_caller_turn(&mut self) {
        if self.said.is_empty() {
            return;
        }
        let text = self.said.join(" ");
        let since = self.said_since.take();
        self.said.clear();
        if self.turn.is_some() {
            // Said more while the agent was getting ready to answer: answer all of it.
            self.interrupt();
        }
        let at = self.elapsed_ms();
        let start = since.map_or(at, |s| {
            at - i64::try_from(s.elapsed().as_millis()).unwrap_or(0)
        });
        self.keep(Keep::Messages(vec![message(
            MessageRole::User,
            text.clone(),
            start,
            at,
        )]));
        self.history.push(ChatMessage::User(text));
        self.turns += 1;
        self.last_activity = Instant::now();
        self.start_turn(None);
        if let Some(turn) = &mut self.turn {
            turn.answering_since = Some(Instant::now());
        }
    }

    /// Starts the agent's turn over the conversation so far (and `instruction`, a system
    /// note for this turn only).
    pub(super) fn start_turn(&mut self, instruction: Option<&str>) {
        let mut history = self.history.clone();
        if let Some(note) = instruction {
            history.push(ChatMessage::System(note.to_owned()));
        }
        let (thought_tx, thoughts) = mpsc::unbounded_channel();
        let mind = self.plan.mind.clone();
        let thinking = tokio::spawn(async move { think(&mind, history, &thought_tx).await });
        let (speak_tx, speak_rx) = mpsc::unbounded_channel();
        let (audio_tx, audio) = mpsc::channel(64);
        let speaking = tokio::spawn(speak(self.plan.voice.clone(), speak_rx, audio_tx));
        self.turn_ids += 1;
        self.turn = Some(Turn {
            id: self.turn_ids,
            thinking: Some(thinking),
            thoughts,
            speaking,
            to_speak: Some(speak_tx),
            audio,
            speech_done: false,
            sentences: Vec::new(),
            rounds: Vec::new(),
            answer: Vec::new(),
            answering_since: None,
            first_frame_sent: false,
        });
    }

    pub(super) fn thought(&mut self, thought: Thought) {
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        match thought {
            Thought::Sentence(text) => {
                let index = turn.sentences.len();
                self.characters += text.chars().count() as u64;
                turn.sentences.push(Spoken {
                    mark: format!("t{}s{index}", turn.id),
                    text: text.clone(),
                    frames: 0,
                    sent: 0,
                    first_sent: None,
                    played: false,
                });
                if let Some(tx) = &turn.to_speak {
                    let _ = tx.send((index, text));
                }
            }
            Thought::Tool(tool) => {
                let at = self.elapsed_ms();
                let mut m = message(MessageRole::Tool, tool.name.clone(), at, at);
                m.tool_name = Some(tool.name);
                m.tool_arguments = Some(tool.arguments);
                m.tool_result = Some(tool.result);
                self.keep(Keep::Messages(vec![m]));
            }
            Thought::Usage {
                input_tokens,
                output_tokens,
            } => {
                self.tokens.0 += input_tokens;
                self.tokens.1 += output_tokens;
            }
            Thought::EndCall { .. } => {
                if self.ending.is_none() {
                    self.ending = Some("tool_end_call");
                }
            }
            Thought::Round(messages) => turn.rounds.extend(messages),
        }
    }

    /// The model is done with the turn (or failed).
    pub(super) fn thought_through(
        &mut self,
        done: Result<Result<Vec<ChatMessage>, UpstreamError>, tokio::task::JoinError>,
    ) -> Option<&'static str> {
        // Thoughts sent before the end are still in the channel: take them first.
        while let Some(thought) = self.turn.as_mut().and_then(|t| t.thoughts.try_recv().ok()) {
            self.thought(thought);
        }
        let turn = self.turn.as_mut()?;
        turn.thinking = None;
        turn.to_speak = None;
        match done {
            Ok(Ok(added)) => {
                // Kept once heard (`settle`), or as far as it was heard (`interrupt`).
                turn.answer = added;
                None
            }
            Ok(Err(e)) => {
                tracing::warn!(error = %e, "the language model failed twice");
                Some("runtime_error")
            }
            // Aborted by a barge-in: the loop already moved on.
            Err(_) => None,
        }
    }

    /// Audio of the turn's speech.
    pub(super) fn speech(&mut self, speech: Option<Speech>) -> Option<&'static str> {
        let turn = self.turn.as_mut()?;
        match speech {
            Some(Speech::Audio(index, bytes)) => {
                self.partial.extend_from_slice(&bytes);
                while self.partial.len() >= 160 {
                    let frame = self.partial.split_to(160).freeze();
                    self.queue.push_back(Out::Frame(frame, index));
                }
            }
            Some(Speech::End(index)) => {
                if !self.partial.is_empty() {
                    self.partial.resize(160, mulaw::SILENCE);
                    let frame = self.partial.split().freeze();
                    self.queue.push_back(Out::Frame(frame, index));
                }
                let frames = self
                    .queue
                    .iter()
                    .filter(|o| matches!(o, Out::Frame(_, i) if *i == index))
                    .count() as u32;
                if let Some(sentence) = turn.sentences.get_mut(index) {
                    sentence.frames = frames + sentence.sent;
                    self.queue.push_back(Out::Mark(sentence.mark.clone()));
                }
            }
            Some(Speech::Failed(e)) => {
                tracing::warn!(error = %e, "speech failed twice");
                return Some("runtime_error");
            }
            None => turn.speech_done = true,
        }
        None
    }

    /// Sends the next frame, and the marks behind it.
    pub(super) fn send_frame(&mut self) {
        let now = Instant::now();
        if let Some(Out::Frame(frame, index)) = self.queue.pop_front() {
            let _ = self.out.try_send(Message::text(self.writer.media(&frame)));
            let elapsed = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(0);
            if let Some(recorder) = &mut self.recorder {
                recorder.agent(elapsed, &frame);
            }
            if let Some(turn) = self.turn.as_mut() {
                if let Some(sentence) = turn.sentences.get_mut(index) {
                    sentence.sent += 1;
                    sentence.first_sent.get_or_insert(now);
                }
                if !turn.first_frame_sent {
                    turn.first_frame_sent = true;
                    if let Some(since) = turn.answering_since {
                        let latency = now.saturating_duration_since(since);
                        metrics::histogram!("voiceplane_runtime_turn_latency_seconds")
                            .record(latency.as_secs_f64());
                        self.latencies.push(latency.as_secs_f64() * 1000.0);
                    }
                }
            }
            // Real time from the first frame on; a loop that fell behind does not burst.
            self.next_send = if self.next_send + FRAME < now {
                now + FRAME
            } else {
                self.next_send + FRAME
            };
        }
        while let Some(Out::Mark(_)) = self.queue.front() {
            if let Some(Out::Mark(name)) = self.queue.pop_front() {
                let _ = self.out.try_send(Message::text(self.writer.mark(&name)));
                self.marks_pending += 1;
            }
        }
    }

    pub(super) fn marked(&mut self, name: &str) {
        let Some(turn) = self.turn.as_mut() else {
            return;
        };
        if let Some(sentence) = turn.sentences.iter_mut().find(|s| s.mark == name) {
            sentence.played = true;
            self.marks_pending = self.marks_pending.saturating_sub(1);
            self.last_activity = Instant::now();
        }
    }

    /// Ends the turn once everything of it is done and played; the call, when it was to end
    /// after these words.
    pub(super) fn settle(&mut self) -> Option<&'static str> {
        let turn = self.turn.as_ref()?;
        if turn.thinking.is_some()
            || !turn.speech_done
            || !self.queue.is_empty()
            || self.marks_pending > 0
        {
            return None;
        }
        let mut turn = self.turn.take()?;
        self.history.append(&mut turn.answer);
        let text = spoken_text(&turn.sentences, None);
        if !text.is_empty() {
            let at = self.elapsed_ms();
            let started = turn
                .sentences
                .first()
                .and_then(|s| s.first_sent)
                .map_or(at, |first| {
                    at - i64::try_from(first.elapsed().as_millis()).unwrap_or(0)
                });
            self.keep(Keep::Messages(vec![message(
                MessageRole::Agent,
                text,
                started,
                at,
            )]));
        }
        self.last_activity = Instant::now();
        self.ending
    }

    /// The caller talks over the agent: what was not played is dropped and cancelled, and
    /// the agent's words keep only what was heard.
    pub(super) fn interrupt(&mut self) {
        let Some(mut turn) = self.turn.take() else {
            if !self.queue.is_empty() || self.marks_pending > 0 {
                self.queue.clear();
                self.marks_pending = 0;
                let _ = self.out.try_send(Message::text(self.writer.clear()));
            }
            return;
        };
        turn.abort();
        let was_audible = !self.queue.is_empty() || self.marks_pending > 0;
        self.queue.clear();
        self.partial.clear();
        self.marks_pending = 0;
        if was_audible {
            let _ = self.out.try_send(Message::text(self.writer.clear()));
        }
        self.history.append(&mut turn.rounds);
        let heard = spoken_text(&turn.sentences, Some(Instant::now()));
        if !heard.is_empty() {
            self.history.push(ChatMessage::Assistant {
                text: heard.clone(),
                tool_calls: Vec::new(),
            });
            let at = self.elapsed_ms();
            let mut m = message(MessageRole::Agent, heard, at, at);
            m.interrupted = Some(true);
            self.keep(Keep::Messages(vec![m]));
        }
        // The caller has more to say: the call does not end on the words they cut.
        self.ending = None;
    }
}
