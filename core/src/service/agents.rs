//! Agents.

use super::*;

impl Service {
    /// Creates an agent; referenced tools, documents and phone numbers must exist in the
    /// organization, and the phone numbers get assigned to the new agent.
    pub async fn agent_create(&self, actor: &Actor, input: NewAgent) -> Result<Agent> {
        actor.require(Permission::AgentsWrite)?;
        let agent_name = validate::text("agent_name", &input.agent_name, 200)?;
        let language = validate::text("language", &input.language, 20)?.to_uppercase();
        if !language
            .bytes()
            .all(|b| b.is_ascii_alphabetic() || b == b'-' || b == b'_')
        {
            return Err(Error::invalid(
                "language must be a language code such as EN or EN-US",
            ));
        }
        let stt_provider = validate::text("stt_provider", &input.stt_provider, 100)?;
        let tts_voice = validate::text("tts_voice", &input.tts_voice, 200)?;
        let llm_provider = validate::text("llm_provider", &input.llm_provider, 100)?;
        let llm_model = validate::text("llm_model", &input.llm_model, 200)?;
        let llm_temperature = validate::number(
            "llm_temperature",
            input.llm_temperature.unwrap_or(0.7),
            0.0,
            2.0,
        )?;
        let voicemail_response_delay = validate::number(
            "voicemail_response_delay",
            input.voicemail_response_delay.unwrap_or(0.0),
            0.0,
            600.0,
        )?;
        let org = &actor.organization_id;
        let custom_tools = self
            .check_references(IdKind::Tool, "custom_tools", &input.custom_tools, |ids| {
                self.repo.tool_ids_existing(org, ids)
            })
            .await?;
        let kb_document_ids = self
            .check_references(
                IdKind::Document,
                "kb_document_ids",
                &input.kb_document_ids,
                |ids| self.repo.document_ids_existing(org, ids),
            )
            .await?;
        let assigned_phone_number_ids = self
            .check_references(
                IdKind::PhoneNumber,
                "assigned_phone_number_ids",
                &input.assigned_phone_number_ids,
                |ids| self.repo.phone_number_ids_existing(org, ids),
            )
            .await?;
        let now = self.now();
        let agent = Agent {
            agent_id: self.id(IdKind::Agent),
            client_id: org.clone(),
            agent_name,
            language,
            stt_provider,
            tts_provider: input.tts_provider,
            tts_voice,
            llm_provider,
            llm_model,
            system_prompt: input.system_prompt,
            speak_first: input.speak_first,
            end_call_tool: input.end_call_tool,
            llm_temperature,
            recording_enabled: input.recording_enabled,
            voicemail_detection: input.voicemail_detection,
            voicemail_response_delay,
            custom_tools,
            kb_document_ids,
            assigned_phone_number_ids,
            created_at: now,
            updated_at: now,
        };
        self.repo.agent_insert(&agent).await?;
        Ok(agent)
    }

    /// One agent of the organization.
    pub async fn agent_view(&self, actor: &Actor, agent_id: &str) -> Result<Agent> {
        actor.require(Permission::AgentsRead)?;
        let id = IdKind::Agent.parse(agent_id)?;
        self.repo
            .agent_get(&actor.organization_id, &id)
            .await?
            .ok_or_else(|| Error::not_found(format!("agent {id} not found")))
    }
}
