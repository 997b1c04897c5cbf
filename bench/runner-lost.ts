// A lost runner Pod → the run going again, on the local stack: a command whose agent works for a while, its
// runner Pod deleted once its first progress is on the phone; the controller makes a replacement on the same
// workspace and the runner there resumes the conversation, telling the phone once. Measured from the delete
// to that line on the phone; each run's end is printed.
import type { CoreV1Api } from '@kubernetes/client-node';
import type { Session } from '../common/session/schema.ts';
import { isTerminal } from '../common/session/state-machine.ts';
import { RESTART_LINE } from '../runner-image/restart.ts';
import { until } from './async.ts';
import { percentile } from './machine.ts';
import { measuredOnly, type Row } from './report.ts';

/** Sends a command whose first progress line is `tag` and whose script goes on with `rest`; when it is on the phone. */
export type Command = (tag: string, rest?: string) => Promise<{ name: string; ms: number }>;

export interface LostContext {
  count: number;
  command: Command;
  core: CoreV1Api;
  session(name: string): Session | undefined;
  runnerNamespace: string;
  /** The phone's messages sent at or after `at` (ms since epoch). */
  messagesSince(at: number): Array<{ body: string; at: number }>;
}

/** Long enough that the Pod is deleted while the agent works. */
const WORK = 'sleep: 8000\nprogress: after the loss\nsay: done';

export async function lostRuns(c: LostContext): Promise<Row[]> {
  const going: number[] = [];
  const written: number[] = [];
  const ends: string[] = [];
  for (let j = 0; j < c.count; j++) {
    const { name } = await c.command(`lost run ${j}`, WORK);
    const pod = c.session(name)?.status?.podName;
    if (!pod) throw new Error(`${name}: no status.podName while Working`);
    const lostAt = Date.now();
    await c.core.deleteNamespacedPod({ name: pod, namespace: c.runnerNamespace });
    const told = () => c.messagesSince(lostAt).filter((m) => m.body.includes(RESTART_LINE));
    await until(() => told().length > 0 || isTerminal(c.session(name)?.status?.phase), 120_000, `${name} going again`);
    if (told().length) going.push(told()[0]!.at - lostAt);
    await until(() => isTerminal(c.session(name)?.status?.phase), 120_000, `${name} ended`).catch(() => undefined);
    const s = c.session(name)?.status;
    // The runner's own record of the line (its clock), whether or not the phone got it.
    const line = s?.progress?.find((p) => p.text.includes(RESTART_LINE));
    if (line) written.push(Date.parse(line.at) - lostAt);
    ends.push(
      `${s?.phase ?? 'no phase'} (${told().length} restart lines on the phone, in status ` +
        `${line ? `${Date.parse(line.at) - lostAt} ms after the delete` : 'none'}, ` +
        `runnerRestarts ${s?.runnerRestarts ?? 0}, Pod ${s?.podName}); the phone since: ` +
        JSON.stringify(c.messagesSince(lostAt).map((m) => m.body.slice(0, 60))),
    );
  }
  console.log(`\nlost runner Pod → the run going again (restart line on the phone), ${c.count} runs:`);
  console.log(
    `  on the phone   p50 ${percentile(going, 50)} ms   p99 ${percentile(going, 99)} ms   (${going.length} runs)`,
  );
  console.log(
    `  in status      p50 ${percentile(written, 50)} ms   p99 ${percentile(written, 99)} ms   (${written.length} runs)`,
  );
  for (const [j, end] of ends.entries()) console.log(`  run ${j}: ${end}`);
  if (!going.length) return [];
  return [
    measuredOnly(`lost runner Pod → going again (${going.length} of ${c.count}) p50`, percentile(going, 50), 'ms'),
    measuredOnly('lost runner Pod → going again p99', percentile(going, 99), 'ms'),
  ];
}
