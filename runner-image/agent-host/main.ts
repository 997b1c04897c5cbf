// The agent container's entrypoint: node /app/runner-image/agent-host/main.ts. Connects to the
// supervisor's Unix socket (retrying until it is there), says hello, then runs the processes the
// supervisor asks for. It holds no credential. When the connection ends, everything it started is
// killed and it exits. The one way it connects again is a reset: it re-execs itself (nothing of its
// memory survives) and its new self says hello with the reset's nonce. Imported
// (warm-compile-cache.ts), it only loads.
import { existsSync } from 'node:fs';
import { connect, type Socket } from 'node:net';
import { createLogger } from '../../common/log.ts';
import { configOrExit } from '../../common/process.ts';
import { ConfigError, loadConfig, reexecEnv } from './config.ts';
import { FrameConnection } from './connection.ts';
import { detectFreezeMode, thisProcess } from './freeze.ts';
import { ProcessHost } from './processes.ts';
import { FROM_SUPERVISOR, FrameType, PROTOCOL_VERSION } from './protocol.ts';

/** Trying a socket that is not there yet costs nothing: the supervisor's comes up while this one starts. */
const RETRY_MS = 20;

function connectOnce(path: string): Promise<Socket> {
  return new Promise((resolve, reject) => {
    const socket = connect(path);
    socket.once('connect', () => {
      socket.off('error', reject);
      resolve(socket);
    });
    socket.once('error', reject);
  });
}

async function connectWithRetry(path: string, timeoutMs: number): Promise<Socket> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    try {
      return await connectOnce(path);
    } catch (error) {
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, RETRY_MS));
    }
  }
}

/**
 * The agent's processes run as this process's uid: a SIGUSR1 from them would open Node's inspector on loopback
 * and let them run code here (and so spare a process from the freeze). Started without the flag, it starts again
 * with it before doing anything.
 */
function refuseTheInspector(): void {
  if (process.execArgv.includes('--disable-sigusr1')) return;
  const argv = [process.execPath, '--disable-sigusr1', ...process.execArgv, ...process.argv.slice(1)];
  process.execve!(process.execPath, argv); // with this environment
}

async function main(): Promise<void> {
  refuseTheInspector();
  // The supervisor's uid shares the workspace through the Pod's group: it reverts and publishes what the agent wrote.
  process.umask(0o002);

  const config = configOrExit('agent-host', loadConfig, (error) => error instanceof ConfigError);
  const log = createLogger({ component: 'agent-host', level: config.logLevel });
  const mounted = config.credentialFiles.filter((path) => existsSync(path));
  if (mounted.length) {
    log.error({ files: mounted }, 'the agent container must hold no credential; refusing to start');
    process.exit(2);
  }
  const socket = await connectWithRetry(config.socketPath, config.connectTimeoutMs).catch((error: unknown) => {
    log.error({ err: error, socket: config.socketPath }, 'the supervisor could not be reached');
    return process.exit(1);
  });
  const mode = detectFreezeMode(thisProcess());
  let welcomed = false;
  const conn: FrameConnection = new FrameConnection(socket, {
    peer: 'supervisor',
    accepts: FROM_SUPERVISOR,
    log,
    onFrame: (frame) => {
      if (frame.type === FrameType.Refused) {
        log.error({ reason: frame.message.reason }, 'the supervisor refused this agent host');
        process.exit(1);
      }
      if (frame.type === FrameType.Welcome) {
        if (welcomed) return conn.close('a second welcome from the supervisor');
        welcomed = true;
        log.info({ socket: config.socketPath, freeze: mode, reset: !!config.resumes }, 'agent host connected');
        return;
      }
      if (!welcomed) return conn.close(`frame type ${frame.type} before the supervisor's welcome`);
      host.handle(frame);
    },
    onClosed: (_reason, byPeer) => {
      host.killAll();
      process.exit(welcomed && byPeer ? 0 : 1);
    },
  });
  const reexec = (nonce: string) => {
    try {
      process.execve!(
        process.execPath,
        [process.execPath, ...process.execArgv, ...process.argv.slice(1)],
        reexecEnv(nonce),
      );
    } catch (error) {
      log.error({ err: error }, 'the agent host could not re-exec itself');
      process.exit(1);
    }
  };
  const host = new ProcessHost(conn, log, mode, { tmpDir: config.tmpDir, reexec });
  conn.send(FrameType.Hello, 0, {
    protocol: PROTOCOL_VERSION,
    pid: process.pid,
    freeze: mode,
    startedAt: performance.timeOrigin,
    ...(config.resumes ? { resumes: config.resumes } : {}),
  });

  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    process.on(signal, () => {
      log.info({ signal }, 'stopping: killing every process started here');
      host.killAll();
      process.exit(0);
    });
  }
}

if (import.meta.main) await main();
