import type { NextFunction, Request, Response } from 'express';
import { EventEmitter } from 'node:events';
import { DomainError } from '../errors/domain-error';
import { ErrorCode } from '../errors/error-code';
import { drainingMiddleware } from './draining.middleware';
import { ShutdownStateService } from './shutdown-state.service';

function call(state: ShutdownStateService, path: string) {
  const res = Object.assign(new EventEmitter(), {
    headers: {} as Record<string, string>,
    setHeader(k: string, v: string) {
      this.headers[k] = v;
    },
  });
  let passed: unknown = 'not called';
  drainingMiddleware(state)({ path } as Request, res as unknown as Response, ((err?: unknown) => (passed = err)) as NextFunction);
  return { res, passed };
}

describe('drainingMiddleware', () => {
  it('counts requests until their response closes, and the drain waits for them', async () => {
    const state = new ShutdownStateService();
    const { res, passed } = call(state, '/A/1');
    expect(passed).toBeUndefined();
    expect(state.busy).toBe(1);
    let idle = false;
    void state.idle().then(() => (idle = true));
    await Promise.resolve();
    expect(idle).toBe(false);
    res.emit('close');
    await Promise.resolve();
    expect([state.busy, idle]).toEqual([0, true]);
  });

  it('while draining: 503 SHUTTING_DOWN with Connection: close; health probes still pass (closing too)', () => {
    const state = new ShutdownStateService();
    state.startDraining();
    const refused = call(state, '/A/1');
    expect(refused.passed).toBeInstanceOf(DomainError);
    expect((refused.passed as DomainError).code).toBe(ErrorCode.SHUTTING_DOWN);
    expect(refused.res.headers).toEqual({ Connection: 'close' });
    const probe = call(state, '/health/ready');
    expect(probe.passed).toBeUndefined();
    expect(probe.res.headers).toEqual({ Connection: 'close' });
    expect(call(state, '/A/1/health/ready').passed).toBeUndefined();
    expect(state.busy).toBe(0);
  });

  it('counts v3 runs apart, for a clean drain', () => {
    const state = new ShutdownStateService();
    const release = state.enter('run');
    state.enter();
    expect([state.busy, state.runs]).toEqual([2, 1]);
    release();
    release();
    expect([state.busy, state.runs]).toEqual([1, 0]);
  });

  it('the end of the grace aborts with a SHUTTING_DOWN error', () => {
    const state = new ShutdownStateService();
    state.endGrace();
    expect(state.draining).toBe(true);
    expect(state.graceOver.aborted).toBe(true);
    expect((state.graceOver.reason as DomainError).code).toBe(ErrorCode.SHUTTING_DOWN);
  });
});
