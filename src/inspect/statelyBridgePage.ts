/**
 * The page `conclave inspect` serves: the Stately inspector UI in an iframe
 * (from stately.ai, so it needs internet), fed the collected inspection events
 * over Server-Sent Events once it says it is ready — the same handshake
 * @statelyai/inspect's own Node server uses.
 */
export const STATELY_INSPECTOR_URL = "https://stately.ai/inspect";

export const statelyBridgePage = (inspectorUrl = STATELY_INSPECTOR_URL) => `<!doctype html>
<html lang="en">
<head>
<meta charset="utf-8">
<title>Conclave · Stately inspector</title>
<style>
  html, body { margin: 0; height: 100%; font: 13px system-ui, sans-serif; }
  body { display: flex; flex-direction: column; }
  header { padding: 6px 10px; background: #1f2430; color: #e6e6e6; }
  header code { color: #9fd3ff; }
  iframe { flex: 1; border: 0; width: 100%; }
</style>
</head>
<body>
<header>Conclave → Stately inspector · <span id="status">waiting for the inspector UI</span> ·
  <span id="count">0</span> events. The UI loads from <code>${inspectorUrl}</code>: with no internet, use
  <code>npx conclave viewer</code> instead.</header>
<iframe id="inspector" src="${inspectorUrl}"></iframe>
<script>
  const iframe = document.getElementById("inspector");
  const status = document.getElementById("status");
  const count = document.getElementById("count");
  const waiting = [];
  let connected = false;
  let received = 0;
  const deliver = (event) => iframe.contentWindow.postMessage(event, "*");
  window.addEventListener("message", (message) => {
    if (message.data && message.data.type === "@statelyai.connected") {
      connected = true;
      status.textContent = "connected";
      waiting.splice(0).forEach(deliver);
    }
  });
  const source = new EventSource("/events");
  source.addEventListener("stately", (message) => {
    const event = JSON.parse(message.data);
    count.textContent = String(++received);
    if (connected) deliver(event);
    else waiting.push(event);
  });
  source.onerror = () => { status.textContent = "reconnecting to conclave inspect…"; };
</script>
</body>
</html>
`;
