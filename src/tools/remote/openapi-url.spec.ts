import { ToolError } from '../tool-error';
import type { OperationParameter } from './openapi-operations';
import { buildRequestTarget } from './openapi-url';

const param = (name: string, where: OperationParameter['in']): OperationParameter => ({
  name,
  in: where,
  required: where === 'path',
  schema: { type: 'string' },
});
const notes = [param('user_id', 'path')];
const build = (args: Record<string, unknown>, params: OperationParameter[] = notes, path = '/users/{user_id}/notes', server = 'http://api.test/api') =>
  buildRequestTarget(server, path, params, args);

describe('buildRequestTarget (OpenAPI remote plugin URLs)', () => {
  it.each([
    ['a b', '/api/users/a%20b/notes'],
    ['a/b', '/api/users/a%2Fb/notes'],
    ['../x', '/api/users/..%2Fx/notes'],
    ['a?b=1', '/api/users/a%3Fb%3D1/notes'],
    ['a#b', '/api/users/a%23b/notes'],
    ['100%', '/api/users/100%25/notes'],
    ['é日本', '/api/users/%C3%A9%E6%97%A5%E6%9C%AC/notes'],
    ['...', '/api/users/.../notes'],
    [42, '/api/users/42/notes'],
  ])('encodes the path argument %j as one segment', (value, pathname) => {
    const { url } = build({ user_id: value });
    expect(url.pathname).toBe(pathname);
    expect(url.search).toBe('');
    expect(url.hash).toBe('');
  });

  it.each(['..', '.', '%2e%2e', '%2E%2e', '%2e', '', '.%2e'])('refuses the path argument %j', (value) => {
    expect(() => build({ user_id: value })).toThrow(ToolError);
    expect(() => build({ user_id: value })).toThrow(/path parameter "user_id" must not be empty, "\." or "\.\."/);
  });

  it('refuses a missing path argument and an object one', () => {
    expect(() => build({})).toThrow(/path parameter "user_id" is required/);
    expect(() => build({ user_id: { a: 1 } })).toThrow(ToolError);
  });

  it('replaces every occurrence of a path parameter', () => {
    expect(build({ id: 'x y' }, [param('id', 'path')], '/a/{id}/b/{id}').url.pathname).toBe('/api/a/x%20y/b/x%20y');
  });

  it('encodes query parameters by the form style (explode): arrays repeat, objects give one pair per property', () => {
    const params = [param('q', 'query'), param('tag', 'query'), param('filter', 'query')];
    const { url } = build({ user_id: 'u', q: 'a b&c=d#e%', tag: ['x', 'y/z'], filter: { color: 'red blue' } }, [...notes, ...params]);
    expect(url.search).toBe('?q=a%20b%26c%3Dd%23e%25&tag=x&tag=y%2Fz&color=red%20blue');
    expect(url.searchParams.get('q')).toBe('a b&c=d#e%');
  });

  it('encodes header parameters by the simple style and refuses line breaks', () => {
    const params = [...notes, param('X-Trace', 'header'), param('X-List', 'header')];
    expect(build({ user_id: 'u', 'X-Trace': 'abc', 'X-List': ['a', 'b'] }, params).headers).toEqual({ 'x-trace': 'abc', 'x-list': 'a,b' });
    expect(() => build({ user_id: 'u', 'X-Trace': 'a\r\nX-Evil: 1' }, params)).toThrow(/header parameter "X-Trace"/);
    expect(() => build({ user_id: 'u', 'X-Trace': '日本' }, params)).toThrow(ToolError);
  });
});
