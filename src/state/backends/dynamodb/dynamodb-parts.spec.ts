import { replaceSplits, RequestLayout } from './dynamodb-parts';

const inline = (seq: number): RequestLayout => ({ seq, requestId: `r${seq}`, json: '{}' });
const split = (seq: number, gen: string, n: number): RequestLayout => ({
  ...inline(seq),
  split: { gen, parts: Array.from({ length: n }, () => Buffer.from('x')) },
});

describe('replaceSplits', () => {
  it('records the split requests a commit writes and returns the parts of those it replaces', () => {
    const before = { '0': { gen: 'g0', parts: 2 }, '1': { gen: 'g1', parts: 1 } };

    const { splits, replaced } = replaceSplits('P', before, [inline(0), split(1, 'h1', 3), split(2, 'h2', 1), inline(3)]);

    expect(splits).toEqual({ '1': { gen: 'h1', parts: 3 }, '2': { gen: 'h2', parts: 1 } });
    expect(replaced).toEqual([
      { pk: 'P', sk: 'RPART#000000#g0#00000' },
      { pk: 'P', sk: 'RPART#000000#g0#00001' },
      { pk: 'P', sk: 'RPART#000001#g1#00000' },
    ]);
    expect(before).toEqual({ '0': { gen: 'g0', parts: 2 }, '1': { gen: 'g1', parts: 1 } });
  });
});
