import { pathOf } from './url-path';

describe('pathOf', () => {
  it("is the URL up to its first '?', as split('?')[0] gives it", () => {
    for (const url of ['/', '/a/b', '/a?b=1', '/a?b=1?c', '?x', '', '/%3F?q', '/a#f?x']) expect(pathOf(url)).toBe(url.split('?')[0]);
  });
});
