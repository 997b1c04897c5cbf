// The channel between the runner Pod's containers, with real processes: the supervisor's side in
// this process, the agent host as a child process, cat/node/sh run through the channel.
import { createHash } from 'node:crypto';
import type { Options } from '@anthropic-ai/claude-agent-sdk';
import { afterEach, describe, expect, it } from 'vitest';
import { eventually } from '../support/eventually.ts';
import { alive, finished, firstLines, request, startPair, type Pair } from '../support/agent-channel.ts';

let pair: Pair | undefined;
afterEach(async () => {
  await pair?.stop();
  pair = undefined;
}, 30_000);

const sha = (data: Buffer | string) => createHash('sha256').update(data).digest('hex');
/** 20 MiB of bytes that are not all alike, and their hash on stderr. */
const BIG_OUTPUT = `const b = Buffer.alloc(20 * 1024 * 1024); \
for (let i = 0; i < b.length; i++) b[i] = (i * 7 + (i >> 13)) & 255;
process.stderr.write(require('crypto').createHash('sha256').update(b).digest('hex')); process.stdout.write(b);`;

describe('agent channel: processes in the agent container', { timeout: 30_000 }, () => {
  it('carries stdin to a process and its stdout back, and reports the exit', async () => {
    pair = await startPair();
    const channel = pair.channel;
    // the SDK's hook, as claude.ts will use it
    const spawnClaudeCodeProcess: Options['spawnClaudeCodeProcess'] = (options) => channel.spawn(options);
    const cat = spawnClaudeCodeProcess!(request('cat', [])) as ReturnType<typeof channel.spawn>;
    const done = finished(cat);
    cat.stdin.write('hello ');
    cat.stdin.end('through the channel\n');
    const result = await done;
    expect(result.stdout.toString()).toBe('hello through the channel\n');
    expect(result).toMatchObject({ code: 0, signal: null, error: undefined });
    expect(cat.exitCode).toBe(0);
    expect(cat.pid).toBeGreaterThan(0);
  });

  it('passes the command line, working directory and only the given environment', async () => {
    pair = await startPair();
    const script = 'console.log(JSON.stringify({ argv: process.argv.slice(1), cwd: process.cwd(), env: process.env }))';
    const result = await finished(
      pair.channel.spawn(
        request(process.execPath, ['-e', script, 'a b', '--x=1'], { cwd: '/tmp', env: { ONLY: 'this', EMPTY: '' } }),
      ),
    );
    expect(JSON.parse(result.stdout.toString())).toEqual({
      argv: ['a b', '--x=1'],
      cwd: '/tmp',
      env: { ONLY: 'this', EMPTY: '' },
    });
  });

  it('moves large outputs and inputs intact', async () => {
    pair = await startPair();
    const out = await finished(pair.channel.spawn(request(process.execPath, ['-e', BIG_OUTPUT])));
    expect(out.stdout.length).toBe(20 * 1024 * 1024);
    expect(sha(out.stdout)).toBe(out.stderr);

    const input = Buffer.alloc(8 * 1024 * 1024 + 17);
    for (let i = 0; i < input.length; i++) input[i] = (i * 13) & 255;
    const cat = pair.channel.spawn(request('cat', []));
    const echoed = finished(cat);
    cat.stdin.end(input);
    expect(sha((await echoed).stdout)).toBe(sha(input));
  });

  it('paces a process by what the supervisor reads: an unread stdout holds the writer back', async () => {
    pair = await startPair();
    const writer = pair.channel.spawn(request(process.execPath, ['-e', BIG_OUTPUT]));
    const hash = await new Promise<string>((resolve) =>
      writer.stderr.once('data', (c: Buffer) => resolve(c.toString())),
    );
    await new Promise((r) => setTimeout(r, 1000));
    // It has started writing, and 20 MiB cannot fit in the window and the pipes: it is still blocked.
    expect(writer.exitCode).toBeNull();
    const result = await finished(writer);
    expect(result.code).toBe(0);
    expect(sha(result.stdout)).toBe(hash);
  });

  it('reports exit codes, and a command that cannot start as an error', async () => {
    pair = await startPair();
    expect(await finished(pair.channel.spawn(request(process.execPath, ['-e', 'process.exit(7)'])))).toMatchObject({
      code: 7,
      signal: null,
    });
    const missing = await finished(pair.channel.spawn(request('/no/such/command', [])));
    expect(missing).toMatchObject({ code: 127, signal: null });
    expect(missing.error).toMatchObject({ code: 'ENOENT' });
  });

  it('forwards kill signals to the process group', async () => {
    pair = await startPair();
    const sh = pair.channel.spawn(request('sh', ['-c', 'sleep 300 & echo $!; wait']));
    const done = finished(sh);
    const [sleeper] = await firstLines(sh, 1);
    expect(alive(Number(sleeper))).toBe(true);
    expect(sh.kill('SIGTERM')).toBe(true);
    expect(await done).toMatchObject({ code: null, signal: 'SIGTERM' });
    expect(sh.killed).toBe(true);
    expect(sh.signalCode).toBe('SIGTERM');
    await eventually(() => expect(alive(Number(sleeper))).toBe(false), 5000);
  });

  it("kills the process when the SDK's abort signal fires", async () => {
    pair = await startPair();
    const abort = new AbortController();
    const sleeper = pair.channel.spawn(request('sleep', ['300'], { signal: abort.signal }));
    const done = finished(sleeper);
    await new Promise((r) => sleeper.once('spawn', r));
    abort.abort();
    expect(await done).toMatchObject({ code: null, signal: 'SIGKILL' });
  });

  it('refuses a spawn request that would carry a credential to the agent container', async () => {
    pair = await startPair({ secrets: () => ['sk-ant-canary-0123456789'] });
    const leaked = await finished(
      pair.channel.spawn(
        request('env', [], { env: { PATH: '/usr/bin:/bin', ANTHROPIC_API_KEY: 'sk-ant-canary-0123456789' } }),
      ),
    );
    expect(leaked.code).toBe(127);
    expect(leaked.error?.message).toBe(
      'refused: the spawn request carries a credential (environment variable ANTHROPIC_API_KEY)',
    );
    const inArgs = await finished(pair.channel.spawn(request('echo', ['--key=sk-ant-canary-0123456789'])));
    expect(inArgs.error?.message).toContain('(command line)');
    expect(pair.host.output()).not.toContain('canary');
  });
});

