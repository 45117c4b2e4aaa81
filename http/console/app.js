// The voiceplane console: a client of the public API and nothing else. Views are addressed by
// the URL's fragment (`#/calls?status=completed&cursor=…`), so a view, its filters and its page
// can be shared. Credentials live in sessionStorage only. Every value from the API is written
// with textContent, never parsed as HTML.

// The API is the parent of the console's folder (`…/console/` → `…/`), so the console works
// wherever the API is mounted.
const API_BASE = new URL("../", location.href.split("#")[0]);
const main = document.getElementById("main");
const nav = document.getElementById("nav");

const session = {
  get() {
    const org = sessionStorage.getItem("voiceplane.org");
    const key = sessionStorage.getItem("voiceplane.key");
    const kind = sessionStorage.getItem("voiceplane.kind") || "key";
    return org && key ? { org, key, kind } : null;
  },
  set(org, key, kind) {
    sessionStorage.setItem("voiceplane.org", org);
    sessionStorage.setItem("voiceplane.key", key);
    sessionStorage.setItem("voiceplane.kind", kind);
  },
  clear() {
    for (const item of ["org", "key", "kind"]) sessionStorage.removeItem(`voiceplane.${item}`);
  },
};

/** An error the API answered, with its `detail` sentence. */
class ApiError extends Error {
  constructor(status, detail) {
    super(detail);
    this.status = status;
  }
}

async function api(method, path, body, contentType) {
  const s = session.get();
  const headers = { Accept: "application/json" };
  if (s) {
    if (s.kind === "bearer") headers.Authorization = `Bearer ${s.key}`;
    else headers["X-API-Key"] = s.key;
    headers["X-Organization-Id"] = s.org;
  }
  let payload;
  if (contentType) {
    headers["Content-Type"] = contentType;
    payload = body;
  } else if (body !== undefined) {
    headers["Content-Type"] = "application/json";
    payload = JSON.stringify(body);
  }
  const response = await fetch(new URL(path.replace(/^\//, ""), API_BASE), {
    method,
    headers,
    body: payload,
  });
  const text = await response.text();
  let json = null;
  try {
    json = text ? JSON.parse(text) : null;
  } catch {
    json = null;
  }
  if (!response.ok) {
    const detail = json && typeof json.detail === "string" ? json.detail : `HTTP ${response.status}`;
    throw new ApiError(response.status, detail);
  }
  return json;
}

/** An element `tag` with attributes and children (strings become text). */
function el(tag, attrs = {}, ...children) {
  const node = document.createElement(tag);
  for (const [name, value] of Object.entries(attrs)) {
    if (value === null || value === undefined || value === false) continue;
    if (name.startsWith("on")) node.addEventListener(name.slice(2), value);
    else node.setAttribute(name, value === true ? "" : String(value));
  }
  for (const child of children.flat(Infinity)) {
    if (child === null || child === undefined) continue;
    node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  }
  return node;
}

const SVG = "http://www.w3.org/2000/svg";
function svg(tag, attrs = {}, ...children) {
  const node = document.createElementNS(SVG, tag);
  for (const [name, value] of Object.entries(attrs)) node.setAttribute(name, String(value));
  for (const child of children) node.append(child instanceof Node ? child : document.createTextNode(String(child)));
  return node;
}

// A view is built while its requests are answered; when the URL changes before they are, the
// older view must not land over the newer one: views are staged, and only the latest render
// puts its own on the page.
let epoch = 0;
let staged = null;

function show(...nodes) {
  staged = nodes;
}

function loading() {
  main.setAttribute("aria-busy", "true");
  main.replaceChildren(el("p", { class: "loading", role: "status" }, "Loading…"));
}

function failure(e) {
  if (e instanceof ApiError && e.status === 401) {
    session.clear();
    location.hash = "#/sign-in";
    return;
  }
  show(el("p", { class: "error", role: "alert" }, e instanceof ApiError ? e.message : `Something went wrong: ${e.message}`));
}

function route() {
  const raw = location.hash.replace(/^#/, "") || "/calls";
  const [path, query] = raw.split("?");
  return { parts: path.split("/").filter(Boolean), params: new URLSearchParams(query || "") };
}

function go(path, params) {
  const query = params ? new URLSearchParams([...params].filter(([, v]) => v !== "")).toString() : "";
  location.hash = `#${path}${query ? `?${query}` : ""}`;
}

function when(value) {
  return value ? new Date(value).toLocaleString() : "—";
}

// ---- Sign in -------------------------------------------------------------------------------

function signIn() {
  nav.hidden = true;
  const org = el("input", { id: "org", name: "org", required: true, autocomplete: "username" });
  const kind = el(
    "select",
    { id: "kind", name: "kind" },
    el("option", { value: "key" }, "API key"),
    el("option", { value: "bearer" }, "Bearer token (JWT of your identity provider)"),
  );
  const key = el("input", { id: "key", name: "key", type: "password", required: true, autocomplete: "current-password" });
  const message = el("p", { role: "alert" });
  const form = el(
    "form",
    {
      onsubmit: async (event) => {
        event.preventDefault();
        session.set(org.value.trim(), key.value.trim(), kind.value);
        try {
          await api("GET", "/api/calls?limit=1");
          go("/calls");
        } catch (e) {
          session.clear();
          message.className = "error";
          message.textContent = e.message;
        }
      },
    },
    el("h1", {}, "Sign in"),
    el("label", { for: "org" }, "Organization id", org),
    el("label", { for: "kind" }, "Sign in with", kind),
    el("label", { for: "key" }, "API key or token", key),
    el("p", {}, el("button", { type: "submit" }, "Sign in")),
    message,
  );
  show(form);
}

// ---- Calls ---------------------------------------------------------------------------------

const CALL_FILTERS = [
  ["status", "Status", ["", "queued", "ringing", "in_progress", "completed", "failed", "busy", "no_answer", "canceled"]],
  ["call_type", "Type", ["", "inbound", "outbound", "preview"]],
  ["successful", "Successful", ["", "true", "false"]],
  ["agent_id", "Agent id"],
  ["agent_version", "Agent version"],
  ["to_number", "To (E.164)"],
  ["from_number", "From (E.164)"],
  ["phone_number_id", "Phone number id"],
  ["created_after", "Created after", "date"],
  ["created_before", "Created before", "date"],
  ["q", "Transcript words"],
];

async function calls(params) {
  const form = el("form", { class: "filters", role: "search" });
  for (const [name, label, kind] of CALL_FILTERS) {
    const id = `filter-${name}`;
    let input;
    if (Array.isArray(kind)) {
      input = el("select", { id, name }, kind.map((v) => el("option", { value: v, selected: params.get(name) === v }, v || "any")));
    } else {
      const value = params.get(name) || "";
      input = el("input", {
        id,
        name,
        type: kind === "date" ? "date" : "text",
        value: kind === "date" ? value.slice(0, 10) : value,
      });
    }
    form.append(el("label", { for: id }, label, input));
  }
  form.append(el("button", { type: "submit" }, "Apply"));
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const next = new URLSearchParams();
    for (const [name, , kind] of CALL_FILTERS) {
      let value = form.elements[name].value.trim();
      if (value && kind === "date") value = `${value}T00:00:00Z`;
      if (value) next.set(name, value);
    }
    go("/calls", next);
  });
  const page = await api("GET", `/api/calls?${listQuery(params)}`);
  show(
    el("h1", {}, "Calls"),
    form,
    page.data.length
      ? table("Calls", [
          ["Call", (c) => el("a", { href: `#/calls/${c.call_sid}` }, c.call_sid)],
          ["Status", (c) => c.status],
          ["Type", (c) => c.call_type],
          ["Agent", (c) => c.agent_name || c.agent_id],
          ["To", (c) => c.to_number],
          ["Created", (c) => when(c.created_at)],
          ["Seconds", (c) => c.duration_seconds ?? "—"],
          ["Cost", (c) => c.total_cost],
          ["Successful", (c) => (c.analysis ? String(c.analysis.successful ?? "—") : "—")],
        ], page.data)
      : el("p", { class: "muted" }, "No calls match these filters."),
    pager("/calls", params, page),
  );
}

