// HTTP surface of the controller: Prometheus metrics and health probes.
import express, { type Express } from 'express';
import type { Registry } from 'prom-client';

export interface AppDeps {
  registry: Registry;
  /** Ready: caches synced while leading, or standing by as a follower. */
  ready: () => boolean;
}

export function createApp(deps: AppDeps): Express {
  const app = express();
  app.disable('x-powered-by');
  app.get('/metrics', async (_req, res) => {
    res.type(deps.registry.contentType).send(await deps.registry.metrics());
  });
  app.get('/healthz', (_req, res) => {
    res.type('text/plain').send('ok');
  });
  app.get('/readyz', (_req, res) => {
    const ready = deps.ready();
    res
      .status(ready ? 200 : 503)
      .type('text/plain')
      .send(ready ? 'ok' : 'not ready');
  });
  return app;
}
