/**
 * The viewer's conversation panel: a small chat that holds a conversation
 * with Conclave through the gateway's AG-UI endpoint (`conclave serve`,
 * docs/gateway.md#ag-ui). Each message is an AG-UI run, posted from the page
 * with `fetch`, its events read from the Server-Sent Events stream: the reply
 * grows as its TEXT_MESSAGE_CONTENT deltas arrive, the stage shows as the
 * run's steps go by. The page reaches the gateway across origins (another
 * port of this machine), which a gateway without a token allows.
 *
 * It sits in the page's side column, under the event list (never over it).
 * The endpoint is the page's `?gateway=`, else the viewer's `--gateway`
 * (in the page's `#viewer-config`), else {@link DEFAULT_AGUI_URL}.
 *
 * Self-contained (markup, style and script in one string, all ids and
 * classes `conv-…`), so that the page includes it with one line.
 */

/** Where the panel looks for the gateway unless the page's `?gateway=` says otherwise. */
export const DEFAULT_AGUI_URL = "http://127.0.0.1:7430/ag-ui";

const STYLE = `
  .conv-panel { flex: none; background: #fff; border: 1px solid #d0d7de; border-radius: 8px; }
  .conv-panel > summary { cursor: pointer; padding: 6px 10px; font-weight: 600; list-style: none; }
  .conv-panel[open] > summary { border-bottom: 1px solid #d0d7de; }
  .conv-panel .conv-stage { float: right; font-weight: 400; color: #57606a; font-size: 12px; }
  .conv-settings { display: flex; gap: 4px; padding: 6px 10px 0; }
  .conv-settings input { flex: 1; min-width: 0; font-size: 11px; }
  .conv-messages { list-style: none; margin: 0; padding: 6px 10px; height: min(260px, 28vh); overflow-y: auto; }
  .conv-messages li { margin: 4px 0; padding: 4px 8px; border-radius: 8px; white-space: pre-wrap; }
  .conv-messages .conv-user { background: #ddf4ff; margin-left: 40px; }
  .conv-messages .conv-assistant { background: #f6f8fa; margin-right: 40px; }
  .conv-messages .conv-tool { color: #57606a; font-size: 11px; }
  .conv-messages .conv-error { background: #ffebe9; color: #82071e; }
  .conv-form { display: flex; gap: 4px; padding: 0 10px 8px; }
  .conv-form input { flex: 1; min-width: 0; }
  .conv-form .conv-stop { display: none; }
  .conv-form.conv-busy .conv-stop { display: inline; }
  .conv-form.conv-busy .conv-send { display: none; }
`;

const MARKUP = `
<details class="conv-panel" id="conv-panel">
  <summary>Conversation <span class="conv-stage" id="conv-stage">through conclave serve (AG-UI)</span></summary>
  <div class="conv-settings">
    <input id="conv-url" aria-label="AG-UI endpoint" title="the gateway's AG-UI endpoint">
    <input id="conv-thread" aria-label="thread" title="the thread: the Conclave session">
  </div>
  <ol class="conv-messages" id="conv-messages"></ol>
  <form class="conv-form" id="conv-form">
    <input id="conv-text" autocomplete="off" placeholder="Say something…" aria-label="message">
    <button type="submit" class="conv-send">Send</button>
    <button type="button" class="conv-stop" id="conv-stop">Stop</button>
  </form>
</details>
`;

// Plain browser JavaScript: the page has no build step.
const SCRIPT = `
(() => {
  const $ = (id) => document.getElementById(id);
  const params = new URLSearchParams(location.search);
  const url = $("conv-url"), thread = $("conv-thread"), list = $("conv-messages");
  const form = $("conv-form"), text = $("conv-text"), stage = $("conv-stage");
  var config = $("viewer-config") ? JSON.parse($("viewer-config").textContent) : {};
  url.value = params.get("gateway") || config.gateway || ${JSON.stringify(DEFAULT_AGUI_URL)};
  thread.value = params.get("thread") || "viewer-" + Math.random().toString(16).slice(2, 14);
  if (params.has("gateway")) $("conv-panel").open = true;
  /** The thread's messages as AG-UI has them: sent with each run. */
  const history = [];
  let running = null;
  const newId = (prefix) => prefix + "-" + Date.now().toString(36) + Math.random().toString(36).slice(2, 8);
  const line = (role, content) => {
    const item = document.createElement("li");
    item.className = "conv-" + role;
    item.textContent = content;
    list.append(item);
    list.scrollTop = list.scrollHeight;
    return item;
  };
  form.addEventListener("submit", (event) => {
    event.preventDefault();
    const said = text.value.trim();
    if (said === "" || running) return;
    text.value = "";
    void send(said);
  });
  $("conv-stop").addEventListener("click", () => running && running.abort());

  async function send(said) {
    history.push({ id: newId("user"), role: "user", content: said });
    line("user", said);
    running = new AbortController();
    form.classList.add("conv-busy");
    const replies = new Map();
    try {
      const response = await fetch(url.value, {
        method: "POST",
        headers: { "content-type": "application/json", accept: "text/event-stream" },
        body: JSON.stringify({ threadId: thread.value, runId: newId("run"), messages: history, tools: [], context: [], state: {}, forwardedProps: {} }),
        signal: running.signal,
      });
      if (!response.ok) {
        const body = await response.json().catch(() => null);
        throw new Error((body && body.error && body.error.message) || "HTTP " + response.status);
      }
      const reader = response.body.pipeThrough(new TextDecoderStream()).getReader();
      let buffer = "";
      for (;;) {
        const { value, done } = await reader.read();
        if (done) break;
        buffer += value;
        for (let cut = buffer.indexOf("\\n\\n"); cut >= 0; cut = buffer.indexOf("\\n\\n")) {
          const frame = buffer.slice(0, cut);
          buffer = buffer.slice(cut + 2);
          const data = frame.split("\\n").filter((row) => row.startsWith("data:")).map((row) => row.slice(5).trimStart()).join("\\n");
          if (data !== "") handle(JSON.parse(data), replies);
        }
      }
    } catch (error) {
      line("error", error && error.name === "AbortError" ? "stopped" : "cannot reach the gateway at " + url.value + ": " + (error && error.message || error));
      stage.textContent = "error";
    } finally {
      running = null;
      form.classList.remove("conv-busy");
    }
  }

  function handle(event, replies) {
    switch (event.type) {
      case "RUN_STARTED": stage.textContent = "started"; break;
      case "STEP_STARTED": stage.textContent = event.stepName; break;
      case "TEXT_MESSAGE_START": replies.set(event.messageId, { item: line("assistant", ""), text: "" }); break;
      case "TEXT_MESSAGE_CONTENT": {
        const reply = replies.get(event.messageId);
        if (reply) { reply.text += event.delta; reply.item.textContent = reply.text; list.scrollTop = list.scrollHeight; }
        break;
      }
      case "TEXT_MESSAGE_END": {
        const reply = replies.get(event.messageId);
        if (reply) history.push({ id: event.messageId, role: "assistant", content: reply.text });
        break;
      }
      case "TOOL_CALL_START": line("tool", "tool call: " + event.toolCallName); break;
      case "RUN_FINISHED": stage.textContent = "done"; break;
      case "RUN_ERROR": line("error", event.message); stage.textContent = "error"; break;
    }
  }
})();
`;

/** The panel as the page includes it: style, markup and script. */
export const CONVERSATION_PANEL = `<style>${STYLE}</style>${MARKUP}<script>${SCRIPT}</script>`;
