// The Messages API's streaming answer: `event: X\ndata: {json}\n\n` in the order the real API
// sends (message_start, ping, per block start/delta/stop, message_delta, message_stop).
import { randomBytes } from 'node:crypto';
import type { ServerResponse } from 'node:http';
import type { ToolUse } from './turns.ts';

export interface Usage {
  input_tokens: number;
  output_tokens: number;
  cache_creation_input_tokens: number;
  cache_read_input_tokens: number;
}

/** Tokens as a rough count of characters / 4: deterministic for the same conversation. */
export const tokens = (text: string) => Math.max(1, Math.ceil(text.length / 4));

const event = (res: ServerResponse, type: string, data: object) =>
  res.write(`event: ${type}\ndata: ${JSON.stringify({ type, ...data })}\n\n`);

/** Halves, as a real stream splits text and tool input into several deltas. */
const halves = (text: string) =>
  text.length < 2 ? [text] : [text.slice(0, text.length >> 1), text.slice(text.length >> 1)];

export function startStream(res: ServerResponse, model: string, usage: Usage): void {
  res.writeHead(200, {
    'content-type': 'text/event-stream',
    'cache-control': 'no-cache',
    'request-id': `req_${randomBytes(8).toString('hex')}`,
  });
  event(res, 'message_start', {
    message: {
      id: `msg_${randomBytes(8).toString('hex')}`,
      type: 'message',
      role: 'assistant',
      model,
      content: [],
      stop_reason: null,
      stop_sequence: null,
      usage: { ...usage, output_tokens: 1 },
    },
  });
  event(res, 'ping', {});
}

export const ping = (res: ServerResponse) => event(res, 'ping', {});

export function finishStream(
  res: ServerResponse,
  blocks: { text?: string; tool?: ToolUse },
  outputTokens: number,
): void {
  let index = 0;
  if (blocks.text) {
    event(res, 'content_block_start', { index, content_block: { type: 'text', text: '' } });
    for (const part of halves(blocks.text))
      event(res, 'content_block_delta', { index, delta: { type: 'text_delta', text: part } });
    event(res, 'content_block_stop', { index });
    index += 1;
  }
  if (blocks.tool) {
    event(res, 'content_block_start', {
      index,
      content_block: { type: 'tool_use', id: blocks.tool.id, name: blocks.tool.name, input: {} },
    });
    for (const part of halves(blocks.tool.json))
      event(res, 'content_block_delta', { index, delta: { type: 'input_json_delta', partial_json: part } });
    event(res, 'content_block_stop', { index });
  }
  event(res, 'message_delta', {
    delta: { stop_reason: blocks.tool ? 'tool_use' : 'end_turn', stop_sequence: null },
    usage: { output_tokens: outputTokens },
  });
  event(res, 'message_stop', {});
  res.end();
}

export function errorBody(type: string, message: string): string {
  return JSON.stringify({
    type: 'error',
    error: { type, message },
    request_id: `req_${randomBytes(8).toString('hex')}`,
  });
}
