//! The conversation engine: what the agent says to each caller turn. A turn asks the model
//! (streamed), hands each sentence on as soon as it is complete (so speech can start before
//! the model is done), runs the tools the model calls — at most [`MAX_TOOL_ROUNDS`] rounds —
//! and reports what it did as [`Thought`]s. It knows nothing of audio: a phone call speaks the
//! sentences, an agent test reads them ([`Conversation`]).

use std::collections::BTreeMap;
use std::sync::Arc;

use async_trait::async_trait;
use futures_util::StreamExt;
use tokio::sync::mpsc;

use crate::upstream::{
    ChatDelta, ChatMessage, ChatRequest, FunctionSpec, LanguageModel, ProviderKey, ToolCall,
    UpstreamError,
};

/// Rounds of tool calls one turn may make; the round after the last is asked without tools,
/// so that the turn ends with words.
pub const MAX_TOOL_ROUNDS: usize = 5;

/// The function that ends the call, offered when the agent's `end_call_tool` is on.
pub const END_CALL: &str = "end_call";

/// The function that searches the agent's documents, offered when it has some.
pub const SEARCH_KNOWLEDGE_BASE: &str = "search_knowledge_base";

/// Runs the functions the model calls, other than [`END_CALL`], which the engine handles.
#[async_trait]
pub trait Toolbox: Send + Sync + 'static {
    /// The answer to give the model: the tool's result, or `{"error": …}`.
    async fn call(&self, name: &str, arguments: &serde_json::Value) -> serde_json::Value;
}

/// What thinks for one call: the model, how it is asked, and the tools it may use.
#[derive(Clone)]
pub struct Mind {
    /// The chat-completions upstream.
    pub llm: Arc<dyn LanguageModel>,
    /// Its key and base URL.
    pub key: ProviderKey,
    /// The agent's `llm_model`.
    pub model: String,
    /// The agent's `llm_temperature`.
    pub temperature: Option<f64>,
    /// The functions offered.
    pub functions: Vec<FunctionSpec>,
    /// What runs them.
    pub tools: Arc<dyn Toolbox>,
}

/// A tool the model called during a turn, with what it answered.
#[derive(Debug, Clone, PartialEq)]
pub struct ToolUse {
    /// The function's name.
    pub name: String,
    /// The arguments the model gave (JSON; the raw text as a string when it was not JSON).
    pub arguments: serde_json::Value,
    /// What went back to the model.
    pub result: serde_json::Value,
}

/// What a turn reports as it goes.
#[derive(Debug, Clone, PartialEq)]
pub enum Thought {
    /// A complete sentence of the reply.
    Sentence(String),
    /// A tool call, done.
    Tool(ToolUse),
    /// Tokens one request used.
    Usage {
        /// Prompt tokens.
        input_tokens: u64,
        /// Completion tokens.
        output_tokens: u64,
    },
    /// The model asked to end the call, for `reason`: once the reply is spoken.
    EndCall {
        /// The model's reason.
        reason: String,
    },
    /// The messages of a finished round of tool calls (the assistant's calls and the tools'
    /// answers), to keep in the conversation whatever becomes of the rest of the turn.
    Round(Vec<ChatMessage>),
}

/// The system prompt with each `{{name}}` of `variables` filled in; unknown names are left as
/// they are, so that a missing variable shows in the transcript rather than vanishing.
pub fn fill_prompt(prompt: &str, variables: &BTreeMap<String, String>) -> String {
    let mut out = String::with_capacity(prompt.len());
    let mut rest = prompt;
    while let Some(open) = rest.find("{{") {
        out.push_str(&rest[..open]);
        let after = &rest[open + 2..];
        match after.find("}}") {
            Some(close) => {
                let name = after[..close].trim();
                match variables.get(name) {
                    Some(value) => out.push_str(value),
                    None => out.push_str(&rest[open..open + 2 + close + 2]),
                }
                rest = &after[close + 2..];
            }
            None => {
                out.push_str(&rest[open..]);
                rest = "";
            }
        }
    }
    out.push_str(rest);
    out
}