async function call(sid) {
  const { data: c } = await api("GET", `/api/calls/${encodeURIComponent(sid)}`);
  const messages = await api("GET", `/api/calls/${encodeURIComponent(sid)}/messages?limit=100`);
  const facts = [
    ["Status", c.status],
    ["Type", c.call_type],
    ["Agent", `${c.agent_name || ""} (${c.agent_id})`],
    ["Version", c.agent_version ?? "draft"],
    ["To", c.to_number],
    ["From", c.from_number || "—"],
    ["Created", when(c.created_at)],
    ["Duration", c.duration_seconds === null ? "—" : `${c.duration_seconds} s`],
    ["End reason", c.end_reason || "—"],
    ["Total cost", `${c.total_cost} credits`],
  ];
  const parts = [
    el("h1", {}, `Call ${c.call_sid}`),
    el("dl", { class: "fields" }, facts.map(([k, v]) => [el("dt", {}, k), el("dd", {}, v)])),
    el("h2", {}, "Recording"),
  ];
  const recording = el("div", {}, el("p", { class: "muted", role: "status" }, "Loading the recording…"));
  parts.push(recording);
  api("GET", `/api/calls/${encodeURIComponent(sid)}/recording/stream`)
    .then(({ data }) => {
      recording.replaceChildren(el("audio", { controls: true, preload: "metadata", src: data.url, "aria-label": "Recording of the call" }));
    })
    .catch((e) => {
      recording.replaceChildren(el("p", { class: "muted" }, e instanceof ApiError && e.status === 404 ? "No recording." : e.message));
    });
  parts.push(el("h2", {}, "Transcript"));
  parts.push(
    messages.data.length
      ? el("ol", { class: "transcript" }, messages.data.map((m) => el("li", { "data-seq": m.seq }, el("span", { class: "role" }, `${m.role}:`), " ", m.text)))
      : el("p", { class: "muted" }, "No transcript."),
  );
  parts.push(el("h2", {}, "Analysis"));
  if (c.analysis_status === "completed" && c.analysis) {
    const a = c.analysis;
    parts.push(
      el(
        "dl",
        { class: "fields" },
        el("dt", {}, "Summary"),
        el("dd", {}, a.summary ?? "—"),
        el("dt", {}, "Successful"),
        el("dd", {}, a.successful === null ? "—" : String(a.successful)),
        Object.entries(a.fields).map(([k, v]) => [el("dt", {}, k), el("dd", {}, v === null ? "—" : String(v))]),
        el("dt", {}, "Model"),
        el("dd", {}, a.model),
      ),
    );
  } else {
    parts.push(el("p", { class: c.analysis_status === "failed" ? "error" : "muted" }, c.analysis_status ? `${c.analysis_status}${c.analysis_error ? `: ${c.analysis_error}` : ""}` : "Not analysed."));
  }
  parts.push(el("h2", {}, "Events"));
  const history = el("div", {}, el("p", { class: "muted", role: "status" }, "Loading the events…"));
  parts.push(history);
  api("GET", `/api/events?resource_id=${encodeURIComponent(sid)}&limit=50`)
    .then((events) => {
      history.replaceChildren(
        events.data.length
          ? el("ol", { class: "events", reversed: true }, events.data.map((e) => el("li", {}, `${when(e.created_at)} — ${e.type}`)))
          : el("p", { class: "muted" }, "No events (they expire after the retention period)."),
      );
    })
    .catch((e) => history.replaceChildren(el("p", { class: "muted" }, e.message)));
  parts.push(el("h2", {}, "Cost breakdown"));
  parts.push(
    c.cost_breakdown.length
      ? table("Cost breakdown", [
          ["Component", (i) => i.component],
          ["Provider", (i) => i.provider],
          ["Model", (i) => i.model || "—"],
          ["Quantity", (i) => i.quantity],
          ["Unit", (i) => i.unit],
          ["Credits", (i) => i.credits ?? "—"],
        ], c.cost_breakdown)
      : el("p", { class: "muted" }, "No usage recorded."),
  );
  show(...parts);
}

