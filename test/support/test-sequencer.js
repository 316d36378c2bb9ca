'use strict';
// Orders test files for a run over several workers: the slowest first, so they overlap the many
// short ones instead of running alone at the end. Jest's own order uses the durations it cached
// from the last run on this machine; a fresh clone has none, and Jest would fall back to file
// size (a poor guess: the slowest files wait on servers, they are not long). test/durations.json
// holds the seconds each slower file took in a full run (refresh it from a run's --json output:
// see docs/testing.md); files it does not list are ordered as Jest orders them.
const Sequencer = require('@jest/test-sequencer').default;
const { relative } = require('node:path');
const durations = require('../durations.json');

class SlowFirstSequencer extends Sequencer {
  sort(tests) {
    const jestOrder = super.sort(tests);
    const rank = new Map(jestOrder.map((t, i) => [t, i]));
    // Jest's cached durations are in milliseconds; test/durations.json's in seconds.
    const seconds = (t) => durations[relative(t.context.config.rootDir, t.path)];
    const known = (t) => t.duration ?? (seconds(t) === undefined ? undefined : seconds(t) * 1000);
    return [...jestOrder].sort((a, b) => {
      const [da, db] = [known(a), known(b)];
      if (da !== undefined && db !== undefined) return db - da;
      if (da !== undefined) return -1;
      if (db !== undefined) return 1;
      return rank.get(a) - rank.get(b);
    });
  }
}

module.exports = SlowFirstSequencer;
