import { RequestRecord } from '../state/state.entities';
import { TITLE_MAX_CHARS, titleOf } from './session-list.service';

const withUser = (items: { content_type: 'text' | 'image'; content: string }[]) =>
  ({ messages: [{ id: 'm', role: 'user', items, created_at: 'c' }] }) as unknown as RequestRecord;

describe('session title', () => {
  it('is the first user message, whitespace collapsed', () => {
    expect(titleOf(withUser([{ content_type: 'text', content: '  Hello\n\tthere  ' }]))).toBe('Hello there');
  });

  it('is cut at a word to at most TITLE_MAX_CHARS characters, with an ellipsis', () => {
    const title = titleOf(withUser([{ content_type: 'text', content: 'word '.repeat(40) }]))!;
    expect(title.endsWith('word…')).toBe(true);
    expect(title.length).toBeLessThanOrEqual(TITLE_MAX_CHARS + 1);
    expect(titleOf(withUser([{ content_type: 'text', content: 'x'.repeat(200) }]))).toBe(`${'x'.repeat(TITLE_MAX_CHARS)}…`);
  });

  it('ignores images, and is null without text or without a request', () => {
    expect(
      titleOf(
        withUser([
          { content_type: 'image', content: 'data:image/png;base64,AA' },
          { content_type: 'text', content: 'caption' },
        ]),
      ),
    ).toBe('caption');
    expect(titleOf(withUser([{ content_type: 'image', content: 'data:image/png;base64,AA' }]))).toBeNull();
    expect(titleOf(undefined)).toBeNull();
  });
});