// ---- Stats ---------------------------------------------------------------------------------

function dayChart(groups) {
  const width = 700;
  const height = 220;
  const max = Math.max(1, ...groups.map((g) => g.calls));
  const step = width / Math.max(1, groups.length);
  const bars = groups.map((g, i) => {
    const h = Math.round((g.calls / max) * (height - 40));
    return svg(
      "g",
      {},
      svg("rect", { class: "bar", x: i * step + 4, y: height - 20 - h, width: Math.max(2, step - 8), height: h }, svg("title", {}, `${g.key}: ${g.calls} calls`)),
      svg("text", { x: i * step + step / 2, y: height - 4, "text-anchor": "middle" }, (g.key || "").slice(5)),
    );
  });
  return svg("svg", { class: "chart", viewBox: `0 0 ${width} ${height}`, role: "img", "aria-label": "Calls per day" }, ...bars);
}

async function stats(params) {
  const days = Math.min(366, Math.max(1, Number(params.get("days")) || 7));
  // The window ends after `until` (a UTC date), today by default.
  const until = params.get("until");
  const end = until && !Number.isNaN(Date.parse(`${until}T00:00:00Z`)) ? new Date(`${until}T00:00:00Z`) : new Date();
  end.setUTCHours(24, 0, 0, 0);
  const start = new Date(end.getTime() - days * 86400000);
  const window = `created_after=${start.toISOString()}&created_before=${end.toISOString()}`;
  const [byDay, byAgent, byStatus, byVersion, usage] = await Promise.all([
    api("GET", `/api/calls/stats?group_by=day&${window}`),
    api("GET", `/api/calls/stats?group_by=agent&${window}`),
    api("GET", `/api/calls/stats?group_by=status&${window}`),
    api("GET", `/api/calls/stats?group_by=agent_version&${window}`),
    api("GET", `/api/usage?${window}`),
  ]);
  const groups = (label, heading, stats) =>
    table(label, [
      [heading, (g) => g.key ?? "—"],
      ["Calls", (g) => g.calls],
      ["Cost", (g) => g.total_cost],
      ["Mean seconds", (g) => (g.avg_duration_seconds === null ? "—" : g.avg_duration_seconds.toFixed(1))],
      ["Success rate", (g) => (g.success_rate === null ? "—" : `${Math.round(g.success_rate * 100)} %`)],
    ], stats.data.groups);
  const t = byDay.data.totals;
  const rate = t.success_rate === null ? "—" : `${Math.round(t.success_rate * 100)} %`;
  const form = el(
    "form",
    {
      class: "filters",
      onsubmit: (event) => {
        event.preventDefault();
        const next = new URLSearchParams({ days: event.target.elements.days.value });
        if (event.target.elements.until.value) next.set("until", event.target.elements.until.value);
        go("/stats", next);
      },
    },
    el("label", { for: "days" }, "Days", el("input", { id: "days", name: "days", type: "number", min: 1, max: 366, value: days })),
    el("label", { for: "until" }, "Until", el("input", { id: "until", name: "until", type: "date", value: until || "" })),
    el("button", { type: "submit" }, "Show"),
  );
  show(
    el("h1", {}, "Stats"),
    form,
    el(
      "div",
      { class: "cards" },
      el("div", { class: "card" }, el("b", {}, t.calls), "calls"),
      el("div", { class: "card" }, el("b", {}, rate), "success rate"),
      el("div", { class: "card" }, el("b", {}, usage.data.totals.credits), "credits"),
    ),
    el("h2", {}, "Calls per day"),
    dayChart(byDay.data.groups),
    el("h2", {}, "By agent"),
    groups("Calls by agent", "Agent", byAgent),
    el("h2", {}, "By status"),
    groups("Calls by status", "Status", byStatus),
    el("h2", {}, "By agent version"),
    groups("Calls by agent version", "Version", byVersion),
  );
}

