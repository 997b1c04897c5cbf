import { describe, expect, it } from 'vitest';
import { priceOf } from '../../runner-image/model/cost-meter.ts';
import { UsageTap } from '../../runner-image/model/usage-tap.ts';

const SSE = [
  'event: message_start',
  'data: ' +
    '{"type":"message_start","message":{"id":"msg_1","model":"claude-sonnet-4",' +
    '"usage":{"input_tokens":200000,"output_tokens":1}}}',
  '',
  'event: content_block_delta',
  'data: {"type":"content_block_delta","index":0,"delta":{"type":"text_delta","text":"hi"}}',
  '',
  'event: message_delta',
  'data: {"type":"message_delta","delta":{"stop_reason":"end_turn"},"usage":{"output_tokens":500}}',
  '',
  '',
].join('\n');
const FULL = priceOf('claude-sonnet-4', { input_tokens: 200000, output_tokens: 500 });

function spendOf(contentType: string, body: string, cuts: number[] = []): number {
  const tap = new UsageTap(contentType);
  const bytes = Buffer.from(body);
  let from = 0;
  for (const cut of [...cuts, bytes.length]) {
    tap.write(bytes.subarray(from, cut));
    from = cut;
  }
  return tap.end();
}

describe('UsageTap', () => {
  it('reads an SSE stream split at every byte boundary', () => {
    for (let cut = 0; cut <= SSE.length; cut++) expect(spendOf('text/event-stream', SSE, [cut])).toBeCloseTo(FULL, 10);
  });

  it('counts the input tokens of a stream cut off after message_start', () => {
    const start = SSE.slice(0, SSE.indexOf('event: content_block_delta'));
    expect(spendOf('text/event-stream; charset=utf-8', start)).toBeCloseTo(
      priceOf('claude-sonnet-4', { input_tokens: 200000, output_tokens: 1 }),
      10,
    );
  });

  it('reads a JSON body, split anywhere', () => {
    const body = JSON.stringify({
      id: 'msg_2',
      model: 'claude-haiku-4',
      usage: { input_tokens: 1000, output_tokens: 10 },
    });
    const want = priceOf('claude-haiku-4', { input_tokens: 1000, output_tokens: 10 });
    for (let cut = 0; cut <= body.length; cut++) expect(spendOf('application/json', body, [cut])).toBeCloseTo(want, 10);
  });

  it('prices an error body or garbage as nothing', () => {
    expect(spendOf('application/json', '{"type":"error","error":{"type":"overloaded_error","message":"x"}}')).toBe(0);
    expect(spendOf('application/json', 'not json')).toBe(0);
    expect(spendOf('text/event-stream', 'data: {broken\n\ndata: [1,2]\n\n')).toBe(0);
  });

  it('bounds hostile usage: never negative, never absurd, unknown models at the dearest price', () => {
    const hostile = (usage: string) =>
      spendOf('text/event-stream', `data: {"type":"message_start","message":{"model":"x","usage":${usage}}}\n\n`);
    expect(hostile('{"input_tokens":-5000000,"output_tokens":-1}')).toBe(0);
    expect(hostile('{"input_tokens":1e308,"output_tokens":"9"}')).toBe(0);
    expect(hostile('{"input_tokens":1000000}')).toBe(priceOf('opus', { input_tokens: 1000000 }));
    expect(spendOf('text/event-stream', 'data: ' + 'x'.repeat(3_000_000))).toBe(0);
  });
});
