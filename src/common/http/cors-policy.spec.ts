import { corsConfigOf, isCorsOriginList, isOrigin } from './cors-policy';

describe('cors-policy', () => {
  it.each([
    'https://app.example.com',
    'http://localhost:5173',
    'http://127.0.0.1',
    'http://[::1]:3000',
    'HTTPS://App.Example.COM:443',
    'https://a-b.c-d.example:65535',
  ])('takes %s as an origin', (o) => expect(isOrigin(o)).toBe(true));

  it.each([
    'https://app.example.com/',
    'https://app.example.com/x',
    'https://app.example.com?q',
    'https://app.example.com#f',
    'https://u:p@app.example.com',
    'https://app.example.com:65536',
    'ws://app.example.com',
    'file:///tmp/x',
    'app.example.com',
    'null',
    '*',
    '',
    'https://',
    'https://app..example.com',
  ])('refuses %j', (o) => expect(isOrigin(o)).toBe(false));

  it('takes * only alone', () => {
    expect(isCorsOriginList(['*'])).toBe(true);
    expect(isCorsOriginList(['*', 'https://a.example'])).toBe(false);
    expect(isCorsOriginList([])).toBe(false);
    expect(isCorsOriginList('https://a.example')).toBe(false);
  });

  it('serializes origins as browsers send Origin, once each', () => {
    expect(corsConfigOf(['HTTPS://A.example:443', 'https://a.example', 'http://a.example:80', 'http://a.example:8080'])).toEqual({
      anyOrigin: false,
      origins: ['https://a.example', 'http://a.example', 'http://a.example:8080'],
    });
    expect(corsConfigOf(undefined)).toEqual({ anyOrigin: false, origins: [] });
    expect(corsConfigOf(['*'])).toEqual({ anyOrigin: true, origins: [] });
  });
});