// ---- Agents --------------------------------------------------------------------------------

async function agents(params) {
  const page = await api("GET", `/api/agents?${listQuery(params)}`);
  show(
    el("h1", {}, "Agents"),
    page.data.length
      ? el("ul", {}, page.data.map((a) => el("li", {}, el("a", { href: `#/agents/${a.agent_id}` }, a.agent_name), ` — version ${a.published_version ?? "never published"}`)))
      : el("p", { class: "muted" }, "No agents yet."),
    pager("/agents", params, page),
  );
}

async function agent(id) {
  const path = `/api/agents/${encodeURIComponent(id)}`;
  const [{ data: a }, versions] = await Promise.all([api("GET", path), api("GET", `${path}/versions?limit=20`)]);
  const message = el("p", { id: "agent-message", role: "status" });
  const prompt = el("textarea", { id: "system_prompt", name: "system_prompt" }, a.system_prompt);
  const say = (text, bad) => {
    message.className = bad ? "error" : "muted";
    message.textContent = text;
  };
  // The draft's fields: text as typed, numbers and switches by their kind.
  const DRAFT = [
    ["agent_name", "Name", "text"],
    ["language", "Language", "text"],
    ["stt_provider", "Speech-to-text provider", "text"],
    ["tts_provider", "Text-to-speech provider", ["provider_one", "provider_two"]],
    ["tts_voice", "Voice", "text"],
    ["llm_provider", "LLM provider", "text"],
    ["llm_model", "LLM model", "text"],
    ["llm_temperature", "Temperature", "number"],
    ["speak_first", "Speaks first", "checkbox"],
    ["end_call_tool", "May end the call", "checkbox"],
    ["recording_enabled", "Records calls", "checkbox"],
    ["voicemail_detection", "Detects voicemail", "checkbox"],
  ];
  const controls = DRAFT.map(([name, label, kind]) => {
    const id = `agent-${name}`;
    let control;
    if (Array.isArray(kind)) control = el("select", { id, name }, kind.map((v) => el("option", { value: v, selected: a[name] === v }, v)));
    else if (kind === "checkbox") control = el("input", { id, name, type: "checkbox", checked: a[name] });
    else control = el("input", { id, name, type: kind, step: kind === "number" ? "0.1" : null, value: a[name] });
    return [name, kind, el("label", { for: id, class: kind === "checkbox" ? "check" : null }, label, control), control];
  });
  const save = el(
    "form",
    {
      onsubmit: async (event) => {
        event.preventDefault();
        const change = { system_prompt: prompt.value };
        for (const [name, kind, , control] of controls) {
          change[name] = kind === "checkbox" ? control.checked : kind === "number" ? Number(control.value) : control.value;
        }
        try {
          await api("PATCH", path, change);
          say("Draft saved.");
        } catch (e) {
          say(e.message, true);
        }
      },
    },
    el("div", { class: "filters" }, controls.map(([, , label]) => label)),
    el("label", { for: "system_prompt" }, "System prompt (draft)", prompt),
    el("p", {}, el("button", { type: "submit" }, "Save draft")),
  );
  const publish = el(
    "button",
    {
      type: "button",
      class: "secondary",
      onclick: async () => {
        try {
          const { data } = await api("POST", `${path}/publish`, {});
          await render();
          const now = document.getElementById("agent-message");
          now.className = "muted";
          now.textContent = `Published version ${data.version}.`;
        } catch (e) {
          say(e.message, true);
        }
      },
    },
    "Publish",
  );
  const weights = el("input", {
    id: "deployment",
    name: "deployment",
    value: a.deployment.map((d) => `${d.version}:${d.weight}`).join(", "),
    placeholder: "1:90, 2:10",
  });
  const deploy = el(
    "form",
    {
      class: "filters",
      onsubmit: async (event) => {
        event.preventDefault();
        const deployment = weights.value
          .split(",")
          .map((x) => x.trim())
          .filter(Boolean)
          .map((x) => {
            const [version, weight] = x.split(":").map((n) => Number(n.trim()));
            return { version, weight };
          });
        try {
          await api("PATCH", path, { deployment });
          say("Deployment saved.");
        } catch (e) {
          say(e.message, true);
        }
      },
    },
    el("label", { for: "deployment" }, "Deployment (version:weight, …)", weights),
    el("button", { type: "submit" }, "Deploy"),
  );
  show(
    el("h1", {}, a.agent_name),
    el("p", {}, "Published version: ", el("b", { id: "published-version" }, a.published_version ?? "none")),
    save,
    publish,
    a.published_version ? deploy : null,
    message,
    el("h2", {}, "Versions"),
    versions.data.length
      ? el("ol", { reversed: true }, versions.data.map((v) => el("li", {}, `Version ${v.version} — ${when(v.published_at)}${v.description ? ` — ${v.description}` : ""}`)))
      : el("p", { class: "muted" }, "Never published."),
  );
}

// ---- Tables, pagers and actions every view uses; then the other resources -----------------

