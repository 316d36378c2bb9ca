import { writeFileSync } from 'node:fs';
import { Session } from 'node:inspector';

/**
 * Preloaded into the server by `BENCH_ENTRY=alloc` (node --require): the first SIGUSR2 starts V8's
 * sampling heap profiler, keeping the samples of objects already collected (so it measures what is
 * allocated, not what survives), the second stops it and writes the profile to
 * BENCH_ALLOC_PROFILE. Nothing else of the server changes.
 */
let session: Session | undefined;

process.on('SIGUSR2', () => {
  if (!session) {
    session = new Session();
    session.connect();
    session.post('HeapProfiler.enable');
    session.post('HeapProfiler.startSampling', { samplingInterval: 1024, includeObjectsCollectedByMajorGC: true, includeObjectsCollectedByMinorGC: true });
    return;
  }
  const done = session;
  session = undefined;
  done.post('HeapProfiler.stopSampling', (err, result) => {
    if (!err) writeFileSync(process.env.BENCH_ALLOC_PROFILE!, JSON.stringify(result.profile));
    done.disconnect();
  });
});
