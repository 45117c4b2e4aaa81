//! What the call keeps and how it ends: the transcript, usage and recording written in
//! order by a task of its own, voicemail, and the end of the call.

use super::*;

/// What the call keeps, written in order by a task of its own.
pub(super) enum Keep {
    Messages(Vec<NewMessage>),
    Usage(Vec<UsageItem>),
    Recording(std::path::PathBuf),
    HangUp,
    Finish(RuntimeEnd),
}

/// Writes what the call keeps, in the order the loop decided it.
pub(super) async fn keep(
    host: Arc<dyn CallHost>,
    org: String,
    call_sid: String,
    mut rx: mpsc::UnboundedReceiver<Keep>,
) {
    while let Some(item) = rx.recv().await {
        match item {
            Keep::Messages(messages) => host.messages(&org, &call_sid, messages).await,
            Keep::Usage(items) => host.usage(&org, &call_sid, items).await,
            Keep::Recording(path) => {
                host.recording(&org, &call_sid, &path).await;
                let _ = tokio::fs::remove_file(&path).await;
            }
            Keep::HangUp => host.hang_up(&org, &call_sid).await,
            Keep::Finish(end) => host.finish(&org, &call_sid, end).await,
        }
    }
}

impl Live {
    pub(super) fn watch_for_machine(&self) -> JoinHandle<bool> {
        let host = self.host.clone();
        let org = self.plan.organization_id.clone();
        let call_sid = self.plan.call_sid.clone();
        tokio::spawn(async move {
            let deadline = Instant::now() + MACHINE_WAIT;
            while Instant::now() < deadline {
                match host.answered_by_machine(&org, &call_sid).await {
                    Some(machine) => return machine,
                    None => tokio::time::sleep(MACHINE_POLL).await,
                }
            }
            false
        })
    }

    /// A machine answered: the agent stops, waits the agent's delay, then leaves one message.
    pub(super) fn machine_answered(&mut self) {
        if let Some(mut turn) = self.turn.take() {
            turn.abort();
        }
        self.queue.clear();
        self.partial.clear();
        self.marks_pending = 0;
        self.said.clear();
        self.voicemail = true;
        let delay = self.plan.voicemail_delay.unwrap_or_default();
        self.machine_answer_at = Some(Instant::now() + delay);
    }

    pub(super) fn leave_voicemail(&mut self) {
        self.ending = Some("voicemail");
        self.start_turn(Some(
            "This call reached a voicemail, not a person. Leave one short message for the \
             person now, in your own words, then stop. Do not call any tool.",
        ));
    }

    pub(super) async fn end(&mut self, reason: &'static str) {
        if let Some(mut turn) = self.turn.take() {
            turn.abort();
        }
        if let Some(check) = self.machine_check.take() {
            check.abort();
        }
        if let Some(ears) = self.ears.take() {
            let _ = ears.input.try_send(ListenInput::Close);
        }
        if let Some(reopening) = self.reopening.take() {
            reopening.abort();
        }
        if reason != "user_hangup" {
            self.keep(Keep::HangUp);
        }
        let mut usage = Vec::new();
        let seconds =
            self.heard_bytes as f64 / self.plan.ears.params.format.bytes_per_second() as f64;
        if seconds > 0.0 {
            usage.push(item(
                UsageComponent::Stt,
                &self.plan.ears.key.provider,
                Some(self.plan.ears.params.model.clone()),
                (seconds * 1000.0).round() / 1000.0,
                UsageUnit::Seconds,
            ));
        }
        let llm = (
            &self.plan.mind.key.provider,
            Some(self.plan.mind.model.clone()),
        );
        if self.tokens.0 > 0 {
            usage.push(item(
                UsageComponent::Llm,
                llm.0,
                llm.1.clone(),
                self.tokens.0 as f64,
                UsageUnit::InputTokens,
            ));
        }
        if self.tokens.1 > 0 {
            usage.push(item(
                UsageComponent::Llm,
                llm.0,
                llm.1,
                self.tokens.1 as f64,
                UsageUnit::OutputTokens,
            ));
        }
        if self.characters > 0 {
            usage.push(item(
                UsageComponent::Tts,
                &self.plan.voice.key.provider,
                self.plan.voice.model.clone(),
                self.characters as f64,
                UsageUnit::Characters,
            ));
        }
        if !usage.is_empty() {
            self.keep(Keep::Usage(usage));
        }
        if let Some(recorder) = self.recorder.take() {
            let length = u64::try_from(self.started.elapsed().as_millis()).unwrap_or(0);
            if let Ok(Some(path)) =
                tokio::task::spawn_blocking(move || recorder.finish(length)).await
            {
                self.keep(Keep::Recording(path));
            }
        }
        self.keep(Keep::Finish(RuntimeEnd {
            reason: reason.to_owned(),
            turn_count: self.turns,
            latency: CallLatency::of(&self.latencies),
        }));
        tracing::info!(call_sid = %self.plan.call_sid, end_reason = reason, turns = self.turns, "a call the runtime ran ended");
    }
}

/// A usage item of the call, with an id of its own so that it is charged once.
pub(super) fn item(
    component: UsageComponent,
    provider: &str,
    model: Option<String>,
    quantity: f64,
    unit: UsageUnit,
) -> UsageItem {
    UsageItem {
        id: Some(format!("runtime-{}-{}", component.as_str(), unit.as_str())),
        component,
        provider: provider.to_owned(),
        model,
        quantity,
        unit,
    }
}

/// A transcript message, `start_ms`/`end_ms` counted from the stream's start.
pub(super) fn message(role: MessageRole, text: String, start_ms: i64, end_ms: i64) -> NewMessage {
    NewMessage {
        role,
        text,
        start_ms: Some(start_ms),
        end_ms: Some(end_ms),
        tool_name: None,
        tool_arguments: None,
        tool_result: None,
        interrupted: None,
    }
}