/** A table of `rows` under `label`, one column per `[heading, value(row)]`. */
function table(label, columns, rows) {
  return el(
    "div",
    { class: "table-wrap" },
    el(
      "table",
      { "aria-label": label },
      el("thead", {}, el("tr", {}, columns.map(([h]) => el("th", { scope: "col" }, h)))),
      el("tbody", {}, rows.map((r) => el("tr", {}, columns.map(([, value]) => el("td", {}, value(r)))))),
    ),
  );
}

/** Links to the first and the next page of the list at `view`, kept in the URL. */
function pager(view, params, page) {
  const nodes = el("div", { class: "pager" });
  if (params.has("cursor")) {
    const first = new URLSearchParams(params);
    first.delete("cursor");
    nodes.append(el("a", { href: `#${view}${first.size ? `?${first}` : ""}` }, "First page"));
  }
  if (page.pagination && page.pagination.next_cursor) {
    const next = new URLSearchParams(params);
    next.set("cursor", page.pagination.next_cursor);
    nodes.append(el("a", { href: `#${view}?${next}`, rel: "next" }, "Next page"));
  }
  return nodes;
}

/** A button that runs `action`, then says what happened in `message` (the API's sentence on
 * failure) and re-renders the view. */
function actionButton(text, message, action, secondary = true) {
  return el(
    "button",
    {
      type: "button",
      class: secondary ? "secondary" : null,
      onclick: () => act(message, action),
    },
    text,
  );
}

/** Runs `action`, draws the view again and says what `action` answered in the new view's
 * message, or shows the API's sentence in `message` (the view is left as it was). */
async function act(message, action) {
  try {
    const said = await action();
    await render();
    const now = document.getElementById("message");
    if (now && said) {
      now.className = "muted";
      now.textContent = said;
    }
  } catch (e) {
    message.className = "error";
    message.textContent = e.message;
  }
}

/** A form of `fields` (`[id, label, control]`) whose submit runs `submit()`, draws the view
 * again and says what `submit` answered, or shows the API's sentence in `message`. */
function actionForm(button, fields, message, submit) {
  return el(
    "form",
    {
      class: "filters",
      onsubmit: (event) => {
        event.preventDefault();
        return act(message, submit);
      },
    },
    fields.map(([id, label, control]) => el("label", { for: id }, label, control)),
    el("button", { type: "submit" }, button),
  );
}

function messageBox() {
  return el("p", { id: "message", role: "status" });
}

function listQuery(params, limit = 20) {
  const query = new URLSearchParams(params);
  if (!query.has("limit")) query.set("limit", String(limit));
  return query;
}

async function campaigns(params) {
  const [page, agentsPage, numbersPage] = await Promise.all([
    api("GET", `/api/campaigns?${listQuery(params)}`),
    api("GET", "/api/agents?limit=100"),
    api("GET", "/api/phone-numbers?limit=100"),
  ]);
  const message = messageBox();
  const name = el("input", { id: "campaign-name", name: "name", required: true });
  const agentSelect = el("select", { id: "campaign-agent", name: "agent_id" }, agentsPage.data.map((a) => el("option", { value: a.agent_id }, a.agent_name)));
  const from = el(
    "select",
    { id: "campaign-numbers", name: "from_phone_number_ids", multiple: true },
    numbersPage.data.filter((n) => n.supports_outbound).map((n) => el("option", { value: n.phone_number_id }, n.phone_number)),
  );
  const concurrency = el("input", { id: "campaign-concurrency", name: "max_concurrency", type: "number", min: 1, max: 100, value: 1 });
  const create = el(
    "form",
    {
      class: "filters",
      onsubmit: async (event) => {
        event.preventDefault();
        try {
          const { data } = await api("POST", "/api/campaigns", {
            name: name.value.trim(),
            agent_id: agentSelect.value,
            from_phone_number_ids: [...from.selectedOptions].map((o) => o.value),
            max_concurrency: Number(concurrency.value),
          });
          go(`/campaigns/${data.campaign_id}`);
        } catch (e) {
          message.className = "error";
          message.textContent = e.message;
        }
      },
    },
    el("label", { for: "campaign-name" }, "Name", name),
    el("label", { for: "campaign-agent" }, "Agent", agentSelect),
    el("label", { for: "campaign-numbers" }, "From numbers", from),
    el("label", { for: "campaign-concurrency" }, "Calls at once", concurrency),
    el("button", { type: "submit" }, "Create campaign"),
  );
  show(
    el("h1", {}, "Campaigns"),
    create,
    message,
    page.data.length
      ? table("Campaigns", [
          ["Name", (c) => el("a", { href: `#/campaigns/${c.campaign_id}` }, c.name)],
          ["Status", (c) => c.status],
          ["Recipients", (c) => c.counts.total],
          ["Pending", (c) => c.counts.pending],
          ["Completed", (c) => c.counts.completed],
          ["Failed", (c) => c.counts.failed],
        ], page.data)
      : el("p", { class: "muted" }, "No campaigns yet."),
    pager("/campaigns", params, page),
  );
}

