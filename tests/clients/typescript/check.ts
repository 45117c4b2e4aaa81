// Compiled (never run) against the types openapi-typescript generates from the document
// (`.ci/openapi-clients.sh`): request bodies must not demand what the server defaults, and
// answers must carry what the API promises.
import type { components } from "./api";

type Schemas = components["schemas"];

// The smallest bodies the API accepts: every field with a server-side default left out.
const agent: Schemas["NewAgent"] = {
  agent_name: "Support",
  language: "en-US",
  stt_provider: "deepgram",
  tts_provider: "provider_one",
  tts_voice: "alloy",
  llm_provider: "openai",
  llm_model: "gpt-4o-mini",
};
const call: Schemas["NewCall"] = {
  agent_id: "agent_0123456789abcdef",
  to_number: "+15551234567",
  call_type: "outbound",
};
const tool: Schemas["NewTool"] = {
  tool_name: "lookup_order",
  tool_description: "Looks an order up",
  url: "https://example.com/orders",
};
const update: Schemas["AgentUpdate"] = { agent_name: "Renamed" };

// What an answer always has.
declare const created: Schemas["Agent"];
const id: string = created.agent_id;
const recording: boolean = created.recording_enabled;

export const used = [agent, call, tool, update, id, recording];
