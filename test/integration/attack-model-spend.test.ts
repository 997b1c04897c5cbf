// Attack (fails today; passes once fixed): the run's spend, and so the spending pause
// (`costPauseUsd`) and the phone's daily budget, count only the usage Claude Code reports. The
// agent (any process in the Pod's network namespace) can call the supervisor's model proxy itself,
// with the dummy key: the proxy adds the real key and forwards — an allowed Messages API call — but
// nothing meters it. Twenty large direct calls would spend many times the pause threshold; fixed,
// the proxy meters them, the run pauses, and the proxy refuses the rest until *continue*.
import { writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { priceOf } from '../../runner-image/model/cost-meter.ts';
import { agentFolder, startE2E, type E2E } from '../support/e2e.ts';
import { useScriptedModel } from '../support/scripted-model.ts';

const PAUSE_USD = 1;
const DIRECT_CALLS = 20;
/** Characters of each direct call's prompt: about 50,000 input tokens, $0.75 each at the dearest price. */
const PROMPT_CHARS = 200_000;
const model = useScriptedModel();
let e2e: E2E;
beforeAll(async () => {
  e2e = await startE2E({
    runnerSecrets: { ANTHROPIC_API_KEY: 'sk-ant-canary-SPEND-0123456789' },
    podEnv: model.env(),
    relayEnv: { RELAY_RUN_PAUSE_USD: String(PAUSE_USD), TETHER_DAILY_BUDGET_USD: '100' },
    controllerEnv: { TETHER_DAILY_BUDGET_USD: '100' },
  });
}, 90_000);
afterAll(async () => e2e?.stop());

describe('attack: model calls the agent sends the proxy itself', () => {
  it(
    "are counted in the run's spend: past the threshold the run pauses before the review",
    { timeout: 240_000 },
    async () => {
      const script = join(agentFolder(e2e, 'spend-'), 'spend.sh');
      writeFileSync(
        script,
        [
          'body=$(mktemp)',
          `printf '{"model":"claude-opus-4-1","max_tokens":1,"stream":true,` +
            `"messages":[{"role":"user","content":"script:\\\\nsay: %s"}]}' ` +
            `"$(head -c ${PROMPT_CHARS} /dev/zero | tr '\\0' a)" > "$body"`,
          `for i in $(seq ${DIRECT_CALLS}); do curl -s -o /dev/null -w '%{http_code} ' -X POST -H 'content-type: ` +
            `application/json' -H 'x-api-key: dummy' --data @"$body" "$ANTHROPIC_BASE_URL/v1/messages"; done`,
        ].join('\n'),
        { mode: 0o644 },
      );
      const phone = e2e.phone('+14155550123');
      const before = model.model.requests.length;
      await phone.send(
        `script:\ntool: Bash ${JSON.stringify({ command: `bash ${script}` })}\nwrite: spent.txt = spent\nsay: spent it`,
      );
      await phone.next(/🔐/);
      await phone.send('allow');
      const next = await phone.next(/💲 This run has used|Reply \*approve\*/, 180_000);

      const served = model.model.requests.slice(before).filter((r) => r.response.usage);
      const direct = served.filter((r) => r.body?.model === 'claude-opus-4-1');
      const upstreamUsd = served.reduce((sum, r) => sum + priceOf(r.body?.model ?? '', r.response.usage!), 0);
      const [session] = await e2e.list();
      // The attack reached the upstream with the key until the pause: from then on the proxy refused.
      expect(direct.length).toBeGreaterThan(0);
      expect(direct.length).toBeLessThan(DIRECT_CALLS);
      expect(
        { paused: /💲/.test(next.body), recordedUsd: session!.status?.result?.costUsd },
        `upstream served $${upstreamUsd.toFixed(2)}`,
      ).toEqual({ paused: true, recordedUsd: expect.any(Number) });
      // Everything the upstream served is on the run's bill.
      expect(session!.status!.result!.costUsd!).toBeGreaterThanOrEqual(Math.max(PAUSE_USD, upstreamUsd - 0.01));
    },
  );
});