async function campaign(id, params) {
  const path = `/api/campaigns/${encodeURIComponent(id)}`;
  const [{ data: c }, recipients] = await Promise.all([api("GET", path), api("GET", `${path}/recipients?${listQuery(params, 50)}`)]);
  const message = messageBox();
  const file = el("input", { id: "recipients-csv", name: "csv", type: "file", accept: ".csv,text/csv" });
  const upload = el(
    "form",
    {
      class: "filters",
      onsubmit: async (event) => {
        event.preventDefault();
        if (!file.files.length) {
          message.className = "error";
          message.textContent = "Choose a CSV file first.";
          return;
        }
        try {
          const { data } = await api("POST", `${path}/recipients`, file.files[0], "text/csv");
          await render();
          const now = document.getElementById("message");
          now.className = "muted";
          now.textContent = `Added ${data.added} recipients (${data.duplicates} duplicates).`;
        } catch (e) {
          message.className = "error";
          message.textContent = e.message;
        }
      },
    },
    el("label", { for: "recipients-csv" }, "Recipients CSV (to_number, timezone, variables…)", file),
    el("button", { type: "submit" }, "Upload"),
  );
  const counts = Object.entries(c.counts);
  if (c.status === "running") {
    // Live counts: read again every 5 s while this view is shown and the campaign runs; only
    // the counts and the status change, so a form being filled in is left alone.
    const shown = location.hash;
    const refresh = async () => {
      if (location.hash !== shown) return;
      try {
        const { data } = await api("GET", path);
        document.getElementById("campaign-status").textContent = data.status;
        for (const [k, v] of Object.entries(data.counts)) {
          const cell = document.querySelector(`[data-count="${k}"]`);
          if (cell) cell.textContent = String(v);
        }
        if (data.status === "running") setTimeout(refresh, 5000);
      } catch {
        // The next visit shows the error; a failed refresh leaves the last counts.
      }
    };
    setTimeout(refresh, 5000);
  }
  show(
    el("h1", {}, c.name),
    el("p", {}, "Status: ", el("b", { id: "campaign-status" }, c.status), c.paused_reason ? ` (${c.paused_reason})` : ""),
    el("dl", { class: "fields", id: "counts" }, counts.map(([k, v]) => [el("dt", {}, k), el("dd", { "data-count": k }, v)])),
    el(
      "p",
      { class: "pager" },
      actionButton("Start", message, async () => (await api("POST", `${path}/start`, {}), "Started.")),
      actionButton("Pause", message, async () => (await api("POST", `${path}/pause`, {}), "Paused.")),
      actionButton("Cancel", message, async () => (await api("POST", `${path}/cancel`, {}), "Canceled.")),
    ),
    upload,
    message,
    el("h2", {}, "Recipients"),
    recipients.data.length
      ? table("Recipients", [
          ["Number", (r) => r.to_number],
          ["Status", (r) => r.status],
          ["Attempts", (r) => r.attempts],
          ["Last call", (r) => (r.last_call_sid ? el("a", { href: `#/calls/${r.last_call_sid}` }, r.last_call_sid) : "—")],
          ["Outcome", (r) => r.last_outcome || "—"],
        ], recipients.data)
      : el("p", { class: "muted" }, "No recipients yet."),
    pager(`/campaigns/${id}`, params, recipients),
  );
}

async function numbers(params) {
  const [page, integrations] = await Promise.all([
    api("GET", `/api/phone-numbers?${listQuery(params)}`),
    api("GET", "/api/integrations?limit=100"),
  ]);
  const message = messageBox();
  const integrationName = el("input", { id: "integration-name", name: "name", required: true });
  const provider = el("select", { id: "integration-provider", name: "provider" }, el("option", { value: "twilio" }, "twilio"), el("option", { value: "telnyx" }, "telnyx"));
  const credentials = el("textarea", { id: "integration-credentials", name: "credentials", placeholder: '{"account_sid": "AC…", "auth_token": "…"}' });
  const addIntegration = actionForm(
    "Add integration",
    [["integration-name", "Name", integrationName], ["integration-provider", "Provider", provider], ["integration-credentials", "Credentials (JSON)", credentials]],
    message,
    async () => {
      let parsed;
      try {
        parsed = JSON.parse(credentials.value);
      } catch {
        throw new Error("Credentials must be a JSON object, e.g. {\"account_sid\": \"AC…\", \"auth_token\": \"…\"}.");
      }
      await api("POST", "/api/integrations", { name: integrationName.value.trim(), provider: provider.value, category: "telephony", credentials: parsed });
      return "Integration added.";
    },
  );
  const newNumber = el("input", { id: "number-e164", name: "phone_number", required: true, placeholder: "+14155550123" });
  const numberIntegration = el("select", { id: "number-integration", name: "integration_id" }, el("option", { value: "" }, "none"), integrations.data.map((i) => el("option", { value: i.integration_id }, i.name)));
  const numberProvider = el("select", { id: "number-provider", name: "provider" }, el("option", { value: "twilio" }, "twilio"), el("option", { value: "telnyx" }, "telnyx"));
  const addNumber = actionForm("Add number", [["number-e164", "Number (E.164)", newNumber], ["number-provider", "Provider", numberProvider], ["number-integration", "Integration", numberIntegration]], message, async () => {
    const chosen = integrations.data.find((i) => i.integration_id === numberIntegration.value);
    await api("POST", "/api/phone-numbers", {
      phone_number: newNumber.value.trim(),
      integration_id: chosen ? chosen.integration_id : undefined,
      provider: chosen ? chosen.provider : numberProvider.value,
    });
    return "Number added.";
  });
  show(
    el("h1", {}, "Phone numbers"),
    addNumber,
    message,
    page.data.length
      ? table("Phone numbers", [
          ["Number", (n) => n.phone_number],
          ["Provider", (n) => n.provider || "—"],
          ["Agent", (n) => n.assigned_agent_id || "—"],
          ["Connected", (n) => when(n.connected_at)],
          ["", (n) => actionButton("Connect", message, async () => (await api("POST", `/api/phone-numbers/${n.phone_number_id}/connect`, {}), `Connected ${n.phone_number}.`))],
        ], page.data)
      : el("p", { class: "muted" }, "No phone numbers yet."),
    pager("/numbers", params, page),
    el("h2", {}, "Integrations"),
    addIntegration,
    integrations.data.length
      ? table("Integrations", [
          ["Name", (i) => i.name],
          ["Provider", (i) => i.provider],
          ["Status", (i) => i.status],
          ["", (i) => actionButton("Validate", message, async () => (await api("POST", `/api/integrations/${i.integration_id}/validate`, {}), `Validated ${i.name}.`))],
        ], integrations.data)
      : el("p", { class: "muted" }, "No integrations yet."),
  );
}

