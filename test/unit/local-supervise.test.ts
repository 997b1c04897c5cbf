// Supervision of the local stack's processes with real child processes: an unexpected exit is
// restarted after a growing back-off with one line each; a crash loop stops after the bound.
import { mkdtempSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { startManaged, type Managed } from '../../local/control-plane/processes.ts';
import { supervise } from '../../local/supervise.ts';
import { eventually } from '../support/eventually.ts';

const dir = mkdtempSync(join(tmpdir(), 'tether-supervise-'));
const node = (name: string, code: string) => async () =>
  startManaged(name, process.execPath, ['-e', code], join(dir, `${name}.log`));
const policy = { firstDelayMs: 100, maxDelayMs: 250, stableAfterMs: 60_000, crashLimit: 4, crashWindowMs: 10_000 };
const running = (p: Managed) => p.child.exitCode === null && p.child.signalCode === null;

/** A sleeper whose every start after the first takes 300 ms; every process it started, and how many starts began. */
function slowRestarts(name: string) {
  const started: Managed[] = [];
  let calls = 0;
  const start = async () => {
    if (calls++ > 0) await new Promise((r) => setTimeout(r, 300));
    const proc = await node(name, 'setInterval(() => {}, 1000)')();
    started.push(proc);
    return proc;
  };
  return { start, started, calls: () => calls };
}

describe('supervise', () => {
  it('restarts a killed process with a line naming it, the signal and when it comes back', async () => {
    const lines: string[] = [];
    const sup = await supervise(
      'sleeper',
      node('sleeper', 'setInterval(() => {}, 1000)'),
      (l) => lines.push(l),
      policy,
    );
    const first = sup.current().child.pid;
    sup.current().signal('SIGKILL');
    await eventually(() => expect(sup.current().child.pid).not.toBe(first));
    expect(lines[0]).toMatch(
      /^sleeper was killed by SIGKILL at \d\d:\d\d:\d\d; restarting it in 0\.1s \(at \d\d:\d\d:\d\d\)$/,
    );
    await eventually(() => expect(lines[1]).toMatch(/^sleeper restarted \(pid \d+\)$/));
    await sup.restart(1000);
    await sup.stop(1000);
    expect(lines, 'a restart or stop someone asked for says nothing').toHaveLength(2);
    expect(sup.current().child.signalCode).toBe('SIGTERM');
  });

  it('stop() during a restart after an exit leaves no process running and says no "restarted" line', async () => {
    const lines: string[] = [];
    const slow = slowRestarts('stopped-mid-restart');
    const sup = await supervise('stopped-mid-restart', slow.start, (l) => lines.push(l), policy);
    sup.current().signal('SIGKILL');
    await eventually(() => expect(slow.calls()).toBe(2)); // the back-off has passed; the slow start is under way
    await sup.stop(1000);
    await new Promise((r) => setTimeout(r, 400));
    expect(slow.started.filter(running)).toEqual([]);
    expect(lines.filter((l) => /restarted/.test(l))).toEqual([]);
  });

  it('restart() during a restart after an exit leaves exactly one process running', async () => {
    const slow = slowRestarts('restarted-mid-restart');
    const sup = await supervise('restarted-mid-restart', slow.start, () => {}, policy);
    sup.current().signal('SIGKILL');
    await eventually(() => expect(slow.calls()).toBe(2));
    await sup.restart(1000);
    await new Promise((r) => setTimeout(r, 400));
    expect(slow.started.filter(running)).toEqual([sup.current()]);
    await sup.stop(1000);
    expect(slow.started.filter(running)).toEqual([]);
  });

  it('backs off, doubling to the cap, and stops retrying a crash loop with one line', async () => {
    const lines: string[] = [];
    await supervise('crasher', node('crasher', 'process.exit(3)'), (l) => lines.push(l), policy);
    await eventually(() => expect(lines.at(-1)).toMatch(/crash loop/), 5000);
    const crashes = lines.filter((l) => /exited with code 3/.test(l));
    expect(crashes.map((l) => /restarting it in ([\d.]+)s/.exec(l)?.[1])).toEqual(['0.1', '0.2', '0.3', undefined]);
    expect(lines.at(-1)).toMatch(
      /^crasher exited with code 3 at .*: 4 exits within 10s is a crash loop; not restarting it/,
    );
    const count = lines.length;
    await new Promise((r) => setTimeout(r, 600));
    expect(lines).toHaveLength(count);
  });
});
