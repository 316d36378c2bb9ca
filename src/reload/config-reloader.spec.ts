import type { INestApplication } from '@nestjs/common';
import pino from 'pino';
import { Writable } from 'node:stream';
import type { AgentDefinition } from '../agents/config/agent-definition';
import { ConfigError } from '../agents/config/config-error';
import { AgentGenerations } from './agent-generations';
import { BuiltGeneration, ConfigReloader } from './config-reloader';

const agent = (prefix: string, prompt = 'p') => ({ prefix, agent: { system_prompt: prompt } }) as unknown as AgentDefinition;

function setup(build: () => Promise<BuiltGeneration>) {
  const lines: Record<string, unknown>[] = [];
  const logger = pino({ level: 'info' }, new Writable({ write: (c, _e, cb) => (lines.push(JSON.parse(String(c))), cb()) }));
  const swapped: INestApplication[] = [];
  const generations = { swap: (app: INestApplication) => swapped.push(app) } as unknown as AgentGenerations;
  const reloader = new ConfigReloader([agent('/A/1')], generations, build, logger);
  return { reloader, lines, swapped };
}

const app = (name: string) => ({ name }) as unknown as INestApplication;

describe('ConfigReloader', () => {
  it('swaps in the new app and logs what changed', async () => {
    const next = app('next');
    const { reloader, lines, swapped } = setup(async () => ({ app: next, agents: [agent('/A/1', 'q'), agent('/B/1')] }));
    await reloader.reload('SIGHUP');
    expect(swapped).toEqual([next]);
    expect(lines.at(-1)).toMatchObject({ level: 30, msg: 'config reloaded: added /B/1, changed /A/1, removed none', trigger: 'SIGHUP' });
  });

  it('keeps the last good config on a ConfigError and logs the boot text at error level', async () => {
    const err = new ConfigError(['/x/a.yaml:3: spec.agent.model: required']);
    const { reloader, lines, swapped } = setup(async () => Promise.reject(err));
    await reloader.reload('file change');
    expect(swapped).toEqual([]);
    expect(lines.at(-1)).toMatchObject({ level: 50, problems: err.problems, msg: `config reload refused, the last good config keeps serving: ${err.message}` });
  });

  it('runs one reload at a time and folds the triggers that arrive meanwhile into one more', async () => {
    let builds = 0;
    let release!: () => void;
    const first = new Promise<void>((ok) => (release = ok));
    const { reloader, swapped } = setup(async () => {
      builds++;
      if (builds === 1) await first;
      return { app: app(`gen${builds}`), agents: [agent('/A/1')] };
    });
    const runs = [reloader.reload('a'), reloader.reload('b'), reloader.reload('c')];
    release();
    await Promise.all(runs);
    expect(builds).toBe(2);
    expect(swapped).toHaveLength(2);
  });

  it('does nothing once stopped', async () => {
    const { reloader, swapped } = setup(async () => ({ app: app('x'), agents: [] }));
    await reloader.stop();
    await reloader.reload('SIGHUP');
    expect(swapped).toEqual([]);
  });
});