describe('agent channel: connections', { timeout: 30_000 }, () => {
  it('waits for the agent host and fails spawns when none comes', async () => {
    const { AgentChannel } = await import('../../runner-image/agent-channel/channel.ts');
    const { capturedLogger, socketFolder } = await import('../support/agent-channel.ts');
    const channel = await AgentChannel.listen({
      socketPath: `${socketFolder()}/s/agent.sock`,
      log: capturedLogger('runner').log,
      connectTimeoutMs: 300,
      freezeTimeoutMs: 1000,
    });
    const result = await finished(channel.spawn(request('true', [])));
    expect(result.error?.message).toBe('agent channel closed: no agent host connected within 300 ms');
    expect(result).toMatchObject({ code: null, signal: 'SIGKILL' });
    await expect(channel.connected()).rejects.toThrow('no agent host connected');
    await expect(channel.freeze()).rejects.toThrow('no agent host connected');
    await channel.close();
  });

  it('ends every process with an error when the connection drops mid-run', async () => {
    pair = await startPair();
    const cat = pair.channel.spawn(request('cat', []));
    const done = finished(cat);
    cat.stdin.write('before the drop\n');
    const [line] = await firstLines(cat, 1);
    expect(line).toBe('before the drop');
    const catPid = cat.pid!;
    pair.host.child.kill('SIGKILL');
    const result = await done;
    expect(result.error?.message).toMatch(/^agent channel closed: /);
    expect(result).toMatchObject({ code: null, signal: 'SIGKILL' });
    expect(cat.exitCode).toBeNull();
    // A spawn after the drop fails at once, and stdin writes fail instead of hanging.
    expect((await finished(pair.channel.spawn(request('true', [])))).error?.message).toMatch(/^agent channel closed: /);
    await new Promise<void>((resolve) => cat.stdin.write('after', () => resolve()));
    // Locally the agent host's processes outlive a SIGKILLed agent host (in a Pod they die with the container).
    process.kill(catPid, 'SIGKILL');
  });

  it('the agent host kills its processes and exits 0 when the supervisor closes the channel', async () => {
    pair = await startPair();
    const sleeper = pair.channel.spawn(request('sleep', ['300']));
    const done = finished(sleeper);
    await new Promise((r) => sleeper.once('spawn', r));
    const pid = sleeper.pid!;
    await pair.channel.close();
    expect(await pair.host.exited).toBe(0);
    expect((await done).error?.message).toBe('agent channel closed: the supervisor closed the channel');
    await eventually(() => expect(alive(pid)).toBe(false), 5000);
  });
});
