import { operatorSteersTiering } from './boot-tiering';

describe('operatorSteersTiering', () => {
  it.each([
    '--invocation-count-for-turbofan=5000',
    '--invocation_count_for_turbofan=5000',
    '--max-old-space-size=512 --no-turbofan',
    '--jitless',
    '--interrupt-budget=100000',
  ])("an operator's tiering flag (%s) is theirs to keep", (flags) => {
    expect(operatorSteersTiering(flags)).toBe(true);
  });

  it.each(['', '--max-old-space-size=512', '--perf-basic-prof --enable-source-maps', '--invocation-count-for-maglev=100'])(
    'other flags (%s) leave it to the server',
    (flags) => {
      expect(operatorSteersTiering(flags)).toBe(false);
    },
  );
});