async function webhooks(params) {
  const page = await api("GET", `/api/webhooks?${listQuery(params)}`);
  const message = messageBox();
  const url = el("input", { id: "webhook-url", name: "url", type: "url", required: true, placeholder: "https://example.com/hooks" });
  const events = el("input", { id: "webhook-events", name: "events", value: "*" });
  const add = actionForm("Add endpoint", [["webhook-url", "URL", url], ["webhook-events", "Event types (comma-separated, * for all)", events]], message, async () => {
    const list = events.value.split(",").map((x) => x.trim()).filter(Boolean);
    const { data } = await api("POST", "/api/webhooks", { url: url.value.trim(), events: list });
    return `Endpoint added. Its signing secret (shown once): ${data.secret}`;
  });
  show(
    el("h1", {}, "Webhooks"),
    add,
    message,
    page.data.length
      ? table("Webhook endpoints", [
          ["URL", (w) => w.url],
          ["Events", (w) => w.events.join(", ")],
          ["Status", (w) => w.status],
          ["", (w) => el("a", { href: `#/webhooks/${w.webhook_id}` }, "Deliveries")],
          ["", (w) => actionButton("Send a test", message, async () => (await api("POST", `/api/webhooks/${w.webhook_id}/test`, {}), "Test event queued."))],
        ], page.data)
      : el("p", { class: "muted" }, "No webhook endpoints yet."),
    pager("/webhooks", params, page),
  );
}

async function deliveries(id, params) {
  const path = `/api/webhooks/${encodeURIComponent(id)}`;
  const [{ data: w }, page] = await Promise.all([api("GET", path), api("GET", `${path}/deliveries?${listQuery(params)}`)]);
  const message = messageBox();
  show(
    el("h1", {}, `Deliveries to ${w.url}`),
    message,
    page.data.length
      ? table("Deliveries", [
          ["Event", (d) => d.event_type],
          ["Status", (d) => d.status],
          ["Attempts", (d) => d.attempts],
          ["Last answer", (d) => d.last_status_code ?? d.last_error ?? "—"],
          ["Next attempt", (d) => when(d.next_attempt_at)],
          ["", (d) => (d.status === "pending" ? "" : actionButton("Retry", message, async () => (await api("POST", `${path}/deliveries/${d.delivery_id}/retry`, {}), "Retrying.")))],
        ], page.data)
      : el("p", { class: "muted" }, "No deliveries yet."),
    pager(`/webhooks/${id}`, params, page),
  );
}

async function suppressions(params) {
  const page = await api("GET", `/api/suppressions?${listQuery(params)}`);
  const message = messageBox();
  const number = el("input", { id: "suppress-number", name: "phone_number", placeholder: "+14155550123", required: true });
  const reason = el("input", { id: "suppress-reason", name: "reason" });
  const add = actionForm("Suppress", [["suppress-number", "Number (E.164)", number], ["suppress-reason", "Reason", reason]], message, async () => {
    await api("POST", "/api/suppressions", { phone_number: number.value.trim(), reason: reason.value.trim() || undefined });
    return `Suppressed ${number.value.trim()}.`;
  });
  show(
    el("h1", {}, "Suppression list"),
    add,
    message,
    page.data.length
      ? table("Suppressed numbers", [
          ["Number", (x) => x.phone_number],
          ["Reason", (x) => x.reason || "—"],
          ["Expires", (x) => when(x.expires_at)],
          ["", (x) => actionButton("Remove", message, async () => (await api("DELETE", `/api/suppressions/${encodeURIComponent(x.phone_number)}`), "Removed."))],
        ], page.data)
      : el("p", { class: "muted" }, "No suppressed numbers."),
    pager("/suppressions", params, page),
  );
}