/// Takes the complete sentences off the front of `pending`: up to a `.`, `!` or `?` followed
/// by white space, or a line break. What follows the last one stays.
pub fn take_sentences(pending: &mut String) -> Vec<String> {
    let mut sentences = Vec::new();
    let mut start = 0;
    let bytes = pending.as_bytes();
    let mut i = 0;
    while i < bytes.len() {
        let end = match bytes[i] {
            b'\n' => Some(i + 1),
            b'.' | b'!' | b'?' if bytes.get(i + 1).is_some_and(u8::is_ascii_whitespace) => {
                Some(i + 1)
            }
            _ => None,
        };
        if let Some(end) = end {
            let sentence = pending[start..end].trim();
            if !sentence.is_empty() {
                sentences.push(sentence.to_owned());
            }
            start = end;
        }
        i += 1;
    }
    pending.drain(..start);
    sentences
}

/// One turn: the reply to `history` (system prompt first, the caller's words last), reported
/// through `out` as it comes. Answers the messages the turn adds to the conversation (the
/// rounds of tool calls and the final reply), or the error of a model that failed twice in a
/// row. Cancelled by dropping (aborting) it: the model's request goes with it.
pub async fn think(
    mind: &Mind,
    mut history: Vec<ChatMessage>,
    out: &mpsc::UnboundedSender<Thought>,
) -> Result<Vec<ChatMessage>, UpstreamError> {
    let start = history.len();
    let mut ending = false;
    for round in 0..=MAX_TOOL_ROUNDS {
        let functions = if round < MAX_TOOL_ROUNDS {
            mind.functions.clone()
        } else {
            Vec::new()
        };
        let request = ChatRequest {
            model: mind.model.clone(),
            temperature: mind.temperature,
            messages: history.clone(),
            functions,
        };
        let (text, calls) = ask(mind, &request, out).await?;
        if calls.is_empty() {
            if !text.is_empty() {
                history.push(ChatMessage::Assistant {
                    text,
                    tool_calls: Vec::new(),
                });
            }
            break;
        }
        let mut round_messages = vec![ChatMessage::Assistant {
            text,
            tool_calls: calls.clone(),
        }];
        for call in calls {
            let arguments = serde_json::from_str(&call.arguments)
                .unwrap_or_else(|_| serde_json::Value::String(call.arguments.clone()));
            let result = if call.name == END_CALL {
                let reason = arguments["reason"].as_str().unwrap_or("").to_owned();
                let _ = out.send(Thought::EndCall { reason });
                ending = true;
                serde_json::json!({"ok": true, "note": "the call ends after your last words"})
            } else {
                mind.tools.call(&call.name, &arguments).await
            };
            let _ = out.send(Thought::Tool(ToolUse {
                name: call.name.clone(),
                arguments,
                result: result.clone(),
            }));
            round_messages.push(ChatMessage::Tool {
                call_id: call.id,
                content: result.to_string(),
            });
        }
        let _ = out.send(Thought::Round(round_messages.clone()));
        history.extend(round_messages);
        if ending {
            break;
        }
    }
    Ok(history.split_off(start))
}

/// One request: its sentences reported as they complete, its text and tool calls answered.
/// A request that fails before anything of it was reported is sent once more.
async fn ask(
    mind: &Mind,
    request: &ChatRequest,
    out: &mpsc::UnboundedSender<Thought>,
) -> Result<(String, Vec<ToolCall>), UpstreamError> {
    let mut retried = false;
    loop {
        match ask_once(mind, request, out).await {
            Ok(answer) => return Ok(answer),
            Err((error, said_something)) => {
                if retried || said_something {
                    return Err(error);
                }
                tracing::warn!(error = %error, "the language model failed; asking once more");
                retried = true;
            }
        }
    }
}

async fn ask_once(
    mind: &Mind,
    request: &ChatRequest,
    out: &mpsc::UnboundedSender<Thought>,
) -> Result<(String, Vec<ToolCall>), (UpstreamError, bool)> {
    let mut stream = mind
        .llm
        .chat(&mind.key, request)
        .await
        .map_err(|e| (e, false))?;
    let mut text = String::new();
    let mut pending = String::new();
    let mut calls = Vec::new();
    let mut said = false;
    while let Some(delta) = stream.next().await {
        match delta.map_err(|e| (e, said))? {
            ChatDelta::Text(piece) => {
                text.push_str(&piece);
                pending.push_str(&piece);
                for sentence in take_sentences(&mut pending) {
                    said = true;
                    let _ = out.send(Thought::Sentence(sentence));
                }
            }
            ChatDelta::ToolCall(call) => calls.push(call),
            ChatDelta::Usage {
                input_tokens,
                output_tokens,
            } => {
                let _ = out.send(Thought::Usage {
                    input_tokens,
                    output_tokens,
                });
            }
        }
    }
    let rest = pending.trim();
    if !rest.is_empty() {
        let _ = out.send(Thought::Sentence(rest.to_owned()));
    }
    Ok((text.trim().to_owned(), calls))
}

