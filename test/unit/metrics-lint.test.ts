// Prometheus' own lint (client_golang's promlint) on the controller's and the relay's metrics as their
// processes serve them; the standard process_* and nodejs_* metrics carry no prefix.
// test/integration/metrics-lint.test.ts runs the same lint on the running processes.
import { beforeAll, describe, expect, it } from 'vitest';
import { PROMLINT_SETUP_TIMEOUT, familiesOf, lintMetrics, promlintBin } from '../support/promlint.ts';
import { componentOutputs } from './metric-outputs.ts';

let outputs: { controller: string; relay: string };
beforeAll(async () => {
  promlintBin();
  outputs = await componentOutputs();
}, PROMLINT_SETUP_TIMEOUT);

describe('metrics lint', () => {
  it('finds no problem in either component', () => {
    expect(lintMetrics(outputs)).toEqual([]);
  });

  it('reports a gauge named *_total (the helper really lints)', () => {
    const bad = '# HELP x_total A gauge.\n# TYPE x_total gauge\nx_total 1\n';
    expect(lintMetrics({ bad })).toEqual([expect.stringMatching(/^bad: x_total: .*_total/)]);
  });

  it.each(['controller', 'relay'] as const)(
    '%s: exports the standard Node.js metrics unprefixed, and only its own under tether_',
    (component) => {
      const families = familiesOf(outputs[component]);
      for (const name of ['process_cpu_seconds_total', 'process_resident_memory_bytes', 'nodejs_heap_size_used_bytes'])
        expect(families.get(name), name).toBeDefined();
      expect(families.get('nodejs_eventloop_lag_seconds')).toBe('gauge');
      const others = [...families.keys()].filter((n) => !/^(process|nodejs)_/.test(n));
      expect(others.length).toBeGreaterThan(5);
      for (const name of others) expect(name).toMatch(component === 'relay' ? /^tether_relay_/ : /^tether_(?!relay_)/);
    },
  );
});