async function keys(params) {
  const page = await api("GET", `/api/api-keys?${listQuery(params)}`);
  const message = messageBox();
  const name = el("input", { id: "key-name", name: "name", required: true });
  const role = el("select", { id: "key-role", name: "role" }, ["user", "agent_manager", "admin"].map((r) => el("option", { value: r }, r)));
  const scopes = el("input", { id: "key-scopes", name: "scopes", placeholder: "calls:read, agents:read" });
  const create = actionForm(
    "Create key",
    [["key-name", "Name", name], ["key-role", "Role", role], ["key-scopes", "Scopes (optional)", scopes]],
    message,
    async () => {
      const body = { name: name.value.trim(), role: role.value };
      const list = scopes.value.split(",").map((x) => x.trim()).filter(Boolean);
      if (list.length) body.scopes = list;
      const { data } = await api("POST", "/api/api-keys", body);
      return `New key (shown once): ${data.api_key}`;
    },
  );
  show(
    el("h1", {}, "API keys"),
    create,
    message,
    table("API keys", [
      ["Name", (k) => k.name],
      ["Role", (k) => k.role],
      ["Prefix", (k) => k.prefix],
      ["Status", (k) => k.status],
      ["Scopes", (k) => (k.scopes ? k.scopes.join(", ") : "all of its role")],
      ["", (k) => (k.status === "active" ? actionButton("Revoke", message, async () => (await api("DELETE", `/api/api-keys/${k.key_id}`), "Revoked.")) : "")],
    ], page.data),
    pager("/keys", params, page),
  );
}

async function members() {
  const [list, invitations] = await Promise.all([
    api("GET", "/api/auth/organizations/members"),
    api("GET", "/api/auth/organizations/invitations"),
  ]);
  const message = messageBox();
  const email = el("input", { id: "invite-email", name: "email", type: "email", required: true });
  const role = el("select", { id: "invite-role", name: "role" }, ["user", "agent_manager", "admin"].map((r) => el("option", { value: r }, r)));
  const invite = actionForm("Invite", [["invite-email", "E-mail", email], ["invite-role", "Role", role]], message, async () => {
    await api("POST", "/api/auth/organizations/invitations", { email: email.value.trim(), role: role.value });
    return `Invited ${email.value.trim()}.`;
  });
  show(
    el("h1", {}, "Members"),
    invite,
    message,
    table("Members", [
      ["Name", (m) => m.name || "—"],
      ["E-mail", (m) => m.email],
      ["Role", (m) => m.role],
      ["Last sign-in", (m) => when(m.last_login)],
    ], list.members),
    el("h2", {}, "Pending invitations"),
    invitations.invitations.length
      ? table("Invitations", [
          ["E-mail", (i) => i.email],
          ["Role", (i) => i.role],
          ["Expires", (i) => when(i.expires_at)],
          ["", (i) => actionButton("Revoke", message, async () => (await api("DELETE", `/api/auth/organizations/invitations/${i.invite_id}`), "Invitation revoked."))],
        ], invitations.invitations)
      : el("p", { class: "muted" }, "None."),
  );
}

async function audit(params) {
  const action = el("input", { id: "audit-action", name: "action", value: params.get("action") || "", placeholder: "agent.update" });
  const form = el(
    "form",
    {
      class: "filters",
      role: "search",
      onsubmit: (event) => {
        event.preventDefault();
        go("/audit", new URLSearchParams({ action: action.value.trim() }));
      },
    },
    el("label", { for: "audit-action" }, "Action", action),
    el("button", { type: "submit" }, "Apply"),
  );
  const page = await api("GET", `/api/audit-log?${listQuery(params)}`);
  show(
    el("h1", {}, "Audit log"),
    form,
    page.data.length
      ? table("Audit log", [
          ["When", (e) => when(e.created_at)],
          ["Action", (e) => e.action],
          ["Resource", (e) => e.resource_id],
          ["Who", (e) => e.actor.key_id || e.actor.user_id || e.actor.type],
          ["Changed", (e) => Object.keys(e.changes).join(", ")],
        ], page.data)
      : el("p", { class: "muted" }, "No entries."),
    pager("/audit", params, page),
  );
}

// ---- Router --------------------------------------------------------------------------------

async function render() {
  const mine = ++epoch;
  staged = null;
  const { parts, params } = route();
  if (parts[0] === "sign-in" || !session.get()) {
    signIn();
    main.replaceChildren(...staged);
    main.querySelector("input")?.focus();
    return;
  }
  nav.hidden = false;
  loading();
  try {
    if (parts[0] === "calls" && parts[1]) await call(parts[1]);
    else if (parts[0] === "calls") await calls(params);
    else if (parts[0] === "stats") await stats(params);
    else if (parts[0] === "agents" && parts[1]) await agent(parts[1]);
    else if (parts[0] === "agents") await agents(params);
    else if (parts[0] === "campaigns" && parts[1]) await campaign(parts[1], params);
    else if (parts[0] === "campaigns") await campaigns(params);
    else if (parts[0] === "numbers") await numbers(params);
    else if (parts[0] === "webhooks" && parts[1]) await deliveries(parts[1], params);
    else if (parts[0] === "webhooks") await webhooks(params);
    else if (parts[0] === "suppressions") await suppressions(params);
    else if (parts[0] === "keys") await keys(params);
    else if (parts[0] === "members") await members();
    else if (parts[0] === "audit") await audit(params);
    else show(el("p", { class: "error", role: "alert" }, "There is no such page."));
  } catch (e) {
    failure(e);
  }
  if (mine !== epoch || staged === null) return;
  main.replaceChildren(...staged);
  main.setAttribute("aria-busy", "false");
  main.focus({ preventScroll: true });
}

document.getElementById("sign-out").addEventListener("click", () => {
  session.clear();
  go("/sign-in");
});
window.addEventListener("hashchange", render);
render();
