// The /chat page: one self-contained, mobile-first HTML document (no external assets).
export const CHAT_PAGE = `<!doctype html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>Tether chat</title>
<style>
  * { box-sizing: border-box; }
  body { margin: 0; font: 16px/1.4 system-ui, sans-serif; background: #ece5dd;
    display: flex; flex-direction: column; height: 100dvh; }
  header { background: #075e54; color: #fff; padding: 12px 16px; font-weight: 600; }
  header small { font-weight: 400; opacity: .8; margin-left: 8px; }
  #log { flex: 1; overflow-y: auto; padding: 12px; display: flex; flex-direction: column; gap: 6px; }
  .msg { max-width: 85%; padding: 8px 10px; border-radius: 8px; white-space: pre-wrap; overflow-wrap: anywhere;
    box-shadow: 0 1px 1px #0002; }
  .me { align-self: flex-end; background: #dcf8c6; }
  .bot { align-self: flex-start; background: #fff; }
  .msg img { display: block; max-width: 100%; border-radius: 6px; margin-bottom: 4px; }
  .actions { display: flex; flex-wrap: wrap; gap: 6px; margin-top: 6px; }
  .actions button { border: 1px solid #075e54; color: #075e54; background: #fff; border-radius: 16px;
    padding: 6px 12px; font-size: 15px; }
  form { display: flex; gap: 8px; padding: 8px; background: #f0f0f0; }
  textarea { flex: 1; resize: none; font: inherit; padding: 8px 12px; border-radius: 20px; border: 1px solid #ccc;
    height: 42px; }
  form button { background: #075e54; color: #fff; border: 0; border-radius: 20px; padding: 0 16px; font: inherit; }
</style></head>
<body>
<header>Tether <small id="state">connecting…</small></header>
<main id="log" aria-live="polite"></main>
<form id="form"><textarea id="text" placeholder="Type a command" aria-label="message"></textarea>
<button type="submit">Send</button></form>
<script>
  const log = document.getElementById('log');
  const seen = new Set();
  function send(text, payload) {
    if (!text.trim()) return;
    fetch('chat/send', { method: 'POST', headers: { 'Content-Type': 'application/json' }, credentials: 'same-origin',
      body: JSON.stringify({ id: crypto.randomUUID(), text, payload }) });
  }
  function show(entry) {
    if (seen.has(entry.id)) return;
    seen.add(entry.id);
    const div = document.createElement('div');
    div.className = 'msg ' + entry.from;
    div.dataset.testid = 'message';
    if (entry.mediaUrl) {
      const img = document.createElement('img'); img.src = entry.mediaUrl; img.alt = 'image'; div.appendChild(img);
    }
    if (entry.text) div.appendChild(document.createTextNode(entry.text));
    if (entry.actions && entry.actions.length) {
      const bar = document.createElement('div'); bar.className = 'actions';
      for (const a of entry.actions) {
        const b = document.createElement('button'); b.type = 'button'; b.textContent = a.label;
        // A bound button answers only its own request; one without a payload types its reply.
        b.onclick = () => { bar.remove(); send(a.payload ? a.label : a.reply, a.payload); };
        bar.appendChild(b);
      }
      div.appendChild(bar);
    }
    log.appendChild(div);
    log.scrollTop = log.scrollHeight;
  }
  const events = new EventSource('chat/events');
  events.onopen = () => { document.getElementById('state').textContent = 'connected'; };
  events.onerror = () => { document.getElementById('state').textContent = 'reconnecting…'; };
  events.onmessage = (e) => show(JSON.parse(e.data));
  document.getElementById('form').onsubmit = (e) => {
    e.preventDefault();
    const box = document.getElementById('text');
    send(box.value);
    box.value = '';
  };
  document.getElementById('text').onkeydown = (e) => {
    if (e.key === 'Enter' && !e.shiftKey) { e.preventDefault(); document.getElementById('form').requestSubmit(); }
  };
</script>
</body></html>`;
