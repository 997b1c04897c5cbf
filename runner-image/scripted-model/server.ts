// The scripted model: a streaming Anthropic Messages API on loopback that plays the `script:`
// scenario of the user's prompt as model turns (README "Scripted model"). Claude Code talks to it
// as to the real API. Every request is recorded in `requests`, for the process that started it
// only: over HTTP it serves the Messages API and nothing else (on a shared loopback, as the local
// stack's Pods have, another phone's agent could otherwise read this one's conversation).
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { MESSAGES_API_MAX_BODY_BYTES } from '../model/body.ts';
import { conversationKey, isSideRequest, readConversation, type MessagesRequest } from './conversation.ts';
import { parseScenario } from './scenario.ts';
import { errorBody, finishStream, ping, startStream, tokens, type Usage } from './sse.ts';
import { nextTurn, type Reply } from './turns.ts';

const PING_EVERY_MS = 10_000;

export interface RecordedRequest {
  at: string;
  method: string;
  path: string;
  /** Title generation, token counting and the like: no scenario step was used. */
  side: boolean;
  body?: MessagesRequest;
  response: { status: number; text?: string; tool?: { name: string; json: string }; usage?: Usage; error?: string };
}

export interface ScriptedModel {
  url: string;
  requests: RecordedRequest[];
  close(): Promise<void>;
}

const sendJson = (res: ServerResponse, status: number, body: string) => {
  res.writeHead(status, { 'content-type': 'application/json' });
  res.end(body);
};

function readBody(req: IncomingMessage): Promise<string> {
  return new Promise((resolve, reject) => {
    const chunks: Buffer[] = [];
    let size = 0;
    req.on('data', (chunk: Buffer) => {
      size += chunk.length;
      if (size > MESSAGES_API_MAX_BODY_BYTES) req.destroy(new Error('request body too large'));
      else chunks.push(chunk);
    });
    req.on('end', () => resolve(Buffer.concat(chunks).toString('utf8')));
    req.on('error', reject);
  });
}

/** Waits, pinging an open stream; resolves early (false) when the client goes away. */
function wait(res: ServerResponse, ms: number, streaming: boolean): Promise<boolean> {
  if (ms <= 0) return Promise.resolve(!res.destroyed);
  return new Promise((resolve) => {
    const pinger = streaming ? setInterval(() => ping(res), PING_EVERY_MS) : undefined;
    const done = (open: boolean) => {
      clearTimeout(timer);
      clearInterval(pinger);
      res.off('close', gone);
      resolve(open);
    };
    const gone = () => done(false);
    const timer = setTimeout(() => done(true), ms);
    res.on('close', gone);
  });
}

const sideText = (body: MessagesRequest) => {
  const properties = body.output_config?.format?.schema?.properties;
  return properties
    ? JSON.stringify(Object.fromEntries(Object.keys(properties).map((k) => [k, 'Tether session'])))
    : 'Tether session';
};

/** Where the scripted model says what it was asked (one line a request), e.g. the runner's logger. */
export interface ModelLog {
  info(fields: object, message: string): void;
}

interface State {
  requests: RecordedRequest[];
  served: Set<string>;
  log?: ModelLog;
}

/** As the real API counts them: the system prompt and the tool definitions, then the messages. */
const inputTokens = (body: MessagesRequest) =>
  tokens(JSON.stringify([body.system ?? '', body.tools ?? [], body.messages ?? []]));

async function messages(
  state: State,
  req: IncomingMessage,
  res: ServerResponse,
  record: RecordedRequest,
): Promise<void> {
  const body = record.body!;
  const model = body.model ?? 'scripted-model';
  const usage: Usage = {
    input_tokens: inputTokens(body),
    output_tokens: 0,
    cache_creation_input_tokens: 0,
    cache_read_input_tokens: 0,
  };
  let reply: Reply;
  if (record.side) {
    reply = { kind: 'turn', delayMs: 0, text: sideText(body) };
  } else {
    const conversation = readConversation(body);
    const key = conversationKey(body, req.headers['x-claude-code-session-id'] as string | undefined);
    reply = nextTurn({ steps: parseScenario(conversation.prompt), conversation, served: state.served, key });
  }
  if (reply.kind === 'error') {
    record.response = { status: reply.status, error: reply.message };
    if (await wait(res, reply.delayMs, false)) sendJson(res, reply.status, errorBody(reply.type, reply.message));
    return;
  }
  const outputTokens = tokens(`${reply.text ?? ''}${reply.tool?.json ?? ''}`);
  record.response = {
    status: 200,
    text: reply.text,
    tool: reply.tool && { name: reply.tool.name, json: reply.tool.json },
    usage: { ...usage, output_tokens: outputTokens },
  };
  startStream(res, model, usage);
  if (await wait(res, reply.delayMs, true)) finishStream(res, reply, outputTokens);
}

async function handle(state: State, req: IncomingMessage, res: ServerResponse): Promise<void> {
  const path = (req.url ?? '/').split('?')[0]!;
  const text = await readBody(req);
  const record: RecordedRequest = {
    at: new Date().toISOString(),
    method: req.method ?? '',
    path,
    side: true,
    response: { status: 404 },
  };
  state.requests.push(record);
  let body: MessagesRequest | undefined;
  try {
    body = text ? (JSON.parse(text) as MessagesRequest) : undefined;
  } catch {
    record.response = { status: 400, error: 'body is not JSON' };
    return sendJson(res, 400, errorBody('invalid_request_error', 'The request body is not JSON.'));
  }
  record.body = body;
  state.log?.info({ path, turns: body?.messages?.length }, 'model request');
  if (req.method === 'POST' && path === '/v1/messages/count_tokens') {
    record.response = { status: 200 };
    return sendJson(res, 200, JSON.stringify({ input_tokens: inputTokens(body ?? {}) }));
  }
  if (req.method === 'POST' && path === '/v1/messages' && body) {
    record.side = isSideRequest(body);
    return messages(state, req, res, record);
  }
  sendJson(res, 404, errorBody('not_found_error', `${req.method} ${path} is not part of the scripted model`));
}

export async function startScriptedModel(
  options: { host?: string; port?: number; log?: ModelLog } = {},
): Promise<ScriptedModel> {
  const host = options.host ?? '127.0.0.1';
  const state: State = { requests: [], served: new Set(), log: options.log };
  const server = createServer((req, res) => {
    handle(state, req, res).catch((error: unknown) => {
      if (!res.headersSent)
        sendJson(res, 500, errorBody('api_error', error instanceof Error ? error.message : String(error)));
      else res.destroy();
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(options.port ?? 0, host, resolve);
  });
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://${host}:${port}`,
    requests: state.requests,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
