import { enc, parseTaskKey, RedisKeys } from './redis-keys';

describe('enc', () => {
  it('is encodeURIComponent, whatever the part holds', () => {
    const parts = [
      '',
      'a',
      '0d4c1f5e-5b7a-4c9e-9a53-0c6a2f1f6e11',
      'A-Z_a.z~0-9',
      'tenant:one',
      '{tag}',
      '50%',
      'a b',
      "it's (*)!",
      'é',
      '日本',
      '\u0000',
      'a\r\nb',
      '😀',
    ];
    for (let i = 0; i < 2_000; i++) parts.push(String.fromCharCode(...Array.from({ length: 1 + (i % 9) }, () => Math.floor(Math.random() * 0xd7ff))));
    for (const p of parts) expect(enc(p)).toBe(encodeURIComponent(p));
  });

  it('keeps keys that read back as the parts they were made of', () => {
    const keys = new RedisKeys('ta:', 'tenant {1}: ü');
    expect(parseTaskKey('ta:', keys.task('task:ü/2'))).toEqual({ tenantId: 'tenant {1}: ü', taskId: 'task:ü/2' });
  });
});
