'use strict';
// Preloaded (`node --require …/fake-old-node.cjs`) to make this Node report an old version, so the
// version check of the entry points runs for real on a machine with no old Node installed.
Object.defineProperty(process.versions, 'node', { value: process.env.FAKE_NODE_VERSION || '20.0.0' });