/// A conversation in text: what agent tests drive, and what a call's engine does without
/// its audio. Each [`Conversation::reply`] is one caller turn.
pub struct Conversation {
    mind: Mind,
    history: Vec<ChatMessage>,
}

/// What the agent did in one turn of a [`Conversation`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Reply {
    /// What it said.
    pub text: String,
    /// The tools it called, in order.
    pub tools: Vec<ToolUse>,
    /// Why it ended the call, when it did.
    pub ended: Option<String>,
    /// Prompt and completion tokens used.
    pub tokens: (u64, u64),
}

impl Conversation {
    /// A conversation of `mind` under `system_prompt` (already filled).
    pub fn new(mind: Mind, system_prompt: String) -> Self {
        Self {
            mind,
            history: vec![ChatMessage::System(system_prompt)],
        }
    }

    /// The conversation so far.
    pub fn history(&self) -> &[ChatMessage] {
        &self.history
    }

    /// The agent's first words, before the caller says anything (`speak_first`).
    pub async fn greet(&mut self) -> Result<Reply, UpstreamError> {
        self.turn().await
    }

    /// The agent's answer to `said`.
    pub async fn reply(&mut self, said: &str) -> Result<Reply, UpstreamError> {
        self.history.push(ChatMessage::User(said.to_owned()));
        self.turn().await
    }

    async fn turn(&mut self) -> Result<Reply, UpstreamError> {
        let (tx, mut rx) = mpsc::unbounded_channel();
        let added = think(&self.mind, self.history.clone(), &tx).await?;
        drop(tx);
        self.history.extend(added);
        let mut reply = Reply::default();
        let mut sentences = Vec::new();
        while let Some(thought) = rx.recv().await {
            match thought {
                Thought::Sentence(s) => sentences.push(s),
                Thought::Tool(t) => reply.tools.push(t),
                Thought::EndCall { reason } => reply.ended = Some(reason),
                Thought::Usage {
                    input_tokens,
                    output_tokens,
                } => {
                    reply.tokens.0 += input_tokens;
                    reply.tokens.1 += output_tokens;
                }
                Thought::Round(_) => {}
            }
        }
        reply.text = sentences.join(" ");
        Ok(reply)
    }
}

#[cfg(test)]
mod tests {
    use std::collections::VecDeque;
    use std::sync::Mutex;

    use super::*;
    use crate::upstream::Streamed;

    /// A model that answers each request with the next script, and keeps the requests.
    #[derive(Default)]
    struct Scripted {
        answers: Mutex<VecDeque<Result<Vec<ChatDelta>, UpstreamError>>>,
        asked: Mutex<Vec<ChatRequest>>,
    }

    #[async_trait]
    impl LanguageModel for Scripted {
        async fn chat(
            &self,
            _: &ProviderKey,
            request: &ChatRequest,
        ) -> Result<Streamed<ChatDelta>, UpstreamError> {
            self.asked.lock().map(|mut a| a.push(request.clone())).ok();
            let next = self.answers.lock().ok().and_then(|mut a| a.pop_front());
            let deltas = next.unwrap_or_else(|| Err(UpstreamError("no more answers".into())))?;
            Ok(Box::pin(futures_util::stream::iter(
                deltas.into_iter().map(Ok),
            )))
        }
    }

    struct Echo;

    #[async_trait]
    impl Toolbox for Echo {
        async fn call(&self, name: &str, arguments: &serde_json::Value) -> serde_json::Value {
            serde_json::json!({"tool": name, "got": arguments})
        }
    }

    fn call(name: &str, arguments: &str) -> ChatDelta {
        ChatDelta::ToolCall(ToolCall {
            id: format!("call_{name}"),
            name: name.to_owned(),
            arguments: arguments.to_owned(),
        })
    }

    fn text(t: &str) -> ChatDelta {
        ChatDelta::Text(t.to_owned())
    }

    fn conversation(
        answers: Vec<Result<Vec<ChatDelta>, UpstreamError>>,
    ) -> (Conversation, Arc<Scripted>) {
        let model = Arc::new(Scripted {
            answers: Mutex::new(answers.into()),
            asked: Mutex::default(),
        });
        let mind = Mind {
            llm: model.clone(),
            key: ProviderKey {
                provider: "openai".into(),
                base_url: "http://fake".into(),
                api_key: "k".into(),
            },
            model: "m".into(),
            temperature: Some(0.2),
            functions: vec![FunctionSpec {
                name: "lookup".into(),
                description: "Looks up.".into(),
                parameters: serde_json::json!({"type": "object"}),
            }],
            tools: Arc::new(Echo),
        };
        (Conversation::new(mind, "Be brief.".into()), model)
    }

