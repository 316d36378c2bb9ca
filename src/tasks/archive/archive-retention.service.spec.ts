import pino from 'pino';
import type { ArchivePort } from '../../archive/archive.port';
import { loadEnvConfig } from '../../config/env.config';
import { ArchiveRetentionService, RETENTION_BATCH } from './archive-retention.service';

const DAY = 24 * 60 * 60 * 1000;

/** An archive whose purge answers the given counts, step by step (then 0), and records its calls. */
function fakeArchive(answers: number[]) {
  const calls: { cutoff: Date; batch: number }[] = [];
  const archive = {
    purgeOlderThan: jest.fn(async (cutoff: Date, batch: number) => {
      calls.push({ cutoff, batch });
      return answers.shift() ?? 0;
    }),
  } as unknown as ArchivePort;
  return { archive, calls };
}

const env = (vars: Record<string, string> = {}) => loadEnvConfig({ TA_AUTH_MODE: 'dev', TA_ARCHIVE_URL: 'postgres://localhost/x', ...vars });
const logger = pino({ level: 'silent' });

describe('ArchiveRetentionService', () => {
  it('purges rows older than the retention step by step until a step removes fewer than a batch', async () => {
    const { archive, calls } = fakeArchive([RETENTION_BATCH, RETENTION_BATCH, 7]);
    const retention = new ArchiveRetentionService(env({ TA_ARCHIVE_RETENTION_DAYS: '30' }), logger, archive);
    const now = Date.UTC(2026, 0, 31);
    expect(await retention.purge(now)).toEqual({ removed: 2 * RETENTION_BATCH + 7, more: false });
    expect(calls).toHaveLength(3);
    expect(calls.every((c) => c.cutoff.getTime() === now - 30 * DAY && c.batch === RETENTION_BATCH)).toBe(true);
  });

  it('stops after its bound of steps and says more is left', async () => {
    const { archive, calls } = fakeArchive([5, 5, 5, 5]);
    const retention = new ArchiveRetentionService(env(), logger, archive);
    expect(await retention.purge(Date.now(), 5, 3)).toEqual({ removed: 15, more: true });
    expect(calls).toHaveLength(3);
  });

  it('does nothing without an archive, and schedules no pass when TA_ARCHIVE_RETENTION_SWEEP_MS is 0', async () => {
    expect(await new ArchiveRetentionService(env(), logger, null).purge()).toEqual({ removed: 0, more: false });
    const spy = jest.spyOn(global, 'setTimeout');
    try {
      const { archive } = fakeArchive([]);
      new ArchiveRetentionService(env({ TA_ARCHIVE_RETENTION_SWEEP_MS: '0' }), logger, archive).onApplicationBootstrap();
      expect(spy).not.toHaveBeenCalled();
    } finally {
      spy.mockRestore();
    }
  });

  it('runs a pass on its jittered, unref-ed timer (default an hour) and stops with the app', async () => {
    jest.useFakeTimers();
    try {
      const { archive, calls } = fakeArchive([3]);
      const config = env();
      expect(config.archive?.retentionSweepMs).toBe(3_600_000);
      const retention = new ArchiveRetentionService(config, logger, archive);
      retention.onApplicationBootstrap();
      await jest.advanceTimersByTimeAsync(0.75 * 3_600_000 - 1);
      expect(calls).toHaveLength(0);
      await jest.advanceTimersByTimeAsync(0.25 * 3_600_000 + 1);
      expect(calls).toHaveLength(1);
      retention.onModuleDestroy();
      await jest.advanceTimersByTimeAsync(2 * 3_600_000);
      expect(calls).toHaveLength(1);
    } finally {
      jest.useRealTimers();
    }
  });

  it('logs a failed pass and tries again on the next', async () => {
    jest.useFakeTimers();
    try {
      let n = 0;
      const archive = {
        purgeOlderThan: jest.fn(async () => {
          if (n++ === 0) throw new Error('archive down');
          return 0;
        }),
      } as unknown as ArchivePort;
      const warn = jest.spyOn(logger, 'warn');
      const retention = new ArchiveRetentionService(env({ TA_ARCHIVE_RETENTION_SWEEP_MS: '1000' }), logger, archive);
      retention.onApplicationBootstrap();
      await jest.advanceTimersByTimeAsync(1000);
      expect(warn).toHaveBeenCalledTimes(1);
      await jest.advanceTimersByTimeAsync(1000);
      expect(archive.purgeOlderThan).toHaveBeenCalledTimes(2);
      retention.onModuleDestroy();
    } finally {
      jest.useRealTimers();
    }
  });
});
