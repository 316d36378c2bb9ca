import { extraDataOf } from './invoke-response';

describe('extraDataOf', () => {
  it('gathers the items of the calls in order, and is null (as upstream answers) when there are none', () => {
    expect(extraDataOf([])).toBeNull();
    expect(extraDataOf([{}, { extra_data: [] }])).toBeNull();
    expect(
      extraDataOf([
        { extra_data: [{ key: 'a', value: '1' }] },
        {},
        {
          extra_data: [
            { key: 'b', value: '2' },
            { key: 'a', value: '3' },
          ],
        },
      ]),
    ).toEqual({
      items: [
        { key: 'a', value: '1' },
        { key: 'b', value: '2' },
        { key: 'a', value: '3' },
      ],
    });
  });
});