    fn asked(model: &Scripted) -> Vec<ChatRequest> {
        model.asked.lock().map(|a| a.clone()).unwrap_or_default()
    }

    #[tokio::test]
    async fn a_tool_answer_reaches_the_model_before_it_replies() {
        let (mut conv, model) = conversation(vec![
            Ok(vec![call("lookup", r#"{"id": 7}"#)]),
            Ok(vec![text("It is "), text("open. See"), text(" you.")]),
        ]);
        let reply = conv.reply("Are you open?").await.expect("a reply");
        assert_eq!(reply.text, "It is open. See you.");
        assert_eq!(reply.tools.len(), 1);
        assert_eq!(reply.tools[0].arguments, serde_json::json!({"id": 7}));
        let requests = asked(&model);
        assert_eq!(requests.len(), 2);
        let ChatMessage::Tool { call_id, content } = &requests[1].messages[3] else {
            panic!("no tool answer in {:?}", requests[1].messages)
        };
        assert_eq!(call_id, "call_lookup");
        assert!(content.contains("\"got\":{\"id\":7}"), "{content}");
        assert_eq!(conv.history().len(), 5);
    }

    #[tokio::test]
    async fn end_call_ends_the_turn_after_its_words() {
        let (mut conv, model) = conversation(vec![Ok(vec![
            text("Goodbye."),
            call(END_CALL, r#"{"reason": "booked"}"#),
        ])]);
        let reply = conv.reply("That's all.").await.expect("a reply");
        assert_eq!(reply.text, "Goodbye.");
        assert_eq!(reply.ended.as_deref(), Some("booked"));
        assert_eq!(asked(&model).len(), 1);
    }

    #[tokio::test]
    async fn after_five_rounds_of_tools_the_model_must_answer_in_words() {
        let mut answers: Vec<_> = (0..MAX_TOOL_ROUNDS)
            .map(|_| Ok(vec![call("lookup", "{}")]))
            .collect();
        answers.push(Ok(vec![text("Done.")]));
        let (mut conv, model) = conversation(answers);
        let reply = conv.reply("Go.").await.expect("a reply");
        assert_eq!(reply.tools.len(), MAX_TOOL_ROUNDS);
        assert_eq!(reply.text, "Done.");
        let requests = asked(&model);
        assert_eq!(requests.len(), MAX_TOOL_ROUNDS + 1);
        assert!(
            requests[..MAX_TOOL_ROUNDS]
                .iter()
                .all(|r| !r.functions.is_empty())
        );
        assert!(requests[MAX_TOOL_ROUNDS].functions.is_empty());
    }

    #[tokio::test]
    async fn a_failing_model_is_asked_once_more_then_the_turn_fails() {
        let down = || Err(UpstreamError("openai answered 500".into()));
        let (mut conv, _) = conversation(vec![down(), Ok(vec![text("Hi.")])]);
        assert_eq!(conv.greet().await.expect("a reply").text, "Hi.");
        let (mut conv, model) = conversation(vec![down(), down(), Ok(vec![text("Hi.")])]);
        assert_eq!(
            conv.greet().await.map(|r| r.text),
            Err(UpstreamError("openai answered 500".into()))
        );
        assert_eq!(asked(&model).len(), 2);
    }

    #[test]
    fn variables_fill_the_prompt_and_unknown_ones_stay() {
        let vars = BTreeMap::from([("name".to_owned(), "Ada".to_owned())]);
        assert_eq!(
            fill_prompt("Hi {{ name }}, your {{order}} is {{", &vars),
            "Hi Ada, your {{order}} is {{"
        );
    }

    #[test]
    fn sentences_are_cut_at_their_ends_only() {
        let mut pending = "Hello there. It costs 3.5 dollars! And".to_owned();
        assert_eq!(
            take_sentences(&mut pending),
            vec!["Hello there.", "It costs 3.5 dollars!"]
        );
        assert_eq!(pending, " And");
        pending.push_str(" then?\nNext");
        assert_eq!(take_sentences(&mut pending), vec!["And then?"]);
        assert_eq!(pending, "Next");
    }
}
